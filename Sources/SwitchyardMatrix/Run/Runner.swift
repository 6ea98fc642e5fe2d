import SwitchyardMatrixPlan
import SwitchyardPlugins

/// Checks combinations in this process: routes every input of every point, compares with what the declared
/// order says must serve, runs the flows, and tallies what fails.
///
/// Single-threaded: plugin points and flows need not be thread-safe. When a ``SharedState`` is attached (in a
/// child process), it writes where it is before each point and flow, so a trap can be attributed.
final class Runner {
    let context: MatrixContext
    let points: [MatrixPoint]
    let flows: [Matrix.Flow]
    let options: Matrix.Options
    var skips: TrapSkips
    var tally: Tally
    var shared: SharedState?
    /// Called every 1,024 positions with the number done, for progress.
    var onProgress: ((UInt64) -> Void)?
    /// When set, a line per point, input and flow of each combination checked: what served, what should have.
    var trace: [String]?
    /// The messages of the kinds the last `check(collectKinds: true)` found.
    var lastMessages: [KindID: String] = [:]

    /// Per point, the switch gates in the declared order (the code's order for a point the file lacks).
    let declaredOrder: [[Int]]
    /// Per point, its switches in the declared order.
    let declaredSwitches: [[PluginSwitch]]
    /// Per point, the gate of each code switch (nil when the file does not declare it).
    let codeGates: [[Int?]]
    /// Per point and input, a bit per declared switch whose plugin is applicable to the input.
    let applicable: [[UInt64]]
    /// Per point, the declared position of each switch gate (-1 for gates of other points).
    let positionOfGate: [[Int]]
    /// For layouts of at most 64 gates: each kill switch's cover as one word, and the switch bits.
    private let coverWords: [UInt64]?
    private let switchMask: UInt64
    let recorder = Recorder()
    /// Set when the matrix checks transitions: the live points and their host.
    var transitions: TransitionChecker?
    /// Reused for every resolution: the switches a point served.
    private var served: [PluginSwitch] = []
    /// Reused for every combination: the effective switch words the states read (unique again once the
    /// combination's states are gone, so it is written in place).
    var effectiveBuffer: [UInt64]

    init(matrix: Matrix, context: MatrixContext, skips: TrapSkips = TrapSkips()) {
        self.context = context
        points = matrix.points
        flows = matrix.flows
        options = matrix.options
        self.skips = skips
        tally = Tally(pointCount: matrix.points.count)
        let layout = context.layout
        codeGates = matrix.points.map { point in point.switches.map { context.table.gate(of: $0) } }
        var declaredOrder: [[Int]] = []
        var declaredSwitches: [[PluginSwitch]] = []
        for (index, point) in matrix.points.enumerated() {
            if let declared = layout.points.first(where: { $0.name == point.name }) {
                declaredOrder.append(declared.switches)
                declaredSwitches.append(declared.switches.map { PluginSwitch(layout.gates[$0].key) })
            } else {
                let known = codeGates[index].enumerated().compactMap { position, gate in gate.map { (position, $0) } }
                declaredOrder.append(known.map(\.1))
                declaredSwitches.append(known.map { point.switches[$0.0] })
            }
        }
        self.declaredOrder = declaredOrder
        self.declaredSwitches = declaredSwitches
        applicable = matrix.points.enumerated().map { index, point in
            point.inputDescriptions.indices.map { input in
                var bits: UInt64 = 0
                for (position, pluginSwitch) in declaredSwitches[index].enumerated() where position < 64 {
                    if point.isApplicable(pluginSwitch, input) { bits |= 1 << UInt64(position) }
                }
                return bits
            }
        }
        positionOfGate = declaredOrder.map { order in
            var positions = Array(repeating: -1, count: layout.switchCount)
            for (position, gate) in order.enumerated() { positions[gate] = position }
            return positions
        }
        if layout.gateCount <= 64 {
            coverWords = layout.covers.map { cover in cover.reduce(UInt64(0)) { $0 | (1 << UInt64($1)) } }
        } else {
            coverWords = nil
        }
        switchMask = layout.switchCount >= 64 ? .max : (UInt64(1) << UInt64(layout.switchCount)) - 1
        effectiveBuffer = Array(repeating: 0, count: max(1, (layout.switchCount + 63) / 64))
        if matrix.options.transitions {
            transitions = TransitionChecker(points: matrix.points, table: context.table)
        }
    }

