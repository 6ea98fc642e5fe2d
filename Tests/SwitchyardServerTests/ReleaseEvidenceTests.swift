import Foundation
import HTTPTypes
import SwitchyardCore
import SwitchyardGuard
import SwitchyardSQLite
import SwitchyardStorage
import SwitchyardWire
import TestSupport
import Testing

@testable import SwitchyardServer

/// Release plans decided on evidence one party cannot make (issue 31): a client token's crashed sessions from one
/// address against a running plan (the issue's attack, over loopback HTTP through the trusted proxy), a real bad
/// plugin spread over many units and networks, events stamped ahead of the server's clock, events received before
/// a stage began, and a roll-back to off on clients' evidence alone, which waits for a person.
///
/// The crash guard watches with a threshold of 50 % here, so that its own trip (which aborts a plan) stays out of
/// the way of what the runner decides.
struct ReleaseEvidenceTests {
    static let promos = CrashGuardTests.promos
    static let path = "/v1/namespaces/rider/flags/\(promos)/release"
    static let policy = CrashGuardPolicy(
        minimumSessions: 100, minimumCrashes: 5, maximumCrashRate: Rollout(basisPoints: 5000))

    /// Lagos at 10 %, Lagos at 100 %, everyone: decided on 100 sessions, a margin of 5 points; roll-back from the
    /// first stage goes to off.
    static let plan = """
        {"stages": [{"cities": ["lagos"], "rollout": 1000}, {"cities": ["lagos"], "rollout": 10000}, {"rollout": 10000}],
         "soak": "0s", "min_sessions": 100, "margin": 500, "confidence": 9500}
        """

    static func app(_ configuration: ServerConfiguration = ServerConfiguration(port: 0)) async throws -> TestApp {
        var configuration = configuration
        configuration.releasePlanInterval = .seconds(3600)
        return try await CrashGuardTests.app(configuration: configuration, policy: policy)
    }

