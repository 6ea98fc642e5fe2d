import Foundation
import SwitchyardMatrixPlan

/// One run of a matrix: checks a range of combinations in this process or in child processes (starting a new
/// child after each trap, with the trapping state skipped), then shrinks what failed.
struct Execution {
    let matrix: Matrix
    let context: MatrixContext
    let environment: [String: String]
    /// Set to run in child processes.
    var launcher: ChildLauncher?
    var tally: Tally
    var skips = TrapSkips()
    var notes: [String] = []
    /// Findings outside any point or flow (a trap in the matrix's own code, a child that could not start).
    var extraFindings: [MatrixFinding] = []
    /// The run stopped before its end (too many crashes).
    var stoppedEarly = false
    private var crashes = 0
    private var flowTraps: [Int: Int] = [:]

    init(matrix: Matrix, context: MatrixContext, environment: [String: String]) {
        self.matrix = matrix
        self.context = context
        self.environment = environment
        tally = Tally(pointCount: matrix.points.count)
    }

    private var fingerprint: String { matrix.fingerprint(plan: context.plan) }

    // MARK: The main run

    mutating func run(range: Range<UInt64>, progress: Progress) async {
        guard let launcher else {
            runInProcess(range, progress: progress, alreadyDone: 0)
            return
        }
        var position = range.lowerBound
        var lastCrash: [UInt64]?
        while position < range.upperBound {
            let work = ChildWork(fingerprint: fingerprint, start: position, end: range.upperBound, skips: skips)
            let before = tally.checked
            let outcome: ChildLauncher.Outcome
            do {
                outcome = try await launcher.run(work, kindCount: matrix.kindCount, pointCount: matrix.points.count) {
                    done in
                    progress.update(before + done)
                }
            } catch {
                notes.append("no child process (\(error)): the rest ran in this process, where a trap ends it")
                runInProcess(position..<range.upperBound, progress: progress, alreadyDone: before)
                return
            }
            merge(outcome)
            if outcome.finished { return }
            if !outcome.started {
                notes.append(
                    "the child process ran no matrix (\(outcome.signal.map { "signal \($0)" } ?? "exit status \(outcome.status)"): "
                        + "\(outcome.trapMessage)); the rest ran in this process, where a trap ends it")
                runInProcess(position..<range.upperBound, progress: progress, alreadyDone: before)
                return
            }
            let crashedAt = outcome.position
            let signature = [crashedAt, outcome.phase, outcome.phaseIndex, outcome.input, outcome.local]
            let attributed =
                lastCrash != signature && attributeTrap(outcome, combination: context.plan.combination(at: crashedAt))
            lastCrash = signature
            if attributed {
                position = crashedAt  // again, with the trapping state skipped
            } else {
                recordUnattributed(outcome, at: crashedAt)
                tally.checked += 1
                position = crashedAt + 1
            }
            crashes += 1
            if crashes >= matrix.options.maxCrashes && position < range.upperBound {
                stoppedEarly = true
                notes.append(
                    "stopped after \(crashes) crashes of child processes: combinations \(position)..<\(range.upperBound) "
                        + "were not checked (raise Matrix.Options.maxCrashes to go on)")
                return
            }
        }
    }

    private mutating func runInProcess(_ range: Range<UInt64>, progress: Progress, alreadyDone: UInt64) {
        let runner = Runner(matrix: matrix, context: context, skips: skips)
        runner.onProgress = { done in progress.update(alreadyDone + done) }
        runner.run(range: range)
        tally.merge(runner.tally)
    }

    /// Adds what a child counted: its counters, its smallest occurrences, what served.
    private mutating func merge(_ outcome: ChildLauncher.Outcome) {
        var smallest: [KindID: Occurrence] = [:]
        for line in outcome.lines {
            guard let kind = line.kind, let occurrence = line.occurrence else { continue }
            if let known = smallest[kind], !occurrence.isSmaller(than: known) { continue }
            smallest[kind] = occurrence
        }
        var child = Tally(pointCount: matrix.points.count)
        for (kind, count) in outcome.counters.enumerated() where count > 0 {
            guard let occurrence = smallest[kind] else { continue }
            child.records[kind] = Tally.Record(count: count, smallest: occurrence)
        }
        child.checked = outcome.done
        child.served = outcome.served
        child.flowsSkipped = outcome.flowsSkipped
        tally.merge(child)
    }