    /// The bit of a switch's declared position in a point; 0 for a switch the point does not declare, or declares
    /// past the 64th.
    @inline(__always)
    func declaredBit(of pluginSwitch: PluginSwitch, in pointIndex: Int) -> UInt64 {
        guard let gate = context.table.gate(of: pluginSwitch) else { return 0 }
        let position = positionOfGate[pointIndex][gate]
        return position >= 0 && position < 64 ? 1 << UInt64(position) : 0
    }

    /// The bits of the declared positions of switches a point served or attached, and whether they came in the
    /// declared order; the bits stop at the first switch out of order or undeclared (`inOrder` false).
    @inline(__always)
    func declaredMask(of switches: [PluginSwitch], in pointIndex: Int) -> (mask: UInt64, inOrder: Bool) {
        var mask: UInt64 = 0
        var last = -1
        for pluginSwitch in switches {
            guard let gate = context.table.gate(of: pluginSwitch),
                case let position = positionOfGate[pointIndex][gate],
                position > last, position < 64
            else { return (mask, false) }
            last = position
            mask |= 1 << UInt64(position)
        }
        return (mask, true)
    }

    /// The switches of each point in the order the flag file declares them (the code's, for a point the file
    /// lacks): what served-coverage bits index.
    var declaredSwitchesByPoint: [[PluginSwitch]] { declaredSwitches }

    /// The effective switch words of a combination, in the reused buffer.
    func computeEffective(_ combination: GateSet) {
        if let coverWords {
            let word = combination.words[0]
            var effective = word & switchMask
            var killed = layout.switchCount >= 64 ? 0 : word >> UInt64(layout.switchCount)
            while killed != 0 {
                effective &= ~coverWords[killed.trailingZeroBitCount]
                killed &= killed - 1
            }
            effectiveBuffer[0] = effective
        } else {
            let effective = layout.effectiveSwitches(of: combination).words
            for index in effectiveBuffer.indices {
                effectiveBuffer[index] = index < effective.count ? effective[index] : 0
            }
        }
    }

    var layout: MatrixLayout { context.layout }

    /// Checks the plan's combinations in a range.
    func run(range: Range<UInt64>) {
        let plan = context.plan
        var position = range.lowerBound
        let exhaustive = plan.isExhaustive
        while position < range.upperBound {
            let combination = exhaustive ? GateSet(words: [position]) : plan.combination(at: position)
            _ = check(combination, index: position, collectKinds: false)
            position += 1
            if position & 1023 == 0 { onProgress?(position - range.lowerBound) }
        }
        onProgress?(range.count > 0 ? UInt64(range.count) : 0)
    }

