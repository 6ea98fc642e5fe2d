public import SwitchyardClient

/// A place in the app where optional plugins plug in: an ordered list of plugin factories in front of a core
/// flow that always works.
///
/// ```swift
/// let feed = PluginPoint<FeedContext, any FeedPlugin>("home_feed", states: client, factories: [
///     FeedPromosFactory(promotions: promotions),
///     FeedNewsFactory(),
/// ])
/// if let plugin = feed.createPlugin(for: context) {
///     plugin.render(into: view)
/// } else {
///     renderCoreFeed(into: view)        // the core flow
/// }
/// ```
///
/// The point tries its factories in order: the first whose switch is on and which is applicable to the input
/// serves; a factory that throws is skipped (and reported), and the next eligible one is used; when none
/// serves, the result is nil: the core flow. Kill switches (the master and the point's group) act through the
/// switch states, so a killed point always yields the core flow.
///
/// Declare the same switches, in the same order, in the flag file's `plugin_points`; ``declarationProblems(in:)``
/// checks that they agree. For plugins that stay on screen (layers, cards, widgets), hold the point in a
/// ``PluginHost``: it detaches a plugin the moment its switch turns off.
public struct PluginPoint<Input, Plugin> {
    /// The point's name, as in the flag file.
    public let name: String
    /// The factories, in the order the point tries them.
    public let factories: [any PluginFactory<Input, Plugin>]
    /// Where switch states come from.
    public let states: any SwitchStates

    public init(_ name: String, states: any SwitchStates, factories: [any PluginFactory<Input, Plugin>]) {
        self.name = name
        self.states = states
        self.factories = factories
    }

    /// The point's plugin switches, in order.
    public var switches: [PluginSwitch] {
        factories.map(\.pluginSwitch)
    }

    /// The same point reading other switch states: an explicit assignment in a test or the combination matrix.
    public func with(states: any SwitchStates) -> PluginPoint {
        PluginPoint(name, states: states, factories: factories)
    }

    /// The plugin that serves an input, or the core flow.
    public func route(for input: Input) -> PluginRoute<Plugin> {
        for factory in factories {
            if let plugin = build(factory, for: input) { return .plugin(plugin, factory.pluginSwitch) }
        }
        return .coreFlow
    }

    /// The first plugin whose switch is on and which applies to the input; nil means the core flow.
    public func createPlugin(for input: Input) -> Plugin? {
        route(for: input).plugin
    }

    /// Every plugin whose switch is on and which applies to the input, in the point's order (for points that
    /// combine plugins, such as the cards of a feed). Empty means the core flow.
    public func createPlugins(for input: Input) -> [Plugin] {
        factories.compactMap { build($0, for: input) }
    }

    /// ``createPlugins(for:)`` with the switch that enabled each plugin: which plugins serve, for logs and
    /// tests.
    public func servingPlugins(for input: Input) -> [(plugin: Plugin, pluginSwitch: PluginSwitch)] {
        factories.compactMap { factory in build(factory, for: input).map { ($0, factory.pluginSwitch) } }
    }

    /// The switches whose plugins would be tried for an input, in order: on and applicable. Builds nothing.
    public func eligibleSwitches(for input: Input) -> [PluginSwitch] {
        factories.filter { states.isEnabled($0.pluginSwitch) && $0.isApplicable(to: input) }.map(\.pluginSwitch)
    }

    private func build(_ factory: any PluginFactory<Input, Plugin>, for input: Input) -> Plugin? {
        guard states.isEnabled(factory.pluginSwitch), factory.isApplicable(to: input) else { return nil }
        return construct(factory, for: input)
    }

    /// Builds an eligible factory's plugin: tells the states first, reports a factory that throws (nil then).
    func construct(_ factory: any PluginFactory<Input, Plugin>, for input: Input) -> Plugin? {
        let pluginSwitch = factory.pluginSwitch
        states.willCreatePlugin(for: pluginSwitch, at: name)
        do {
            return try factory.build(for: input)
        } catch {
            states.pluginFactoryFailed(for: pluginSwitch, at: name, error: error)
            return nil
        }
    }
}

@available(
    *, unavailable, message: "a plugin point holds factories that need not be Sendable; keep it where it is used"
)
extension PluginPoint: Sendable {}

/// Where a plugin point routes an input: to a plugin (and the switch that enabled it) or to the core flow.
public enum PluginRoute<Plugin> {
    /// A plugin serves, enabled by this switch.
    case plugin(Plugin, PluginSwitch)
    /// No plugin serves: the app runs its core flow.
    case coreFlow

    /// The plugin, or nil for the core flow.
    public var plugin: Plugin? {
        if case .plugin(let plugin, _) = self { return plugin }
        return nil
    }

    /// The switch that enabled the plugin, or nil for the core flow.
    public var pluginSwitch: PluginSwitch? {
        if case .plugin(_, let pluginSwitch) = self { return pluginSwitch }
        return nil
    }

    public var isCoreFlow: Bool { plugin == nil }
}

extension PluginRoute: Sendable where Plugin: Sendable {}

/// Whether a plugin point serves one plugin or every eligible one: how the app uses the point, which a
/// ``PluginHost`` and the combination matrix both need to know.
public enum PluginServing: Sendable, Hashable {
    /// The first eligible plugin in the declared order serves (``PluginPoint/route(for:)``): a slot on a screen.
    case firstEligible
    /// Every eligible plugin serves, in the declared order (``PluginPoint/createPlugins(for:)``): the cards of a
    /// feed, the layers of a map.
    case everyEligible
}
