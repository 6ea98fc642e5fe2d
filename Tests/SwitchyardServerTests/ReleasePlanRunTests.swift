import Foundation
import HTTPTypes
import SwitchyardClientTesting
import SwitchyardCore
import SwitchyardSQLite
import SwitchyardStorage
import SwitchyardWire
import TestSupport
import Testing

@testable import SwitchyardServer

/// Release plans inside flagsd, in-process over a real SQLite file: started through the API, stepped by the runner
/// on the sessions clients post (as ordinary audited changes by `release-plan` with their evidence), stopped by a
/// person's change or the crash guard's trip, kept across a restart, and stepped once by two runners at once.
///
/// The plans here have no soak and small samples (100 sessions, a margin of 5 points), so a look decides on a
/// thousand sessions. A stage counts only minutes no event received before it began can be in (events may be
/// stamped 10 minutes ahead), so the tests date the running stage's start back (``backdate(_:)``) before posting,
/// as if it had begun a quarter of an hour ago, rather than wait.
struct ReleasePlanRunTests {
    static let promos = CrashGuardTests.promos
    static let path = "/v1/namespaces/rider/flags/\(promos)/release"

    /// Lagos at 10 %, Lagos at 100 %, everyone at 100 %.
    static let planJSON = """
        {"stages": [{"cities": ["lagos"], "rollout": 1000}, {"cities": ["lagos"], "rollout": 10000}, {"rollout": 10000}],
         "soak": "0s", "min_sessions": 100, "margin": 500, "confidence": 9500}
        """

