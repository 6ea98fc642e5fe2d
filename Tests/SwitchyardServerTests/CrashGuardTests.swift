import Foundation
import HTTPTypes
import Hummingbird
import Logging
import ServiceLifecycle
import SwitchyardCore
import SwitchyardSQLite
import SwitchyardStorage
import Synchronization
import Testing

@testable import SwitchyardServer

/// The crash guard inside flagsd, in-process over a real SQLite file: trips through the change path with
/// evidence, scopes, one trip however many instances, restarts, re-enables, status, trips and experiments.
///
/// Sessions come from their own units, in batches of 20 from fresh source addresses behind a trusted proxy (the
/// in-process peer, 127.0.0.1), as a fleet's do; the tests of forged reports send them otherwise.
struct CrashGuardTests {
    static let promos = "plugin_switch_feed_promos"
    static let weather = "plugin_switch_feed_weather"
    static let traffic = "plugin_switch_map_traffic"
    /// Small samples for tests: 100 sessions and 5 crashes at least, 2 % at 99.9 %.
    static let policy = CrashGuardPolicy(
        minimumSessions: 100, minimumCrashes: 5, maximumCrashRate: Rollout(basisPoints: 200))
    /// The load balancer in front of the in-process flagsd: the peer of every in-process request.
    static let proxies = TrustedProxies([IPNetwork("127.0.0.1/32")!])
    /// The next fresh source address `post` sends from.
    static let nextAddress = Mutex(0)

    /// A session event of the wire format, from unit `unit-<id>` unless named, timed 2 s ago unless `time` says.
    static func session(
        _ id: String, crashed: Bool, switches: [String], city: String = "lagos", cohorts: [String] = [],
        variants: [String: String] = [:], unit: String? = nil, time: Date? = nil
    ) -> JSONValue {
        let now = Date()
        var event = JSONObject([
            ("id", .string(id)), ("type", .string("session")), ("time", .string((time ?? now - 2).iso8601)),
            ("city", .string(city)),
            ("cohorts", .array(cohorts.map(JSONValue.string))), ("session_id", .string(id)),
            ("start", .string((now - 300).iso8601)),
            ("end", .string((now - 3).iso8601)), ("crashed", .bool(crashed)),
            ("switches", .array(switches.map(JSONValue.string))),
            ("unit", .string(unit ?? "unit-\(id)")),
        ])
        if !variants.isEmpty {
            event["variants"] = .object(
                JSONObject(variants.sorted { $0.key < $1.key }.map { ($0.key, .string($0.value)) }))
        }
        return .object(event)
    }

    static func batch(_ events: [JSONValue]) -> String {
        JSONValue.object(JSONObject([("events", .array(events))])).serializedString()
    }

    /// `count` sessions with the switches active, every `every`-th crashed, ids prefixed.
    ///
    /// All timed alike (2 s ago unless `time` says), so they fall in one admission window of their source address.
    static func sessions(
        _ prefix: String, count: Int, crashEvery every: Int, switches: [String], city: String = "lagos",
        cohorts: [String] = [], time: Date? = nil
    ) -> [JSONValue] {
        let time = time ?? Date() - 2
        return (0..<count).map {
            session(
                "\(prefix)-\($0)", crashed: every > 0 && $0 % every == 0, switches: switches, city: city,
                cohorts: cohorts, time: time)
        }
    }

    /// A source address no batch of this process has come from (62,500 of them).
    static func freshAddress() -> String {
        let number = nextAddress.withLock { next in
            defer { next += 1 }
            return next
        }
        // A /24 of its own each: the guard counts networks (an IPv4 /24), not single addresses.
        return "10.\(1 + number / 250 % 250).\(number % 250).7"
    }

