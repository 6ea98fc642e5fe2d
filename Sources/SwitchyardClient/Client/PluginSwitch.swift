public import SwitchyardCore

/// The gate of one optional plugin, as code names it: `PluginSwitch("plugin_switch_feed_promos")`.
///
/// A switch resolves its key to a small integer slot once, when it is created; every snapshot the client
/// installs carries a table from slot to compiled flag, so ``FlagClient/isEnabled(_:)`` does no string lookup
/// and no allocation. Declare switches once (a `static let` on the plugin factory) and reuse them.
///
/// Its definition in a flag set (state, rules, rollout) is `SwitchyardCore.PluginSwitchDefinition`.
public struct PluginSwitch: Sendable, Hashable, CustomStringConvertible {
    /// The flag key, `plugin_switch_<feature>` by convention.
    public let key: String
    /// The process-wide slot of the key.
    package let slot: Int32

    /// A switch for a flag key.
    public init(_ key: String) {
        self.key = key
        slot = SlotRegistry.shared.slot(for: key)
    }

    public var description: String { key }

    public static func == (lhs: PluginSwitch, rhs: PluginSwitch) -> Bool { lhs.slot == rhs.slot }
    public func hash(into hasher: inout Hasher) { hasher.combine(slot) }
}

/// An experiment flag with its value type and the value code uses when no snapshot serves it.
///
/// ```swift
/// static let checkoutCopy = ExperimentFlag("exp_checkout_copy", default: "Confirm ride")
/// let title = client.value(of: Self.checkoutCopy)
/// ```
public struct ExperimentFlag<Value: ExperimentValue>: Sendable, Hashable, CustomStringConvertible {
    public let key: String
    /// Served when there is no snapshot, the flag is missing or has another value type.
    public let defaultValue: Value
    package let slot: Int32

    public init(_ key: String, default defaultValue: Value) {
        self.key = key
        self.defaultValue = defaultValue
        slot = SlotRegistry.shared.slot(for: key)
    }

    public var description: String { key }
}

/// A Swift type an experiment flag's values can be read as.
public protocol ExperimentValue: Sendable, Hashable {
    /// Reads a flag value; nil when it has another type.
    init?(flagValue: FlagValue)
}

extension Bool: ExperimentValue {
    public init?(flagValue: FlagValue) {
        guard case .boolean(let value) = flagValue else { return nil }
        self = value
    }
}

extension String: ExperimentValue {
    public init?(flagValue: FlagValue) {
        guard case .string(let value) = flagValue else { return nil }
        self = value
    }
}

extension Int64: ExperimentValue {
    public init?(flagValue: FlagValue) {
        guard case .integer(let value) = flagValue else { return nil }
        self = value
    }
}

extension Int: ExperimentValue {
    public init?(flagValue: FlagValue) {
        guard case .integer(let value) = flagValue, let narrowed = Int(exactly: value) else { return nil }
        self = narrowed
    }
}

extension Double: ExperimentValue {
    /// Reads a float flag; integer flags are not read as floats (the types are distinct in flag files).
    public init?(flagValue: FlagValue) {
        guard case .float(let value) = flagValue else { return nil }
        self = value
    }
}

extension JSONObject: ExperimentValue {
    public init?(flagValue: FlagValue) {
        guard case .object(let value) = flagValue else { return nil }
        self = value
    }
}

extension FlagValue: ExperimentValue {
    /// Any value.
    public init?(flagValue: FlagValue) {
        self = flagValue
    }
}

/// Interns flag keys to slots for the whole process: slot tables are sized by it.
///
/// Append-only and internal: a key keeps its slot for the life of the process, whichever client reads it.
package final class SlotRegistry: Sendable {
    package static let shared = SlotRegistry()

    private struct Table {
        var slots: [String: Int32] = [:]
        var keys: [String] = []
    }

    private let table = LockedBox(Table())

    package func slot(for key: String) -> Int32 {
        table.withLock { table in
            if let slot = table.slots[key] { return slot }
            let slot = Int32(table.keys.count)
            table.slots[key] = slot
            table.keys.append(key)
            return slot
        }
    }

    /// How many keys have a slot.
    package var count: Int {
        table.withLock { $0.keys.count }
    }

    /// Every key with a slot, in slot order.
    package var keys: [String] {
        table.withLock { $0.keys }
    }
}