    static func start(_ app: TestApp, plan: String = planJSON) async throws -> TestResponse {
        let response = try await app.send(
            .post, "\(path)/start", token: "editor", body: #"{"plan": \#(plan), "reason": "roll out promos"}"#)
        #expect(response.status == .ok, "\(response.text)")
        return response
    }

    static func gate(_ app: TestApp) async throws -> PluginSwitchDefinition {
        try #require(try await app.store.namespace("rider")?.flagSet.flag(promos)?.pluginSwitch)
    }

    /// Dates the running plan's stage start back by `seconds` (a person's edit that leaves the targeting alone, by
    /// actor `test`), so sessions posted now are past the minutes a stage leaves out after it begins.
    static func backdate(_ app: TestApp, key: String = promos, seconds: Int64 = 15 * 60) async throws {
        let since = Int64(Date().timeIntervalSince1970) - seconds
        _ = try await app.server.context.service.change(
            "rider", ChangeRequest(author: ChangeAuthor(actor: "test", source: .api))
        ) { flagSet in
            var flagSet = flagSet
            let index = try flagSet.flagIndex(key)
            guard var state = flagSet.flags[index].pluginSwitch?.release?.state, state.status == .running,
                state.since > since
            else { return flagSet }
            state.since = since
            flagSet.flags[index].pluginSwitch?.release?.state = state
            return flagSet
        }
    }

    /// `count` sessions in a city with the switch, every `crashEvery`-th crashed, and as many healthy ones without it,
    /// after dating the running stage back (``backdate(_:)``).
    ///
    /// Sessions count toward a stage from its start, so those posted for one stage count for the next too once it is
    /// dated back: the tests say which.
    static func traffic(
        _ app: TestApp, _ prefix: String, count: Int = 1000, crashEvery: Int = 0, city: String = "lagos"
    ) async throws {
        try await backdate(app)
        let now = Date()
        var events = CrashGuardTests.sessions(
            "\(prefix)-with", count: count, crashEvery: crashEvery, switches: [promos], city: city, time: now)
        events += CrashGuardTests.sessions(
            "\(prefix)-without", count: count, crashEvery: 0, switches: [], city: city, time: now)
        try await CrashGuardTests.post(app, events)
    }

    @Test func aHealthyPluginMovesThroughEveryStageInAuditedChangesDeliveredToClients() async throws {
        let app = try await TestApp.make(configuration: CrashGuardTests.configuration())
        defer { app.close() }
        let started = try await Self.start(app)
        let release = try ReleaseStatusBody(json: try #require(started.json["release"]))
        #expect(release.plan.state?.status == .running && release.plan.state?.stage == 0)
        var gate = try await Self.gate(app)
        #expect(
            gate.rules.map(\.conditions.cities) == [["lagos"]]
                && gate.rules.first?.rollout == Rollout(basisPoints: 1000))

        // Too few sessions: it holds, and says what it waits for.
        #expect(await app.server.releasePlanRunner.runOnce().map(\.action) == ["held"])
        let waiting = try ReleaseStatusBody(json: try await app.send(.get, Self.path, token: "editor").json)
        #expect(waiting.assessment?.verdict == "hold")
        #expect(waiting.next.contains("advances to stage 2 of 3"), "\(waiting.next)")
        #expect(waiting.assessment?.reasons.isEmpty == false)

        let before = try #require(app.hub.snapshot(of: "rider")).version
        try await Self.traffic(app, "a")
        let first = await app.server.releasePlanRunner.runOnce()
        #expect(first.map(\.action) == ["advanced"])
        gate = try await Self.gate(app)
        #expect(gate.release?.state?.stage == 1 && gate.rules.first?.rollout == .full)
        #expect(try #require(app.hub.snapshot(of: "rider")).version > before, "clients get the step like any change")

        // The step is an ordinary change: audited by release-plan, with the evidence it rests on.
        let audit = try await app.send(.get, "/v1/audit?namespace=rider&source=release-plan", token: "admin").json
        let entry = try AuditEntryBody(json: try #require(audit["entries"]?[0]))
        #expect(entry.actor == "release-plan" && entry.version == first.first?.version)
        #expect(entry.summary.contains("to stage 2 of 3"), "\(entry.summary)")
        #expect(entry.evidence?["stage"] == .int(0))
        #expect(entry.evidence?["dimensions"] == .array([.string("city=lagos")]))

        // Everyone next, on sessions timed after the step (those of "a" count only when the step fell in their
        // minute); then it completes.
        try await Self.traffic(app, "a2")
        #expect(await app.server.releasePlanRunner.runOnce().map(\.action) == ["advanced"])
        try await Self.traffic(app, "b", city: "paris")
        #expect(await app.server.releasePlanRunner.runOnce().map(\.action) == ["completed"])
        gate = try await Self.gate(app)
        #expect(gate.release?.state?.status == .completed && gate.rollout == .full)
        #expect(await app.server.releasePlanRunner.runOnce().isEmpty, "a completed plan is not looked at")

        let status = try ReleaseStatusBody(json: try await app.send(.get, Self.path, token: "editor").json)
        #expect(
            status.timeline.filter { $0.actor != "test" }.map { $0.state?.status } == [
                .completed, .running, .running, .running,
            ])
        #expect(status.timeline.last?.actor == "editor")
    }

    @Test func aPluginShownToCrashMoreIsRolledBackAndWaitsForAPerson() async throws {
        let app = try await TestApp.make(configuration: CrashGuardTests.configuration())
        defer { app.close() }
        _ = try await Self.start(app)
        try await Self.traffic(app, "a")
        #expect(await app.server.releasePlanRunner.runOnce().map(\.action) == ["advanced"])
        // At Lagos 100 %, a third of the sessions with the switch crash; none without.
        try await Self.traffic(app, "c", count: 150, crashEvery: 3)
        // Counted since the stage began (dated back), with the healthy sessions of "a": still shown worse, by
        // crashes from 15 networks; the roll-back goes to the stage before, so it needs no person.
        let steps = await app.server.releasePlanRunner.runOnce()
        #expect(steps.map(\.action) == ["rolled_back"])
        let gate = try await Self.gate(app)
        #expect(gate.release?.state?.status == .rolledBack && gate.release?.state?.stage == 0)
        #expect(gate.rules.first?.rollout == Rollout(basisPoints: 1000), "back to Lagos at 10 %")
        #expect(gate.release?.state?.note?.contains("resume or abort") == true)
        #expect(await app.server.releasePlanRunner.runOnce().isEmpty, "a rolled-back plan waits for a person")
        let answer = try await app.send(.get, Self.path, token: "editor")
        let status = try ReleaseStatusBody(json: answer.json)
        #expect(status.next.contains("rolled back to stage 1"), "\(status.next)")
        // The timeline keeps the roll-back's evidence (the console shows it once the plan has no assessment): the
        // stage it failed, with its sessions and crashes with the switch; a person's step carries none.
        #expect(status.assessment == nil)
        let rollBack = try #require(status.timeline.first)
        #expect(rollBack.state?.status == .rolledBack && rollBack.source == "release-plan")
        #expect(rollBack.evidence?["stage"] == .int(1) && rollBack.evidence?["verdict"] == .string("roll_back"))
        #expect((rollBack.evidence?["crashes_with"]?.int64Value ?? 0) >= 50, "\(String(describing: rollBack.evidence))")
        #expect(status.timeline.last?.evidence == nil, "the person's start carries no evidence")
        #expect(status.json == answer.json, "the wire body reads back what flagsd sent")
        let abort = try await app.send(.post, "\(Self.path)/abort", token: "editor", body: #"{"reason": "fix first"}"#)
        #expect(abort.status == .ok, "\(abort.text)")
        #expect(try await Self.gate(app).release?.state?.status == .aborted)
    }

    @Test func aPersonsChangePausesThePlanAndTheCrashGuardsTripAbortsIt() async throws {
        let app = try await TestApp.make(configuration: CrashGuardTests.configuration())
        defer { app.close() }
        _ = try await Self.start(app)
        let rollout = try await app.send(
            .post, "/v1/namespaces/rider/flags/\(Self.promos)/rollout", token: "editor",
            body: #"{"rollout": 5000}"#)
        #expect(rollout.status == .ok, "\(rollout.text)")
        var gate = try await Self.gate(app)
        #expect(gate.release?.state?.status == .paused)
        #expect(
            gate.release?.state?.note?.contains("editor changed the switch") == true,
            "\(gate.release?.state?.note ?? "")")
        try await Self.traffic(app, "a")
        #expect(await app.server.releasePlanRunner.runOnce().isEmpty, "a paused plan is not stepped")

        let resumed = try await app.send(.post, "\(Self.path)/resume", token: "editor", body: "{}")
        #expect(resumed.status == .ok, "\(resumed.text)")
        gate = try await Self.gate(app)
        #expect(gate.release?.state?.status == .running && gate.rollout == .off, "the stage's targeting is back")

        // The crash guard's trip (its change path: source crash-guard) aborts the plan in the same change.
        _ = try await app.server.context.service.change(
            "rider", ChangeRequest(author: ChangeAuthor(actor: CrashGuard.actor, source: .crashGuard))
        ) {
            try $0.disabling(Self.promos, scope: Scope(cities: ["lagos"]))
        }
        gate = try await Self.gate(app)
        #expect(gate.release?.state?.status == .aborted)
        #expect(gate.release?.state?.note?.contains("crash guard") == true)
    }

    /// One clock: the store's. A plan's start through the API, a person's change that pauses it, and the runner
    /// record the store's time, not the machine's (issue 34: the change path read `Date()`).
    @Test func theStartAPersonsPauseAndTheRunnerRecordTheStoresClock() async throws {
        let clock = TestClock(start: Date(timeIntervalSince1970: 1_900_000_000), advancesAutomatically: false)  // 2030
        let app = try await TestApp.make(configuration: CrashGuardTests.configuration(), now: clock.wallClock)
        defer { app.close() }
        _ = try await Self.start(app)
        #expect(try await Self.gate(app).release?.state?.since == 1_900_000_000)
        clock.advance(by: .seconds(600))
        let rollout = try await app.send(
            .post, "/v1/namespaces/rider/flags/\(Self.promos)/rollout", token: "editor",
            body: #"{"rollout": 5000}"#)
        #expect(rollout.status == .ok, "\(rollout.text)")
        let gate = try await Self.gate(app)
        #expect(gate.release?.state?.status == .paused)
        #expect(gate.release?.state?.since == 1_900_000_600, "the pause is stamped with the store's clock")
        #expect(app.server.releasePlanRunner.options.now() == clock.date, "the runner reads the same clock")
    }

    /// Sessions of `count` Lagos units that a 10 % split put in (`with`) or out of the switch, none crashed, and the
    /// `trip_booked` of the units `booked` picks by their index.
    static func splitUnits(_ prefix: String, count: Int, with: Bool, booked: (Int) -> Bool = { _ in false })
        -> [JSONValue]
    {
        (0..<count).flatMap { index -> [JSONValue] in
            let unit = "\(prefix)-\(index)"
            let splits = JSONValue.object(JSONObject([(promos, .bool(with))]))
            guard
                case .object(var session) = CrashGuardTests.session(
                    "\(unit)-s", crashed: false, switches: with ? [promos] : [], unit: unit, time: Date())
            else { return [] }
            session["splits"] = splits
            var events: [JSONValue] = [.object(session)]
            if booked(index) {
                events.append(
                    .object(
                        JSONObject([
                            ("id", .string("\(unit)-b")), ("type", .string("metric")),
                            ("time", .string(Date().iso8601)), ("metric", .string("trip_booked")),
                            ("unit", .string(unit)), ("city", .string("lagos")), ("cohorts", .array([])),
                            ("splits", splits),
                        ])))
            }
            return events
        }
    }

    /// Declares the rider namespace's metrics as Flags/rider.yaml does (trip_booked, a conversion; fare, a value).
    static func declareMetrics(_ app: TestApp) async throws {
        _ = try await app.server.context.service.change(
            "rider", ChangeRequest(author: ChangeAuthor(actor: "setup", source: .api))
        ) { flagSet in
            var flagSet = flagSet
            flagSet.metrics = [
                MetricDefinition(name: "fare", kind: .value, cap: 500),
                MetricDefinition(name: "trip_booked", kind: .conversion),
            ]
            return flagSet
        }
    }

    /// The plan as before, guarded on bookings: they may fall by half a point, no more; its first stage dated back
    /// (``backdate(_:key:seconds:)``), so units entered now count.
    static func startGuarded(_ app: TestApp) async throws {
        let started = try await app.send(
            .post, "\(Self.path)/start", token: "editor",
            body: #"{"plan": \#(Self.planJSON), "guardrails": {"trip_booked": "-0.5pp"}, "reason": "guarded"}"#)
        #expect(started.status == .ok, "\(started.text)")
        try await backdate(app)
    }

    @Test func aGuardrailMetricHoldsAStageAndRollsItBackWhileCrashesStayFlat() async throws {
        let app = try await TestApp.make(configuration: CrashGuardTests.configuration())
        defer { app.close() }
        try await Self.declareMetrics(app)
        try await Self.startGuarded(app)
        #expect(
            try await Self.gate(app).release?.guardrails == [
                ReleaseGuardrail(metric: "trip_booked", margin: .points(-0.005))
            ])

        // 1,000 units on each side of Lagos's 10 % split, no crash anywhere, no booking yet: crash rate would advance
        // the stage; the guardrail cannot tell yet, so it holds, and says it waits for trip_booked.
        try await CrashGuardTests.post(
            app, Self.splitUnits("w", count: 1000, with: true) + Self.splitUnits("o", count: 1000, with: false))
        #expect(await app.server.releasePlanRunner.runOnce().map(\.action) == ["held"])
        let held = try ReleaseStatusBody(json: try await app.send(.get, Self.path, token: "editor").json)
        let heldAssessment = try #require(held.assessment)
        #expect(heldAssessment.verdict == "hold" && heldAssessment.decidedBy == ["trip_booked"], "\(heldAssessment)")
        #expect(heldAssessment.evidence["crash_rate_verdict"] == .string("advance"))
        #expect(heldAssessment.guardrails.map(\.state) == ["undecided"])
        #expect(
            heldAssessment.guardrails.first?.unitsWith == 1000 && heldAssessment.guardrails.first?.unitsWithout == 1000)

        // 60 % of the units without the switch book a trip, 10 % of those with it: still no crash, and the plan
        // is shown worse on bookings alone. From the first stage a roll-back goes to off, and on clients' evidence
        // that is a proposal a person confirms; the proposal, the audit and the roll-back name bookings.
        let bookings =
            Self.splitUnits("o", count: 1000, with: false) { $0 % 10 < 6 }
            + Self.splitUnits("w", count: 1000, with: true) { $0 % 10 == 0 }
        try await CrashGuardTests.post(app, bookings.filter { $0["type"] == .string("metric") })
        #expect(await app.server.releasePlanRunner.runOnce().map(\.action) == ["proposed"])
        let audit = try await app.send(.get, "/v1/audit?namespace=rider&source=release-plan", token: "admin").json
        let entry = try AuditEntryBody(json: try #require(audit["entries"]?[0]))
        #expect(entry.evidence?["proposes"] == .string("roll_back_to_off"), "\(String(describing: entry.evidence))")
        #expect(
            entry.evidence?["decided_by"] == .array([.string("trip_booked")]), "\(String(describing: entry.evidence))")
        #expect(entry.evidence?["crash_rate_verdict"] != .string("roll_back"))
        #expect(entry.evidence?["guardrails"]?[0]?["state"] == .string("worse"))
        let proposal = try #require(
            try ReleaseStatusBody(json: try await app.send(.get, Self.path, token: "editor").json).proposals.first)
        #expect(proposal.reason?.contains("trip_booked") == true, "\(proposal)")
        let confirmed = try await app.send(
            .post, "\(Self.path)/proposals/\(proposal.id)/confirm", token: "editor",
            body: #"{"reason": "bookings fell"}"#)
        #expect(confirmed.status == .ok, "\(confirmed.text)")
        #expect(try await Self.gate(app).release?.state?.status == .rolledBack)
    }

    @Test func unitsFromOneNetworkCannotRollAPlanBackOnAGuardrail() async throws {
        let app = try await TestApp.make(configuration: CrashGuardTests.configuration())
        defer { app.close() }
        try await Self.declareMetrics(app)
        try await Self.startGuarded(app)
        // Honest units from many networks book alike with the switch and without it (30 %).
        try await CrashGuardTests.post(
            app,
            Self.splitUnits("w", count: 220, with: true) { $0 % 10 < 3 }
                + Self.splitUnits("o", count: 220, with: false) { $0 % 10 < 3 })
        // One party (the public client token, behind the trusted proxy) claims 800 more units with the switch that
        // never book, from eight addresses of one /24 (each address's caps admit 100 units): with them, bookings
        // are shown far worse with the switch.
        for host in 1...8 {
            var headers = HTTPFields()
            headers[HTTPField.Name("X-Forwarded-For")!] = "198.51.100.\(host)"
            let forged = Self.splitUnits("forged-\(host)", count: 100, with: true)
            for start in stride(from: 0, to: forged.count, by: 50) {
                _ = try await app.send(
                    .post, "/v1/namespaces/rider/events", token: "client", headers: headers,
                    body: CrashGuardTests.batch(Array(forged[start..<min(start + 50, forged.count)])))
            }
        }
        #expect(await app.server.releasePlanRunner.runOnce().map(\.action) == ["held"])
        let status = try ReleaseStatusBody(json: try await app.send(.get, Self.path, token: "editor").json)
        let guardrail = try #require(status.assessment?.guardrails.first)
        #expect(guardrail.state == "undecided", "\(guardrail)")
        #expect(guardrail.unitsWith >= 1000, "the forged units were admitted: \(guardrail)")
        #expect(
            guardrail.summary.contains("without the units of the 2 busiest source networks it is not shown worse"),
            "\(guardrail.summary)")
        #expect(
            guardrail.summary.contains("trip_booked is worse with the switch"),
            "with the forged units alone it would be: \(guardrail.summary)")
        #expect(try await Self.gate(app).release?.state?.status == .running)
    }