    /// Posts events in batches of 10, each from a fresh source address (`X-Forwarded-For` through the trusted proxy) in
    /// a network of its own, as a fleet's devices report: 200 sessions of a city come from 20 networks, enough for the
    /// crash guard to take it for a place where riders are.
    static func post(_ app: TestApp, _ events: [JSONValue], token: String = "client") async throws {
        for start in stride(from: 0, to: events.count, by: 10) {
            var headers = HTTPFields()
            headers[HTTPField.Name("X-Forwarded-For")!] = freshAddress()
            let response = try await app.send(
                .post, "/v1/namespaces/rider/events", token: token, headers: headers,
                body: batch(Array(events[start..<min(start + 10, events.count)])))
            #expect(response.status == .ok, "\(response.text)")
        }
    }

    /// flagsd behind a load balancer at 127.0.0.1.
    static func configuration(_ configuration: ServerConfiguration = ServerConfiguration(port: 0))
        -> ServerConfiguration
    {
        var configuration = configuration
        configuration.trustedProxies = proxies
        return configuration
    }

    /// An app whose rider namespace has the test policy, behind a trusted proxy.
    static func app(
        configuration: ServerConfiguration = ServerConfiguration(port: 0), policy: CrashGuardPolicy = policy
    ) async throws -> TestApp {
        let app = try await TestApp.make(configuration: Self.configuration(configuration))
        try await setPolicy(app, policy)
        return app
    }

    static func setPolicy(_ app: TestApp, _ policy: CrashGuardPolicy) async throws {
        _ = try await app.server.context.service.change(
            "rider", ChangeRequest(author: ChangeAuthor(actor: "setup", source: .api))
        ) { flagSet in
            var flagSet = flagSet
            flagSet.crashGuard = policy
            return flagSet
        }
    }

    static func gate(_ app: TestApp, _ key: String = promos) async throws -> PluginSwitchDefinition? {
        try await app.store.namespace("rider")?.flagSet.flag(key)?.pluginSwitch
    }

    @Test func aCrashingSwitchIsDisabledThroughTheChangePathWithTheEvidence() async throws {
        // Long-polls of up to 600 s: the guard's change comes before this one ends, however slow the machine.
        let app = try await Self.app(configuration: ServerConfiguration(port: 0, maximumWait: 600))
        defer { app.close() }
        let before = try #require(app.hub.snapshot(of: "rider"))
        // A long-poll waiting for the next version, as every client does.
        async let woken = app.send(
            .get, "/v1/namespaces/rider/snapshot?wait=600", token: "client",
            headers: [.ifNoneMatch: before.entityTag])
        // 10 % of 300 sessions crash with the promos card, spread over two cities; weather is healthy.
        var events = Self.sessions("a", count: 150, crashEvery: 10, switches: [Self.promos], city: "lagos")
        events += Self.sessions("b", count: 150, crashEvery: 10, switches: [Self.promos], city: "paris")
        events += Self.sessions("c", count: 400, crashEvery: 0, switches: [Self.weather], city: "paris")
        try await Self.post(app, events)
        await app.server.guardService.drain()

        let gate = try #require(try await Self.gate(app))
        #expect(gate.disabled)
        #expect(try await Self.gate(app, Self.weather)?.disabled == false)
        let response = try await woken
        #expect(response.status == .ok)
        #expect(response.headers[.eTag] != before.entityTag)

        let audit = try await app.store.audit(AuditQuery(namespace: "rider", source: .crashGuard))
        let entry = try #require(audit.entries.first)
        #expect(audit.entries.count == 1)
        #expect(entry.actor == "crash-guard")
        #expect(entry.version == before.version + 1)
        #expect(entry.summary == "crash guard: disable \(Self.promos) everywhere")
        #expect(
            entry.reason?.hasPrefix(
                "crash guard: crash rate 10% (30 of 300 sessions) everywhere over 10m; lower bound ") == true)
        let evidence = try #require(entry.evidence)
        #expect(evidence["switch"] == .string(Self.promos))
        #expect(evidence["scope"] == .object(JSONObject()))
        #expect(evidence["sessions"] == .int64(300))
        #expect(evidence["crashes"] == .int64(30))
        #expect(evidence["crash_rate"] == .double(0.1))
        #expect(evidence["bound"] == .double(0.02))
        #expect(evidence["window"] == .string("10m"))
        // The change feed carries it too, for editors (a client token reads only what snapshots show).
        let change = try await app.send(.get, "/v1/namespaces/rider/changes/\(before.version + 1)", token: "editor")
        #expect(change.json["evidence"]?["crashes"] == .int64(30))
        #expect(change.json["source"] == .string("crash-guard"))
        let seenByClients = try await app.send(
            .get, "/v1/namespaces/rider/changes/\(before.version + 1)", token: "client")
        #expect(seenByClients.json["evidence"] == nil && seenByClients.json["reason"] == nil)
        let metrics = try await app.send(.get, "/metrics", token: "metrics")
        #expect(
            metrics.text.contains(
                #"switchyard_guard_trips_total{namespace="rider",switch="plugin_switch_feed_promos",scope="global"} 1"#)
        )
        // Switches that never tripped have their counters at 0, so Prometheus sees a first trip as an increase.
        #expect(
            metrics.text.contains(
                #"switchyard_guard_trips_total{namespace="rider",switch="\#(Self.weather)",scope="city"} 0"#))
    }

