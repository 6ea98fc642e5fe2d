@_exported public import SwitchyardClient

@_exported public import struct SwitchyardCore.FlagSet

/// Where plugin points read switch states: a ``FlagClient`` in the app, an explicit ``SwitchAssignment`` in
/// tests and in the combination matrix.
///
/// Implementations must answer `isEnabled(_:)` synchronously and quickly (plugin points call it on the app's
/// hot paths) and be safe to call from any thread. The two notifications have empty default implementations.
public protocol SwitchStates: Sendable {
    /// Whether a plugin switch is on.
    func isEnabled(_ pluginSwitch: PluginSwitch) -> Bool

    /// Called just before a plugin point builds the plugin of a switch that is on and applicable: the client
    /// records the switch as active in the session, for crash attribution.
    func willCreatePlugin(for pluginSwitch: PluginSwitch, at pluginPoint: String)

    /// Called when a plugin factory threw; the plugin point goes on with the next eligible factory.
    func pluginFactoryFailed(for pluginSwitch: PluginSwitch, at pluginPoint: String, error: any Error)

    /// The states as they are now, unaffected by later changes: a ``PluginHost`` re-routes every point of one
    /// step through one such view, so no point sees an older state than another. The notifications must still
    /// reach these states. Defaults to `self` (right for states that change only between steps, such as a
    /// ``SwitchAssignment``).
    func frozen() -> any SwitchStates
}

extension SwitchStates {
    public func willCreatePlugin(for pluginSwitch: PluginSwitch, at pluginPoint: String) {}
    public func pluginFactoryFailed(for pluginSwitch: PluginSwitch, at pluginPoint: String, error: any Error) {}
    public func frozen() -> any SwitchStates { self }
}

extension FlagClient: SwitchStates {
    /// Records the switch as active in this session (crash attribution).
    public func willCreatePlugin(for pluginSwitch: PluginSwitch, at pluginPoint: String) {
        recordActive(pluginSwitch)
    }

    /// Reports the failure through the client's `report` callback.
    public func pluginFactoryFailed(for pluginSwitch: PluginSwitch, at pluginPoint: String, error: any Error) {
        reportFactoryFailure(pluginPoint: pluginPoint, pluginSwitch: pluginSwitch, error: error)
    }

    /// The installed state, frozen: a snapshot installed while a host applies a step waits for the next step.
    public func frozen() -> any SwitchStates {
        FrozenClientStates(client: self, states: frozenSwitchStates())
    }
}

/// A client's switch states frozen at one moment; notifications still go to the client.
private struct FrozenClientStates: SwitchStates {
    let client: FlagClient
    let states: FrozenSwitchStates

    func isEnabled(_ pluginSwitch: PluginSwitch) -> Bool { states.isEnabled(pluginSwitch) }

    func willCreatePlugin(for pluginSwitch: PluginSwitch, at pluginPoint: String) {
        client.willCreatePlugin(for: pluginSwitch, at: pluginPoint)
    }

    func pluginFactoryFailed(for pluginSwitch: PluginSwitch, at pluginPoint: String, error: any Error) {
        client.pluginFactoryFailed(for: pluginSwitch, at: pluginPoint, error: error)
    }
}

/// Switch states given explicitly, without a server: every switch off except those set on.
///
/// ```swift
/// let onlyPromos = SwitchAssignment(on: [FeedPromosFactory.pluginSwitch])
/// let plugin = feedPoint.with(states: onlyPromos).createPlugin(for: input)
/// ```
public struct SwitchAssignment: SwitchStates, Hashable, CustomStringConvertible {
    /// The switches that are on.
    public var enabled: Set<String>

    /// Every switch off: the core flow everywhere.
    public static let allOff = SwitchAssignment(enabledKeys: [])

    /// Turns the given switches on, every other one off.
    public init(on switches: some Sequence<PluginSwitch>) {
        enabled = Set(switches.map(\.key))
    }

    /// Turns the switches with these keys on, every other one off.
    public init(enabledKeys: some Sequence<String>) {
        enabled = Set(enabledKeys)
    }

    public func isEnabled(_ pluginSwitch: PluginSwitch) -> Bool {
        enabled.contains(pluginSwitch.key)
    }

    /// Sets one switch.
    public mutating func set(_ pluginSwitch: PluginSwitch, on: Bool) {
        if on { enabled.insert(pluginSwitch.key) } else { enabled.remove(pluginSwitch.key) }
    }

    public var description: String {
        enabled.isEmpty ? "all off" : "on: " + enabled.sorted().joined(separator: ", ")
    }
}