    static func start(_ app: TestApp, advanceTo stage: Int = 0) async throws {
        let started = try await app.send(.post, "\(path)/start", token: "editor", body: #"{"plan": \#(plan)}"#)
        try #require(started.status == .ok, "\(started.text)")
        for _ in 0..<stage {
            let advanced = try await app.send(.post, "\(path)/advance", token: "editor", body: #"{"reason": "test"}"#)
            try #require(advanced.status == .ok, "\(advanced.text)")
        }
    }

    static func plan(_ app: TestApp) async throws -> ReleasePlan? {
        try await app.store.namespace("rider")?.flagSet.flag(promos)?.pluginSwitch?.release
    }

    /// Honest Lagos traffic: `count` sessions with the switch and as many without, none crashed, from 16 networks.
    static func honest(_ prefix: String, count: Int = 400, time: Date = Date()) -> [[JSONValue]] {
        let events =
            CrashGuardTests.sessions("\(prefix)-with", count: count, crashEvery: 0, switches: [promos], time: time)
            + CrashGuardTests.sessions("\(prefix)-without", count: count, crashEvery: 0, switches: [], time: time)
        let perAddress = (events.count + 15) / 16
        return stride(from: 0, to: events.count, by: perAddress).map {
            Array(events[$0..<min($0 + perAddress, events.count)])
        }
    }

    /// `count` crashed Lagos sessions with the switch, each from a unit of its own.
    static func crashed(_ prefix: String, count: Int = 100, time: Date = Date()) -> [JSONValue] {
        CrashGuardTests.sessions(prefix, count: count, crashEvery: 1, switches: [promos], time: time)
    }

    /// Posts each group of events from a network of its own, in-process through the trusted proxy.
    static func post(_ app: TestApp, _ groups: [[JSONValue]], token: String = "client") async throws {
        for group in groups {
            let address = CrashGuardTests.freshAddress()
            for start in stride(from: 0, to: group.count, by: 100) {
                var headers = HTTPFields()
                headers[HTTPField.Name("X-Forwarded-For")!] = address
                let response = try await app.send(
                    .post, "/v1/namespaces/rider/events", token: token, headers: headers,
                    body: CrashGuardTests.batch(Array(group[start..<min(start + 100, group.count)])))
                try #require(response.status == .ok, "\(response.text)")
            }
        }
    }

    /// Posts each group from a network of its own over loopback HTTP to a live flagsd.
    static func post(_ client: LiveClient, _ groups: [[JSONValue]]) async throws {
        for group in groups {
            let address = CrashGuardTests.freshAddress()
            for start in stride(from: 0, to: group.count, by: 100) {
                let response = try await client.send(
                    "POST", "/v1/namespaces/rider/events", headers: ["X-Forwarded-For": address],
                    body: CrashGuardTests.batch(Array(group[start..<min(start + 100, group.count)])))
                try #require(response.status == .ok, "\(response.text)")
            }
        }
    }

    static func status(_ app: TestApp) async throws -> ReleaseStatusBody {
        try ReleaseStatusBody(json: try await app.send(.get, path, token: "editor").json)
    }

    @Test func oneAddressForgingCrashesCannotRollBackARunningPlanButASpreadBadPluginStillDoes() async throws {
        let app = try await Self.app(CrashGuardTests.configuration())
        defer { app.close() }
        // Lagos at 100 % (its roll-back goes to the stage before, no person needed): the attack must not move it.
        try await Self.start(app, advanceTo: 1)
        try await ReleasePlanRunTests.backdate(app)
        try await app.withLiveServer { base in
            let client = LiveClient(base: base, token: app.tokens["client"])
            // 800 honest sessions from 16 networks, none crashed; then 100 crashed sessions claiming the switch, with
            // made-up units, all from one address behind the trusted proxy.
            try await Self.post(client, Self.honest("honest"))
            try await Self.post(client, [Self.crashed("forged")])
            let status = try ReleaseStatusBody(
                json: try await client.send(
                    "GET", Self.path, headers: ["Authorization": "Bearer \(app.tokens["editor"]!)"]
                ).json)
            // The issue's numbers: 20 % of 500 against 0 % of 400.
            #expect(status.assessment?.with == .init(sessions: 500, crashes: 100))
            #expect(status.assessment?.without == .init(sessions: 400, crashes: 0))
            #expect(status.assessment?.verdict == "hold", "\(status.assessment?.reasons ?? [])")
            #expect(
                status.assessment?.reasons.contains("crashes from 1 of 3 networks needed to roll back") == true,
                "\(status.assessment?.reasons ?? [])")
            #expect(await app.server.releasePlanRunner.runOnce().map(\.action) == ["held"])
            #expect(try await Self.plan(app)?.state?.status == .running)

            // A real bad plugin: 100 crashed sessions from 20 networks of 5 units each.
            try await Self.post(
                client, stride(from: 0, to: 100, by: 5).map { Array(Self.crashed("bad", count: 100)[$0..<$0 + 5]) })
            #expect(await app.server.releasePlanRunner.runOnce().map(\.action) == ["rolled_back"])
        }
        let after = try #require(try await Self.plan(app)?.state)
        #expect(after.status == .rolledBack && after.stage == 0, "back to Lagos at 10 %, not off")
        let audit = try await app.send(.get, "/v1/audit?namespace=rider&source=release-plan", token: "admin").json
        let evidence = try #require(audit["entries"]?[0]?["evidence"])
        #expect(evidence["crash_addresses"] == .int(21) && evidence["source"] == .string("client"), "\(evidence)")
    }

    /// A running plan whose first stage clients' crashes, spread over 20 networks, show worse: the runner proposed
    /// rolling it back to off.
    static func proposed() async throws -> TestApp {
        let app = try await Self.app()
        do {
            try await Self.start(app)
            try await ReleasePlanRunTests.backdate(app)
            try await Self.post(app, Self.honest("honest"))
            try await Self.post(app, stride(from: 0, to: 100, by: 5).map { Array(Self.crashed("bad")[$0..<$0 + 5]) })
            #expect(await app.server.releasePlanRunner.runOnce().map(\.action) == ["proposed"])
            return app
        } catch {
            app.close()
            throw error
        }
    }

    @Test func aRollBackToOffOnClientsEvidenceIsAProposalAPersonConfirms() async throws {
        let app = try await Self.proposed()
        defer { app.close() }
        #expect(try await Self.plan(app)?.state?.status == .running, "nothing turned off yet")
        #expect(await app.server.releasePlanRunner.runOnce().map(\.action) == ["held"], "proposed once per stage")

        let status = try await Self.status(app)
        let proposal = try #require(status.proposals.first)
        #expect(status.proposals.count == 1 && proposal.state == "open" && proposal.stage == 0)
        #expect(status.next.contains("waits for a person: proposal \(proposal.id)"), "\(status.next)")
        let audit = try await app.send(.get, "/v1/audit?namespace=rider&source=release-plan", token: "admin").json
        #expect(audit["entries"]?[0]?["evidence"]?["proposes"] == .string("roll_back_to_off"), "\(audit)")

        let client = try await app.send(
            .post, "\(Self.path)/proposals/\(proposal.id)/confirm", token: "client", body: "{}")
        #expect(client.status == .forbidden)
        let confirmed = try await app.send(
            .post, "\(Self.path)/proposals/\(proposal.id)/confirm", token: "editor",
            body: #"{"reason": "crash reports agree"}"#)
        #expect(confirmed.status == .ok, "\(confirmed.text)")
        let state = try #require(try await Self.plan(app)?.state)
        #expect(state.status == .rolledBack && state.stage == nil, "off")
        #expect(try await Self.status(app).proposals.first?.state == "confirmed")
        let again = try await app.send(
            .post, "\(Self.path)/proposals/\(proposal.id)/confirm", token: "editor", body: "{}")
        #expect(again.status == .conflict)
    }

    @Test func aDismissedProposalLeavesTheSwitchOnAndTheStageHolding() async throws {
        let app = try await Self.proposed()
        defer { app.close() }
        let id = try #require(try await Self.status(app).proposals.first?.id)
        let noReason = try await app.send(.post, "\(Self.path)/proposals/\(id)/dismiss", token: "editor", body: "{}")
        #expect(noReason.status == .badRequest && noReason.problemPaths == ["reason"])
        let dismissed = try await app.send(
            .post, "\(Self.path)/proposals/\(id)/dismiss", token: "editor", body: #"{"reason": "a test farm"}"#)
        #expect(dismissed.status == .ok, "\(dismissed.text)")
        #expect(await app.server.releasePlanRunner.runOnce().map(\.action) == ["held"])
        let status = try await Self.status(app)
        #expect(status.proposals.first?.state == "dismissed")
        #expect(status.next.contains("was dismissed by editor"), "\(status.next)")
        #expect(try await Self.plan(app)?.state?.status == .running)
        let confirm = try await app.send(.post, "\(Self.path)/proposals/\(id)/confirm", token: "editor", body: "{}")
        #expect(confirm.status == .conflict)
    }

    @Test func aReportersEvidenceRollsBackToOffWithoutAPerson() async throws {
        let app = try await Self.app()
        defer { app.close() }
        try await Self.start(app)
        try await ReleasePlanRunTests.backdate(app)
        let sessions =
            CrashGuardTests.sessions("r-with", count: 300, crashEvery: 3, switches: [Self.promos])
            + CrashGuardTests.sessions("r-without", count: 300, crashEvery: 0, switches: [])
        try await Self.post(app, [sessions], token: "reporter")
        #expect(await app.server.releasePlanRunner.runOnce().map(\.action) == ["rolled_back"])
        let state = try #require(try await Self.plan(app)?.state)
        #expect(state.status == .rolledBack && state.stage == nil)
        #expect(state.note?.contains("reporters' sessions") == true, "\(state.note ?? "")")
    }

    @Test func eventsStampedAheadCountOnlyOnceTheirMinuteHasCome() async throws {
        let app = try await Self.app()
        defer { app.close() }
        try await Self.start(app)
        try await ReleasePlanRunTests.backdate(app)
        let now = Date()
        // 1,600 sessions from 16 networks: 100 each, the address cap.
        try await Self.post(app, Self.honest("honest", count: 800, time: now))
        // Crashed sessions from 20 networks, stamped 5 minutes ahead (accepted: up to 10).
        try await Self.post(
            app, stride(from: 0, to: 100, by: 5).map { Array(Self.crashed("ahead", time: now + 300)[$0..<$0 + 5]) })
        let current = try #require(try await Self.plan(app))
        let namespace = try #require(try await app.store.namespace("rider"))
        let assessment = try #require(
            try await app.server.releasePlanRunner.assess(Self.promos, plan: current, in: namespace))
        #expect(assessment.check.with == EventTally(sessions: 800, crashedSessions: 0))
        #expect(assessment.verdict == .advance)
        // Six minutes later (a runner whose clock says so), their minute has come.
        var options = ReleasePlanRunner.Options()
        options.now = { now + 360 }
        let later = ReleasePlanRunner(app: app.server.context, options: options)
        #expect(await later.runOnce().map(\.action) == ["proposed"])
    }

    @Test func aStageCountsNoEventReceivedBeforeItBegan() async throws {
        let app = try await Self.app()
        defer { app.close() }
        let now = Date()
        // Posted before the plan starts, stamped 9 minutes ahead: into what will be the stage's minutes.
        try await Self.post(
            app, stride(from: 0, to: 100, by: 5).map { Array(Self.crashed("early", time: now + 540)[$0..<$0 + 5]) })
        try await Self.post(app, Self.honest("early-honest", time: now + 540))
        try await Self.start(app)
        var options = ReleasePlanRunner.Options()
        options.now = { now + 720 }
        let later = ReleasePlanRunner(app: app.server.context, options: options)
        let plan = try #require(try await Self.plan(app))
        let since = Date(timeIntervalSince1970: TimeInterval(try #require(plan.state?.since)))
        let namespace = try #require(try await app.store.namespace("rider"))
        let assessment = try #require(try await later.assess(Self.promos, plan: plan, in: namespace))
        #expect(assessment.from >= since + 600)
        #expect(assessment.check.with == .zero && assessment.check.without == .zero)
        #expect(await later.runOnce().map(\.action) == ["held"])
    }
}