    @Test func guardrailsNamingNoMetricOrTheWrongWayAreRefusedWithTheirField() async throws {
        let app = try await TestApp.make(configuration: CrashGuardTests.configuration())
        defer { app.close() }
        try await Self.declareMetrics(app)
        let bad = try await app.send(
            .post, "\(Self.path)/start", token: "editor",
            body:
                #"{"plan": \#(Self.planJSON), "guardrails": {"trips_taken": "-1%", "trip_booked": "+0.5pp", "fare": "-1pp", "crash_rate": "0.2pp"}}"#
        )
        #expect(bad.status == .badRequest, "\(bad.text)")
        let paths = Set(bad.problemPaths)
        for metric in ["trips_taken", "trip_booked", "fare", "crash_rate"] {
            #expect(paths.contains("flags.\(Self.promos).release.guardrails.\(metric)"), "\(bad.text)")
        }
        #expect(bad.text.contains("how far it may fall"), "\(bad.text)")
        let unreadable = try await app.send(
            .post, "\(Self.path)/start", token: "editor",
            body: #"{"plan": \#(Self.planJSON), "guardrails": {"fare": -2}}"#)
        #expect(
            unreadable.status == .badRequest && unreadable.problemPaths == ["guardrails.fare"], "\(unreadable.text)")
        #expect(try await Self.gate(app).release?.state == nil, "nothing started")
    }

