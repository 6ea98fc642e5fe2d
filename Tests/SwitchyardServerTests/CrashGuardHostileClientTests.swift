import Foundation
import HTTPTypes
import SwitchyardCore
import SwitchyardSQLite
import SwitchyardStorage
import Testing

@testable import SwitchyardServer

/// The crash guard against forged and lopsided reports, in-process over a real SQLite file: what one client token
/// from one address can do (nothing), the same crashes from many units and addresses (a trip), a switch in every
/// session beside a crashing one, the trip budget and its proposals, a reporter tripping alone, and made-up names.
struct CrashGuardHostileClientTests {
    static let promos = CrashGuardTests.promos
    static let weather = CrashGuardTests.weather
    static let traffic = CrashGuardTests.traffic
    static let path = "/v1/namespaces/rider/events"

    /// Posts events in batches of `size`, every batch with these `X-Forwarded-For` values (as the proxy passes them).
    static func post(
        _ app: TestApp, _ events: [JSONValue], forwardedFor: String?, token: String = "client", size: Int = 500
    )
        async throws -> [TestResponse]
    {
        var responses: [TestResponse] = []
        for start in stride(from: 0, to: events.count, by: size) {
            var headers = HTTPFields()
            if let forwardedFor { headers[HTTPField.Name("X-Forwarded-For")!] = forwardedFor }
            let response = try await app.send(
                .post, path, token: token, headers: headers,
                body: CrashGuardTests.batch(Array(events[start..<min(start + size, events.count)])))
            #expect(response.status == .ok, "\(response.text)")
            responses.append(response)
        }
        return responses
    }

    static func metrics(_ app: TestApp) async throws -> String {
        try await app.send(.get, "/metrics", token: "metrics").text
    }

    @Test func oneClientTokenFromOneAddressTripsNothingWhateverItSends() async throws {
        // The built-in policy, as in production.
        let app = try await CrashGuardTests.app(policy: CrashGuardPolicy())
        defer { app.close() }
        // The fleet: 400 healthy sessions with promos, from their own units and addresses.
        try await CrashGuardTests.post(
            app, CrashGuardTests.sessions("fleet", count: 400, crashEvery: 0, switches: [Self.promos]))
        // The forger: 1,500 made-up crashed sessions naming promos, each from a new unit, with a forwarding header of its
        // own making that the proxy appends the real address to.
        let forged = CrashGuardTests.sessions("forged", count: 1500, crashEvery: 1, switches: [Self.promos])
        let responses = try await Self.post(app, forged, forwardedFor: "10.9.0.1, 10.9.0.2, 203.0.113.66")
        await app.server.guardService.drain()
        #expect(try await CrashGuardTests.gate(app)?.disabled == false)
        #expect(try await app.store.audit(AuditQuery(namespace: "rider", source: .crashGuard)).entries.isEmpty)
        // Acknowledged, so the forger cannot tell, but only the first 100 of the window count.
        let dropped = responses.flatMap { $0.json["dropped"]?.arrayValue ?? [] }
        #expect(dropped.count == 1400 && dropped.allSatisfy { $0["reason"] == .string("address_cap") })
        #expect(responses.allSatisfy { $0.json["accepted"]?.arrayValue?.count == 500 })
        let status = try await app.send(.get, "/v1/namespaces/rider/guard?switch=\(Self.promos)", token: "editor")
        let promos = try #require(status.json["switches"]?[0])
        #expect(promos["sessions"] == .int64(500) && promos["crashes"] == .int64(100))
        #expect(promos["addresses"] == .int(1) && promos["units"] == .int(100))
        #expect(
            promos["shortfall"]?.arrayValue?.contains(
                .string("crashes from 1 of 3 source networks needed (an IPv4 /24 or IPv6 /48 each)")) == true)
        #expect(
            try await Self.metrics(app).contains(
                #"flagsd_events_dropped_total{namespace="rider",reason="address_cap"} 1400"#))
    }

