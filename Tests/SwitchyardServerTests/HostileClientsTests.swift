import Foundation
import HTTPTypes
import SwitchyardCore
import SwitchyardSQLite
import SwitchyardStorage
import TestSupport
import Testing

@testable import SwitchyardServer

/// Issue 29's attacks, each from one address (or one prefix where the attack needs one), against flagsd behind a
/// trusted proxy as an operator runs it, in-process over a real SQLite file. Each asserts what the honest clients
/// get: their batches counted, no trip, no budget spent, bounded rows. (The silencing attack, junk batches spending
/// the shared token's budget, is EventIngestionTests' `refusalsAndJunkCostOnlyTheAddressThatSentThemNeverTheSharedToken`;
/// holding every connection, ConnectionLimitTests'.)
struct HostileClientsTests {
    static let promos = CrashGuardTests.promos
    static let weather = CrashGuardTests.weather
    static let path = "/v1/namespaces/rider/events"

    /// Posts events in batches of `size`, each batch with these headers (as the trusted proxy passes them).
    @discardableResult
    static func post(_ app: TestApp, _ events: [JSONValue], size: Int = 100, headers: (Int) -> [(String, String)])
        async throws -> [TestResponse]
    {
        var responses: [TestResponse] = []
        for (batch, start) in stride(from: 0, to: events.count, by: size).enumerated() {
            var fields = HTTPFields()
            for (name, value) in headers(batch) { fields.append(HTTPField(name: HTTPField.Name(name)!, value: value)) }
            let response = try await app.send(
                .post, path, token: "client", headers: fields,
                body: CrashGuardTests.batch(Array(events[start..<min(start + size, events.count)])))
            #expect(response.status == .ok, "\(response.text)")
            responses.append(response)
        }
        return responses
    }

    static func guardStatus(_ app: TestApp, _ key: String = promos) async throws -> JSONValue {
        let status = try await app.send(.get, "/v1/namespaces/rider/guard?switch=\(key)", token: "editor")
        return try #require(status.json["switches"]?[0])
    }

    static func guardEntries(_ app: TestApp) async throws -> [AuditEntry] {
        try await app.store.audit(AuditQuery(namespace: "rider", source: .crashGuard)).entries
    }

    /// Behind a proxy that appends X-Forwarded-For (flagsd's default header), a client's own `Forwarded: for=…`
    /// passes through untouched and is never read: four batches of 100 crashed sessions, each claiming another
    /// address, are one address's, and trip nothing.
    @Test func aMadeUpForwardedHeaderDoesNotMakeOneAddressMany() async throws {
        let app = try await CrashGuardTests.app(policy: CrashGuardPolicy())
        defer { app.close() }
        try await CrashGuardTests.post(
            app, CrashGuardTests.sessions("fleet", count: 400, crashEvery: 0, switches: [Self.promos]))
        let forged = CrashGuardTests.sessions("forged", count: 400, crashEvery: 1, switches: [Self.promos])
        try await Self.post(app, forged) { batch in
            [("Forwarded", "for=198.51.\(batch).\(batch + 1)"), ("X-Forwarded-For", "203.0.113.66")]
        }
        await app.server.guardService.drain()
        #expect(try await CrashGuardTests.gate(app)?.disabled == false)
        #expect(try await Self.guardEntries(app).isEmpty)
        let promos = try await Self.guardStatus(app)
        #expect(promos["addresses"] == .int(1) && promos["crashes"] == .int64(100), "\(promos.serializedString())")
    }

