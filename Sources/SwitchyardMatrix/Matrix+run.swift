import Foundation
import SwitchyardClient
import SwitchyardCore
public import SwitchyardMatrixPlan
import Testing

extension Matrix {
    /// The variable that pins one combination: the matrix checks it alone, in this process, and says what each
    /// point served. Takes gate keys separated by commas (`plugin_switch_feed_promos,kill_home_feed`) or `none`.
    public static let combinationVariable = "SWITCHYARD_MATRIX_COMBINATION"

    /// What a run takes from outside the matrix: the shard, a pinned combination, the environment.
    public struct RunSettings: Sendable {
        /// The shard to run; nil reads `SWITCHYARD_MATRIX_SHARD` (`i/n`), else the whole matrix.
        public var shard: Shard?
        /// One combination to check alone; nil reads `SWITCHYARD_MATRIX_COMBINATION`.
        public var combination: String?
        /// Where `SWITCHYARD_MATRIX_*`, `CI` and `TERM` are read, and what a child process inherits.
        public var environment: [String: String]
        /// Whether to draw a progress bar; nil draws one when standard error is a terminal and `CI` is unset.
        public var progressBar: Bool?

        /// - Parameter environment: nil for the process's environment.
        public init(
            shard: Shard? = nil, combination: String? = nil, environment: [String: String]? = nil,
            progressBar: Bool? = nil
        ) {
            self.shard = shard
            self.combination = combination
            self.environment = environment ?? ProcessInfo.processInfo.environment
            self.progressBar = progressBar
        }
    }

    /// Runs the matrix and returns what it found, recording nothing: ``check(_:sourceLocation:)`` is the test
    /// entry point; use this to inspect a report (the kit's own tests, a benchmark).
    ///
    /// Under Swift Testing with ``Isolation/childProcess``, the combinations run in a child process (the test
    /// binary filtered to the calling test); a trap ends only the child, and the run goes on after it. Failing
    /// checks are then shrunk to a smallest failing combination.
    public func run(_ settings: RunSettings = RunSettings()) async -> MatrixReport {
        let started = ContinuousClock.now
        let environment = settings.environment
        let plan: MatrixPlan
        do {
            plan = try self.plan()
        } catch {
            return setupReport("\(error)", started: started)
        }
        let context = MatrixContext(plan: plan)

        // The child's variable comes from the process itself, never from the settings: a child must not start
        // children of its own.
        if let directory = ProcessInfo.processInfo.environment[ChildLauncher.childVariable] {
            if runChild(directory: directory, context: context, plan: plan) { exit(0) }
            return setupReport("", started: started, passThrough: true)
        }

        let test = TestIdentity.current()
        if let name = settings.combination ?? environment[Self.combinationVariable], !name.isEmpty {
            return runSingle(name, context: context, test: test, started: started)
        }

        let shard: Shard
        if let chosen = settings.shard {
            shard = chosen
        } else if let text = environment[Shard.environmentVariable], !text.isEmpty {
            do {
                shard = try Shard(parsing: text)
            } catch {
                return setupReport("\(Shard.environmentVariable): \(error)", started: started)
            }
        } else {
            shard = .all
        }
        let range = shard.range(of: plan.total)
        let progress = Progress(
            total: UInt64(range.count), label: "matrix \(flagSet.namespace)", environment: environment,
            terminal: settings.progressBar)

        var execution = Execution(matrix: self, context: context, environment: environment)
        if options.isolation == .childProcess {
            if let test, let launcher = ChildLauncher(testFilter: test.filter) {
                execution.launcher = launcher
            } else {
                execution.notes.append("combinations ran in this process (not under Swift Testing): a trap ends it")
            }
        }
        await execution.run(range: range, progress: progress)
        progress.finish(execution.tally.checked)

        // The smallest occurrence is minimal already when every combination of every gate was checked: each
        // smaller one was checked too. Otherwise shrink.
        let provenMinimal =
            plan.isExhaustive && shard.count == 1 && execution.tally.disabledFlows.isEmpty
            && !execution.stoppedEarly
        var smallest = execution.tally.records.mapValues(\.smallest)
        if !provenMinimal {
            smallest = await execution.shrink(smallest)
        }

        var findings = declarationFindings
        findings += execution.extraFindings
        for kind in execution.tally.records.keys.sorted() {
            guard let record = execution.tally.records[kind], let occurrence = smallest[kind] else { continue }
            let name = context.layout.name(of: occurrence.combination)
            findings.append(
                MatrixFinding(
                    scope: scopeName(kind.scope), check: kind.check, message: occurrence.message, combination: name,
                    combinationDescription: context.layout.describe(occurrence.combination), gatesSet: occurrence.size,
                    failingCombinations: record.count, reproduce: reproduceCommand(name, test: test)))
        }
        var notes = execution.notes
        if execution.tally.flowsSkipped > 0 {
            notes.append("flows did not run in \(execution.tally.flowsSkipped) combinations where a plugin point traps")
        }
        var neverServed: [String] = []
        if shard.count == 1 && !execution.stoppedEarly {
            let declared = Runner(matrix: self, context: context).declaredSwitchesByPoint
            for (index, point) in points.enumerated() {
                for (bit, pluginSwitch) in declared[index].enumerated()
                where bit < 64
                    && execution.tally.served[index] & (1 << UInt64(bit)) == 0
                {
                    neverServed.append("\(point.name)/\(pluginSwitch.key)")
                }
            }
        }
        var transitions: UInt64 = 0
        if options.transitions {
            let unheld = points.filter { $0.live == nil }.map(\.name)
            if !unheld.isEmpty {
                notes.append(
                    "transitions not checked at \(unheld.joined(separator: ", ")): not a PluginPoint, so a plugin host cannot hold it"
                )
            }
            transitions = Self.transitionSteps(
                plan: plan, range: range.lowerBound..<(range.lowerBound + execution.tally.checked))
        }
        return MatrixReport(
            namespace: flagSet.namespace, coverage: plan.coverageDescription, isExhaustive: plan.isExhaustive,
            gateCount: plan.layout.gateCount, planned: plan.total, shard: shard, range: range,
            checked: execution.tally.checked, elapsed: ContinuousClock.now - started, pointCount: points.count,
            inputCount: points.reduce(0) { $0 + $1.inputDescriptions.count }, flowCount: flows.count,
            findings: findings,
            neverServed: neverServed, notes: notes, transitionsChecked: transitions)
    }

