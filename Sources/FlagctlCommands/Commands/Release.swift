public import ArgumentParser
import Foundation
import SwitchyardCore
import SwitchyardWire

/// `flagctl release start|status|pause|resume|advance|abort KEY`: release plans, run by flagsd on evidence.
public struct Release: AsyncParsableCommand {
    public static let configuration = CommandConfiguration(
        abstract:
            "Roll a plugin switch out stage by stage (city by city, percent by percent), advanced and rolled back by flagsd on evidence.",
        discussion: """
            A release plan lists stages, each cities and/or cohorts (or everyone) at a rollout, with a soak time and \
            a minimum of sessions. flagsd advances a stage once both are met and the switch's sessions are shown \
            not to crash more than the sessions without it beyond the plan's margin; it waits while the data is \
            not enough, and rolls back when the switch is shown worse. Every step is an audited change by \
            release-plan with its evidence. A person's change to the switch pauses the plan; a crash guard trip \
            aborts it. Declare plans in the flag file (release: under the switch) or pass --stage to 'start'. \
            See docs/release-plans.md.

            Examples:

              flagctl release start plugin_switch_feed_promos --yes \\
                  --stage city=lagos,rollout=1 --stage city=lagos,rollout=100 \\
                  --stage city=nairobi,rollout=100 --stage rollout=100
              flagctl release status
              flagctl release status plugin_switch_feed_promos
              flagctl release pause plugin_switch_feed_promos --reason "INC-4520"
              flagctl release resume plugin_switch_feed_promos --yes
              flagctl release advance plugin_switch_feed_promos --yes --reason "QA ok"
              flagctl release abort plugin_switch_feed_promos --yes
              flagctl release confirm plugin_switch_feed_promos 1234 --yes
              flagctl release dismiss plugin_switch_feed_promos 1234 --reason "forged crashes from one network"
            """,
        subcommands: [
            ReleaseStart.self, ReleaseStatus.self, ReleaseStep.Pause.self, ReleaseStep.Resume.self,
            ReleaseStep.Advance.self, ReleaseStep.Abort.self, ReleaseProposalCommand.Confirm.self,
            ReleaseProposalCommand.Dismiss.self,
        ]
    )

    public init() {}

    /// Sends one release action through the change flow (If-Match, reason policy, confirmation) and prints the
    /// plan after it.
    static func act(
        _ action: ReleaseAction, key: String, plan: ReleasePlan? = nil, guardrails: [ReleaseGuardrail]? = nil,
        question: ((ReleasePlan?) -> String)?,
        change: ChangeOptions, server: ServerOptions, output: OutputOptions, console: Console
    ) async throws {
        var flow = try ChangeFlow(server: server, options: change, console: console)
        let settings = flow.client.settings
        flow.confirms = question != nil
        let outcome = try await flow.run { view in
            let gate = try view.flagSet.requireSwitch(key, server: settings.serverText, for: "a release plan")
            // What flagsd would refuse (a plan that is not running paused, a guardrail on no metric of the
            // namespace), refused before asking: the same edit.
            do {
                let after = try view.flagSet.applying(
                    action, to: key, plan: plan, guardrails: guardrails, at: 0, note: nil)
                let prefix = "flags.\(key).release.guardrails"
                let problems = after.validate().filter { $0.path.description.hasPrefix(prefix) }
                if !problems.isEmpty {
                    throw CommandFailure.usage(
                        problems.map { "--guardrail \($0.path.description.dropFirst(prefix.count + 1)): \($0.message)" }
                            .joined(separator: "\n"))
                }
            } catch let error as FlagEditError {
                switch error.kind {
                case .notFound: throw CommandFailure.notFound(error.message)
                case .invalid, .conflict: throw CommandFailure("\(error.message) ('flagctl release status \(key)')")
                }
            }
            var planned = PlannedChange(
                path: APIClient.path("v1", "namespaces", view.namespace, "flags", key, "release", action.rawValue),
                body: ReleaseActionRequest(plan: plan, guardrails: guardrails).object, objects: [.flag(key)],
                action: "\(action.rawValue) the release plan of \(key)")
            planned.question = question.map { $0(gate.release) }
            if var shown = plan ?? gate.release {
                if let guardrails { shown.guardrails = guardrails }
                planned.preview = Self.planLines(shown)
            }
            return planned
        }
        if let rendered = output.render(outcome.response) {
            console.write(rendered)
            return
        }
        let release = outcome.answer.release
        var lines = [
            outcome.summaryLine(done: "\(key): release plan \(action.pastTense)", unchanged: "\(key): nothing to do")
        ]
        if let release { lines += Self.statusLines(release, timeline: false) }
        console.write(lines.joined(separator: "\n") + "\n")
    }

