/// The type of an experiment flag's values.
public enum FlagValueType: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    case boolean
    case string
    case integer
    case float
    case object

    public var description: String { rawValue }
}

/// A typed flag value. A float stays a float, even when it is whole (`1.0`).
public enum FlagValue: Sendable, Hashable, CustomStringConvertible {
    case boolean(Bool)
    case string(String)
    case integer(Int64)
    case float(Double)
    case object(JSONObject)

    public var type: FlagValueType {
        switch self {
        case .boolean: .boolean
        case .string: .string
        case .integer: .integer
        case .float: .float
        case .object: .object
        }
    }

    /// The value as JSON; floats are written with a decimal point.
    public var jsonValue: JSONValue {
        switch self {
        case .boolean(let value): .bool(value)
        case .string(let value): .string(value)
        case .integer(let value): .int64(value)
        case .float(let value): .double(value)
        case .object(let value): .object(value)
        }
    }

    /// Reads a JSON value as a value of the given type.
    ///
    /// An integer literal is accepted for a float (`1` reads as `1.0`); a whole number is an integer however it is
    /// written (`3`, `3.0`, `3e0`), a fraction is refused for an integer; non-finite floats are refused.
    /// - Returns: the value, or nil when the JSON value does not have that type.
    public init?(_ json: JSONValue, as type: FlagValueType) {
        switch (type, json) {
        case (.boolean, .bool(let value)): self = .boolean(value)
        case (.string, .string(let value)): self = .string(value)
        case (.integer, .number(let number)):
            guard let value = number.int64Value else { return nil }
            self = .integer(value)
        case (.float, .number(let number)):
            guard let value = number.doubleValue, value.isFinite else { return nil }
            self = .float(value)
        case (.object, .object(let value)): self = .object(value)
        default: return nil
        }
    }

    public var description: String {
        switch self {
        case .string(let value): value
        default: jsonValue.serializedString()
        }
    }
}
