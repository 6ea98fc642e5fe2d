/// The path of a field in a document: `flags.plugin_switch_feed_promos.rules[1].rollout`.
public struct FieldPath: Sendable, Hashable, CustomStringConvertible, ExpressibleByStringLiteral {
    public enum Component: Sendable, Hashable {
        case key(String)
        case index(Int)
    }

    public private(set) var components: [Component]

    public init(_ components: [Component] = []) {
        self.components = components
    }

    /// Parses a dotted path such as `flags.x.rules[1].rollout` (for tests and literals).
    public init(stringLiteral value: String) {
        // A single name, as most paths start: readers build one per object they read.
        if !value.utf8.contains(where: { $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "[") }) {
            self.components = value.isEmpty ? [] : [.key(value)]
            return
        }
        var components: [Component] = []
        for part in value.split(separator: ".") {
            var name = Substring(part)
            var indices: [Int] = []
            while name.hasSuffix("]"), let open = name.lastIndex(of: "["),
                let index = Int(name[name.index(after: open)..<name.index(before: name.endIndex)])
            {
                indices.insert(index, at: 0)
                name = name[..<open]
            }
            if !name.isEmpty { components.append(.key(String(name))) }
            components.append(contentsOf: indices.map(Component.index))
        }
        self.components = components
    }

    public static let root = FieldPath()

    public func appending(_ key: String) -> FieldPath {
        appending(component: .key(key))
    }

    public func appending(index: Int) -> FieldPath {
        appending(component: .index(index))
    }

    /// One allocation: readers build a path for every object they read.
    private func appending(component: Component) -> FieldPath {
        var next: [Component] = []
        next.reserveCapacity(components.count + 1)
        next += components
        next.append(component)
        return FieldPath(next)
    }

    public static func / (lhs: FieldPath, rhs: String) -> FieldPath { lhs.appending(rhs) }
    public static func / (lhs: FieldPath, rhs: Int) -> FieldPath { lhs.appending(index: rhs) }

    public var isRoot: Bool { components.isEmpty }

    public var description: String {
        var text = ""
        for component in components {
            switch component {
            case .key(let key):
                if !text.isEmpty { text += "." }
                text += key
            case .index(let index):
                text += "[\(index)]"
            }
        }
        return text
    }
}

/// One problem in a document: where, and what rule it breaks.
public struct ValidationProblem: Sendable, Hashable, CustomStringConvertible {
    /// The file the document came from, when it came from one.
    public var file: String?
    public var path: FieldPath
    public var message: String

    public init(file: String? = nil, path: FieldPath, message: String) {
        self.file = file
        self.path = path
        self.message = message
    }

    /// `Flags/rider.yaml: flags.plugin_switch_feed_promos.rules[1].rollout: 120 is not between 0 and 100`.
    public var description: String {
        var parts: [String] = []
        if let file { parts.append(file) }
        if !path.isRoot { parts.append(path.description) }
        parts.append(message)
        return parts.joined(separator: ": ")
    }
}

/// A document that is not a valid flag set, with every problem found.
public struct DefinitionError: Error, Sendable, Hashable, CustomStringConvertible {
    public var problems: [ValidationProblem]

    public init(problems: [ValidationProblem]) {
        self.problems = problems
    }

    public var description: String {
        problems.map(\.description).joined(separator: "\n")
    }
}