    /// `1) cities lagos at 1%  2) …`, one line per stage with its soak and minimum when set, `→` marking the current.
    static func planLines(_ plan: ReleasePlan) -> [String] {
        plan.stages.enumerated().map { index, stage in
            var line = "\(plan.state?.stage == index ? "→" : " ") \(index + 1)) \(stage)"
            var extra: [String] = []
            if let soak = stage.soak ?? plan.soak { extra.append("soak \(GuardDurationText.text(soak))") }
            if let minimum = stage.minimumSessions ?? plan.minimumSessions { extra.append("≥ \(minimum) sessions") }
            if !extra.isEmpty { line += " (\(extra.joined(separator: ", ")))" }
            return line
        }
            + (plan.guardrails.isEmpty
                ? []
                : ["  guardrails: crash_rate (margin), " + plan.guardrails.map(\.description).joined(separator: ", ")])
    }

    /// `running, stage 2 of 5 (cities lagos at 100%) for 12m`.
    static func stateText(_ body: ReleaseStatusBody) -> String {
        guard let state = body.plan.state else { return "not started" }
        var text = state.status.rawValue.replacingOccurrences(of: "_", with: " ")
        if let stage = state.stage {
            text += ", stage \(stage + 1) of \(body.plan.stages.count) (\(body.plan.stages[stage]))"
        } else {
            text += ", off"
        }
        if let seconds = body.secondsInState { text += " for \(durationText(seconds))" }
        return text
    }

    /// `45s`, `12m`, `3h 5m`, `2d 4h`.
    static func durationText(_ seconds: Int64) -> String {
        let s = max(0, seconds)
        if s < 60 { return "\(s)s" }
        if s < 3600 { return "\(s / 60)m" }
        if s < 86_400 { return s % 3600 / 60 == 0 ? "\(s / 3600)h" : "\(s / 3600)h \(s % 3600 / 60)m" }
        return s % 86_400 / 3600 == 0 ? "\(s / 86_400)d" : "\(s / 86_400)d \(s % 86_400 / 3600)h"
    }

    static func rateText(_ side: ReleaseStatusBody.Side) -> String {
        "\(side.sessions) sessions, \(side.crashes) crashed (\(Guard.percent(side.crashRate)))"
    }