    /// Checks one named combination in this process, with a line per point and flow saying what happened.
    private func runSingle(
        _ name: String, context: MatrixContext, test: TestIdentity?, started: ContinuousClock.Instant
    ) -> MatrixReport {
        let combination: GateSet
        do {
            combination = try context.layout.combination(named: name)
        } catch {
            return setupReport("\(Self.combinationVariable): \(error)", started: started)
        }
        let runner = Runner(matrix: self, context: context)
        runner.trace = []
        let kinds = runner.check(combination, index: 0, collectKinds: true)
        let canonical = context.layout.name(of: combination)
        var findings = declarationFindings
        for kind in kinds.sorted() {
            findings.append(
                MatrixFinding(
                    scope: scopeName(kind.scope), check: kind.check, message: runner.lastMessages[kind] ?? "",
                    combination: canonical, combinationDescription: context.layout.describe(combination),
                    gatesSet: combination.count, failingCombinations: 1,
                    reproduce: reproduceCommand(canonical, test: test)))
        }
        let effective = context.layout.effectiveSwitches(of: combination).members.map { context.layout.gates[$0].key }
        let seen = effective.isEmpty ? "none" : effective.joined(separator: ", ")
        let ran =
            "only the combination \(Self.combinationVariable)=\(canonical) ran: \(context.layout.describe(combination))"
        let notes = [ran, "switches the plugin points see on: " + seen] + (runner.trace ?? [])
        return MatrixReport(
            namespace: flagSet.namespace, coverage: "one combination", isExhaustive: false,
            gateCount: context.layout.gateCount, planned: 1, shard: .all, range: 0..<1, checked: 1,
            elapsed: ContinuousClock.now - started, pointCount: points.count,
            inputCount: points.reduce(0) { $0 + $1.inputDescriptions.count }, flowCount: flows.count,
            findings: findings, neverServed: [], notes: notes)
    }

    /// The single-gate transitions the transition check takes for a range of the plan: per combination, each gate
    /// it does not set turned on (killed) and off again.
    static func transitionSteps(plan: MatrixPlan, range: Range<UInt64>) -> UInt64 {
        let gates = UInt64(plan.layout.gateCount)
        var steps: UInt64 = 0
        for index in range {
            steps += 2 * (gates - UInt64(plan.combination(at: index).count))
        }
        return steps
    }

    private var declarationFindings: [MatrixFinding] {
        declarationProblems.map { MatrixFinding(scope: "declarations", check: .declaration, message: $0) }
    }

    private func setupReport(_ message: String, started: ContinuousClock.Instant, passThrough: Bool = false)
        -> MatrixReport
    {
        MatrixReport(
            namespace: flagSet.namespace, coverage: "not run", isExhaustive: false, gateCount: 0, planned: 0,
            shard: .all,
            range: 0..<0, checked: 0, elapsed: ContinuousClock.now - started, pointCount: points.count,
            inputCount: points.reduce(0) { $0 + $1.inputDescriptions.count }, flowCount: flows.count,
            findings: passThrough ? [] : [MatrixFinding(scope: "setup", check: .setup, message: message)],
            neverServed: [], notes: [], isChildPassThrough: passThrough)
    }

    /// A point's name, or `flow '<name>'`.
    func scopeName(_ scope: Int) -> String {
        if scope < points.count { return points[scope].name }
        if scope - points.count < flows.count { return "flow '\(flows[scope - points.count].name)'" }
        return "matrix"
    }

    /// `SWITCHYARD_MATRIX_COMBINATION='...' swift test --filter '...'`.
    func reproduceCommand(_ combination: String, test: TestIdentity?) -> String {
        let command =
            test.map { "swift test --filter '\($0.displayFilter)'" }
            ?? CommandLine.arguments.map { $0.contains(" ") ? "'\($0)'" : $0 }.joined(separator: " ")
        return "\(Self.combinationVariable)='\(combination)' \(command)"
    }
}

/// The calling Swift Testing test: how to run it alone.
struct TestIdentity: Sendable {
    /// The exact `--filter` regular expression for the child process.
    let filter: String
    /// What a person types: `Module.Suite/test`.
    let displayFilter: String

    static func current() -> TestIdentity? {
        guard let test = Test.current else { return nil }
        let id = test.id
        let qualified = id.moduleName + "." + id.nameComponents.joined(separator: "/")
        var display = qualified
        if let parenthesis = display.lastIndex(of: "("), display.hasSuffix(")") {
            display = String(display[..<parenthesis])
        }
        return TestIdentity(filter: "^" + regexEscaped(qualified) + "/", displayFilter: display)
    }

    static func regexEscaped(_ text: String) -> String {
        var result = ""
        for character in text {
            if "\\^$.|?*+()[]{}".contains(character) { result.append("\\") }
            result.append(character)
        }
        return result
    }
}
