import Foundation

/// Keeps live plugin points current: holds what each point serves for its input, follows the client's changes,
/// and when a plugin stops being eligible (its switch turned off, a kill switch killed, the crash-loop guard
/// holding it off) detaches it at once and attaches the next eligible plugin, or leaves the point to its core
/// flow; when a switch turns on, it attaches in the point's declared order.
///
/// ```swift
/// @MainActor final class HomeScreen {
///     let host: PluginHost
///     let map: LivePoint<MapScene, any MapLayer>
///
///     init(client: FlagClient, app: RiderApp, scene: MapScene) {
///         host = PluginHost(states: client)
///         map = host.add(app.mapLayers, input: scene, serving: .everyEligible)
///     }
///
///     func follow(_ client: FlagClient) async {
///         await host.run(changes: client.changes)     // on the main actor: every attach and detach runs there
///     }
/// }
/// ```
///
/// Each change is applied in **one step** on the executor of the task that calls ``run(changes:isolation:)``
/// (or ``update(cause:)``): every point is re-routed from one frozen view of the switch states, each point's
/// detaches run before its attaches, and the step runs to its end before anything else runs on that executor, so
/// a screen never shows an intermediate state. A change that arrives while a step is applied waits for the next
/// step; an update asked for from inside a step (a plugin's attach changing an input) runs right after it.
///
/// Plugins that conform to ``LivePlugin`` get `attach(to:)` and `detach()` calls with a ``PluginScope``; other
/// plugins are held and released without calls. A plugin whose attach throws is skipped like a factory that
/// throws (and reported the same way). Single-plugin points (``PluginServing/firstEligible``) hold the first
/// eligible plugin, combining points (``PluginServing/everyEligible``) every eligible one in the declared order; a
/// plugin that stays eligible stays attached (it is never attached twice).
///
/// Not thread-safe and not `Sendable`: create it, add its points and run it on one executor (the main actor for
/// UI).
public final class PluginHost {
    /// Where the host reads switch states: a ``FlagClient``, or an explicit assignment in tests.
    public let states: any SwitchStates
    /// Called with every attach, detach, failed attach and leak, on the host's executor. Without one, debug
    /// builds print leaks to standard error.
    public var onEvent: ((PluginHostEvent) -> Void)?
    /// Called after every step, once every point settled.
    public var onStep: ((PluginHostStep) -> Void)?
    /// Whether to check, after each detach, that a plugin (a class instance) is no longer referenced. On in debug
    /// builds.
    public var checksLeaks: Bool = _isDebugAssertConfiguration()
    /// Steps run so far.
    public private(set) var stepCount: UInt64 = 0
    /// Whether ``close()`` ran: the host attaches nothing any more.
    public private(set) var isClosed = false

    /// At most this many steps run back to back when steps keep asking for updates; then the host stops and
    /// reports it (a plugin whose attach changes what it depends on, say).
    static let maximumFollowUps = 16

    private var points: [any HostedPoint] = []
    private var applying = false
    private var followUp: String?
    private var closeRequested = false

    /// A host reading these switch states.
    ///
    /// - Parameters:
    ///   - states: a ``FlagClient`` (whose ``FlagClient/changes`` ``run(changes:isolation:)`` follows), or
    ///     ``SwitchAssignment``s in tests.
    ///   - onEvent: every attach, detach, failed attach and leak (see ``PluginHostEvent``).
    public init(states: any SwitchStates, onEvent: ((PluginHostEvent) -> Void)? = nil) {
        self.states = states
        self.onEvent = onEvent
    }

    /// Adds a live point: a plugin point and the input it serves. Attaches nothing until the next step
    /// (``update(cause:)``, or the first step of ``run(changes:isolation:)``).
    ///
    /// - Parameters:
    ///   - point: the plugin point as the app builds it; the host reads switch states from its own `states`.
    ///   - input: what the point routes (the map's scene, the rider); change it with ``LivePoint/update(input:)``.
    ///   - serving: the first eligible plugin (a slot) or every eligible one (a feed, a map).
    /// - Returns: the live point, to read what serves and to change its input.
    @discardableResult
    public func add<Input, Plugin>(
        _ point: PluginPoint<Input, Plugin>, input: Input,
        serving: PluginServing = .firstEligible
    ) -> LivePoint<Input, Plugin> {
        let live = LivePoint(point: point, input: input, serving: serving, host: self)
        points.append(live)
        return live
    }

    /// The names of the live points, in the order added.
    public var pointNames: [String] { points.map(\.name) }

    /// Applies the current switch states now, in one step: every point detaches what stopped serving and attaches
    /// what started.
    ///
    /// - Parameter cause: why, for events (`update` by default).
    /// - Returns: what the step did (the last step, when updates asked for during it ran right after it); nil when
    ///   the host is closed or the call came from inside a step (the update then runs right after that step).
    @discardableResult
    public func update(cause: String = "update") -> PluginHostStep? {
        perform(cause) { step, states in
            for point in points { point.settle(states, in: step) }
        }
    }

    /// Applies the current states, then one step per change until the changes end or the task is cancelled, on
    /// the caller's executor (the main actor when called from it). Leaves the plugins attached when it returns:
    /// call ``close()`` when their owner goes away.
    ///
    /// ```swift
    /// Task { @MainActor in await screen.host.run(changes: client.changes) }
    /// ```
    ///
    /// - Parameter changes: `client.changes`, taken before the call so nothing between the first step and the
    ///   subscription is missed.
    public func run(changes: AsyncStream<FlagsChange>, isolation: isolated (any Actor)? = #isolation) async {
        update(cause: "start")
        for await change in changes {
            guard !isClosed, !Task.isCancelled else { break }
            update(cause: change.cause.description)
        }
    }

