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

    /// The value as an `Int64` when it is a whole number that fits, however it is written: `942`, and also `942.0`
    /// or `9.42e2`, as JSON Schema counts them (an API's schema that says `integer` accepts those, so flagsd does).
    public var int64Value: Int64? {
        isIntegerLiteral ? Int64(literal) : Self.wholeNumber(literal)
    }

    /// A literal with a fraction or an exponent whose value is a whole number that fits in an `Int64`, exactly
    /// (no rounding through a `Double`): its digits, without the point, shifted by the exponent.
    private static func wholeNumber(_ literal: String) -> Int64? {
        let bytes = Array(literal.utf8)
        var index = 0
        let negative = bytes.first == UInt8(ascii: "-")
        if negative { index = 1 }
        var digits: [UInt8] = []
        var fractionDigits = 0
        var inFraction = false
        while index < bytes.count, bytes[index] != UInt8(ascii: "e"), bytes[index] != UInt8(ascii: "E") {
            if bytes[index] == UInt8(ascii: ".") {
                inFraction = true
            } else {
                digits.append(bytes[index])
                if inFraction { fractionDigits += 1 }
            }
            index += 1
        }
        var exponent = 0
        if index < bytes.count {
            // JSON's exponent: e or E, an optional sign, digits. Beyond ±1,000 nothing non-zero fits.
            guard let written = Int(String(decoding: bytes[(index + 1)...], as: UTF8.self)), written.magnitude <= 1_000
            else { return digits.allSatisfy { $0 == UInt8(ascii: "0") } ? 0 : nil }
            exponent = written
        }
        // value = digits × 10^(exponent − fractionDigits); trailing zeros move into the power.
        var power = exponent - fractionDigits
        while power < 0, digits.count > 1, digits.last == UInt8(ascii: "0") {
            digits.removeLast()
            power += 1
        }
        // Leading zeros say nothing (`0.5e1` is 5) and must not count toward the length.
        guard let first = digits.firstIndex(where: { $0 != UInt8(ascii: "0") }) else { return 0 }
        digits.removeFirst(first)
        guard power >= 0, digits.count + power <= 20 else { return nil }
        digits += repeatElement(UInt8(ascii: "0"), count: power)
        return Int64((negative ? "-" : "") + String(decoding: digits, as: UTF8.self))
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
///
public struct JSONObject: Sendable, Hashable, Sequence {
    public typealias Member = (key: String, value: JSONValue)

    /// One array of members: an object costs one allocation, and looking a key up compares keys in place.
    private var members: [Member]

    public init() {
        members = []
    }

    /// Builds an object; a later duplicate key replaces the earlier value. Linear in the member count.
    public init(_ members: [(String, JSONValue)]) {
        self.init()
        self.members.reserveCapacity(members.count)
        var positions: [String: Int] = [:]
        if members.count > 8 { positions.reserveCapacity(members.count) }
        for (key, value) in members {
            if members.count > 8 {
                if let position = positions[key] {
                    self.members[position].value = value
                    continue
                }
                positions[key] = self.members.count
            } else if let position = index(of: key) {
                self.members[position].value = value
                continue
            }
            self.members.append((key, value))
        }
    }

    public var count: Int { members.count }
    public var isEmpty: Bool { members.isEmpty }
    public var memberKeys: [String] { members.map(\.key) }

    /// The position of a key: a linear search, comparing UTF-8 bytes (objects are small, or read in one pass).
    func index(of key: String) -> Int? {
        members.firstIndex { Self.sameKey($0.key, key) }
    }

    /// Whether two keys are the same: equal byte counts, then `==` (which for the ASCII keys of every Switchyard
    /// document is a byte comparison, on the words of small strings).
    @inline(__always)
    static func sameKey(_ lhs: String, _ rhs: String) -> Bool {
        lhs.utf8.count == rhs.utf8.count && lhs == rhs
    }

    public subscript(key: String) -> JSONValue? {
        get {
            guard let index = index(of: key) else { return nil }
            return members[index].value
        }
        set {
            if let index = index(of: key) {
                if let newValue {
                    members[index].value = newValue
                } else {
                    members.remove(at: index)
                }
            } else if let newValue {
                members.append((key, newValue))
            }
        }
    }

    /// The member at a position (for readers that walk an object once).
    subscript(position position: Int) -> Member {
        members[position]
    }

    /// Members whose keys are known to be unique (the parser checks duplicates itself).
    init(uncheckedMembers: [Member]) {
        members = uncheckedMembers
    }

    mutating func reserveCapacity(_ count: Int) {
        members.reserveCapacity(count)
    }

    public func makeIterator() -> IndexingIterator<[Member]> {
        members.makeIterator()
    }

    public static func == (lhs: JSONObject, rhs: JSONObject) -> Bool {
        guard lhs.count == rhs.count else { return false }
        for (key, value) in lhs where rhs[key] != value { return false }
        return true
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(count)
        for key in members.map(\.key).sorted() { hasher.combine(key) }
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
        case .number(let number):
            number.int64Value != nil ? "an integer" : number.isIntegerLiteral ? "an integer out of range" : "a number"
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

    /// A number as a `Double` (integers too); nil for anything else.
    public var doubleValue: Double? {
        if case .number(let number) = self { return number.doubleValue }
        return nil
    }

    public subscript(key: String) -> JSONValue? {
        objectValue?[key]
    }
}
