public import SwitchyardClient

/// Builds one optional plugin for a plugin point, behind its plugin switch.
///
/// ```swift
/// struct FeedPromosFactory: PluginFactory {
///     static let pluginSwitch = PluginSwitch("plugin_switch_feed_promos")
///     var pluginSwitch: PluginSwitch { Self.pluginSwitch }
///     let promotions: PromotionService
///
///     func isApplicable(to feed: FeedContext) -> Bool { feed.hasPromotionSlot }
///     func build(for feed: FeedContext) throws -> any FeedPlugin { try PromosPlugin(feed, promotions) }
/// }
/// ```
///
/// A factory should be cheap to ask: `isApplicable(to:)` runs whenever the point routes and the switch is on.
/// `build(for:)` may throw; the point then reports the failure and tries the next eligible factory.
public protocol PluginFactory<Input, Plugin> {
    /// What the plugin point passes to decide and build (the RIBs "plugin point input").
    associatedtype Input
    /// What the plugin point returns (a protocol every plugin of the point implements, or a closure).
    associatedtype Plugin

    /// The switch that gates this plugin.
    var pluginSwitch: PluginSwitch { get }

    /// Whether the plugin applies to this input (when its switch is on). Defaults to true.
    func isApplicable(to input: Input) -> Bool

    /// Builds the plugin.
    /// - Throws: any error; the plugin point skips this factory and reports the error.
    func build(for input: Input) throws -> Plugin
}

extension PluginFactory {
    public func isApplicable(to input: Input) -> Bool { true }
}

/// A plugin factory made of closures, for small plugins and tests.
public struct PluginFactoryOf<Input, Plugin>: PluginFactory {
    public let pluginSwitch: PluginSwitch
    private let applicable: (Input) -> Bool
    private let builder: (Input) throws -> Plugin

    /// - Parameters:
    ///   - pluginSwitch: the switch that gates the plugin.
    ///   - isApplicable: whether the plugin applies to an input; always by default.
    ///   - build: builds the plugin; may throw.
    public init(
        _ pluginSwitch: PluginSwitch, isApplicable: @escaping (Input) -> Bool = { _ in true },
        build: @escaping (Input) throws -> Plugin
    ) {
        self.pluginSwitch = pluginSwitch
        applicable = isApplicable
        builder = build
    }

    public func isApplicable(to input: Input) -> Bool { applicable(input) }
    public func build(for input: Input) throws -> Plugin { try builder(input) }
}
