import Foundation
import HTTPTypes
import SwitchyardCore
@testable import SwitchyardServer
import SwitchyardSQLite
import SwitchyardStorage
import SwitchyardWire
import TestSupport
import Testing

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
        let response = try await app.send(.post, "\(path)/start", token: "editor", body: #"{"plan": \#(plan), "reason": "roll out promos"}"#)
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
        _ = try await app.server.flagService.change("rider", ChangeRequest(author: ChangeAuthor(actor: "test", source: .api))) { flagSet in
            var flagSet = flagSet
            let index = try flagSet.flagIndex(key)
            guard var state = flagSet.flags[index].pluginSwitch?.release?.state, state.status == .running, state.since > since else { return flagSet }
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
    static func traffic(_ app: TestApp, _ prefix: String, count: Int = 1000, crashEvery: Int = 0, city: String = "lagos") async throws {
        try await backdate(app)
        let now = Date()
        var events = CrashGuardTests.sessions("\(prefix)-with", count: count, crashEvery: crashEvery, switches: [promos], city: city, time: now)
        events += CrashGuardTests.sessions("\(prefix)-without", count: count, crashEvery: 0, switches: [], city: city, time: now)
        try await CrashGuardTests.post(app, events)
    }

    @Test func aHealthyPluginMovesThroughEveryStageInAuditedChangesDeliveredToClients() async throws {
        let app = try await TestApp.make(configuration: CrashGuardTests.configuration())
        defer { app.close() }
        let started = try await Self.start(app)
        let release = try ReleaseStatusBody(json: try #require(started.json["release"]))
        #expect(release.plan.state?.status == .running && release.plan.state?.stage == 0)
        var gate = try await Self.gate(app)
        #expect(gate.rules.map(\.conditions.cities) == [["lagos"]] && gate.rules.first?.rollout == Rollout(basisPoints: 1000))

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
        #expect(status.timeline.filter { $0.actor != "test" }.map { $0.state?.status } == [.completed, .running, .running, .running])
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
        let status = try ReleaseStatusBody(json: try await app.send(.get, Self.path, token: "editor").json)
        #expect(status.next.contains("rolled back to stage 1"), "\(status.next)")
        let abort = try await app.send(.post, "\(Self.path)/abort", token: "editor", body: #"{"reason": "fix first"}"#)
        #expect(abort.status == .ok, "\(abort.text)")
        #expect(try await Self.gate(app).release?.state?.status == .aborted)
    }

    @Test func aPersonsChangePausesThePlanAndTheCrashGuardsTripAbortsIt() async throws {
        let app = try await TestApp.make(configuration: CrashGuardTests.configuration())
        defer { app.close() }
        _ = try await Self.start(app)
        let rollout = try await app.send(.post, "/v1/namespaces/rider/flags/\(Self.promos)/rollout", token: "editor",
                                         body: #"{"rollout": 5000}"#)
        #expect(rollout.status == .ok, "\(rollout.text)")
        var gate = try await Self.gate(app)
        #expect(gate.release?.state?.status == .paused)
        #expect(gate.release?.state?.note?.contains("editor changed the switch") == true, "\(gate.release?.state?.note ?? "")")
        try await Self.traffic(app, "a")
        #expect(await app.server.releasePlanRunner.runOnce().isEmpty, "a paused plan is not stepped")

        let resumed = try await app.send(.post, "\(Self.path)/resume", token: "editor", body: "{}")
        #expect(resumed.status == .ok, "\(resumed.text)")
        gate = try await Self.gate(app)
        #expect(gate.release?.state?.status == .running && gate.rollout == .off, "the stage's targeting is back")

        // The crash guard's trip (its change path: source crash-guard) aborts the plan in the same change.
        _ = try await app.server.flagService.change("rider", ChangeRequest(author: ChangeAuthor(actor: CrashGuard.actor, source: .crashGuard))) {
            try $0.disabling(Self.promos, scope: Scope(cities: ["lagos"]))
        }
        gate = try await Self.gate(app)
        #expect(gate.release?.state?.status == .aborted)
        #expect(gate.release?.state?.note?.contains("crash guard") == true)
    }

    @Test func badRequestsAreRefusedNamingTheFieldOrTheState() async throws {
        let app = try await TestApp.make(configuration: CrashGuardTests.configuration())
        defer { app.close() }
        let bad = try await app.send(.post, "\(Self.path)/start", token: "editor",
                                     body: #"{"plan": {"stages": [{"rollout": 0}], "margin": 5000, "state": {"status": "running", "since": "2026-01-01T00:00:00Z"}}}"#)
        #expect(bad.status == .badRequest, "\(bad.text)")
        #expect(Set(bad.problemPaths).isSuperset(of: ["plan.stages[0].rollout", "plan.margin", "plan.state"]), "\(bad.problemPaths)")
        let undeclared = try await app.send(.post, "\(Self.path)/start", token: "editor", body: "{}")
        #expect(undeclared.status == .badRequest && undeclared.problemPaths == ["plan"], "\(undeclared.text)")
        let notRunning = try await app.send(.post, "/v1/namespaces/rider/flags/plugin_switch_feed_weather/release/pause", token: "editor", body: "{}")
        #expect(notRunning.status == .notFound, "\(notRunning.text)")
        _ = try await Self.start(app)
        let twice = try await app.send(.post, "\(Self.path)/start", token: "editor", body: "{}")
        #expect(twice.status == .conflict && twice.text.contains("is running"), "\(twice.text)")
        let clientToken = try await app.send(.post, "\(Self.path)/pause", token: "client", body: "{}")
        #expect(clientToken.status == .forbidden)
        let noSuchFlag = try await app.send(.get, "/v1/namespaces/rider/flags/plugin_switch_nope/release", token: "editor")
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
        let other = ReleasePlanRunner(service: app.server.flagService)
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
        #expect(await app.server.releasePlanRunner.runOnce().map(\.action) == ["advanced"], "the restarted runner goes on")

        // `flagctl apply` of a flag file that declares the same plan (no state): the progress stays.
        let state = try #require(try await app.store.namespace("rider"))
        var declared = state.flagSet
        let index = try declared.flagIndex(Self.promos)
        declared.flags[index].pluginSwitch?.release?.state = nil
        declared.flags[index].pluginSwitch?.rules = []
        let body = JSONValue.object(JSONObject([("flag_set", .object(declared.tree(unit: .basisPoints)))])).serializedString()
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
