public import SwitchyardPlugins

/// Faults to inject into plugins, for demos, the end-to-end test and the combination matrix: a plugin that
/// crashes when the trip uses it (`rider-sample --crash-in`), a factory that throws when asked to build.
public struct Faults: Sendable, Hashable {
    /// Keys of plugin switches whose plugin crashes when used.
    public var crashIn: Set<String>
    /// Keys of plugin switches whose factory throws; the plugin point skips it and tries the next one.
    public var failingFactories: Set<String>

    public init(crashIn: Set<String> = [], failingFactories: Set<String> = []) {
        self.crashIn = crashIn
        self.failingFactories = failingFactories
    }

    /// No faults.
    public static let none = Faults()

    /// Throws ``SimulatedCrash`` when the plugin behind this switch is set to crash.
    func use(_ pluginSwitch: PluginSwitch, at point: String) throws(SimulatedCrash) {
        if !crashIn.isEmpty, crashIn.contains(pluginSwitch.key) {
            throw SimulatedCrash(pluginSwitch: pluginSwitch, pluginPoint: point)
        }
    }

    /// Throws ``SimulatedFactoryFailure`` when this switch's factory is set to fail.
    func build(_ pluginSwitch: PluginSwitch) throws(SimulatedFactoryFailure) {
        if !failingFactories.isEmpty, failingFactories.contains(pluginSwitch.key) {
            throw SimulatedFactoryFailure(pluginSwitch: pluginSwitch)
        }
    }
}

/// A plugin crashed while the trip used it (a simulated crash: ``Faults/crashIn``).
///
/// A real crash ends the process; the library throws instead, so a test kit sees which plugin it was, and
/// `rider-sample` ends the process without ending its session, as a crash would.
public struct SimulatedCrash: Error, Sendable, Hashable, CustomStringConvertible {
    public let pluginSwitch: PluginSwitch
    public let pluginPoint: String

    public var description: String {
        "simulated crash in the plugin of \(pluginSwitch.key) at plugin point \(pluginPoint)"
    }
}

/// A plugin factory refused to build (a simulated failure: ``Faults/failingFactories``).
public struct SimulatedFactoryFailure: Error, Sendable, Hashable, CustomStringConvertible {
    public let pluginSwitch: PluginSwitch

    public var description: String { "simulated failure of the factory of \(pluginSwitch.key)" }
}

/// Where the app reads experiment values: a ``FlagClient`` in the app, the code defaults in tests and the
/// combination matrix.
public protocol ExperimentValues: Sendable {
    /// The value of an experiment flag for the current unit.
    func value<Value>(of flag: ExperimentFlag<Value>) -> Value
}

extension FlagClient: ExperimentValues {}

/// Every experiment at its code default (what the app serves without a snapshot).
public struct CodeDefaults: ExperimentValues {
    public init() {}

    public func value<Value>(of flag: ExperimentFlag<Value>) -> Value { flag.defaultValue }
}