    /// The status of one plan, as lines.
    static func statusLines(_ body: ReleaseStatusBody, timeline: Bool) -> [String] {
        var lines = ["\(body.key): \(stateText(body))"]
        if let note = body.plan.state?.note { lines.append("  \(note)") }
        lines += planLines(body.plan).map { "  " + $0 }
        if let assessment = body.assessment {
            lines.append("  since \(assessment.from) (\(assessment.dimensions.joined(separator: ", "))):")
            lines.append("    with the switch:    \(rateText(assessment.with))")
            let control =
                assessment.control == "namespace" ? " (every city: the stage's scope has too few without it)" : ""
            lines.append("    without the switch: \(rateText(assessment.without))\(control)")
            for guardrail in assessment.guardrails {
                lines.append(
                    "    guardrail \(guardrail.metric) \(guardrail.margin): \(guardrail.state.replacingOccurrences(of: "_", with: " ")) (\(guardrail.summary))"
                )
            }
            if !assessment.decidedBy.isEmpty {
                let verb = assessment.verdict == "hold" ? "waits for" : "decided by"
                lines.append("    \(verb): \(assessment.decidedBy.joined(separator: ", "))")
            }
        }
        lines.append("  next: \(body.next)")
        for proposal in body.proposals {
            lines.append(
                "  proposal \(proposal.id) (\(proposal.state), \(proposal.time)): roll back to off from stage \(proposal.stage + 1)"
            )
            if let reason = proposal.reason { lines.append("    \(reason)") }
            if proposal.state == "open" {
                lines.append(
                    "    confirm: flagctl release confirm \(body.key) \(proposal.id)   dismiss: flagctl release dismiss \(body.key) \(proposal.id) --reason …"
                )
            }
        }
        if timeline, !body.timeline.isEmpty {
            lines.append("  timeline (newest first):")
            for event in body.timeline {
                let reason = event.reason.map { " (\($0))" } ?? ""
                lines.append("    \(event.time)  \(event.actor)  \(event.summary)\(reason)")
                if let note = event.state?.note, note != event.reason { lines.append("      \(note)") }
            }
        }
        return lines
    }
}

/// `flagctl release start KEY [--stage …]…`
public struct ReleaseStart: FlagctlCommand {
    public static let configuration = CommandConfiguration(
        commandName: "start",
        abstract: "Start a switch's release plan at its first stage: the declared one, or the stages you pass.",
        discussion: """
            The plan then owns the switch's targeting: the first stage's rules and rollout replace the switch's. \
            Each --stage is comma-separated settings: city=C (several: city=lagos+nairobi), cohort=K, rollout=PERCENT \
            (required), soak=DURATION, min-sessions=N. A stage without city or cohort is for everyone. Later stages \
            keep the earlier stages' cities at their rollouts.

            Examples:

              flagctl release start plugin_switch_feed_promos --yes
              flagctl release start plugin_switch_feed_promos --yes \\
                  --stage city=lagos,rollout=1,soak=1h --stage city=lagos,rollout=100 \\
                  --stage city=nairobi,rollout=100 --stage rollout=10 \\
                  --stage rollout=100 --min-sessions 2000 --margin 0.25
              flagctl release start plugin_switch_feed_promos --yes \\
                  --guardrail trip_booked:-0.5pp --guardrail fare:-2%

            Each --guardrail METRIC:MARGIN names a metric of the namespace (flagctl get shows them) that every stage \
            must show not worse than MARGIN, besides crash rate: percentage points for conversions and rates \
            (trip_booked:-0.5pp), a relative change for any metric (fare:-2%; time_to_book:+5% for one better lower). \
            A stage that splits units judges them; one at 100 % of its scope goes on crash rate alone. Guardrails \
            given here replace the plan's.

            Exit status: 0 ok, 1 failure (a plan running already), 3 changed since you read it, 4 no such flag, \
            5 token refused, 64 usage (a bad stage).
            """
    )

    @Argument(help: ArgumentHelp("The plugin switch, e.g. plugin_switch_feed_promos.", valueName: "key"))
    public var key: String
    @Option(
        name: .customLong("stage"),
        help: ArgumentHelp(
            "A stage: city=C,cohort=K,rollout=PERCENT,soak=D,min-sessions=N (repeat, in order).", valueName: "settings")
    )
    public var stages: [String] = []
    @Option(help: ArgumentHelp("The least time in each stage (90s, 30m, 2h, 1d).", valueName: "duration"))
    public var soak: String?
    @Option(
        help: ArgumentHelp(
            "The fewest sessions with the switch in a stage's scope before it may advance.", valueName: "n"))
    public var minSessions: Int?
    @Option(
        help: ArgumentHelp(
            "Crash-rate points the switch may add over sessions without it and still advance (e.g. 0.25).",
            valueName: "points"))
    public var margin: String?
    @Option(help: ArgumentHelp("The tests' one-sided confidence in percent (e.g. 95).", valueName: "percent"))
    public var confidence: String?
    @Option(help: ArgumentHelp("On a bad signal: previous (back one stage) or off.", valueName: "action"))
    public var onBadSignal: String?
    @Option(
        name: .customLong("guardrail"),
        help: ArgumentHelp(
            "A metric no stage may harm beyond a margin: METRIC:MARGIN, e.g. trip_booked:-0.5pp, fare:-2% (repeat).",
            valueName: "metric:margin"))
    public var guardrails: [String] = []
    @OptionGroup public var change: ChangeOptions
    @OptionGroup public var server: ServerOptions
    @OptionGroup public var outputOptions: OutputOptions