    /// Detaches every plugin of every point (points last added first, each point's plugins last first) and
    /// closes the host: later updates attach nothing. Call it when the owner of the points goes away (the
    /// screen closes, the app terminates).
    public func close() {
        if applying {
            closeRequested = true
            return
        }
        perform("close") { step, _ in
            for point in points.reversed() { point.detachAll(in: step) }
        }
        isClosed = true
    }

    // MARK: Steps

    /// Runs `body` as one step, then the follow-ups asked for during it.
    @discardableResult
    func perform(_ cause: String, _ body: (StepRecord, any SwitchStates) -> Void) -> PluginHostStep? {
        guard !isClosed else { return nil }
        guard !applying else {
            if followUp == nil { followUp = cause }
            return nil
        }
        applying = true
        defer { applying = false }
        var result: PluginHostStep? = runStep(cause, body)
        var followUps = 0
        while let next = followUp, !isClosed {
            followUp = nil
            if closeRequested { break }
            followUps += 1
            guard followUps <= Self.maximumFollowUps else {
                printWarning(
                    "switchyard: plugin host: updates kept being asked for during steps (the last: \(next)); "
                        + "stopped after \(Self.maximumFollowUps) follow-up steps")
                break
            }
            result = runStep(next) { step, states in
                for point in points { point.settle(states, in: step) }
            }
        }
        if closeRequested {
            closeRequested = false
            applying = false
            close()
        }
        return result
    }

    private func runStep(_ cause: String, _ body: (StepRecord, any SwitchStates) -> Void) -> PluginHostStep {
        stepCount += 1
        let step = StepRecord(number: stepCount, cause: cause, host: self)
        body(step, states.frozen())
        if !step.leakCandidates.isEmpty { step.checkLeaks() }
        let summary = PluginHostStep(
            number: step.number, cause: cause, attached: step.attached, detached: step.detached,
            failed: step.failed, leaked: step.leaked)
        onStep?(summary)
        return summary
    }

    /// Delivers an event to `onEvent`, or prints a leak in debug builds when nobody listens.
    func emit(_ event: PluginHostEvent) {
        if let onEvent {
            onEvent(event)
        } else if event.kind == .leaked && _isDebugAssertConfiguration() {
            printWarning("switchyard: \(event)")
        }
    }

    /// A registration made after its scope was released (a timer of a detached plugin firing, say).
    func lateRegistration(_ what: String, point: String, pluginSwitch: PluginSwitch) {
        emit(
            PluginHostEvent(
                kind: .leaked, pluginPoint: point, pluginSwitch: pluginSwitch, step: stepCount,
                cause: "late registration",
                message: "registered '\(what)' after its detach; released it at once. Register only while attached"))
    }

    private func printWarning(_ text: String) {
        FileHandle.standardError.write(Data((text + "\n").utf8))
    }
}

@available(*, unavailable, message: "a plugin host belongs to one executor (the main actor for UI)")
extension PluginHost: Sendable {}

/// What the host asks of a live point, whatever its input and plugin types.
protocol HostedPoint: AnyObject {
    var name: String { get }
    /// Detaches what stopped serving and attaches what started, from these states.
    func settle(_ states: any SwitchStates, in step: StepRecord)
    /// Detaches every plugin, last first.
    func detachAll(in step: StepRecord)
}

/// One step in progress: its counts, and the plugins to check for leaks once every point settled.
final class StepRecord {
    let number: UInt64
    let cause: String
    unowned let host: PluginHost
    var attached = 0
    var detached = 0
    var failed = 0
    var leaked = 0
    var leakCandidates: [(plugin: WeakObject, point: String, pluginSwitch: PluginSwitch, type: String)] = []

    init(number: UInt64, cause: String, host: PluginHost) {
        self.number = number
        self.cause = cause
        self.host = host
    }

    func emit(_ kind: PluginHostEvent.Kind, _ point: String, _ pluginSwitch: PluginSwitch, _ message: String? = nil) {
        switch kind {
        case .attached: attached += 1
        case .detached: detached += 1
        case .attachFailed: failed += 1
        default: leaked += 1
        }
        host.emit(
            PluginHostEvent(
                kind: kind, pluginPoint: point, pluginSwitch: pluginSwitch, step: number, cause: cause, message: message
            ))
    }

    /// Remembers a detached plugin to check once the step holds no reference to it.
    func watch(_ plugin: some Any, point: String, pluginSwitch: PluginSwitch) {
        guard host.checksLeaks, type(of: plugin as Any) is AnyClass else { return }
        leakCandidates.append((WeakObject(plugin as AnyObject), point, pluginSwitch, "\(type(of: plugin as Any))"))
    }

    /// Reports the detached plugins something still holds.
    func checkLeaks() {
        let candidates = leakCandidates
        leakCandidates = []
        for candidate in candidates where candidate.plugin.object != nil {
            emit(
                .leaked, candidate.point, candidate.pluginSwitch,
                "the plugin (\(candidate.type)) is still referenced after its detach: something it registered outside its scope "
                    + "(an observer, a timer, a layer, a closure) still holds it. Register it with the scope, which releases it on detach"
            )
        }
    }
}

/// A weak reference, to see whether an object outlived its detach.
struct WeakObject {
    weak var object: AnyObject?

    init(_ object: AnyObject) { self.object = object }
}