    @Test func badRequestsAreRefusedNamingTheFieldOrTheState() async throws {
        let app = try await TestApp.make(configuration: CrashGuardTests.configuration())
        defer { app.close() }
        let bad = try await app.send(
            .post, "\(Self.path)/start", token: "editor",
            body:
                #"{"plan": {"stages": [{"rollout": 0}], "margin": 5000, "state": {"status": "running", "since": "2026-01-01T00:00:00Z"}}}"#
        )
        #expect(bad.status == .badRequest, "\(bad.text)")
        #expect(
            Set(bad.problemPaths).isSuperset(of: ["plan.stages[0].rollout", "plan.margin", "plan.state"]),
            "\(bad.problemPaths)")
        let undeclared = try await app.send(.post, "\(Self.path)/start", token: "editor", body: "{}")
        #expect(undeclared.status == .badRequest && undeclared.problemPaths == ["plan"], "\(undeclared.text)")
        let notRunning = try await app.send(
            .post, "/v1/namespaces/rider/flags/plugin_switch_feed_weather/release/pause", token: "editor", body: "{}")
        #expect(notRunning.status == .notFound, "\(notRunning.text)")
        _ = try await Self.start(app)
        let twice = try await app.send(.post, "\(Self.path)/start", token: "editor", body: "{}")
        #expect(twice.status == .conflict && twice.text.contains("is running"), "\(twice.text)")
        let clientToken = try await app.send(.post, "\(Self.path)/pause", token: "client", body: "{}")
        #expect(clientToken.status == .forbidden)
        let noSuchFlag = try await app.send(
            .get, "/v1/namespaces/rider/flags/plugin_switch_nope/release", token: "editor")
        #expect(noSuchFlag.status == .notFound)
    }

    @Test func twoRunnersOnOneStoreTakeEachStepOnce() async throws {
        let app = try await TestApp.make(configuration: CrashGuardTests.configuration())
        defer { app.close() }
        _ = try await Self.start(app)
        // A second process's runner on the same store (as flagsd instances on one PostgreSQL database), looking at
        // the same time, again and again. With no soak, one look may find the plan a stage further, as a later look
        // would: each stage is still left once, from the stage it was decided on. Each round's sessions are timed
        // after the stage it finds began, so every round takes at least one step.
        let other = ReleasePlanRunner(app: app.server.context)
        for round in 0..<3 {
            try await Self.traffic(app, "r\(round)")
            async let mine = app.server.releasePlanRunner.runOnce()
            async let theirs = other.runOnce()
            _ = await (mine, theirs)
        }
        #expect(try await Self.gate(app).release?.state?.status == .completed)
        let audit = try await app.send(.get, "/v1/audit?namespace=rider&source=release-plan", token: "admin").json
        let stages = (audit["entries"]?.arrayValue ?? []).reversed().map { $0["evidence"]?["stage"]?.int64Value }
        #expect(stages == [0, 1, 2], "every stage left once, none twice: \(stages)")
    }

    @Test func aRestartKeepsThePlanWhereItWasAndAFlagFileKeepsItsProgress() async throws {
        let first = try await TestApp.make(configuration: CrashGuardTests.configuration())
        _ = try await Self.start(first)
        try await Self.traffic(first, "a")
        #expect(await first.server.releasePlanRunner.runOnce().map(\.action) == ["advanced"])
        let app = try await first.restarted()
        defer { app.close() }
        #expect(try await Self.gate(app).release?.state?.stage == 1)
        try await Self.traffic(app, "b")
        #expect(
            await app.server.releasePlanRunner.runOnce().map(\.action) == ["advanced"], "the restarted runner goes on")

        // `flagctl apply` of a flag file that declares the same plan (no state): the progress stays.
        let state = try #require(try await app.store.namespace("rider"))
        var declared = state.flagSet
        let index = try declared.flagIndex(Self.promos)
        declared.flags[index].pluginSwitch?.release?.state = nil
        declared.flags[index].pluginSwitch?.rules = []
        let body = JSONValue.object(JSONObject([("flag_set", .object(declared.tree(unit: .basisPoints)))]))
            .serializedString()
        let put = try await app.send(.put, "/v1/namespaces/rider/flag-set", token: "editor", body: body)
        #expect(put.status == .ok, "\(put.text)")
        let gate = try await Self.gate(app)
        #expect(gate.release?.state?.stage == 2 && gate.release?.state?.status == .running)
        #expect(gate.rollout == .full)
    }

    @Test func aStepIsAnnouncedToTheWebhookByTheRunningService() async throws {
        let receiver = GuardWebhookTests.Receiver(failures: 0)
        try await receiver.run { url in
            var configuration = CrashGuardTests.configuration()
            configuration.guardWebhookURL = url
            configuration.releasePlanInterval = .milliseconds(200)
            let app = try await TestApp.make(configuration: configuration)
            defer { app.close() }
            _ = try await Self.start(app)
            try await Self.traffic(app, "a")
            try await app.withLiveServer { _ in
                try await waitUntil("an announced step", timeout: .seconds(120)) { !receiver.received.isEmpty }
            }
            let delivery = try #require(receiver.received.first)
            #expect(delivery.headers[HTTPField.Name("X-Switchyard-Event")!] == "release_plan.advanced")
            #expect(delivery.body["switch"] == .string(Self.promos))
            #expect(delivery.body["actor"] == .string("release-plan"))
            #expect(delivery.body["evidence"]?["stage"] == .int(0))
            #expect(delivery.body["status"] == .string("flagctl release status \(Self.promos) -n rider"))
        }
    }
}