    /// Checks one combination.
    ///
    /// - Parameters:
    ///   - index: its number (or a candidate's position), kept with what fails.
    ///   - collectKinds: return the failing kinds (shrinking needs them; the main loop does not).
    /// - Returns: the kinds that failed, when collected.
    @discardableResult
    func check(_ combination: GateSet, index: UInt64, collectKinds: Bool) -> Set<KindID> {
        shared?[SharedState.Slot.position] = index
        computeEffective(combination)
        let effective = effectiveBuffer
        let size = combination.count
        var failed: Set<KindID> = []
        var failedOnce: Set<KindID> = []
        if collectKinds { lastMessages.removeAll() }

        func fail(_ kind: KindID, _ message: @autoclosure () -> String) {
            // A combination counts once per kind, however many inputs fail it.
            guard failedOnce.insert(kind).inserted else { return }
            if collectKinds {
                failed.insert(kind)
                lastMessages[kind] = message()
            }
            let isSmallest = tally.record(
                kind, Occurrence(index: index, gates: combination.words, size: size, message: message()),
                size: size, index: index)
            if isSmallest, let shared,
                let line = ChildLine(kind: kind, occurrence: tally.records[kind]!.smallest).encoded
            {
                shared.appendLine(line)
            }
        }

        func isOn(_ gate: Int) -> Bool {
            effective[gate >> 6] & (1 << UInt64(gate & 63)) != 0
        }

        var pointTrapped = false
        for (pointIndex, point) in points.enumerated() {
            var local: UInt64 = 0
            for (bit, gate) in codeGates[pointIndex].enumerated() where bit < 64 {
                if let gate, isOn(gate) { local |= 1 << UInt64(bit) }
            }
            var onMask: UInt64 = 0
            for (position, gate) in declaredOrder[pointIndex].enumerated() where position < 64 && isOn(gate) {
                onMask |= 1 << UInt64(position)
            }
            for input in point.inputDescriptions.indices {
                if !skips.points.isEmpty, skips.points.contains(.init(point: pointIndex, input: input, local: local)) {
                    pointTrapped = true
                    let kind = KindID.of(scope: pointIndex, .trapped)
                    fail(kind, skips.messages[kind] ?? "\(point.name): trapped\(Self.inputNote(point, input))")
                    continue
                }
                if let shared {
                    shared[SharedState.Slot.phaseIndex] = UInt64(pointIndex)
                    shared[SharedState.Slot.input] = UInt64(input)
                    shared[SharedState.Slot.local] = local
                    shared[SharedState.Slot.phase] = 1
                }
                recorder.reset()
                served.removeAll(keepingCapacity: true)
                do {
                    let states = CombinationStates(effective: effective, table: context.table, recorder: recorder)
                    try point.resolve(states, input, &served)
                } catch {
                    fail(
                        .of(scope: pointIndex, .threw),
                        "\(point.name): routing threw \(error)\(Self.inputNote(point, input))")
                    continue
                }
                var failedMask: UInt64 = 0
                var failures: [(PluginSwitch, String)] = []
                if recorder.hasFailures {
                    failures = recorder.failures
                    for (pluginSwitch, message) in failures {
                        failedMask |= declaredBit(of: pluginSwitch, in: pointIndex)
                        fail(
                            .of(scope: pointIndex, .factoryThrew),
                            "\(point.name): the factory of \(pluginSwitch.key) threw: \(message)\(Self.inputNote(point, input))"
                        )
                    }
                }
                // The fast path: what served is exactly what must, in order.
                let eligible = onMask & applicable[pointIndex][input] & ~failedMask
                let expected = point.serving == .firstEligible ? eligible & (0 &- eligible) : eligible
                let (servedMask, inOrder) = declaredMask(of: served, in: pointIndex)
                if servedMask != 0 {
                    tally.served[pointIndex] |= servedMask
                    shared?.markServed(pointIndex, servedMask)
                }
                if inOrder && servedMask == expected && trace == nil { continue }
                verify(
                    pointIndex, point, input: input, served: served, failures: failures, combination: combination,
                    isOn: isOn, fail: fail)
            }
        }
        shared?[SharedState.Slot.phase] = 0

        if pointTrapped {
            if !flows.isEmpty {
                tally.flowsSkipped += 1
                shared?[SharedState.Slot.flowsSkipped] += 1
            }
        } else {
            for (flowIndex, flow) in flows.enumerated() where !skips.disabledFlows.contains(flowIndex) {
                let scope = points.count + flowIndex
                if !skips.flows.isEmpty, skips.flows.contains(.init(flow: flowIndex, effective: effective)) {
                    let kind = KindID.of(scope: scope, .trapped)
                    fail(kind, skips.messages[kind] ?? "flow '\(flow.name)' trapped")
                    continue
                }
                if let shared {
                    shared[SharedState.Slot.phaseIndex] = UInt64(flowIndex)
                    shared[SharedState.Slot.phase] = 2
                }
                let states = CombinationStates(effective: effective, table: context.table, recorder: nil)
                let combinationView = MatrixCombination(
                    states: states, index: index, gates: combination, context: context,
                    effective: effective)
                do {
                    try flow.body(combinationView)
                    trace?.append("flow '\(flow.name)': passed")
                } catch {
                    trace?.append("flow '\(flow.name)': failed: \(error)")
                    fail(.of(scope: scope, .flowFailed), "flow '\(flow.name)' failed: \(error)")
                }
            }
            shared?[SharedState.Slot.phase] = 0
        }
        if transitions != nil {
            checkTransitions(from: combination, fail: fail)
            computeEffective(combination)
        }
        tally.checked += 1
        if let shared {
            // Counted once the combination is complete: a combination that traps is checked again after a restart.
            for kind in failedOnce { shared.addToCounter(kind) }
            shared[SharedState.Slot.done] += 1
        }
        return failed
    }