    @Test func aHealthySwitchThatSharesSessionsWithACrashingOneIsNotBlamed() async throws {
        let app = try await Self.app()
        defer { app.close() }
        // Promos crashes 10 % of its sessions; weather is on in half of them, and healthy on its own. Weather's
        // sessions crash 5 % of the time, over the threshold, but sessions without weather crash more.
        var events = Self.sessions("both", count: 600, crashEvery: 10, switches: [Self.promos, Self.weather])
        events += Self.sessions("promos", count: 600, crashEvery: 10, switches: [Self.promos])
        events += Self.sessions("weather", count: 600, crashEvery: 600, switches: [Self.weather])
        try await Self.post(app, events)
        await app.server.guardService.drain()
        #expect(try await Self.gate(app)?.disabled == true)
        #expect(try await Self.gate(app, Self.weather)?.disabled == false)
        let status = try await app.send(.get, "/v1/namespaces/rider/guard?switch=\(Self.weather)", token: "editor")
        let weather = try #require(status.json["switches"]?[0])
        #expect(weather["sessions"] == .int64(1200) && weather["crashes"] == .int64(61))
        #expect(weather["baseline_rate"] == .double(0.1))
        #expect(weather["bound"] == .double(0.2))
    }

    @Test func crashesConcentratedInOneCityDisableTheSwitchThereOnly() async throws {
        let app = try await Self.app()
        defer { app.close() }
        var events = Self.sessions("lagos", count: 200, crashEvery: 8, switches: [Self.promos], city: "lagos")
        events += Self.sessions("paris", count: 600, crashEvery: 0, switches: [Self.promos], city: "paris")
        events += Self.sessions("rome", count: 600, crashEvery: 300, switches: [Self.promos], city: "rome")
        try await Self.post(app, events)
        await app.server.guardService.drain()
        let gate = try #require(try await Self.gate(app))
        #expect(!gate.disabled)
        #expect(gate.disabledScopes == [Scope(cities: ["lagos"])])
        let entry = try #require(
            try await app.store.audit(AuditQuery(namespace: "rider", source: .crashGuard)).entries.first)
        #expect(entry.summary == "crash guard: disable \(Self.promos) in city lagos")
        #expect(entry.evidence?["sessions"] == .int64(200))
        #expect(entry.evidence?["crashes"] == .int64(25))
        #expect(entry.evidence?["complement"]?["sessions"] == .int64(1200))
        #expect(entry.evidence?["complement"]?["crashes"] == .int64(2))
        // More crashes in Lagos change nothing: it is off there already.
        try await Self.post(
            app, Self.sessions("lagos-late", count: 100, crashEvery: 5, switches: [Self.promos], city: "lagos"))
        await app.server.guardService.drain()
        #expect(try await app.store.audit(AuditQuery(namespace: "rider", source: .crashGuard)).entries.count == 1)
    }

    @Test func aHealthySwitchAndASmallSampleNeverTrip() async throws {
        let app = try await Self.app()
        defer { app.close() }
        // 0.1 % over 2000 sessions; and 4 crashes in 20 sessions of another switch (20 %, but a tiny sample).
        var events = Self.sessions("ok", count: 2000, crashEvery: 1000, switches: [Self.promos])
        events += Self.sessions("few", count: 20, crashEvery: 5, switches: [Self.weather])
        try await Self.post(app, events)
        await app.server.guardService.drain()
        #expect(try await Self.gate(app)?.disabled == false)
        #expect(try await Self.gate(app, Self.weather)?.disabled == false)
        #expect(try await app.store.audit(AuditQuery(namespace: "rider", source: .crashGuard)).entries.isEmpty)
        let status = try await app.send(.get, "/v1/namespaces/rider/guard", token: "editor")
        #expect(status.status == .ok)
        let weather = try #require(status.json["switches"]?.arrayValue?.first { $0["key"] == .string(Self.weather) })
        #expect(weather["state"] == .string("watching"))
        #expect(weather["sessions"] == .int64(20))
        #expect(weather["crashes"] == .int64(4))
        #expect(weather["shortfall"]?.arrayValue?.first == .string("20 of 100 sessions needed"))
    }

    @Test func twoInstancesSharingAStoreTripOnce() async throws {
        let app = try await Self.app()
        defer { app.close() }
        // A second flagsd over the same store (as two processes over one PostgreSQL database).
        let second = try await buildApplication(
            configuration: app.server.context.configuration, store: app.store, logger: app.logger)
        let events = Self.sessions("x", count: 300, crashEvery: 5, switches: [Self.promos])
        try await Self.post(app, events)
        // Both saw the same counts (the second through its refresh from the store) and both decide to trip.
        await second.guardService.refresh("rider")
        await second.guardService.confirm("rider", Self.promos)
        await app.server.guardService.drain()
        #expect(try await Self.gate(app)?.disabled == true)
        #expect(try await app.store.audit(AuditQuery(namespace: "rider", source: .crashGuard)).entries.count == 1)
        #expect(try await app.store.namespace("rider")?.record.version == 3)
    }

    @Test func aRestartInTheMiddleOfAWindowLosesNoAcknowledgedCount() async throws {
        let app = try await Self.app()
        defer { app.close() }
        // Half the crashes before the restart: not enough to trip.
        try await Self.post(app, Self.sessions("before", count: 150, crashEvery: 25, switches: [Self.promos]))
        await app.server.guardService.drain()
        #expect(try await Self.gate(app)?.disabled == false)
        let restarted = try await app.restarted()
        // The other half after it: the trip counts both.
        try await Self.post(restarted, Self.sessions("after", count: 150, crashEvery: 10, switches: [Self.promos]))
        await restarted.server.guardService.drain()
        #expect(try await Self.gate(restarted)?.disabled == true)
        let entry = try #require(
            try await restarted.store.audit(AuditQuery(namespace: "rider", source: .crashGuard)).entries.first)
        #expect(entry.evidence?["sessions"] == .int64(300))
        #expect(entry.evidence?["crashes"] == .int64(21))
    }

    @Test func aTrippedSwitchStaysOffUntilAPersonEnablesItThenCoolsDown() async throws {
        let app = try await Self.app()
        defer { app.close() }
        try await Self.post(app, Self.sessions("x", count: 300, crashEvery: 5, switches: [Self.promos]))
        await app.server.guardService.drain()
        #expect(try await Self.gate(app)?.disabled == true)
        var trips = try await app.send(.get, "/v1/namespaces/rider/guard/trips", token: "editor")
        #expect(trips.json["trips"]?[0]?["in_force"] == .bool(true))
        #expect(trips.json["trips"]?[0]?["reenabled"] == .null)
        #expect(trips.json["trips"]?[0]?["evidence"]?["crashes"] == .int64(60))
        var status = try await app.send(.get, "/v1/namespaces/rider/guard?switch=\(Self.promos)", token: "editor")
        #expect(status.json["switches"]?[0]?["state"] == .string("tripped"))

        let enabled = try await app.send(
            .post, "/v1/namespaces/rider/flags/\(Self.promos)/enable", token: "editor",
            body: #"{"reason": "fixed in 5.14.1"}"#)
        #expect(enabled.status == .ok)
        // The crashes from before are still in the window; the guard ignores them and waits out the cool-down.
        try await Self.post(app, Self.sessions("y", count: 300, crashEvery: 5, switches: [Self.promos]))
        await app.server.guardService.drain()
        #expect(try await Self.gate(app)?.disabled == false)
        status = try await app.send(.get, "/v1/namespaces/rider/guard?switch=\(Self.promos)", token: "editor")
        #expect(status.json["switches"]?[0]?["state"] == .string("cooling_down"))
        #expect(status.json["switches"]?[0]?["cooling_down_until"]?.stringValue != nil)
        trips = try await app.send(.get, "/v1/namespaces/rider/guard/trips", token: "editor")
        #expect(trips.json["trips"]?[0]?["in_force"] == .bool(false))
        #expect(trips.json["trips"]?[0]?["reenabled"]?["actor"] == .string("editor"))
        #expect(try await app.store.audit(AuditQuery(namespace: "rider", source: .crashGuard)).entries.count == 1)
    }

    @Test func theCooldownEndsAndOnlySessionsAfterTheReenableCount() {
        let reenabled = Date(timeIntervalSince1970: 1_800_000_030)
        var history = GuardHistory()
        history.trips[2] = GuardHistory.Trip(
            key: Self.promos, scope: .everywhere, version: 2, time: reenabled - 600, reason: nil,
            evidence: .null, reenabled: GuardHistory.Reenable(version: 3, time: reenabled, actor: "ada", deleted: false)
        )
        let policy = CrashGuardPolicy.resolved(namespace: CrashGuardPolicy(cooldown: .seconds(1800)), switch: nil)
        let during = GuardCore.span(Self.promos, policy: policy, history: history, now: reenabled + 60)
        #expect(during.coolingDown)
        // The minute of the re-enable holds earlier sessions: counting starts at the next minute.
        #expect(during.from == 1_800_000_060_000)
        let after = GuardCore.span(Self.promos, policy: policy, history: history, now: reenabled + 1801)
        #expect(!after.coolingDown)
        #expect(after.from == EventAggregation.bucketStart(of: reenabled + 1801 - 600))
        let later = GuardCore.span(Self.promos, policy: policy, history: history, now: reenabled + 7200)
        #expect(later.from == EventAggregation.bucketStart(of: reenabled + 7200 - 600))
    }

    @Test func aTripThisProcessCommittedLeavesEarlierChangesToBeRead() {
        let time = Date(timeIntervalSince1970: 1_800_000_000)
        func change(_ version: Int64, source: ChangeSource, key: String, disabled: Bool, evidence: JSONValue? = nil)
            -> ChangeRecord
        {
            ChangeRecord(
                namespace: "rider", epoch: "e", version: version, time: time + Double(version),
                actor: source == .crashGuard ? "crash-guard" : "ada",
                source: source, reason: nil, summary: "",
                changes: [
                    ObjectChange(
                        kind: .flag, key: key, before: nil, after: .object(JSONObject([("disabled", .bool(disabled))])))
                ],
                evidence: evidence)
        }
        var history = GuardHistory()
        history.apply(
            change(
                2, source: .crashGuard, key: "plugin_switch_a", disabled: true,
                evidence: .object(JSONObject([("switch", .string("plugin_switch_a"))]))))
        // This process trips another switch at version 5 while version 3 (a person turning A back on) is unread.
        history.add(
            committed: change(
                5, source: .crashGuard, key: "plugin_switch_b", disabled: true,
                evidence: .object(JSONObject([("switch", .string("plugin_switch_b"))]))))
        #expect(history.seenVersion == 2)
        #expect(history.openTrips(of: "plugin_switch_b").map(\.version) == [5])
        history.apply(change(3, source: .api, key: "plugin_switch_a", disabled: false))
        #expect(history.openTrips(of: "plugin_switch_a").isEmpty)
        #expect(history.lastReenable(of: "plugin_switch_a")?.version == 3)
    }

    @Test func aPolicyCanTurnTheGuardOffForASwitch() async throws {
        let app = try await TestApp.make(configuration: Self.configuration())
        defer { app.close() }
        _ = try await app.server.context.service.change(
            "rider", ChangeRequest(author: ChangeAuthor(actor: "setup", source: .api))
        ) { flagSet in
            var flagSet = flagSet
            flagSet.crashGuard = Self.policy
            let index = flagSet.flags.firstIndex { $0.key == Self.promos }!
            flagSet.flags[index].pluginSwitch?.crashGuard = CrashGuardPolicy(enabled: false)
            return flagSet
        }
        try await Self.post(app, Self.sessions("x", count: 300, crashEvery: 2, switches: [Self.promos]))
        await app.server.guardService.drain()
        #expect(try await Self.gate(app)?.disabled == false)
        let status = try await app.send(.get, "/v1/namespaces/rider/guard?switch=\(Self.promos)", token: "editor")
        #expect(status.json["switches"]?[0]?["state"] == .string("off"))
        let missing = try await app.send(.get, "/v1/namespaces/rider/guard?switch=plugin_switch_nope", token: "editor")
        #expect(missing.status == .notFound)
    }

    @Test func experimentResultsGiveEachVariantsCrashRateAndTheIntervalOfItsDifference() async throws {
        let app = try await TestApp.make(configuration: Self.configuration())
        defer { app.close() }
        var events: [JSONValue] = []
        for index in 0..<400 {
            let bold = index % 2 == 1
            let crashed = bold ? index % 40 == 1 : index % 200 == 0
            events.append(
                Self.session(
                    "s\(index)", crashed: crashed, switches: [],
                    variants: ["checkout_button": bold ? "bold" : "control"]))
        }
        for index in 0..<10 {
            events.append(
                .object(
                    JSONObject([
                        ("id", .string("e\(index)")), ("type", .string("exposure")),
                        ("time", .string((Date() - 1).iso8601)), ("cohorts", .array([])),
                        ("flag", .string("checkout_button")), ("variant", .string(index < 6 ? "control" : "bold")),
                    ])))
        }
        try await Self.post(app, events)
        let response = try await app.send(
            .get, "/v1/namespaces/rider/experiments/checkout_button?window=1h", token: "editor")
        #expect(response.status == .ok, "\(response.text)")
        #expect(response.json["control"] == .string("control"))
        #expect(response.json["interval"] == .string("newcombe-hybrid-score"))
        let control = try #require(response.json["variants"]?[0])
        let bold = try #require(response.json["variants"]?[1])
        #expect(
            control["variant"] == .string("control") && control["sessions"] == .int64(200)
                && control["crashes"] == .int64(2))
        #expect(control["exposures"] == .int64(6))
        #expect(control["difference"] == .null)
        #expect(bold["sessions"] == .int64(200) && bold["crashes"] == .int64(10) && bold["exposures"] == .int64(4))
        #expect(bold["crash_rate"] == .double(0.05))
        #expect(bold["difference"]?["estimate"] == .double(0.04))
        #expect(bold["difference"]?["significant"] == .bool(true))
        // A switch that splits no unit (weather is off for everyone) runs no experiment.
        let notAnExperiment = try await app.send(
            .get, "/v1/namespaces/rider/experiments/\(Self.weather)", token: "editor")
        #expect(notAnExperiment.status == .badRequest)
        #expect(notAnExperiment.problemPaths == ["key"])
        let badWindow = try await app.send(
            .get, "/v1/namespaces/rider/experiments/checkout_button?window=forever", token: "editor")
        #expect(badWindow.status == .badRequest)
        #expect(badWindow.problemPaths == ["window"])
        let badControl = try await app.send(
            .get, "/v1/namespaces/rider/experiments/checkout_button?control=nope", token: "editor")
        #expect(badControl.problemPaths == ["control"])
    }
}

extension JSONValue {
    /// An element of a list; nil when this is not a list or the index is out of range.
    subscript(_ index: Int) -> JSONValue? {
        guard let elements = arrayValue, elements.indices.contains(index) else { return nil }
        return elements[index]
    }
}
