import SwitchyardMatrixPlan
import SwitchyardPlugins

/// The switch states a plugin host reads in the transition check: effective switch words the runner changes
/// between steps, and what the host's points told them in the current step.
final class TransitionStates: SwitchStates, @unchecked Sendable {
    // Unchecked: written by the runner between the host's steps, read by the host during them, on one thread.
    var effective: [UInt64] = []
    let table: SlotTable
    /// Factories and attaches that failed in the current step, by live point name.
    var failures: [String: [(PluginSwitch, String)]] = [:]

    init(table: SlotTable) {
        self.table = table
    }

    func isEnabled(_ pluginSwitch: PluginSwitch) -> Bool {
        guard let gate = table.gate(of: pluginSwitch), gate >> 6 < effective.count else { return false }
        return effective[gate >> 6] & (1 << UInt64(gate & 63)) != 0
    }

    func pluginFactoryFailed(for pluginSwitch: PluginSwitch, at pluginPoint: String, error: any Error) {
        failures[pluginPoint, default: []].append((pluginSwitch, String(describing: error)))
    }
}

/// Every point of a matrix, for each of its inputs, held live by one ``PluginHost``: the runner moves it from
/// combination to combination and checks what each holds after every step.
final class TransitionChecker {
    struct Held {
        let point: Int
        let input: Int
        /// The name the host knows it by (`3/1`: point 3, input 1), so failures and events name one input.
        let name: String
        let attached: () -> [PluginSwitch]
        /// What the host's events say is attached, by switch slot: checked against the point itself.
        var holding: Set<Int32> = []
    }

    let host: PluginHost
    let states: TransitionStates
    var held: [Held] = []
    /// Points the check cannot hold live (not a `PluginPoint`).
    let unheld: [String]
    /// The events of the current step.
    var events: [PluginHostEvent] = []
    /// Transitions checked (single-gate steps and moves into a combination).
    var steps: UInt64 = 0

    init(points: [MatrixPoint], table: SlotTable) {
        states = TransitionStates(table: table)
        host = PluginHost(states: states)
        host.checksLeaks = true
        var unheld: [String] = []
        for (index, point) in points.enumerated() {
            guard let live = point.live else {
                unheld.append(point.name)
                continue
            }
            for input in point.inputDescriptions.indices {
                let name = "\(index)/\(input)"
                held.append(Held(point: index, input: input, name: name, attached: live(host, input, name)))
            }
        }
        self.unheld = unheld
        host.onEvent = { [unowned self] event in events.append(event) }
    }
}

extension Runner {
    /// Moves the host into `combination`, then from it turns each gate it does not set on (kills it) and off
    /// again, checking every point after every step.
    func checkTransitions(from combination: GateSet, fail: (KindID, @autoclosure () -> String) -> Void) {
        guard let checker = transitions else { return }
        let layout = self.layout
        step(checker, into: combination, fail: fail) { "moving into this combination from another" }
        for gate in 0..<layout.gateCount where !combination.contains(gate) {
            var flipped = combination
            flipped.insert(gate)
            let key = layout.gates[gate].key
            let isKill = layout.gates[gate].isKillSwitch
            step(checker, into: flipped, fail: fail) { isKill ? "killing \(key)" : "turning \(key) on" }
            step(checker, into: combination, fail: fail) {
                isKill ? "reviving \(key) (killed from here)" : "turning \(key) off again (on from here)"
            }
        }
    }

    /// One step of the host into a combination, and the checks of what every live point holds after it.
    private func step(
        _ checker: TransitionChecker, into combination: GateSet, fail: (KindID, @autoclosure () -> String) -> Void,
        what: @escaping () -> String
    ) {
        computeEffective(combination)
        checker.states.effective = effectiveBuffer
        checker.states.failures.removeAll(keepingCapacity: true)
        checker.events.removeAll(keepingCapacity: true)
        checker.host.update(cause: "transition")
        checker.steps += 1

        // The events, against what each point held before: nothing attached twice, nothing detached unheld.
        for event in checker.events {
            guard let index = checker.held.firstIndex(where: { $0.name == event.pluginPoint }) else { continue }
            let pointIndex = checker.held[index].point
            let point = points[pointIndex]
            let note = Self.inputNote(point, checker.held[index].input)
            let slot = event.pluginSwitch.slot
            switch event.kind {
            case .attached:
                if !checker.held[index].holding.insert(slot).inserted {
                    fail(
                        .of(scope: pointIndex, .lifecycle),
                        "\(point.name): attached \(event.pluginSwitch.key) twice\(note), "
                            + "after \(what())")
                }
            case .detached:
                if checker.held[index].holding.remove(slot) == nil {
                    fail(
                        .of(scope: pointIndex, .lifecycle),
                        "\(point.name): detached \(event.pluginSwitch.key), which was not "
                            + "attached\(note), after \(what())")
                }
            case .leaked:
                fail(
                    .of(scope: pointIndex, .lifecycle),
                    "\(point.name): the plugin of \(event.pluginSwitch.key) leaked\(note), "
                        + "after \(what()): \(event.message ?? "")")
            default:
                break
            }
        }

        // What each point holds, against what a fresh route gives in the declared order.
        let effective = effectiveBuffer
        func isOn(_ gate: Int) -> Bool { effective[gate >> 6] & (1 << UInt64(gate & 63)) != 0 }
        for held in checker.held {
            let pointIndex = held.point
            let point = points[pointIndex]
            var onMask: UInt64 = 0
            for (position, gate) in declaredOrder[pointIndex].enumerated() where position < 64 && isOn(gate) {
                onMask |= 1 << UInt64(position)
            }
            var failedMask: UInt64 = 0
            for (pluginSwitch, _) in checker.states.failures[held.name] ?? [] {
                failedMask |= declaredBit(of: pluginSwitch, in: pointIndex)
            }
            let eligible = onMask & applicable[pointIndex][held.input] & ~failedMask
            let expected = point.serving == .firstEligible ? eligible & (0 &- eligible) : eligible
            let attached = held.attached()
            let (attachedMask, inOrder) = declaredMask(of: attached, in: pointIndex)
            let holding = Set(attached.map(\.slot))
            if inOrder && attachedMask == expected && holding == held.holding { continue }
            let note = Self.inputNote(point, held.input)
            if holding != held.holding {
                let byEvents = declaredSwitches[pointIndex].filter { held.holding.contains($0.slot) }
                fail(
                    .of(scope: pointIndex, .lifecycle),
                    "\(point.name): holds \(Self.names(attached)) but its attach and detach "
                        + "events leave \(Self.names(byEvents))\(note), after \(what())")
                continue
            }
            let switches = declaredSwitches[pointIndex]
            let fresh = switches.indices.filter { $0 < 64 && expected & (1 << UInt64($0)) != 0 }.map { switches[$0] }
            fail(
                .of(scope: pointIndex, .transition),
                "\(point.name): after \(what()), the live point holds \(Self.names(attached)); "
                    + "a fresh route gives \(Self.names(fresh))\(note)")
        }
    }

    /// `plugin_switch_a, plugin_switch_b`, or `the core flow`.
    static func names(_ switches: [PluginSwitch]) -> String {
        switches.isEmpty ? "the core flow" : switches.map(\.key).joined(separator: ", ")
    }
}