    public init() {}

    public func validate() throws {
        _ = try planTree()
        _ = try parsedGuardrails()
    }

    /// The guardrails the options name; nil without any.
    func parsedGuardrails() throws -> [ReleaseGuardrail]? {
        guard !guardrails.isEmpty else { return nil }
        var parsed: [ReleaseGuardrail] = []
        for text in guardrails {
            guard let guardrail = ReleaseGuardrail(text) else {
                throw ValidationError(
                    "--guardrail '\(text)' is not METRIC:MARGIN, e.g. trip_booked:-0.5pp (percentage points) or fare:-2% (relative)."
                )
            }
            if parsed.contains(where: { $0.metric == guardrail.metric }) {
                throw ValidationError("--guardrail names '\(guardrail.metric)' twice.")
            }
            parsed.append(guardrail)
        }
        return parsed
    }

    /// The plan the options describe, as the API reads it; nil without `--stage` (the declared plan).
    func planTree() throws -> JSONObject? {
        guard !stages.isEmpty else {
            if soak != nil || minSessions != nil || margin != nil || confidence != nil || onBadSignal != nil {
                throw ValidationError(
                    "--soak, --min-sessions, --margin, --confidence and --on-bad-signal describe a new plan; pass its stages with --stage (without --stage the declared plan starts as declared)."
                )
            }
            return nil
        }
        var plan = JSONObject()
        var stageTrees: [JSONValue] = []
        for (index, text) in stages.enumerated() {
            var stage = JSONObject()
            for setting in text.split(separator: ",", omittingEmptySubsequences: true) {
                let parts = setting.split(separator: "=", maxSplits: 1).map {
                    String($0).trimmingCharacters(in: .whitespaces)
                }
                guard parts.count == 2, !parts[1].isEmpty else {
                    throw ValidationError(
                        "--stage \(index + 1) '\(text)': '\(setting)' is not name=value (city, cohort, rollout, soak, min-sessions)."
                    )
                }
                switch parts[0] {
                case "city", "cities":
                    stage["cities"] = .array(parts[1].split(separator: "+").map { .string(String($0)) })
                case "cohort", "cohorts":
                    stage["cohorts"] = .array(parts[1].split(separator: "+").map { .string(String($0)) })
                case "rollout":
                    stage["rollout"] = .int(
                        Int(try Rollout.commandLine(parts[1], what: "--stage \(index + 1) rollout").basisPoints))
                case "soak": stage["soak"] = .string(parts[1])
                case "min-sessions", "min_sessions":
                    guard let minimum = Int(parts[1]), minimum > 0 else {
                        throw ValidationError(
                            "--stage \(index + 1) min-sessions '\(parts[1])' is not a whole number above 0.")
                    }
                    stage["min_sessions"] = .int(minimum)
                default:
                    throw ValidationError(
                        "--stage \(index + 1) '\(text)': '\(parts[0])' is not a stage setting (city, cohort, rollout, soak, min-sessions)."
                    )
                }
            }
            guard stage["rollout"] != nil else {
                throw ValidationError("--stage \(index + 1) '\(text)' has no rollout=PERCENT.")
            }
            stageTrees.append(.object(stage))
        }
        plan["stages"] = .array(stageTrees)
        if let soak { plan["soak"] = .string(soak) }
        if let minSessions { plan["min_sessions"] = .int(minSessions) }
        if let margin { plan["margin"] = .int(Int(try Rollout.commandLine(margin, what: "--margin").basisPoints)) }
        if let confidence {
            plan["confidence"] = .int(Int(try Rollout.commandLine(confidence, what: "--confidence").basisPoints))
        }
        if let onBadSignal { plan["on_bad_signal"] = .string(onBadSignal) }
        do {
            _ = try ReleasePlan(tree: .object(plan), unit: .basisPoints)
        } catch {
            throw ValidationError(
                "the plan is not valid: \(error.problems.map(\.description).joined(separator: "; ")).")
        }
        return plan
    }