    /// Turns a crash into a skipped state: the point (for that input and those switches) or the flow (for those
    /// effective switches) that was running.
    /// - Returns: false when the crash happened outside any point or flow.
    private mutating func attributeTrap(_ outcome: ChildLauncher.Outcome, combination: GateSet) -> Bool {
        let detail = outcome.trapMessage
        switch outcome.phase {
        case 1:
            let point = Int(outcome.phaseIndex)
            let input = Int(outcome.input)
            guard point < matrix.points.count else { return false }
            let kind = KindID.of(scope: point, .trapped)
            skips.points.insert(.init(point: point, input: input, local: outcome.local))
            if skips.messages[kind] == nil {
                skips.messages[kind] =
                    "\(matrix.points[point].name): trapped\(Runner.inputNote(matrix.points[point], input)): \(detail)"
            }
            return true
        case 2:
            let flow = Int(outcome.phaseIndex)
            guard flow < matrix.flows.count else { return false }
            let kind = KindID.of(scope: matrix.points.count + flow, .trapped)
            skips.flows.insert(.init(flow: flow, effective: context.layout.effectiveSwitches(of: combination).words))
            if skips.messages[kind] == nil {
                skips.messages[kind] = "flow '\(matrix.flows[flow].name)' trapped: \(detail)"
            }
            flowTraps[flow, default: 0] += 1
            if flowTraps[flow]! >= matrix.options.maxFlowTraps {
                skips.disabledFlows.insert(flow)
                tally.disabledFlows.insert(flow)
                notes.append(
                    "flow '\(matrix.flows[flow].name)' trapped in \(flowTraps[flow]!) distinct switch states; "
                        + "it did not run after that (raise Matrix.Options.maxFlowTraps to go on)")
            }
            return true
        default:
            return false
        }
    }

    private mutating func recordUnattributed(_ outcome: ChildLauncher.Outcome, at position: UInt64) {
        let combination = context.plan.combination(at: position)
        extraFindings.append(
            MatrixFinding(
                scope: "matrix", check: .trapped,
                message:
                    "the child process crashed outside any plugin point or flow at combination \(position): \(outcome.trapMessage)",
                combination: context.layout.name(of: combination),
                combinationDescription: context.layout.describe(combination),
                gatesSet: combination.count, failingCombinations: 1,
                reproduce: matrix.reproduceCommand(context.layout.name(of: combination), test: TestIdentity.current())))
    }

    // MARK: Shrinking

    /// Makes each failing kind's combination smaller while the kind still fails: unset one gate at a time, keep
    /// the first smaller combination that still fails, until no single gate can go.
    mutating func shrink(_ found: [KindID: Occurrence]) async -> [KindID: Occurrence] {
        var current = found
        var active = Set(found.keys.filter { found[$0]!.size > 0 })
        while !active.isEmpty {
            var candidates: [GateSet] = []
            var positions: [GateSet: Int] = [:]
            var tried: [KindID: [Int]] = [:]
            for kind in active.sorted() {
                let combination = current[kind]!.combination
                for gate in combination.members {
                    var smaller = combination
                    smaller.remove(gate)
                    if let known = positions[smaller] {
                        tried[kind, default: []].append(known)
                    } else {
                        positions[smaller] = candidates.count
                        tried[kind, default: []].append(candidates.count)
                        candidates.append(smaller)
                    }
                }
            }
            let results = await check(candidates)
            for kind in active.sorted() {
                if let hit = tried[kind]?.first(where: { results[$0][kind] != nil }) {
                    let combination = candidates[hit]
                    current[kind] = Occurrence(
                        index: current[kind]!.index, gates: combination.words, size: combination.count,
                        message: results[hit][kind]!)
                    if combination.count == 0 { active.remove(kind) }
                } else {
                    active.remove(kind)
                }
            }
        }
        return current
    }

    /// The kinds each candidate fails, with their messages.
    private mutating func check(_ candidates: [GateSet]) async -> [[KindID: String]] {
        var results = Array(repeating: [KindID: String](), count: candidates.count)
        guard let launcher else {
            let runner = Runner(matrix: matrix, context: context, skips: skips)
            for (position, candidate) in candidates.enumerated() {
                for kind in runner.check(candidate, index: UInt64(position), collectKinds: true) {
                    results[position][kind] = runner.lastMessages[kind]
                }
            }
            return results
        }
        var position = 0
        while position < candidates.count {
            let work = ChildWork(
                fingerprint: fingerprint, candidates: candidates[position...].map(\.words), skips: skips)
            guard
                let outcome = try? await launcher.run(
                    work, kindCount: matrix.kindCount, pointCount: matrix.points.count,
                    progress: { _ in }),
                outcome.started
            else { break }
            for line in outcome.lines {
                guard let candidate = line.candidate, let kinds = line.kinds else { continue }
                for (index, kind) in kinds.enumerated() {
                    results[position + candidate][kind] = line.messages?[index] ?? ""
                }
            }
            if outcome.finished { break }
            let crashed = position + Int(outcome.position)
            if attributeTrap(outcome, combination: candidates[crashed]) {
                let scope = outcome.phase == 1 ? Int(outcome.phaseIndex) : matrix.points.count + Int(outcome.phaseIndex)
                let kind = KindID.of(scope: scope, .trapped)
                results[crashed][kind] = skips.messages[kind] ?? outcome.trapMessage
            }
            position = crashed + 1
            crashes += 1
            if crashes >= matrix.options.maxCrashes * 2 { break }
        }
        return results
    }
}
