package import Foundation
import Logging
import Metrics
import ServiceLifecycle
package import SwitchyardCore
package import SwitchyardGuard
package import SwitchyardStorage
import SwitchyardWire

/// Runs release plans inside flagsd: every `interval` it looks at each running plan, reads the sessions of the
/// current stage's scope since the stage began (with the switch active and without it, the counters the crash
/// guard reads), and advances the plan, rolls it back, or waits (``ReleaseCheck``; docs/release-statistics.md).
///
/// Each step is an ordinary change through ``FlagService`` by actor `release-plan` (source `release-plan`), with
/// the check as its evidence: a new version, the audit entry, clients woken. It commits only on the namespace
/// version it was decided on, so flagsd processes sharing a PostgreSQL store never take the same step twice: the
/// second finds the version moved on, decides again on the new state (the stage just began: it waits), and a
/// step is never half taken (the plan's state and the switch's targeting change in one transaction). A plan's
/// progress lives in the flag set, so a restart resumes where the store says.
package final class ReleasePlanRunner: Service, Sendable {
    package struct Options: Sendable {
        /// How often every running plan is looked at.
        package var interval: Duration = .seconds(30)
        /// Where steps are announced (`POST` of JSON); nil: nowhere.
        package var webhookURL: URL?
        /// The secret that signs each post; nil: unsigned.
        package var webhookSecret: [UInt8]?
        /// Wall-clock time, for soaks and the evidence's span.
        package var now: @Sendable () -> Date = { Date() }
        /// How far ahead of the server's clock events are accepted (`EventBatch.Limits.maximumFutureSkew`): a stage
        /// counts from the first minute that cannot hold an event received before it began.
        package var futureSkew: Duration = .seconds(600)

        package init(interval: Duration = .seconds(30), webhookURL: URL? = nil) {
            self.interval = interval
            self.webhookURL = webhookURL
        }
    }

    /// The actor of the runner's changes.
    package static let actor = "release-plan"

    let app: AppContext
    let options: Options
    let webhook: GuardWebhook?

    package init(app: AppContext, options: Options = Options()) {
        self.app = app
        self.options = options
        webhook = options.webhookURL.map {
            GuardWebhook(
                url: $0, secret: options.webhookSecret, metricsFactory: app.metricsFactory, logger: app.logger)
        }
    }

    package func run() async throws {
        await cancelWhenGracefulShutdown {
            await withTaskGroup(of: Void.self) { group in
                group.addTask {
                    while !Task.isCancelled {
                        await self.runOnce()
                        do { try await Task.sleep(for: self.options.interval) } catch { return }
                    }
                }
                if let webhook = self.webhook { group.addTask { await webhook.run() } }
                await group.next()
                group.cancelAll()
            }
        }
    }

    /// What one look at a plan did.
    package struct Step: Sendable, Hashable {
        package var namespace: String
        package var key: String
        /// `advanced`, `completed`, `rolled_back`; `proposed` (a roll-back to off waiting for a person) or `held`
        /// (nothing committed).
        package var action: String
        /// The change committed; nil when held or when another process took the step.
        package var version: Int64?
    }

    /// Looks at every running plan once and takes the steps due (the service's loop calls it; tests too).
    @discardableResult
    package func runOnce() async -> [Step] {
        var steps: [Step] = []
        do {
            for record in try await app.store.namespaces() {
                guard let state = try await app.store.namespace(record.name) else { continue }
                for flag in state.flagSet.flags {
                    // Every plan has its series from its first look, its step counters at 0 (KnownSeries); a switch
                    // without a plan has none. Six series for each of a namespace's ten thousand switches would
                    // swell every scrape, and registering them cost minutes of a core (the metrics registry copies
                    // a family's series to add one).
                    guard let plan = flag.pluginSwitch?.release else { continue }
                    recordGauges(plan, of: flag.key, in: record.name)
                    guard plan.isRunning else { continue }
                    if let step = await consider(record.name, flag.key) { steps.append(step) }
                }
            }
        } catch {
            logger.error(
                "release plans: could not read the namespaces; trying again in \(options.interval)",
                metadata: ["error": "\(error)"])
        }
        return steps
    }

    var logger: Logger { app.logger }

    /// What the runner decided on one version of a namespace: the step, and what it was decided on.
    private struct Decided: Sendable {
        /// `advanced`, `completed`, `rolled_back`; `held`; `propose` (a roll-back to off that waits for a person).
        var action: String
        var summary = ""
        var plan: ReleasePlan
        var assessment: Assessment
        var state: NamespaceState
    }

    /// Decides on one plan from the store's latest state and commits the step on that version; decided again when
    /// the namespace moves on first (``FlagService/decideAndCommit(_:attempts:decide:)``: another process's step,
    /// a person's change).
    func consider(_ namespace: String, _ key: String) async -> Step? {
        do {
            let outcome = try await app.service.decideAndCommit(namespace) { state -> VersionedDecision<Decided>? in
                guard let gate = state.flagSet.flag(key)?.pluginSwitch, let plan = gate.release, plan.isRunning,
                    let assessment = try await assess(key, plan: plan, in: state)
                else { return nil }
                return decision(key, plan: plan, assessment: assessment, in: state)
            }
            switch outcome {
            case nil:
                return nil
            case .settled(let decided) where decided.action == "propose":
                let proposed = try await proposeRollback(
                    key, plan: decided.plan, assessment: decided.assessment, in: decided.state)
                return Step(namespace: namespace, key: key, action: proposed ? "proposed" : "held")
            case .settled(let decided):
                return Step(namespace: namespace, key: key, action: decided.action)
            case .committed(let decided, let result):
                guard let record = result.record else { return nil }
                let action = decided.action
                Counter(
                    label: "switchyard_release_steps_total",
                    dimensions: [("namespace", namespace), ("switch", key), ("action", action)],
                    factory: app.metricsFactory
                ).increment()
                logger.notice(
                    "release plan stepped",
                    metadata: [
                        "namespace": .string(namespace), "switch": .string(key), "action": .string(action),
                        "version": .stringConvertible(record.version), "summary": .string(decided.summary),
                    ])
                webhook?.announce(Self.payload(action: action, key: key, record: record))
                return Step(namespace: namespace, key: key, action: action, version: record.version)
            }
        } catch {
            Counter(
                label: "switchyard_release_errors_total", dimensions: [("namespace", namespace)],
                factory: app.metricsFactory
            ).increment()
            logger.error(
                "release plans: could not step \(key) in namespace \(namespace); trying again in \(options.interval)",
                metadata: ["error": "\(error)"])
            return nil
        }
    }

    /// The step an assessment calls for: a change to commit on the version it was made on, or a hold or a proposal.
    private func decision(
        _ key: String, plan: ReleasePlan, assessment: Assessment,
        in state: NamespaceState
    ) -> VersionedDecision<Decided> {
        var decided = Decided(action: "held", plan: plan, assessment: assessment, state: state)
        let stageText = plan.state?.stage.map { "stage \($0 + 1) of \(plan.stages.count)" } ?? "no stage"
        let now = Int64(options.now().timeIntervalSince1970)
        let stage = plan.state?.stage ?? 0
        let edit: @Sendable (FlagSet) throws -> FlagSet
        switch assessment.verdict {
        case .hold:
            return .settle(decided)
        case .advance:
            if stage + 1 >= plan.stages.count {
                decided.action = "completed"
                decided.summary = "release plan: \(key) completed (\(plan.stages[stage]) passed)"
            } else {
                decided.action = "advanced"
                decided.summary =
                    "release plan: \(key) to stage \(stage + 2) of \(plan.stages.count), \(plan.stages[stage + 1])"
            }
            let note = "\(stageText) passed"
            edit = { try $0.advancingRelease(key, at: now, note: note) }
        case .rollBack:
            let toOff = plan.onBadSignal == .off || stage == 0
            if toOff, assessment.source == .client {
                // Clients' evidence alone (their token is public) never turns a switch off: a person confirms.
                decided.action = "propose"
                return .settle(decided)
            }
            decided.action = "rolled_back"
            let target = toOff ? "off" : "stage \(stage) of \(plan.stages.count), \(plan.stages[stage - 1])"
            decided.summary = "release plan: \(key) rolled back to \(target)"
            let sessions = assessment.source == .reporter ? " (reporters' sessions)" : ""
            let note =
                "rolled back from \(stageText), shown worse on \(assessment.decidedBy.joined(separator: ", "))\(sessions); "
                + "resume or abort it (flagctl release resume|abort \(key))"
            edit = { try $0.rollingBackRelease(key, at: now, note: note) }
        }
        let request = ChangeRequest(
            author: ChangeAuthor(actor: Self.actor, source: .releasePlan, reason: assessment.reason),
            summary: decided.summary, evidence: .object(assessment.evidence))
        return .commit(decided, request, mutation: edit)
    }

    /// A running plan's current stage, judged on the store's counts.
    package struct Assessment: Sendable {
        package var stage: Int
        /// The sessions counted: from the start of the minute the stage began.
        package var from: Date
        package var until: Date
        /// The judgement: sessions with and without the switch (and whose: `control`), bounds, verdict.
        package var check: ReleaseCheck
        /// The dimensions summed (`all`, or the stage's cities or cohorts).
        package var dimensions: [EventDimension]
        /// The plan's guardrail metrics judged in the stage, by name, as the plan lists them.
        package var guardrails: [GuardrailCheck] = []
        /// Whose sessions decided: the clients' (the usual), or a reporter's when its sessions show the switch worse.
        package var source: EventSource = .client

        /// Crash rate and every guardrail together: roll back when any is shown worse; advance when crash rate says
        /// advance and no guardrail is undecided (one the stage cannot judge does not hold it); else hold.
        package var verdict: ReleaseCheck.Verdict {
            if check.verdict == .rollBack || guardrails.contains(where: { $0.state == .worse }) { return .rollBack }
            if check.verdict == .advance, !guardrails.contains(where: { $0.state == .undecided }) { return .advance }
            return .hold
        }

        /// The metrics that decide: on a roll back those shown worse (`crash_rate` first when crashes did), on an
        /// advance crash rate and every guardrail judged, on a hold those the stage waits for.
        package var decidedBy: [String] {
            let crash = MetricDefinition.crashRate
            switch verdict {
            case .rollBack:
                return (check.verdict == .rollBack ? [crash] : [])
                    + guardrails.filter { $0.state == .worse }.map(\.guardrail.metric)
            case .advance:
                return [crash] + guardrails.filter { $0.state == .notWorse }.map(\.guardrail.metric)
            case .hold:
                return (check.verdict == .hold ? [crash] : [])
                    + guardrails.filter { $0.state == .undecided }.map(\.guardrail.metric)
            }
        }

        /// `hold`: what it waits for; `advance`, `roll back`: why (the checks' summaries).
        package var reasons: [String] {
            switch verdict {
            case .hold:
                return (check.verdict == .hold ? check.waitingFor : [])
                    + guardrails.filter { $0.state == .undecided }.map(\.summary)
            case .rollBack:
                return (check.verdict == .rollBack ? [check.summary] : [])
                    + guardrails.filter { $0.state == .worse }.map(\.summary)
            case .advance:
                return [check.summary] + guardrails.filter { $0.state != .undecided }.map(\.summary)
            }
        }
        package var reason: String { reasons.isEmpty ? verdict.rawValue : reasons.joined(separator: "; ") }

        /// The evidence of a step: the crash-rate check, the guardrails, the stage, the span counted and the control.
        package var evidence: JSONObject {
            var object = check.tree
            object["verdict"] = .string(verdict.rawValue)
            object["crash_rate_verdict"] = .string(check.verdict.rawValue)
            object["decided_by"] = .array(decidedBy.map(JSONValue.string))
            object["guardrails"] = .array(guardrails.map(\.body.json))
            object["stage"] = .int(stage)
            object["from"] = .string(from.iso8601)
            object["until"] = .string(until.iso8601)
            object["dimensions"] = .array(dimensions.map { .string($0.description) })
            object["source"] = .string(source.rawValue)
            return object
        }
    }

    /// Judges a running plan's current stage on the store's counts; nil when the plan is not running.
    ///
    /// It counts what flagsd admitted (past the caps per unit and address), in the minutes from the first that
    /// cannot hold an event received before the stage began (``ReleaseCheck/countingStart(stageBegan:futureSkew:)``)
    /// up to now: an event stamped ahead of the server's clock counts once its minute has come. The clients'
    /// crashed sessions must be spread over the crash guard's `min_units` units and `min_addresses` networks, and
    /// stay shown worse without the busiest networks, to roll back; a reporter's sessions showing the switch worse
    /// decide on their own.
    package func assess(_ key: String, plan: ReleasePlan, in state: NamespaceState) async throws -> Assessment? {
        guard let planState = plan.state, planState.status == .running, let stage = planState.stage,
            plan.stages.indices.contains(stage)
        else { return nil }
        let now = options.now()
        let criteria = Self.criteria(plan, stage: stage)
        let began = Date(timeIntervalSince1970: TimeInterval(planState.since))
        let from = ReleaseCheck.countingStart(stageBegan: began, futureSkew: options.futureSkew)
        let namespace = state.record.name
        let counts =
            from < now
            ? GuardCounts(
                try await app.store.eventCounts(
                    EventCountQuery(
                        namespace: namespace, from: from, until: now, subjects: [.pluginSwitch, .baseline],
                        keys: [key, ""], sources: [.client, .reporter])), crashes: []) : GuardCounts([], crashes: [])
        let dimensions = Self.dimensions(of: plan.stages[stage].scope)
        let elapsed = Duration.seconds(max(0, now.timeIntervalSince(began)))
        // A stage at 100 % of its cities leaves too few of their sessions without the switch: it is compared with
        // the namespace's (ReleaseCheck.stageTallies).
        let reporters = ReleaseCheck(
            ReleaseCheck.stageTallies(of: key, in: dimensions, counts: counts, criteria: criteria, source: .reporter),
            criteria: criteria, timeInStage: elapsed)
        if reporters.verdict == .rollBack {
            return Assessment(
                stage: stage, from: from, until: now, check: reporters, dimensions: dimensions, source: .reporter)
        }
        let tallies = ReleaseCheck.stageTallies(of: key, in: dimensions, counts: counts, criteria: criteria)
        var spread: ReleaseCheck.Spread?
        if tallies.with.crashedSessions > 0, from < now {
            let policy = CrashGuardPolicy.resolved(
                namespace: state.flagSet.crashGuard, switch: state.flagSet.flag(key)?.pluginSwitch?.crashGuard)
            let records = try await app.store.crashRecords(in: namespace, from: from, until: now).filter { record in
                record.source == .client && record.switches.contains(key)
                    && dimensions.contains { record.counts(in: $0) }
            }
            spread = ReleaseCheck.Spread(
                crashes: CrashSpread(records, source: .client, leavingOut: policy.minimumAddresses - 1),
                minimumUnits: policy.minimumUnits, minimumAddresses: policy.minimumAddresses)
        }
        let check = ReleaseCheck(tallies, criteria: criteria, timeInStage: elapsed, spread: spread)
        let guardrails = try await guardrailChecks(key, plan: plan, in: state, criteria: criteria, since: from)
        return Assessment(
            stage: stage, from: from, until: now, check: check, dimensions: dimensions, guardrails: guardrails)
    }

    /// The counters a stage's scope sums: its cities (each session has one), else its cohorts, else `all`.
    /// A scope naming both is counted by its cities (the counters do not cross cities with cohorts).
    static func dimensions(of scope: Scope) -> [EventDimension] {
        if !scope.cities.isEmpty { return scope.cities.map(EventDimension.city) }
        if !scope.cohorts.isEmpty { return scope.cohorts.map(EventDimension.cohort) }
        return [.all]
    }

    /// The plan's settings for a stage over the defaults.
    static func criteria(_ plan: ReleasePlan, stage: Int) -> ReleaseCriteria {
        var criteria = ReleaseCriteria.defaults
        let step = plan.stages[stage]
        if let minimum = step.minimumSessions ?? plan.minimumSessions { criteria.minimumSessions = Int64(minimum) }
        if let soak = step.soak ?? plan.soak { criteria.soak = soak }
        if let margin = plan.margin { criteria.margin = Double(margin.basisPoints) / 10_000 }
        if let confidence = plan.confidence { criteria.confidence = Double(confidence.basisPoints) / 10_000 }
        return criteria
    }

    /// The body announcing a step.
    static func payload(action: String, key: String, record: ChangeRecord) -> JSONValue {
        .object(
            JSONObject([
                ("event", .string("release_plan.\(action)")), ("namespace", .string(record.namespace)),
                ("switch", .string(key)),
                ("version", .int64(record.version)), ("time", .string(record.time.iso8601)),
                ("actor", .string(record.actor)),
                ("summary", .string(record.summary)), ("reason", record.reason.map(JSONValue.string) ?? .null),
                ("evidence", record.evidence ?? .null),
                ("status", .string("flagctl release status \(key) -n \(record.namespace)")),
            ]))
    }

    /// Every step kind a plan may take, counted by the process whose change committed it.
    static let stepActions = ["advanced", "completed", "rolled_back", "proposed"]

    /// A switch's plan gauges: its stage (from 1; 0 before it starts or after a roll-back to off) and whether it
    /// runs; its step counters start at 0.
    private func recordGauges(_ plan: ReleasePlan, of key: String, in namespace: String) {
        let factory = app.metricsFactory
        let dimensions = [("namespace", namespace), ("switch", key)]
        Gauge(label: "switchyard_release_stage", dimensions: dimensions, factory: factory).record(
            (plan.state?.stage).map { $0 + 1 } ?? 0)
        Gauge(label: "switchyard_release_running", dimensions: dimensions, factory: factory).record(
            plan.isRunning ? 1 : 0)
        for action in Self.stepActions {
            _ = Counter(
                label: "switchyard_release_steps_total", dimensions: dimensions + [("action", action)], factory: factory
            )
        }
    }
}