    public func run(console: Console) async throws {
        let tree = try planTree()
        let guardrails = try parsedGuardrails()
        let key = self.key
        let given = try tree.map { tree in try ReleasePlan(tree: .object(tree), unit: .basisPoints) }
        try await Release.act(
            .start, key: key, plan: given, guardrails: guardrails,
            question: { declared in
                let first = (given ?? declared)?.stages.first.map { " at \($0)" } ?? ""
                return "Start the release plan of \(key)\(first)? Its rules and rollout are replaced by the plan's"
            }, change: change, server: server, output: outputOptions, console: console)
    }
}

/// `flagctl release status [KEY]`
public struct ReleaseStatus: FlagctlCommand {
    public static let configuration = CommandConfiguration(
        commandName: "status",
        abstract:
            "Show release plans: stage, time in it, sessions and crash rates with and without the switch, and what the next decision waits for.",
        discussion: """
            Without KEY, every plan of the namespace; with KEY, one plan with its timeline (every step, by whom, why).

            Examples:

              flagctl release status
              flagctl release status plugin_switch_feed_promos -o json

            Exit status: 0 ok, 1 failure, 4 no such flag or no plan, 5 token refused.
            """
    )

    @Argument(help: ArgumentHelp("The plugin switch; all plans when left out.", valueName: "key"))
    public var key: String?
    @OptionGroup public var server: ServerOptions
    @OptionGroup public var outputOptions: OutputOptions

    public init() {}

    public func run(console: Console) async throws {
        let (client, namespace) = try server.namespaceClient(console)
        let tree: JSONValue
        if let key {
            tree = try await client.get(APIClient.path("v1", "namespaces", namespace, "flags", key, "release"))
        } else {
            tree = try await client.get(APIClient.path("v1", "namespaces", namespace, "releases"))
        }
        if let rendered = outputOptions.render(tree) {
            console.write(rendered)
            return
        }
        if key != nil {
            console.write(
                Release.statusLines(try ReleaseStatusBody(json: tree), timeline: true).joined(separator: "\n") + "\n")
            return
        }
        let bodies = try ListBody<ReleaseStatusBody>(json: tree).items
        guard !bodies.isEmpty else {
            console.write(
                "namespace \(namespace) has no release plans (declare release: under a switch in its flag file, or 'flagctl release start KEY --stage …')\n"
            )
            return
        }
        console.write(bodies.flatMap { Release.statusLines($0, timeline: false) }.joined(separator: "\n") + "\n")
    }
}

/// `flagctl release pause|resume|advance|abort KEY`
public enum ReleaseStep {
    /// What every step command takes: the switch, the change options, the server, the output format.
    public struct Options: ParsableArguments, Sendable {
        @Argument(help: ArgumentHelp("The plugin switch.", valueName: "key")) public var key: String
        @OptionGroup public var change: ChangeOptions
        @OptionGroup public var server: ServerOptions
        @OptionGroup public var outputOptions: OutputOptions

        public init() {}

        /// Sends the action; asks `question` first when given (from the plan as read).
        func act(
            _ action: ReleaseAction, console: Console, question: (@Sendable (String, ReleasePlan?) -> String)? = nil
        ) async throws {
            let key = self.key
            try await Release.act(
                action, key: key, question: question.map { ask in { plan in ask(key, plan) } },
                change: change, server: server, output: outputOptions, console: console)
        }
    }

    static let exitStatus = "3 changed since you read it, 4 no such flag or plan, 5 token refused."

