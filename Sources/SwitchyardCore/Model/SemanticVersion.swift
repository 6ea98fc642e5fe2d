/// A semantic version (`5.12.0`, `6.0.0-beta.2+481`) compared by SemVer 2.0 precedence.
///
/// App versions with fewer components (`5.12`, `6`) are accepted and padded with zeros, as app stores allow
/// them. Build metadata is kept for display and ignored in comparisons.
public struct SemanticVersion: Sendable, Hashable, Comparable, CustomStringConvertible {
    public let major: UInt64
    public let minor: UInt64
    public let patch: UInt64
    public let prerelease: [String]
    public let build: String?

    public init(major: UInt64, minor: UInt64, patch: UInt64, prerelease: [String] = [], build: String? = nil) {
        self.major = major
        self.minor = minor
        self.patch = patch
        self.prerelease = prerelease
        self.build = build
    }

    /// Parses a version; nil when it is not one.
    public init?(_ text: String) {
        guard !text.isEmpty, text.utf8.count <= 256 else { return nil }
        if let plain = Self.plainNumbers(text) {
            self.init(major: plain.0, minor: plain.1, patch: plain.2)
            return
        }
        var rest = Substring(text)
        if rest.first == "v" { rest = rest.dropFirst() }
        var build: String?
        if let plus = rest.firstIndex(of: "+") {
            let metadata = rest[rest.index(after: plus)...]
            guard Self.isValidIdentifierList(metadata) else { return nil }
            build = String(metadata)
            rest = rest[..<plus]
        }
        var prerelease: [String] = []
        if let dash = rest.firstIndex(of: "-") {
            let tag = rest[rest.index(after: dash)...]
            guard Self.isValidIdentifierList(tag) else { return nil }
            prerelease = tag.split(separator: ".").map(String.init)
            rest = rest[..<dash]
        }
        let parts = rest.split(separator: ".", omittingEmptySubsequences: false)
        guard (1...3).contains(parts.count) else { return nil }
        var numbers: [UInt64] = []
        for part in parts {
            guard !part.isEmpty, part.count <= 18, part.allSatisfy(\.isASCIIDigit), let value = UInt64(part) else {
                return nil
            }
            numbers.append(value)
        }
        while numbers.count < 3 { numbers.append(0) }
        self.init(major: numbers[0], minor: numbers[1], patch: numbers[2], prerelease: prerelease, build: build)
    }

    /// The numbers of a version written as up to three dot-separated numbers (`5.12.0`, `6`), as most are, read
    /// from the bytes; nil for anything else (the general reader decides then).
    private static func plainNumbers(_ text: String) -> (UInt64, UInt64, UInt64)? {
        var numbers: (UInt64, UInt64, UInt64) = (0, 0, 0)
        var part = 0
        var value: UInt64 = 0
        var digits = 0
        func store() -> Bool {
            guard digits > 0, digits <= 18 else { return false }
            switch part {
            case 0: numbers.0 = value
            case 1: numbers.1 = value
            case 2: numbers.2 = value
            default: return false
            }
            return true
        }
        for byte in text.utf8 {
            if byte >= 0x30 && byte <= 0x39 {
                value = value &* 10 &+ UInt64(byte - 0x30)
                digits += 1
            } else if byte == UInt8(ascii: ".") {
                guard store() else { return nil }
                part += 1
                value = 0
                digits = 0
            } else {
                return nil
            }
        }
        guard store() else { return nil }
        return numbers
    }

    private static func isValidIdentifierList(_ text: Substring) -> Bool {
        let identifiers = text.split(separator: ".", omittingEmptySubsequences: false)
        return !identifiers.isEmpty
            && identifiers.allSatisfy { identifier in
                !identifier.isEmpty && identifier.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-") }
            }
    }

    public var description: String {
        var text = "\(major).\(minor).\(patch)"
        if !prerelease.isEmpty { text += "-" + prerelease.joined(separator: ".") }
        if let build { text += "+" + build }
        return text
    }

    public static func == (lhs: SemanticVersion, rhs: SemanticVersion) -> Bool {
        lhs.major == rhs.major && lhs.minor == rhs.minor && lhs.patch == rhs.patch && lhs.prerelease == rhs.prerelease
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(major)
        hasher.combine(minor)
        hasher.combine(patch)
        hasher.combine(prerelease)
    }

    public static func < (lhs: SemanticVersion, rhs: SemanticVersion) -> Bool {
        if lhs.major != rhs.major { return lhs.major < rhs.major }
        if lhs.minor != rhs.minor { return lhs.minor < rhs.minor }
        if lhs.patch != rhs.patch { return lhs.patch < rhs.patch }
        // A version without a prerelease tag ranks above any prerelease of the same version.
        switch (lhs.prerelease.isEmpty, rhs.prerelease.isEmpty) {
        case (true, true), (true, false): return false
        case (false, true): return true
        case (false, false): break
        }
        for (left, right) in zip(lhs.prerelease, rhs.prerelease) where left != right {
            switch (UInt64(left), UInt64(right)) {
            case (let l?, let r?): return l < r
            case (.some, nil): return true
            case (nil, .some): return false
            case (nil, nil): return left.utf8.lexicographicallyPrecedes(right.utf8)
            }
        }
        return lhs.prerelease.count < rhs.prerelease.count
    }
}
