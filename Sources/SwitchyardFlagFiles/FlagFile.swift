import Foundation
public import SwitchyardCore

/// One flag file: the YAML definition of one namespace, read and validated.
///
/// A flag file is the core's flag set document written in YAML, with rollouts as percentages (at most two
/// decimals, converted exactly). See `docs/flag-files.md`.
///
/// ```swift
/// let file = try FlagFile(contentsOf: "Flags/rider.yaml")
/// print(file.flagSet.flags.count)
/// ```
public struct FlagFile: Sendable, Hashable {
    /// The path the file was read from, as given (it prefixes every problem).
    public var path: String
    public var flagSet: FlagSet

    public init(path: String, flagSet: FlagSet) {
        self.path = path
        self.flagSet = flagSet
    }

    /// The namespace the file defines.
    public var namespace: String { flagSet.namespace }

    /// Reads a flag file from YAML text.
    ///
    /// - Parameters:
    ///   - yaml: the file's text.
    ///   - path: the name to put before every problem (`Flags/rider.yaml`).
    /// - Throws: `DefinitionError` with every problem of the file: YAML syntax (with line and column),
    ///   duplicate keys, unknown fields, values out of range, broken references.
    public init(yaml: String, path: String) throws(DefinitionError) {
        let result = Self.read(yaml: yaml, path: path)
        guard let flagSet = result.flagSet, result.problems.isEmpty else {
            throw DefinitionError(problems: result.problems)
        }
        self.init(path: path, flagSet: flagSet)
    }

    /// Reads a flag file from disk.
    ///
    /// - Parameter path: the file's path; problems name it as given.
    /// - Throws: `DefinitionError` with every problem, or one saying the file cannot be read.
    public init(contentsOf path: String) throws(DefinitionError) {
        let text: String
        switch Self.contents(of: path) {
        case .success(let contents): text = contents
        case .failure(let error): throw error
        }
        try self.init(yaml: text, path: path)
    }

    /// What reading a file gave: the flag set when it is valid, the namespace it names when it names one.
    struct ReadResult {
        var flagSet: FlagSet?
        var namespace: String?
        var problems: [ValidationProblem]
    }

    static func read(yaml: String, path: String) -> ReadResult {
        let document = YAMLReader(file: path).read(yaml)
        var problems = document.problems
        guard let tree = document.tree else { return ReadResult(problems: problems) }
        let namespace = tree["namespace"]?.stringValue
        do {
            let flagSet = try FlagSet(tree: tree, unit: .percent, file: path)
            return ReadResult(flagSet: problems.isEmpty ? flagSet : nil, namespace: namespace, problems: problems)
        } catch {
            // A value the YAML reader refused was left out of the tree: what it said is the problem there, not that
            // the field is missing (`cap: 1e3` is "not written as a plain decimal number", not "cap is required").
            let refused = Set(problems.map(\.path))
            problems += error.problems.filter { !refused.contains($0.path) }.map { quotingHint(for: $0, in: tree) }
            return ReadResult(namespace: namespace, problems: problems)
        }
    }

    /// Adds a hint to "must be a string, not a number" when YAML read a version or a word as something else:
    /// `app_version_below: 5.12` is a number to YAML; `"5.12"` is the string meant.
    static func quotingHint(for problem: ValidationProblem, in tree: JSONValue) -> ValidationProblem {
        guard problem.message.hasPrefix("must be a string, not "), let value = tree.value(at: problem.path) else {
            return problem
        }
        let literal: String
        switch value {
        case .number(let number): literal = number.literal
        case .bool(let bool): literal = bool ? "true" : "false"
        default: return problem
        }
        var hinted = problem
        hinted.message += " (in YAML, quote it: \"\(literal)\")"
        return hinted
    }

    /// A file's text, or the problem that stops reading it.
    static func contents(of path: String) -> Result<String, DefinitionError> {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
            return .failure(
                DefinitionError(problems: [ValidationProblem(file: path, path: .root, message: "no such file")]))
        }
        if isDirectory.boolValue {
            return .failure(
                DefinitionError(problems: [
                    ValidationProblem(
                        file: path, path: .root,
                        message: "is a directory; pass a .yaml file, or read the directory as a whole")
                ]))
        }
        guard let data = FileManager.default.contents(atPath: path) else {
            return .failure(
                DefinitionError(problems: [
                    ValidationProblem(file: path, path: .root, message: "cannot be read; check its permissions")
                ]))
        }
        guard let text = String(validating: data, as: UTF8.self) else {
            return .failure(
                DefinitionError(problems: [
                    ValidationProblem(file: path, path: .root, message: "is not UTF-8 text; save it as UTF-8")
                ]))
        }
        return .success(text)
    }
}

extension JSONValue {
    /// The value at a field path, when there is one.
    func value(at path: FieldPath) -> JSONValue? {
        var current = self
        for component in path.components {
            switch component {
            case .key(let key):
                guard let next = current[key] else { return nil }
                current = next
            case .index(let index):
                guard let elements = current.arrayValue, elements.indices.contains(index) else { return nil }
                current = elements[index]
            }
        }
        return current
    }
}