    public struct Pause: FlagctlCommand {
        public static let configuration = CommandConfiguration(
            commandName: "pause",
            abstract: "Stop a running plan where it is; the switch keeps its targeting until you resume or abort.",
            discussion:
                "Example: flagctl release pause plugin_switch_feed_promos --reason \"payments incident\"\n\nExit status: 0 ok, 1 failure (a plan that is not running), \(exitStatus)"
        )
        @OptionGroup public var options: Options
        public init() {}
        public func run(console: Console) async throws { try await options.act(.pause, console: console) }
    }

    public struct Resume: FlagctlCommand {
        public static let configuration = CommandConfiguration(
            commandName: "resume",
            abstract:
                "Run a paused or rolled-back plan again from its stage: the stage's targeting is put back and its evidence counted anew.",
            discussion:
                "Example: flagctl release resume plugin_switch_feed_promos --yes\n\nExit status: 0 ok, 1 failure (a plan that is running, completed or aborted), \(exitStatus)"
        )
        @OptionGroup public var options: Options
        public init() {}
        public func run(console: Console) async throws {
            try await options.act(.resume, console: console) { key, _ in
                "Resume the release plan of \(key)? The stage's rules and rollout are put back"
            }
        }
    }

    public struct Advance: FlagctlCommand {
        public static let configuration = CommandConfiguration(
            commandName: "advance",
            abstract: "Move a plan to its next stage now, whatever its evidence says (your decision, audited).",
            discussion:
                "Example: flagctl release advance plugin_switch_feed_promos --yes --reason \"QA signed off\"\n\nExit status: 0 ok, 1 failure (a completed or aborted plan), \(exitStatus)"
        )
        @OptionGroup public var options: Options
        public init() {}
        public func run(console: Console) async throws {
            try await options.act(.advance, console: console) { key, plan in
                let next = (plan?.state?.stage).map { $0 + 1 } ?? 0
                guard let plan, next < plan.stages.count else { return "Complete the release plan of \(key)?" }
                return "Advance \(key) to stage \(next + 1) of \(plan.stages.count) (\(plan.stages[next])) now?"
            }
        }
    }

    public struct Abort: FlagctlCommand {
        public static let configuration = CommandConfiguration(
            commandName: "abort",
            abstract:
                "Stop a plan for good; the switch keeps its targeting ('flagctl disable' or 'flagctl rollout' to change it).",
            discussion:
                "Example: flagctl release abort plugin_switch_feed_promos --yes --reason \"replaced by v2\"\n\nExit status: 0 ok, 1 failure (a completed or aborted plan), \(exitStatus)"
        )
        @OptionGroup public var options: Options
        public init() {}
        public func run(console: Console) async throws {
            try await options.act(.abort, console: console) { key, _ in
                "Abort the release plan of \(key)? The switch stays as it is"
            }
        }
    }
}

/// `flagctl release confirm|dismiss KEY ID`: the runner's proposals to roll a plan back to off.
public enum ReleaseProposalCommand {
    static func send(
        _ verb: String, key: String, id: Int64, reason: String?, server: ServerOptions, output: OutputOptions,
        console: Console
    ) async throws -> JSONValue? {
        let (client, namespace) = try server.namespaceClient(console)
        let trimmed = reason?.trimmingCharacters(in: .whitespacesAndNewlines)
        let body = ReasonRequest(reason: trimmed?.isEmpty == false ? trimmed : nil).sent
        let response: JSONValue
        do {
            response = try await client.send(
                "POST",
                APIClient.path("v1", "namespaces", namespace, "flags", key, "release", "proposals", String(id), verb),
                body: body
            ).json
        } catch let failure as APIFailure where failure.status == 409 {
            throw CommandFailure("release proposal \(id) of \(key) is no longer open ('flagctl release status \(key)')")
        }
        if let rendered = output.render(response) {
            console.write(rendered)
            return nil
        }
        return response
    }

    static func validate(id: Int64) throws {
        guard id > 0 else {
            throw ValidationError(
                "\(id) is not a proposal id; 'flagctl release status KEY' lists a plan's proposals with theirs.")
        }
    }

