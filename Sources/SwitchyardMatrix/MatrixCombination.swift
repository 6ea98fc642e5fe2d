public import SwitchyardMatrixPlan
public import SwitchyardPlugins

/// One combination, as a flow sees it: the switch states to build the app over, and what is set.
///
/// ```swift
/// matrix.flow("trip completes") { combination in
///     let outcome = try RiderApp(states: combination.states).runTrip(.standard)
///     guard outcome.stages.last == .completed else { throw FlowFailure("the trip stopped at \(outcome.stages)") }
/// }
/// ```
public struct MatrixCombination: Sendable, CustomStringConvertible {
    /// The states plugin points read: a switch is on when it is on in the combination and no kill switch covering
    /// it is killed.
    public let states: any SwitchStates
    /// Its number in the matrix's order.
    public let index: UInt64
    /// The gates set: switches on, kill switches killed.
    public let gates: GateSet
    let context: MatrixContext
    let effective: [UInt64]

    var layout: MatrixLayout { context.layout }

    /// Whether a plugin switch is effectively on.
    public func isOn(_ pluginSwitch: PluginSwitch) -> Bool {
        states.isEnabled(pluginSwitch)
    }

    /// Whether a kill switch is killed (`master` for the master kill switch).
    public func isKilled(_ killSwitch: String) -> Bool {
        layout.gate(named: killSwitch).map(gates.contains) ?? false
    }

    /// Whether every switch is effectively off: every plugin point must yield its core flow.
    public var isCoreOnly: Bool {
        effective.allSatisfy { $0 == 0 }
    }

    /// The combination's name, as `SWITCHYARD_MATRIX_COMBINATION` takes it.
    public var name: String { layout.name(of: gates) }

    /// `on plugin_switch_feed_promos; killed kill_home_feed`.
    public var description: String { layout.describe(gates) }
}

/// A failure of a flow check, with what went wrong: throw it from a flow.
///
/// ```swift
/// guard outcome.charged == outcome.quote else { throw FlowFailure("charged \(outcome.charged), quoted \(outcome.quote)") }
/// ```
public struct FlowFailure: Error, Sendable, CustomStringConvertible {
    public let description: String

    public init(_ description: String) {
        self.description = description
    }
}

/// What every combination of one matrix shares: the gates, the plan, the slot table.
final class MatrixContext: Sendable {
    let layout: MatrixLayout
    let plan: MatrixPlan
    let table: SlotTable

    init(plan: MatrixPlan) {
        layout = plan.layout
        self.plan = plan
        table = SlotTable(layout: plan.layout)
    }
}

/// Maps a switch's process-wide slot to its gate: the matrix's states answer `isEnabled` without a string lookup.
final class SlotTable: Sendable {
    let gateOfSlot: [Int32]

    init(layout: MatrixLayout) {
        var table: [Int32] = []
        for gate in 0..<layout.switchCount {
            let slot = Int(PluginSwitch(layout.gates[gate].key).slot)
            if table.count <= slot { table.append(contentsOf: repeatElement(-1, count: slot + 1 - table.count)) }
            table[slot] = Int32(gate)
        }
        gateOfSlot = table
    }

    /// The switch's gate, or nil when the flag file does not declare it as a plugin switch.
    @inline(__always)
    func gate(of pluginSwitch: PluginSwitch) -> Int? {
        let slot = Int(pluginSwitch.slot)
        guard slot < gateOfSlot.count else { return nil }
        let gate = gateOfSlot[slot]
        return gate < 0 ? nil : Int(gate)
    }
}

/// What a plugin point told its switch states while routing one input: plugins built and factories that threw.
final class Recorder: Sendable {
    private struct Events {
        var built: [PluginSwitch] = []
        var failures: [(PluginSwitch, String)] = []
    }

    private let events = LockedBox(Events())

    func reset() {
        events.withLock { events in
            events.built.removeAll(keepingCapacity: true)
            events.failures.removeAll(keepingCapacity: true)
        }
    }

    func willCreate(_ pluginSwitch: PluginSwitch) {
        events.withLock { $0.built.append(pluginSwitch) }
    }

    func failed(_ pluginSwitch: PluginSwitch, _ error: any Error) {
        let message = String(describing: error)
        events.withLock { $0.failures.append((pluginSwitch, message)) }
    }

    /// Whether a factory threw.
    var hasFailures: Bool {
        events.withLock { !$0.failures.isEmpty }
    }

    /// Factories that threw, with the error.
    var failures: [(PluginSwitch, String)] {
        events.withLock { $0.failures }
    }

    /// Appends the plugins built and not failed, in order: what `createPlugins` returned.
    func appendServed(to served: inout [PluginSwitch]) {
        events.withLock { events in
            for built in events.built where !events.failures.contains(where: { $0.0 == built }) { served.append(built) }
        }
    }
}

/// The switch states of one combination: effective switch bits by gate, read through the slot table.
struct CombinationStates: SwitchStates {
    let effective: [UInt64]
    let table: SlotTable
    let recorder: Recorder?

    @inline(__always)
    func isEnabled(_ pluginSwitch: PluginSwitch) -> Bool {
        guard let gate = table.gate(of: pluginSwitch) else { return false }
        return effective[gate >> 6] & (1 << UInt64(gate & 63)) != 0
    }

    func willCreatePlugin(for pluginSwitch: PluginSwitch, at pluginPoint: String) {
        recorder?.willCreate(pluginSwitch)
    }

    func pluginFactoryFailed(for pluginSwitch: PluginSwitch, at pluginPoint: String, error: any Error) {
        recorder?.failed(pluginSwitch, error)
    }
}