    /// Compares what a point served with what the declared order says must serve, and names the first
    /// difference.
    private func verify(
        _ pointIndex: Int, _ point: MatrixPoint, input: Int, served: [PluginSwitch], failures: [(PluginSwitch, String)],
        combination: GateSet, isOn: (Int) -> Bool, fail: (KindID, @autoclosure () -> String) -> Void
    ) {
        let order = declaredOrder[pointIndex]
        let switches = declaredSwitches[pointIndex]
        var expected: [Int] = []
        for (position, gate) in order.enumerated() where isOn(gate) {
            let pluginSwitch = switches[position]
            guard !failures.contains(where: { $0.0 == pluginSwitch }), point.isApplicable(pluginSwitch, input) else {
                continue
            }
            expected.append(gate)
            if point.serving == .firstEligible { break }
        }
        let servedGates = served.map { context.table.gate(of: $0) ?? -1 }
        if trace != nil {
            func names(_ gates: [Int]) -> String {
                gates.isEmpty
                    ? "the core flow" : gates.map { $0 < 0 ? "?" : layout.gates[$0].key }.joined(separator: ", ")
            }
            trace?.append(
                "\(point.name)\(Self.inputNote(point, input)): served \(names(servedGates))"
                    + (servedGates == expected ? "" : "; expected \(names(expected))"))
        }
        guard servedGates != expected else { return }

        let name = point.name
        let inputNote = Self.inputNote(point, input)
        let keys = served.map(\.key).joined(separator: ", ")
        let plural = served.count == 1 ? "plugin" : "plugins"
        if !served.isEmpty, !order.contains(where: isOn) {
            fail(
                .of(scope: pointIndex, .coreFlowExpected),
                "\(name): served the \(plural) of \(keys) although \(offReason(order, combination))\(inputNote); "
                    + "the point must yield its core flow")
            return
        }
        if let position = servedGates.firstIndex(where: { $0 < 0 || !isOn($0) }) {
            let gate = servedGates[position]
            let why =
                gate < 0
                ? "the flag file declares no such plugin switch"
                : switchOffReason(gate, combination)
            fail(
                .of(scope: pointIndex, .servedSwitchedOff),
                "\(name): served the plugin of \(served[position].key) although \(why)\(inputNote)")
            return
        }
        if let unfit = served.first(where: { !point.isApplicable($0, input) }) {
            fail(
                .of(scope: pointIndex, .servedNotApplicable),
                "\(name): served the plugin of \(unfit.key), which is not applicable\(inputNote)")
            return
        }
        let declared = order.map { layout.gates[$0].key }.joined(separator: ", ")
        if let missing = expected.first(where: { !servedGates.contains($0) }) {
            let key = layout.gates[missing].key
            let what = served.isEmpty ? "the core flow" : "\(keys)"
            if point.serving == .firstEligible, !served.isEmpty {
                fail(
                    .of(scope: pointIndex, .fallbackOrder),
                    "\(name): served \(keys), but \(key) comes first in the declared order (\(declared)) and is on and "
                        + "applicable\(inputNote)")
            } else {
                fail(
                    .of(scope: pointIndex, .missedEligible),
                    "\(name): served \(what), leaving out \(key), which is on and applicable\(inputNote)")
            }
            return
        }
        fail(
            .of(scope: pointIndex, .fallbackOrder),
            "\(name): served \(keys); the declared order (\(declared)) gives "
                + "\(expected.map { layout.gates[$0].key }.joined(separator: ", "))\(inputNote)")
    }

    /// ` (input …)` when a point has several inputs.
    static func inputNote(_ point: MatrixPoint, _ input: Int) -> String {
        point.inputDescriptions.count > 1 ? " (input \(point.inputDescriptions[input]))" : ""
    }

    /// Why every switch of a point is off: `the master kill switch is killed`, `kill_home_feed is killed`,
    /// `every switch of the point is off`.
    private func offReason(_ order: [Int], _ combination: GateSet) -> String {
        if let master = layout.masterGate, combination.contains(master) { return "the master kill switch is killed" }
        let killers = Set(order.flatMap { layout.killers(of: $0, in: combination) }).sorted()
        if !killers.isEmpty, order.contains(where: combination.contains) {
            return "\(killers.joined(separator: " and ")) \(killers.count == 1 ? "is" : "are") killed"
        }
        return "every switch of the point is off"
    }

    /// Why one switch is off: `plugin_switch_x is off`, `kill_home_feed is killed`.
    private func switchOffReason(_ gate: Int, _ combination: GateSet) -> String {
        let key = layout.gates[gate].key
        guard combination.contains(gate) else { return "\(key) is off" }
        let killers = layout.killers(of: gate, in: combination)
        return "\(key) is on but killed by \(killers.joined(separator: " and "))"
    }
}