    public struct Confirm: FlagctlCommand {
        public static let configuration = CommandConfiguration(
            commandName: "confirm",
            abstract:
                "Confirm the runner's proposal to roll a plan back to off: the switch goes off for the plan's scope, as your change.",
            discussion: """
                When only clients' sessions show the switch worse in a stage whose roll-back goes to off (on_bad_signal: \
                off, or the first stage), flagsd proposes instead of acting: the client token is public. 'flagctl \
                release status KEY' shows the proposal and its evidence; confirming rolls the plan back to off.

                Example: flagctl release confirm plugin_switch_feed_promos 1234 --yes --reason "crash reports confirm it"

                Exit status: 0 ok, 1 failure (a proposal no longer open), 4 no such proposal, 5 token refused.
                """)
        @Argument(help: ArgumentHelp("The plugin switch.", valueName: "key")) public var key: String
        @Argument(help: ArgumentHelp("The proposal's id, as 'flagctl release status' lists it.", valueName: "id"))
        public var id: Int64
        @Option(help: ArgumentHelp("Why: recorded in the audit log.", valueName: "text")) public var reason: String?
        @Flag(name: [.customShort("y"), .long], help: "Do not ask for confirmation (needed when not on a terminal).")
        public var yes = false
        @OptionGroup public var server: ServerOptions
        @OptionGroup public var outputOptions: OutputOptions

        public init() {}

        public func validate() throws { try ReleaseProposalCommand.validate(id: id) }

        public func run(console: Console) async throws {
            try await Confirmation.confirm(
                "Roll the release plan of \(key) back to off?", action: "confirm release proposal \(id)",
                preview: [], yes: yes, console: console)
            guard
                let response = try await ReleaseProposalCommand.send(
                    "confirm", key: key, id: id, reason: reason, server: server,
                    output: outputOptions, console: console)
            else { return }
            var lines = ["confirmed release proposal \(id): \(key) rolled back to off"]
            if let release = try CommittedBody(json: response).release {
                lines += Release.statusLines(release, timeline: false)
            }
            console.write(lines.joined(separator: "\n") + "\n")
        }
    }

    public struct Dismiss: FlagctlCommand {
        public static let configuration = CommandConfiguration(
            commandName: "dismiss",
            abstract:
                "Dismiss the runner's proposal to roll a plan back to off: the switch stays as it is and the stage holds for you.",
            discussion: """
                The dismissal is recorded in the audit log with your reason, which is required. The runner does not \
                propose again in this stage; advance, pause or abort the plan yourself.

                Example: flagctl release dismiss plugin_switch_feed_promos 1234 --reason "forged crashes from one network"

                Exit status: 0 ok, 1 failure (a proposal no longer open), 4 no such proposal, 5 token refused.
                """)
        @Argument(help: ArgumentHelp("The plugin switch.", valueName: "key")) public var key: String
        @Argument(help: ArgumentHelp("The proposal's id, as 'flagctl release status' lists it.", valueName: "id"))
        public var id: Int64
        @Option(
            help: ArgumentHelp("Why the plan should go on: recorded in the audit log (required).", valueName: "text"))
        public var reason: String
        @OptionGroup public var server: ServerOptions
        @OptionGroup public var outputOptions: OutputOptions

        public init() {}

        public func validate() throws {
            try ReleaseProposalCommand.validate(id: id)
            try ChangeOptions.refuseBlank(
                reason: reason, why: " the plan should go on", example: "crashes from one network")
        }

        public func run(console: Console) async throws {
            guard
                let response = try await ReleaseProposalCommand.send(
                    "dismiss", key: key, id: id, reason: reason, server: server,
                    output: outputOptions, console: console)
            else { return }
            var lines = [
                "dismissed release proposal \(id): \(key) stays as it is; the stage holds for you (advance, pause or abort it)"
            ]
            lines += Release.statusLines(try ReleaseDismissalBody(json: response).release, timeline: false)
            console.write(lines.joined(separator: "\n") + "\n")
        }
    }
}
