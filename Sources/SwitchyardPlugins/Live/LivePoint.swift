/// A plugin point held live by a ``PluginHost``: the plugins attached for its input, kept current as switches
/// change.
///
/// ```swift
/// let feed = host.add(app.homeFeed, input: rider, serving: .everyEligible)
/// feed.plugins              // the cards attached, in the declared order; empty: the core flow
/// feed.update(input: rider) // the rider took a trip: re-route this point now
/// ```
public final class LivePoint<Input, Plugin> {
    /// The plugin point as the app built it.
    public let point: PluginPoint<Input, Plugin>
    /// One plugin or every eligible one.
    public let serving: PluginServing
    /// What the point routes.
    public private(set) var input: Input

    private weak var host: PluginHost?
    private var attachments: [Attachment] = []

    struct Attachment {
        /// The factory's index: its place in the point's order.
        let position: Int
        let pluginSwitch: PluginSwitch
        let plugin: Plugin
        let scope: PluginScope
    }

    init(point: PluginPoint<Input, Plugin>, input: Input, serving: PluginServing, host: PluginHost) {
        self.point = point
        self.input = input
        self.serving = serving
        self.host = host
    }

    /// The point's name.
    public var name: String { point.name }

    /// The plugins attached, in the point's order; empty means the core flow.
    public var plugins: [Plugin] { attachments.map(\.plugin) }

    /// The plugin attached to a single-plugin point (the first, for a combining point); nil means the core flow.
    public var plugin: Plugin? { attachments.first?.plugin }

    /// The switches of the plugins attached, in the point's order.
    public var attachedSwitches: [PluginSwitch] { attachments.map(\.pluginSwitch) }

    /// Whether no plugin is attached: the app shows the point's core flow.
    public var isCoreFlow: Bool { attachments.isEmpty }

    /// What each attached plugin registered with its scope, by switch key (for tests and debug screens).
    public var registrations: [String: [String]] {
        Dictionary(uniqueKeysWithValues: attachments.map { ($0.pluginSwitch.key, $0.scope.registered) })
    }

    /// Changes the input and re-routes this point now, in one step (after the current one, when called from
    /// inside a step).
    public func update(input: Input) {
        self.input = input
        host?.perform("input") { step, states in settle(states, in: step) }
    }
}

extension LivePoint: HostedPoint {
    func settle(_ states: any SwitchStates, in step: StepRecord) {
        let routed = point.with(states: states)
        let factories = point.factories
        func isEligible(_ position: Int) -> Bool {
            let factory = factories[position]
            return states.isEnabled(factory.pluginSwitch) && factory.isApplicable(to: input)
        }

        switch serving {
        case .everyEligible:
            // Detach what stopped serving, last first; then attach what started, in the declared order.
            var index = attachments.count - 1
            while index >= 0 {
                if !isEligible(attachments[index].position) {
                    detach(attachments.remove(at: index), in: step)
                }
                index -= 1
            }
            var next = 0
            for position in factories.indices {
                if next < attachments.count && attachments[next].position == position {
                    next += 1
                    continue
                }
                guard isEligible(position), let plugin = routed.construct(factories[position], for: input) else {
                    continue
                }
                if let attachment = attach(plugin, position: position, states: states, in: step) {
                    attachments.insert(attachment, at: next)
                    next += 1
                }
            }
        case .firstEligible:
            // The first eligible plugin that builds and attaches serves; the one attached stays while it is that one.
            for position in factories.indices where isEligible(position) {
                if attachments.first?.position == position { return }
                guard let plugin = routed.construct(factories[position], for: input) else { continue }
                // The slot is freed before the next plugin attaches.
                if !attachments.isEmpty { detach(attachments.removeFirst(), in: step) }
                if let attachment = attach(plugin, position: position, states: states, in: step) {
                    attachments = [attachment]
                    return
                }
            }
            if !attachments.isEmpty { detach(attachments.removeFirst(), in: step) }
        }
    }

    func detachAll(in step: StepRecord) {
        while let last = attachments.popLast() { detach(last, in: step) }
    }

    private func attach(_ plugin: Plugin, position: Int, states: any SwitchStates, in step: StepRecord) -> Attachment? {
        let pluginSwitch = point.factories[position].pluginSwitch
        let scope = PluginScope(pluginPoint: name, pluginSwitch: pluginSwitch, position: position)
        let pointName = name
        scope.onLateRegistration = { [weak host] what in
            host?.lateRegistration(what, point: pointName, pluginSwitch: pluginSwitch)
        }
        if let live = plugin as? any LivePlugin {
            do {
                try live.attach(to: scope)
            } catch {
                scope.release()
                states.pluginFactoryFailed(for: pluginSwitch, at: name, error: PluginAttachFailure(underlying: error))
                step.emit(.attachFailed, name, pluginSwitch, "\(error)")
                step.watch(plugin, point: name, pluginSwitch: pluginSwitch)
                return nil
            }
        }
        step.emit(.attached, name, pluginSwitch)
        return Attachment(position: position, pluginSwitch: pluginSwitch, plugin: plugin, scope: scope)
    }

    private func detach(_ attachment: Attachment, in step: StepRecord) {
        (attachment.plugin as? any LivePlugin)?.detach()
        attachment.scope.release()
        step.emit(.detached, name, attachment.pluginSwitch)
        step.watch(attachment.plugin, point: name, pluginSwitch: attachment.pluginSwitch)
    }
}

@available(*, unavailable, message: "a live point belongs to its host's executor")
extension LivePoint: Sendable {}
