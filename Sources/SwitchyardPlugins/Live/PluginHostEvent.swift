/// What a ``PluginHost`` did to one plugin: attached it, detached it, skipped it because its attach threw, or
/// found it leaking after its detach.
public struct PluginHostEvent: Sendable, Hashable, CustomStringConvertible {
    /// What happened; new kinds may be added.
    public struct Kind: Sendable, Hashable, CustomStringConvertible {
        private let name: String
        private init(_ name: String) { self.name = name }

        /// The plugin started serving: built, and its `attach(to:)` returned.
        public static let attached = Kind("attached")
        /// The plugin stopped serving: its `detach()` ran and its scope was released.
        public static let detached = Kind("detached")
        /// The plugin's `attach(to:)` threw: its scope was released and the plugin skipped.
        public static let attachFailed = Kind("attachFailed")
        /// The plugin registered something after its detach (released at once), or (debug builds) it is still
        /// referenced after its detach.
        public static let leaked = Kind("leaked")

        public var description: String { name }
    }

    public let kind: Kind
    /// The plugin point's name.
    public let pluginPoint: String
    /// The switch of the plugin.
    public let pluginSwitch: PluginSwitch
    /// The host's step that did it (1 for the first).
    public let step: UInt64
    /// Why the step ran: a ``FlagsChange`` cause (`snapshotInstalled`), `start`, `input`, `update`, `detachAll`.
    public let cause: String
    /// What failed or leaked, for `attachFailed` and `leaked`.
    public let message: String?

    public init(
        kind: Kind, pluginPoint: String, pluginSwitch: PluginSwitch, step: UInt64, cause: String, message: String? = nil
    ) {
        self.kind = kind
        self.pluginPoint = pluginPoint
        self.pluginSwitch = pluginSwitch
        self.step = step
        self.cause = cause
        self.message = message
    }

    /// `detached home_feed/plugin_switch_feed_promos (step 3: snapshotInstalled)`.
    public var description: String {
        "\(kind) \(pluginPoint)/\(pluginSwitch.key) (step \(step): \(cause))" + (message.map { ": \($0)" } ?? "")
    }
}

/// What one step of a ``PluginHost`` did, once every point settled.
public struct PluginHostStep: Sendable, Hashable, CustomStringConvertible {
    /// The step's number (1 for the first).
    public let number: UInt64
    /// Why it ran (see ``PluginHostEvent/cause``).
    public let cause: String
    /// Plugins attached, detached, skipped (attach threw) and found leaking in the step.
    public let attached: Int
    public let detached: Int
    public let failed: Int
    public let leaked: Int

    /// Whether the step changed what any point serves.
    public var changedAnything: Bool { attached + detached > 0 }

    public var description: String {
        "step \(number) (\(cause)): \(attached) attached, \(detached) detached"
            + (failed > 0 ? ", \(failed) failed to attach" : "") + (leaked > 0 ? ", \(leaked) leaked" : "")
    }
}
