public import SwitchyardPlugins

/// One plugin point as the matrix drives it: its name, its switches in the order the code tries them, the inputs
/// to route, and how to route one input over some switch states.
///
/// Most apps hand ``Matrix`` their ``PluginPoint``s (``Matrix/add(_:inputs:serving:)``), which makes one of these.
/// Build one yourself for a plugin point that is not a `PluginPoint` (a hand-written router, a point of another
/// framework): the matrix only needs to know which plugins served.
///
/// ```swift
/// let legacyBanner = MatrixPoint(name: "home_banner", switches: [promoBanner, newsBanner],
///                                inputs: [HomeScreen.sample]) { states, screen in
///     LegacyBannerRouter(states: states).banner(for: screen)?.pluginSwitch.map { [$0] } ?? []
/// }
/// matrix.add(legacyBanner)
/// ```
public struct MatrixPoint {
    /// Whether a point serves one plugin or all of them (``PluginServing``, shared with ``PluginHost``).
    public typealias Serving = PluginServing

    /// The point's name, as in the flag file.
    public let name: String
    /// Its plugin switches, in the order the code tries them.
    public let switches: [PluginSwitch]
    public let serving: Serving
    /// Each input, described for failure messages.
    public let inputDescriptions: [String]
    let isApplicable: (_ pluginSwitch: PluginSwitch, _ input: Int) -> Bool
    /// Routes one input and appends the switches of the plugins that served.
    let resolve: (_ states: CombinationStates, _ input: Int, _ served: inout [PluginSwitch]) throws -> Void
    /// Adds the point, for one input and under a name of its own, to a plugin host (for the transition check), and
    /// returns how to read what it holds; nil for points that are not a ``PluginPoint``.
    let live: ((_ host: PluginHost, _ input: Int, _ name: String) -> () -> [PluginSwitch])?

    /// A plugin point the matrix cannot look into: it routes each input itself and says which plugins served.
    ///
    /// - Parameters:
    ///   - name: the point's name in the flag file.
    ///   - switches: its plugin switches, in the order the code tries them.
    ///   - serving: one plugin (`firstEligible`) or every eligible plugin (`everyEligible`).
    ///   - inputs: the inputs to route in every combination (each is routed separately).
    ///   - isApplicable: whether a switch's plugin applies to an input; always, by default.
    ///   - resolve: routes an input over the given switch states and returns the switches of the plugins that
    ///     served, in order; empty for the core flow. May throw (a failure of the point).
    public init<Input>(
        name: String, switches: [PluginSwitch], serving: Serving = .firstEligible, inputs: [Input],
        isApplicable: @escaping (PluginSwitch, Input) -> Bool = { _, _ in true },
        resolve: @escaping (any SwitchStates, Input) throws -> [PluginSwitch]
    ) {
        self.name = name
        self.switches = switches
        self.serving = serving
        inputDescriptions = inputs.map(Self.describe)
        self.isApplicable = { pluginSwitch, input in isApplicable(pluginSwitch, inputs[input]) }
        self.resolve = { states, input, served in served.append(contentsOf: try resolve(states, inputs[input])) }
        live = nil
    }

    /// A ``PluginPoint`` with the inputs to route: the matrix reads its factories' switches and applicability,
    /// and routes each input through the point itself.
    ///
    /// - Parameters:
    ///   - point: the point, as the app builds it (the switch states it holds are replaced per combination).
    ///   - inputs: the inputs to route in every combination; give one per kind of input whose applicability
    ///     differs (a rider with and without a promotion slot).
    ///   - serving: `firstEligible` when the app calls `route(for:)` / `createPlugin(for:)`, `everyEligible`
    ///     when it calls `createPlugins(for:)`.
    public init<Input, Plugin>(_ point: PluginPoint<Input, Plugin>, inputs: [Input], serving: Serving = .firstEligible)
    {
        name = point.name
        switches = point.switches
        self.serving = serving
        inputDescriptions = inputs.map(Self.describe)
        let factories = point.factories
        isApplicable = { pluginSwitch, input in
            factories.first { $0.pluginSwitch == pluginSwitch }?.isApplicable(to: inputs[input]) ?? false
        }
        resolve = { states, input, served in
            let routed = point.with(states: states)
            switch serving {
            case .firstEligible:
                if let pluginSwitch = routed.route(for: inputs[input]).pluginSwitch { served.append(pluginSwitch) }
            case .everyEligible:
                _ = routed.createPlugins(for: inputs[input])
                states.recorder?.appendServed(to: &served)
            }
        }
        live = { host, input, name in
            let held = host.add(
                PluginPoint(name, states: point.states, factories: factories), input: inputs[input], serving: serving)
            return { held.attachedSwitches }
        }
    }

    /// How inputs appear in messages: their description, cut to 80 characters.
    static func describe(_ input: some Any) -> String {
        let text = String(describing: input)
        return text.count <= 80 ? text : String(text.prefix(77)) + "..."
    }
}

@available(*, unavailable, message: "a matrix point holds plugin factories that need not be Sendable")
extension MatrixPoint: Sendable {}
