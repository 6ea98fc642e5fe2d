/// Walks a JSON tree, collecting every problem instead of stopping at the first.
final class TreeReader {
    let file: String?
    private(set) var problems: [ValidationProblem] = []

    init(file: String?) {
        self.file = file
    }

    func report(_ path: FieldPath, _ message: String) {
        problems.append(ValidationProblem(file: file, path: path, message: message))
    }

    func object(_ value: JSONValue, at path: FieldPath) -> ObjectReader? {
        guard case .object(let object) = value else {
            report(path, "must be an object, not \(value.typeDescription)")
            return nil
        }
        return ObjectReader(reader: self, object: object, path: path)
    }

    /// - Parameter path: where the value is, built only to report a problem.
    func list(_ value: JSONValue, at path: @autoclosure () -> FieldPath) -> [JSONValue]? {
        guard case .array(let elements) = value else {
            report(path(), "must be a list, not \(value.typeDescription)")
            return nil
        }
        return elements
    }

    /// - Parameter path: where the value is, built only to report a problem.
    func string(_ value: JSONValue, at path: @autoclosure () -> FieldPath, rule: NameRule? = nil) -> String? {
        guard case .string(let string) = value else {
            report(path(), "must be a string, not \(value.typeDescription)")
            return nil
        }
        if let rule, let problem = rule.problem(with: string) {
            report(path(), problem)
            return nil
        }
        return string
    }
}

/// Reads the members of one object, remembering which were read so unknown ones can be reported.
struct ObjectReader {
    let reader: TreeReader
    let object: JSONObject
    let path: FieldPath
    /// Bit i: member i was read (the first 64 members; the rest in `consumedBeyond`).
    private var consumed: UInt64 = 0
    private var consumedBeyond: Set<Int> = []
    /// The names asked for, for "did you mean" suggestions.
    private var asked: [String] = []

    init(reader: TreeReader, object: JSONObject, path: FieldPath) {
        self.reader = reader
        self.object = object
        self.path = path
    }

    /// A member's value; `null` reads as absent (YAML's `key:` with nothing after it).
    mutating func value(_ key: String, required: Bool = false) -> JSONValue? {
        if asked.capacity == 0 { asked.reserveCapacity(24) }
        asked.append(key)
        guard let position = object.index(of: key) else {
            if required { reader.report(path / key, "is required") }
            return nil
        }
        if position < 64 { consumed |= 1 << UInt64(position) } else { consumedBeyond.insert(position) }
        let value = object[position: position].value
        guard value != .null else {
            if required { reader.report(path / key, "is required") }
            return nil
        }
        return value
    }

    mutating func string(_ key: String, required: Bool = false, rule: NameRule? = nil) -> String? {
        guard let value = value(key, required: required) else { return nil }
        return reader.string(value, at: path / key, rule: rule)
    }

    mutating func bool(_ key: String) -> Bool? {
        guard let value = value(key) else { return nil }
        guard case .bool(let bool) = value else {
            reader.report(path / key, "must be true or false, not \(value.typeDescription)")
            return nil
        }
        return bool
    }

    mutating func integer(_ key: String, required: Bool = false) -> Int64? {
        guard let value = value(key, required: required) else { return nil }
        guard case .number(let number) = value, let integer = number.int64Value else {
            reader.report(path / key, "must be an integer, not \(value.typeDescription)")
            return nil
        }
        return integer
    }

    /// A list of strings, each checked against a rule; duplicates and empty lists are reported.
    mutating func stringList(_ key: String, rule: NameRule, allowEmpty: Bool = false) -> [String] {
        guard let value = value(key) else { return [] }
        guard let elements = reader.list(value, at: path / key) else { return [] }
        if elements.isEmpty && !allowEmpty {
            reader.report(path / key, "must not be empty (leave the field out instead)")
        }
        var strings: [String] = []
        strings.reserveCapacity(elements.count)
        // Duplicates: compared with the strings so far in short lists, through a set in long ones (allowlists).
        var seen: Set<String>?
        for (index, element) in elements.enumerated() {
            guard let string = reader.string(element, at: path / key / index, rule: rule) else { continue }
            let duplicate: Bool
            if seen != nil {
                duplicate = !seen!.insert(string).inserted
            } else if strings.count < 16 {
                duplicate = strings.contains { JSONObject.sameKey($0, string) }
            } else {
                seen = Set(strings)
                duplicate = !seen!.insert(string).inserted
            }
            if duplicate {
                reader.report(path / key / index, "'\(string)' is listed twice")
                continue
            }
            strings.append(string)
        }
        return strings
    }