    /// A host that may pick any address of a /48 (a tunnel broker's) posts from a hundred /64s: its sessions are
    /// capped at the /48 (16 addresses' worth), and its crashes come from one network, so nothing trips.
    @Test func aHundredSlash64sOfOneSlash48AreOneParty() async throws {
        let app = try await CrashGuardTests.app(policy: CrashGuardPolicy())
        defer { app.close() }
        try await CrashGuardTests.post(
            app, CrashGuardTests.sessions("fleet", count: 400, crashEvery: 0, switches: [Self.promos]))
        let forged = CrashGuardTests.sessions("forged", count: 2000, crashEvery: 1, switches: [Self.promos])
        // Each batch from a /64 of another /56 (so no /56 is full): only the /48 holds them.
        let responses = try await Self.post(app, forged, size: 20) { batch in
            [("X-Forwarded-For", "2001:db8:66:\(String(batch, radix: 16))00::1")]
        }
        await app.server.guardService.drain()
        let dropped = responses.flatMap { $0.json["dropped"]?.arrayValue ?? [] }
        // The built-in cap of 100 sessions per address per window, 16 times for the /48.
        #expect(
            dropped.count == 400 && dropped.allSatisfy { $0["reason"] == .string("address_cap") }, "\(dropped.count)")
        #expect(try await CrashGuardTests.gate(app)?.disabled == false)
        #expect(try await Self.guardEntries(app).isEmpty)
        let promos = try await Self.guardStatus(app)
        #expect(promos["addresses"] == .int(1), "\(promos.serializedString())")
    }

    /// Three networks make up a cohort and crash in it. It is no scope (reported from three networks, named nowhere),
    /// and the fleet as a whole is not shown to crash without them: no trip, no proposal, no budget spent. A real
    /// crash loop in a real city then takes a scoped trip, and one everywhere a global trip, each from its own
    /// budget.
    @Test func aMadeUpCohortSpendsNoBudgetAndRealCrashLoopsStillTrip() async throws {
        var policy = CrashGuardPolicy()
        policy.maximumScopedTripsPerHour = 1
        policy.maximumTripsPerHour = 1
        let app = try await CrashGuardTests.app(policy: policy)
        defer { app.close() }
        // The honest fleet: 6,000 healthy sessions with promos, 100 from each of 60 networks, in real cohorts.
        let fleet = CrashGuardTests.sessions(
            "fleet", count: 6000, crashEvery: 0, switches: [Self.promos], cohorts: ["regulars"])
        try await Self.post(app, fleet) { _ in [("X-Forwarded-For", CrashGuardTests.freshAddress())] }
        // The forgers: 300 crashed sessions in cohort "ghosts", 100 from each of three networks.
        let forged = CrashGuardTests.sessions(
            "ghost", count: 300, crashEvery: 1, switches: [Self.promos], cohorts: ["ghosts"])
        try await Self.post(app, forged) { batch in [("X-Forwarded-For", "198.51.\(100 + batch).7")] }
        await app.server.guardService.drain()
        #expect(try await CrashGuardTests.gate(app)?.disabled == false)
        #expect(try await Self.guardEntries(app).isEmpty, "no trip and no proposal")
        let status = try await app.send(.get, "/v1/namespaces/rider/guard", token: "editor")
        #expect(
            status.json["budget"]?["trips_last_hour"] == .int(0)
                && status.json["budget"]?["scoped_trips_last_hour"] == .int(0))
        // The cohort's own test exceeds, and it is shown; it is just no place to cut.
        let promos = try await Self.guardStatus(app)
        #expect(
            promos["scopes"]?.arrayValue?.contains { $0["value"] == .string("ghosts") } == true,
            "\(promos.serializedString())")

        // A real crash loop: weather crashes a fifth of its sessions in Accra, a city neither declared nor named in the
        // flag set but reported by its riders from 40 networks, and is healthy in Paris. A scoped trip in Accra.
        var weather = CrashGuardTests.sessions(
            "accra", count: 400, crashEvery: 5, switches: [Self.weather], city: "accra")
        weather += CrashGuardTests.sessions(
            "paris", count: 1000, crashEvery: 0, switches: [Self.weather], city: "paris")
        try await CrashGuardTests.post(app, weather)
        await app.server.guardService.drain()
        let tripped = try #require(try await CrashGuardTests.gate(app, Self.weather))
        #expect(tripped.disabledScopes == [Scope(cities: ["accra"])], "\(tripped)")
        // Then promos really crashes everywhere (half its sessions; sessions without it, weather's, crash at 6 %): the
        // scoped budget is spent, the global one is not.
        try await CrashGuardTests.post(
            app,
            CrashGuardTests.sessions(
                "real", count: 3000, crashEvery: 2, switches: [Self.promos],
                cohorts: ["regulars"]))
        // The guard confirms a switch at most once a second (its last look at promos was moments ago): look until then.
        try await waitUntil("promos trips everywhere", timeout: .seconds(60)) {
            await app.server.guardService.drain()
            return try await CrashGuardTests.gate(app)?.disabled == true
        }
        #expect(try await Self.guardEntries(app).filter { $0.action == .guardPropose }.isEmpty)
    }

    /// Made-up cities and cohorts cost the store a bounded number of rows per window: sessions naming 32 random
    /// cohorts each write at most ten times `max_scope_values` of them, and exposures (not capped per address) none.
    @Test func madeUpCohortsWriteABoundedNumberOfRowsPerWindow() async throws {
        var policy = CrashGuardPolicy()
        policy.maximumScopeValues = 10
        let app = try await CrashGuardTests.app(policy: policy)
        defer { app.close() }
        func randomCohorts() -> [String] { (0..<32).map { _ in "c-" + UUID().uuidString.prefix(8).lowercased() } }
        let now = Date() - 2
        var exposures: [JSONValue] = []
        for index in 0..<1000 {
            exposures.append(
                .object(
                    JSONObject([
                        ("id", .string("x\(index)")), ("type", .string("exposure")), ("time", .string(now.iso8601)),
                        ("unit", .string("u\(index)")),
                        ("cohorts", .array(randomCohorts().map(JSONValue.string))),
                        ("flag", .string("checkout_button")), ("variant", .string("bold")),
                    ])))
        }
        try await Self.post(app, exposures) { _ in [("X-Forwarded-For", "203.0.113.99")] }
        let window = EventAdmission(policy: CrashGuardPolicy.resolved(namespace: policy, switch: nil))
        let start = Date(milliseconds: window.windowStart(of: now))
        #expect(try await app.store.scopeReach(in: "rider", from: start, until: start + 600).isEmpty)
        // Sessions from ten addresses, each at its cap of 100 for the window, 32 made-up cohorts each: 32,000 values.
        var sessions: [JSONValue] = []
        for index in 0..<1000 {
            sessions.append(
                CrashGuardTests.session(
                    "s\(index)", crashed: false, switches: [Self.promos], cohorts: randomCohorts(), time: now))
        }
        try await Self.post(app, sessions) { batch in [("X-Forwarded-For", "198.51.\(batch).1")] }
        let written = try await app.store.scopeReach(in: "rider", from: start, until: start + 600)
        #expect(written.keys.filter { $0.kind == .cohort }.count == window.maximumValuesPerWindow)
        #expect(window.maximumValuesPerWindow == 100)
    }
}
