/// A JSON document tree that keeps what Foundation's coders lose.
///
/// Numbers keep their literal text, so `1.0` stays a float and `12.34` converts to basis points exactly;
/// objects keep member order and reject duplicate keys when parsed. Flag files (through YAML), snapshots and
/// API bodies all become a `JSONValue` before they are read into the model, so one reader reports problems for
/// all of them with the same field paths.
public enum JSONValue: Sendable, Hashable {
    case null
    case bool(Bool)
    case number(JSONNumber)
    case string(String)
    case array([JSONValue])
    case object(JSONObject)
}

/// A JSON number, held as its literal text.
public struct JSONNumber: Sendable, Hashable, CustomStringConvertible {
    /// The number as written: `12`, `-0.5`, `1.0`, `2e3`.
    public let literal: String

    /// Wraps a literal that is already known to be valid JSON number syntax.
    package init(uncheckedLiteral literal: String) {
        self.literal = literal
    }

    /// An integer number.
    public init(_ value: Int64) {
        self.literal = String(value)
    }

    /// An integer number.
    public init(_ value: Int) {
        self.literal = String(value)
    }

    /// A float number, always written with a decimal point or an exponent (`1.0`, never `1`).
    ///
    /// Non-finite values have no JSON form and are written as `0.0`; validation rejects them before this.
    public init(_ value: Double) {
        self.literal = JSONNumber.floatLiteral(value)
    }

    /// Whether the literal has integer syntax (no fraction, no exponent).
    public var isIntegerLiteral: Bool {
        !literal.utf8.contains { $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "e") || $0 == UInt8(ascii: "E") }
    }

    /// The value as an `Int64` when the literal is an integer that fits.
    public var int64Value: Int64? {
        isIntegerLiteral ? Int64(literal) : nil
    }

    /// The value as a `Double` (integers convert too).
    public var doubleValue: Double? {
        Double(literal)
    }

    public var description: String { literal }

    /// Writes a finite double so that JSON readers in every language see a float.
    static func floatLiteral(_ value: Double) -> String {
        guard value.isFinite else { return "0.0" }
        if value == 0 { return value.sign == .minus ? "-0.0" : "0.0" }
        let text = value.description
        if text.utf8.contains(where: { $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "e") }) {
            return text
        }
        return text + ".0"
    }
}

/// A JSON object: members in order, keys unique.
public struct JSONObject: Sendable, Hashable, Sequence {
    public typealias Member = (key: String, value: JSONValue)

    private var keys: [String]
    private var values: [JSONValue]

    public init() {
        keys = []
        values = []
    }

    /// Builds an object; a later duplicate key replaces the earlier value. Linear in the member count.
    public init(_ members: [(String, JSONValue)]) {
        self.init()
        var positions: [String: Int] = [:]
        positions.reserveCapacity(members.count)
        for (key, value) in members {
            if let position = positions[key] {
                values[position] = value
            } else {
                positions[key] = keys.count
                keys.append(key)
                values.append(value)
            }
        }
    }

    public var count: Int { keys.count }
    public var isEmpty: Bool { keys.isEmpty }
    public var memberKeys: [String] { keys }

    public subscript(key: String) -> JSONValue? {
        get {
            guard let index = keys.firstIndex(of: key) else { return nil }
            return values[index]
        }
        set {
            if let index = keys.firstIndex(of: key) {
                if let newValue {
                    values[index] = newValue
                } else {
                    keys.remove(at: index)
                    values.remove(at: index)
                }
            } else if let newValue {
                keys.append(key)
                values.append(newValue)
            }
        }
    }

    /// Appends a member without checking for an existing key; the parser checks duplicates itself.
    mutating func appendUnchecked(_ key: String, _ value: JSONValue) {
        keys.append(key)
        values.append(value)
    }

    public func makeIterator() -> some IteratorProtocol<Member> {
        zip(keys, values).lazy.map { (key: $0.0, value: $0.1) }.makeIterator()
    }

    public static func == (lhs: JSONObject, rhs: JSONObject) -> Bool {
        guard lhs.count == rhs.count else { return false }
        for (key, value) in lhs where rhs[key] != value { return false }
        return true
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(count)
        for key in keys.sorted() { hasher.combine(key) }
    }
}

extension JSONValue {
    /// Integer shorthand.
    public static func int(_ value: Int) -> JSONValue { .number(JSONNumber(value)) }
    /// Integer shorthand.
    public static func int64(_ value: Int64) -> JSONValue { .number(JSONNumber(value)) }
    /// Float shorthand; written with a decimal point.
    public static func double(_ value: Double) -> JSONValue { .number(JSONNumber(value)) }

    /// The JSON type name used in error messages: "a string", "an object", ...
    public var typeDescription: String {
        switch self {
        case .null: "null"
        case .bool: "a boolean"
        case .number(let number): number.isIntegerLiteral ? "an integer" : "a number"
        case .string: "a string"
        case .array: "a list"
        case .object: "an object"
        }
    }

    public var objectValue: JSONObject? {
        if case .object(let object) = self { return object }
        return nil
    }

    public var stringValue: String? {
        if case .string(let string) = self { return string }
        return nil
    }

    public var arrayValue: [JSONValue]? {
        if case .array(let array) = self { return array }
        return nil
    }

    public var boolValue: Bool? {
        if case .bool(let bool) = self { return bool }
        return nil
    }

    public var int64Value: Int64? {
        if case .number(let number) = self { return number.int64Value }
        return nil
    }

    public subscript(key: String) -> JSONValue? {
        objectValue?[key]
    }
}