    @Test func theSameCrashesFromManyUnitsAndAddressesThroughATrustedProxyTrip() async throws {
        let app = try await CrashGuardTests.app(policy: CrashGuardPolicy())
        defer { app.close() }
        try await CrashGuardTests.post(
            app, CrashGuardTests.sessions("fleet", count: 400, crashEvery: 0, switches: [Self.promos]))
        // 300 crashed sessions from 300 units, 10 per batch from 30 addresses, each in a network (/24) of its own.
        try await CrashGuardTests.post(
            app, CrashGuardTests.sessions("crash", count: 300, crashEvery: 1, switches: [Self.promos]))
        await app.server.guardService.drain()
        #expect(try await CrashGuardTests.gate(app)?.disabled == true)
        let entry = try #require(
            try await app.store.audit(AuditQuery(namespace: "rider", source: .crashGuard)).entries.first)
        #expect(entry.evidence?["units"] == .int(300))
        #expect(entry.evidence?["addresses"] == .int(30))
        #expect(entry.evidence?["source"] == .string("client"))
        #expect(entry.reason?.hasSuffix("reported by clients, crashes from 300 units and 30 networks") == true)
    }

    @Test func forwardingHeadersFromAPeerThatIsNotATrustedProxyAreIgnored() async throws {
        // No --trusted-proxies: every request comes from its TCP peer, whatever its headers say.
        let app = try await TestApp.make()
        defer { app.close() }
        try await CrashGuardTests.setPolicy(app, CrashGuardTests.policy)
        try await CrashGuardTests.post(
            app, CrashGuardTests.sessions("crash", count: 300, crashEvery: 1, switches: [Self.promos]))
        await app.server.guardService.drain()
        #expect(try await CrashGuardTests.gate(app)?.disabled == false)
        let status = try await app.send(.get, "/v1/namespaces/rider/guard?switch=\(Self.promos)", token: "editor")
        #expect(status.json["switches"]?[0]?["addresses"] == .int(1))
        #expect(status.json["switches"]?[0]?["sessions"] == .int64(100))
    }

    @Test func aSwitchInEverySessionIsNotCondemnedForCrashesAnotherSwitchExplains() async throws {
        // The issue's fleet: weather in every session, traffic in half of them crashing 10 %, the others 1 %: 800
        // sessions over 4 cities, the two kinds interleaved as they arrive.
        let app = try await CrashGuardTests.app()
        defer { app.close() }
        var events: [JSONValue] = []
        for city in ["lagos", "paris", "lima", "pune"] {
            for index in 0..<100 {
                events.append(
                    CrashGuardTests.session(
                        "\(city)-t\(index)", crashed: index % 10 == 0, switches: [Self.weather, Self.traffic],
                        city: city))
                events.append(
                    CrashGuardTests.session(
                        "\(city)-w\(index)", crashed: index % 100 == 50, switches: [Self.weather], city: city))
            }
        }
        try await CrashGuardTests.post(app, events)
        await app.server.guardService.drain()
        #expect(try await CrashGuardTests.gate(app, Self.traffic)?.disabled == true)
        #expect(try await CrashGuardTests.gate(app, Self.weather)?.disabled == false)
        let entries = try await app.store.audit(AuditQuery(namespace: "rider", source: .crashGuard)).entries
        #expect(entries.map(\.summary) == ["crash guard: disable \(Self.traffic) everywhere"])
        let status = try await app.send(.get, "/v1/namespaces/rider/guard?switch=\(Self.weather)", token: "editor")
        let weather = try #require(status.json["switches"]?[0])
        #expect(weather["left_out"] == .array([.string(Self.traffic)]))
        #expect(weather["crashes"] == .int64(4))
    }

    @Test func pastTheBudgetTheGuardProposesAndAPersonAppliesTheProposal() async throws {
        var policy = CrashGuardTests.policy
        policy.maximumTripsPerHour = 1
        let app = try await CrashGuardTests.app(policy: policy)
        defer { app.close() }
        try await CrashGuardTests.post(app, CrashGuardTests.sessions("ok", count: 600, crashEvery: 0, switches: []))
        try await CrashGuardTests.post(
            app, CrashGuardTests.sessions("p", count: 300, crashEvery: 5, switches: [Self.promos]))
        await app.server.guardService.drain()
        #expect(try await CrashGuardTests.gate(app)?.disabled == true)
        // A second crashing switch in the same hour: proposed, not disabled.
        try await CrashGuardTests.post(
            app, CrashGuardTests.sessions("t", count: 300, crashEvery: 3, switches: [Self.traffic]))
        await app.server.guardService.drain()
        #expect(try await CrashGuardTests.gate(app, Self.traffic)?.disabled == false)
        let status = try await app.send(.get, "/v1/namespaces/rider/guard", token: "editor")
        #expect(
            status.json["budget"]
                == .object(
                    JSONObject([
                        ("max_trips_per_hour", .int(1)), ("trips_last_hour", .int(1)), ("remaining", .int(0)),
                        // The namespace sets only max_trips_per_hour: scoped trips keep to it too.
                        ("max_scoped_trips_per_hour", .int(1)), ("scoped_trips_last_hour", .int(0)),
                        ("scoped_remaining", .int(1)),
                    ])))
        let proposal = try #require(status.json["proposals"]?[0])
        let id = try #require(proposal["id"]?.int64Value)
        #expect(proposal["switch"] == .string(Self.traffic) && proposal["state"] == .string("open"))
        #expect(proposal["proposed_because"] == .string("budget"))
        #expect(proposal["apply"] == .string("flagctl guard apply \(id) -n rider"))
        let traffic = try #require(status.json["switches"]?.arrayValue?.first { $0["key"] == .string(Self.traffic) })
        #expect(traffic["state"] == .string("proposed"))
        #expect(traffic["open_proposals"] == .array([.int64(id)]))
        #expect(try await Self.metrics(app).contains(#"switchyard_guard_open_proposals{namespace="rider"} 1"#))
        #expect(
            try await Self.metrics(app).contains(
                #"switchyard_guard_proposals_total{namespace="rider",switch="plugin_switch_map_traffic",reason="budget"} 1"#
            ))
        // More crashes change nothing: the proposal waits for a person.
        try await CrashGuardTests.post(
            app, CrashGuardTests.sessions("t2", count: 100, crashEvery: 3, switches: [Self.traffic]))
        await app.server.guardService.drain()
        #expect(try await app.store.audit(AuditQuery(namespace: "rider", actions: [.guardPropose])).entries.count == 1)

        // A client may not apply it; an editor does.
        let refused = try await app.send(
            .post, "/v1/namespaces/rider/guard/proposals/\(id)/apply", token: "client", body: "{}")
        #expect(refused.status == .forbidden)
        let applied = try await app.send(
            .post, "/v1/namespaces/rider/guard/proposals/\(id)/apply", token: "editor",
            body: #"{"reason": "the map layer crashes on 5.14"}"#)
        #expect(applied.status == .ok, "\(applied.text)")
        #expect(applied.json["changed"] == .bool(true))
        #expect(try await CrashGuardTests.gate(app, Self.traffic)?.disabled == true)
        let change = try #require(applied.json["change"])
        #expect(change["actor"] == .string("editor") && change["source"] == .string("crash-guard"))
        #expect(change["summary"] == .string("apply crash guard proposal \(id): disable \(Self.traffic) everywhere"))
        #expect(change["evidence"]?["proposal"] == .int64(id))
        let after = try await app.send(.get, "/v1/namespaces/rider/guard/proposals", token: "editor")
        #expect(after.json["proposals"]?[0]?["state"] == .string("applied"))
        #expect(try await Self.metrics(app).contains(#"switchyard_guard_open_proposals{namespace="rider"} 0"#))
        // The person's disable is the guard's in its history (a trip, re-enabled like any) but not in its budget.
        let trips = try await app.send(.get, "/v1/namespaces/rider/guard/trips", token: "editor")
        #expect(
            trips.json["trips"]?[0]?["automatic"] == .bool(false) && trips.json["trips"]?[0]?["proposal"] == .int64(id))
        // Settled: it cannot be dismissed now.
        let late = try await app.send(
            .post, "/v1/namespaces/rider/guard/proposals/\(id)/dismiss", token: "editor", body: #"{"reason": "no"}"#)
        #expect(late.status == .conflict)
        let unknown = try await app.send(
            .post, "/v1/namespaces/rider/guard/proposals/999999/apply", token: "editor", body: "{}")
        #expect(unknown.status == .notFound)
    }

    @Test func aDismissedProposalKeepsTheGuardQuietForTheCooldown() async throws {
        var policy = CrashGuardTests.policy
        policy.maximumTripsPerHour = 0
        let app = try await CrashGuardTests.app(policy: policy)
        defer { app.close() }
        try await CrashGuardTests.post(
            app, CrashGuardTests.sessions("p", count: 300, crashEvery: 5, switches: [Self.promos]))
        await app.server.guardService.drain()
        let proposals = try await app.send(.get, "/v1/namespaces/rider/guard/proposals?state=open", token: "editor")
        let id = try #require(proposals.json["proposals"]?[0]?["id"]?.int64Value)
        let withoutReason = try await app.send(
            .post, "/v1/namespaces/rider/guard/proposals/\(id)/dismiss", token: "editor", body: "{}")
        #expect(withoutReason.status == .badRequest && withoutReason.problemPaths == ["reason"])
        let dismissed = try await app.send(
            .post, "/v1/namespaces/rider/guard/proposals/\(id)/dismiss", token: "editor",
            body: #"{"reason": "a test device farm, not riders"}"#)
        #expect(dismissed.status == .ok, "\(dismissed.text)")
        #expect(dismissed.json["proposal"]?["state"] == .string("dismissed"))
        try await CrashGuardTests.post(
            app, CrashGuardTests.sessions("p2", count: 200, crashEvery: 5, switches: [Self.promos]))
        await app.server.guardService.drain()
        #expect(try await app.store.audit(AuditQuery(namespace: "rider", actions: [.guardPropose])).entries.count == 1)
        let audit = try await app.store.audit(AuditQuery(namespace: "rider", actions: [.guardDismiss])).entries
        #expect(audit.map(\.actor) == ["editor"] && audit.first?.reason == "a test device farm, not riders")
        #expect(try await CrashGuardTests.gate(app)?.disabled == false)
    }

    @Test func scopedDisablesTheGuardAddsToOneSwitchAreCapped() async throws {
        var policy = CrashGuardTests.policy
        policy.maximumScopedDisables = 1
        let app = try await CrashGuardTests.app(policy: policy)
        defer { app.close() }
        try await CrashGuardTests.post(
            app, CrashGuardTests.sessions("healthy", count: 1200, crashEvery: 0, switches: [Self.promos], city: "rome"))
        try await CrashGuardTests.post(
            app, CrashGuardTests.sessions("lagos", count: 200, crashEvery: 5, switches: [Self.promos], city: "lagos"))
        await app.server.guardService.drain()
        try await CrashGuardTests.post(
            app, CrashGuardTests.sessions("paris", count: 200, crashEvery: 5, switches: [Self.promos], city: "paris"))
        // The guard confirms a switch at most once a second, and it confirmed promos a moment ago: look now.
        await app.server.guardService.confirm("rider", Self.promos)
        let gate = try #require(try await CrashGuardTests.gate(app))
        #expect(gate.disabledScopes == [Scope(cities: ["lagos"])])
        let open = try await app.send(.get, "/v1/namespaces/rider/guard/proposals?state=open", token: "editor")
        #expect(open.json["proposals"]?[0]?["scope"] == .object(JSONObject([("cities", .array([.string("paris")]))])))
        #expect(open.json["proposals"]?[0]?["proposed_because"] == .string("scoped_disables"))
    }

    @Test func aReportersSessionsTripAloneWhenThePolicyTrustsOnlyReporters() async throws {
        var policy = CrashGuardTests.policy
        policy.tripSources = [.reporters]
        let app = try await CrashGuardTests.app(policy: policy)
        defer { app.close() }
        // Clients' crashes, however well spread, may not trip under this policy.
        try await CrashGuardTests.post(
            app, CrashGuardTests.sessions("client", count: 300, crashEvery: 2, switches: [Self.promos]))
        await app.server.guardService.drain()
        #expect(try await CrashGuardTests.gate(app)?.disabled == false)
        let issued = try await app.send(
            .post, "/v1/tokens", token: "admin",
            body: #"{"name": "crash-pipeline", "role": "reporter", "namespaces": ["rider"]}"#)
        let secret = try #require(issued.json["token"]?.stringValue, "\(issued.text)")
        // A reporter names the unit of every session.
        let unitless = try await app.send(
            .post, Self.path, token: secret,
            body: CrashGuardTests.batch([
                .object(
                    JSONObject([
                        ("id", .string("r-x")), ("type", .string("session")), ("time", .string((Date() - 2).iso8601)),
                        ("session_id", .string("x")),
                        ("start", .string((Date() - 60).iso8601)), ("end", .string((Date() - 3).iso8601)),
                        ("crashed", .bool(true)),
                        ("switches", .array([.string(Self.promos)])),
                    ]))
            ]))
        #expect(unitless.json["rejected"]?[0]?["reason"]?.stringValue?.hasPrefix("unit: is required") == true)
        // 300 sessions from the pipeline's one server, 60 crashed: they trip the switch by themselves.
        _ = try await Self.post(
            app, CrashGuardTests.sessions("r", count: 300, crashEvery: 5, switches: [Self.promos]), forwardedFor: nil,
            token: secret)
        await app.server.guardService.drain()
        #expect(try await CrashGuardTests.gate(app)?.disabled == true)
        let entry = try #require(
            try await app.store.audit(AuditQuery(namespace: "rider", source: .crashGuard)).entries.first)
        #expect(entry.evidence?["source"] == .string("reporter"))
        #expect(entry.evidence?["sessions"] == .int64(300) && entry.evidence?["crashes"] == .int64(60))
        #expect(entry.evidence?["addresses"] == .null)
    }

    @Test func madeUpSwitchesVariantsAndCitiesAreNotCountedAndNeverBecomeMetricLabels() async throws {
        var policy = CrashGuardTests.policy
        policy.cities = ["lagos", "paris"]
        let app = try await CrashGuardTests.app(policy: policy)
        defer { app.close() }
        let response = try await app.send(
            .post, Self.path, token: "client",
            body: CrashGuardTests.batch([
                CrashGuardTests.session(
                    "known", crashed: false, switches: [Self.promos], city: "atlantis-\(UUID().uuidString.prefix(8))"),
                CrashGuardTests.session("made-up", crashed: true, switches: ["plugin_switch_made_up_by_a_forger"]),
                CrashGuardTests.session(
                    "bad-variant", crashed: false, switches: [], variants: ["checkout_button": "free-money"]),
                .object(
                    JSONObject([
                        ("id", .string("bad-flag")), ("type", .string("exposure")),
                        ("time", .string((Date() - 1).iso8601)),
                        ("flag", .string("no_such_experiment")), ("variant", .string("a")),
                    ])),
            ]))
        #expect(response.status == .ok)
        #expect(response.json["accepted"]?.arrayValue?.count == 4)
        #expect(
            response.json["dropped"]
                == .array([
                    .object(JSONObject([("id", .string("made-up")), ("reason", .string("unknown_switch"))])),
                    .object(JSONObject([("id", .string("bad-variant")), ("reason", .string("unknown_variant"))])),
                    .object(JSONObject([("id", .string("bad-flag")), ("reason", .string("unknown_flag"))])),
                ]))
        let counts = try await app.store.eventCounts(
            EventCountQuery(
                namespace: "rider", from: Date() - 3600, until: Date() + 3600,
                subjects: [.baseline], dimensions: [.city]))
        #expect(counts.map(\.dimension.value) == [CrashGuardPolicy.otherValue])
        #expect(counts.first?.tally.sessions == 1)
        let metrics = try await Self.metrics(app)
        #expect(!metrics.contains("atlantis") && !metrics.contains("made_up") && !metrics.contains("free-money"))
        #expect(metrics.contains(#"flagsd_events_dropped_total{namespace="rider",reason="unknown_switch"} 1"#))
    }
}