    /// Reports every member that was never read, suggesting the nearest known name.
    func finish(known extra: [String] = []) {
        for position in 0..<object.count {
            let isConsumed = position < 64 ? consumed & (1 << UInt64(position)) != 0 : consumedBeyond.contains(position)
            guard !isConsumed else { continue }
            let key = object[position: position].key
            guard !extra.contains(where: { JSONObject.sameKey($0, key) }) else { continue }
            let known = Set(asked).union(extra)
            reader.report(path / key, "unknown field" + Suggestions.didYouMean(key, among: known, count: 1))
        }
    }
}

/// What a name (a key, a city, a cohort) may look like.
final class NameRule: Sendable {
    let what: String
    let maximumLength: Int
    let allowed: @Sendable (Character) -> Bool
    let allowedDescription: String?
    /// Bit b of word b / 64: the ASCII byte b is allowed (the same test as `allowed`, on bytes: most names are
    /// ASCII, and are checked without forming characters or calling a closure per byte).
    let allowedASCII: (UInt64, UInt64)

    init(
        what: String, maximumLength: Int, allowed: @escaping @Sendable (Character) -> Bool, allowedDescription: String?,
        allowedASCII: (UInt8) -> Bool
    ) {
        self.what = what
        self.maximumLength = maximumLength
        self.allowed = allowed
        self.allowedDescription = allowedDescription
        var table: (UInt64, UInt64) = (0, 0)
        for byte in UInt8(0)..<0x80 where allowedASCII(byte) {
            if byte < 64 { table.0 |= 1 << UInt64(byte) } else { table.1 |= 1 << UInt64(byte - 64) }
        }
        self.allowedASCII = table
    }

    func problem(with string: String) -> String? {
        if string.isEmpty { return "\(what) must not be empty" }
        if isPlainlyAllowed(string) { return nil }
        if string.count > maximumLength { return "'\(string.prefix(40))…' is longer than \(maximumLength) characters" }
        if let allowedDescription, !string.allSatisfy(allowed) {
            return "'\(string)' may only contain \(allowedDescription)"
        }
        return nil
    }

    /// Whether a string is ASCII, short enough and made of allowed bytes (false decides nothing).
    private func isPlainlyAllowed(_ string: String) -> Bool {
        let utf8 = string.utf8
        guard utf8.count <= maximumLength else { return false }
        let table = allowedASCII
        let checked = utf8.withContiguousStorageIfAvailable { bytes in
            for byte in bytes {
                let allowed =
                    byte < 64 ? table.0 & (1 << UInt64(byte)) : (byte < 128 ? table.1 & (1 << UInt64(byte &- 64)) : 0)
                if allowed == 0 { return false }
            }
            return true
        }
        return checked ?? false
    }

    /// Flag, kill switch, variant and plugin point keys: URL-safe, as OFREP needs.
    static let key = NameRule(
        what: "a key", maximumLength: 128, allowed: isKeyCharacter,
        allowedDescription: "letters, digits, '.', '_' and '-'", allowedASCII: isKeyByte)
    /// Metric names (``MetricDefinition``): flag-key characters, shorter (they label every result and export row).
    static let metric = NameRule(
        what: "a metric name", maximumLength: MetricDefinition.maximumNameLength, allowed: isKeyCharacter,
        allowedDescription: "letters, digits, '.', '_' and '-'", allowedASCII: isKeyByte)
    /// Namespace names.
    static let namespace = NameRule(
        what: "a namespace name", maximumLength: 63, allowed: isKeyCharacter,
        allowedDescription: "letters, digits, '.', '_' and '-'", allowedASCII: isKeyByte)
    /// City, cohort, platform and unit values: any text without control characters.
    static let attribute = NameRule(
        what: "a value", maximumLength: 256, allowed: { !$0.isASCIIControl },
        allowedDescription: "printable characters", allowedASCII: { $0 >= 0x20 && $0 != 0x7F })
    static let text = NameRule(
        what: "a text", maximumLength: 4096, allowed: { _ in true }, allowedDescription: nil,
        allowedASCII: { _ in true })

    static func isKeyByte(_ byte: UInt8) -> Bool {
        (byte >= 0x61 && byte <= 0x7A) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x30 && byte <= 0x39)
            || byte == 0x2E || byte == 0x5F || byte == 0x2D
    }

    static func isKeyCharacter(_ character: Character) -> Bool {
        character.isASCII
            && (character.isLetter || character.isNumber || character == "." || character == "_" || character == "-")
    }
}

extension Character {
    var isASCIIControl: Bool {
        unicodeScalars.contains { $0.value < 0x20 || $0.value == 0x7F }
    }
}
