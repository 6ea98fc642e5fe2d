import FlagctlCommands
import Foundation
import SwitchyardCore
import SwitchyardSQLite
import SwitchyardStorage
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// `flagctl guard status|trips|apply|dismiss`, `flagctl experiment` and `flagctl enable` after a trip, against a live
/// flagsd whose crash guard tripped on events posted over HTTP, as docs/flagctl.md shows them. The events come from
/// the rider app's crash pipeline (a reporter token: trusted, not capped per address), so a batch decides at once.
struct GuardCommandTests {
    /// Posts events to the live server in batches of at most 1000, with a token (the crash pipeline's by default).
    static func post(_ events: [JSONValue], to server: LiveServer, token: String = "pipeline") async throws {
        for start in stride(from: 0, to: events.count, by: 1000) {
            var request = URLRequest(url: URL(string: server.url + "/v1/namespaces/rider/events")!)
            request.httpMethod = "POST"
            request.setValue("Bearer \(server.tokens[token]!)", forHTTPHeaderField: "Authorization")
            request.httpBody = Data(
                JSONValue.object(
                    JSONObject([("events", .array(Array(events[start..<min(start + 1000, events.count)])))])
                )
                .serializedString().utf8)
            let (_, response) = try await URLSession.shared.data(for: request)
            #expect((response as? HTTPURLResponse)?.statusCode == 200)
        }
    }

    static func session(_ id: String, crashed: Bool, switches: [String], city: String, variant: String? = nil)
        -> JSONValue
    {
        let now = Date()
        var event = JSONObject([
            ("id", .string(id)), ("type", .string("session")), ("time", .string((now - 1).iso8601)),
            ("city", .string(city)),
            ("cohorts", .array([])), ("session_id", .string(id)), ("start", .string((now - 600).iso8601)),
            ("end", .string((now - 2).iso8601)),
            ("crashed", .bool(crashed)), ("switches", .array(switches.map(JSONValue.string))),
            ("unit", .string("device-\(id)")),
        ])
        if let variant { event["variants"] = .object(JSONObject([("confirmation_button_copy", .string(variant))])) }
        return .object(event)
    }

    /// The story of docs/flagctl.md's crash guard section: the promotions card crashes in Lagos (50 of 600
    /// sessions) and hardly anywhere else; an experiment's variant crashes more than its control. Waits for the trip.
    /// The crash pipeline reports every session (healthy ones too), each with its unit.
    static func setUp(_ server: LiveServer) async throws {
        let promos = "plugin_switch_feed_promos"
        var events: [JSONValue] = []
        events += (0..<1400).map {
            session("nairobi-\($0)", crashed: $0 % 700 == 0, switches: [promos], city: "nairobi")
        }
        for (variant, every) in [("control", 250), ("book_now", 50), ("lets_go", 200)] {
            events += (0..<1000).map {
                session("\(variant)-\($0)", crashed: $0 % every == 0, switches: [], city: "nairobi", variant: variant)
            }
            events += (0..<1000).map { index in
                .object(
                    JSONObject([
                        ("id", .string("exposure-\(variant)-\(index)")), ("type", .string("exposure")),
                        ("time", .string((Date() - 1).iso8601)),
                        ("cohorts", .array([])), ("flag", .string("confirmation_button_copy")),
                        ("variant", .string(variant)),
                    ]))
            }
        }
        try await post(events, to: server)
        // Lagos last, in one batch: the guard decides on all of it.
        try await post(
            (0..<600).map { session("lagos-\($0)", crashed: $0 % 12 == 0, switches: [promos], city: "lagos") },
            to: server)
        try await waitUntil("the crash guard trips") {
            try await !server.store.audit(AuditQuery(namespace: "rider", source: .crashGuard)).entries.isEmpty
        }
    }

    @Test func theCrashGuardSectionOfTheDocumentationPrintsWhatItShows() async throws {
        let steps = try WalkthroughTests.steps(section: "guard")
        #expect(steps.map(\.command).contains { $0.hasPrefix("flagctl guard status") })
        #expect(steps.map(\.command).contains { $0.hasPrefix("flagctl guard trips") })
        #expect(steps.map(\.command).contains { $0.hasPrefix("flagctl experiment ") })
        #expect(steps.map(\.command).contains { $0.hasPrefix("flagctl enable ") })
        try await LiveServer.run(bootstrapped: true) { server in
            try await Self.setUp(server)
            var environment = server.environment(token: "amara")
            environment["NO_COLOR"] = "1"
            let dump = ProcessInfo.processInfo.environment["FLAGCTL_WALKTHROUGH_DUMP"]
            var dumped = ""
            defer { if let dump { try? dumped.write(toFile: dump, atomically: true, encoding: .utf8) } }
            for step in steps {
                let words = try WalkthroughTests.words(step.command)
                try #require(words.first == "flagctl")
                let result = await server.flagctl(Array(words.dropFirst()), environment: environment, terminal: true) {
                    _ in "y"
                }
                #expect(result.status == 0, "\(step.command)\n\(result.transcript)")
                let actual = WalkthroughTests().normalized(result.transcript, server: server)
                dumped += "$ \(step.command)\n" + actual
                #expect(
                    actual == WalkthroughTests().normalized(step.expected.trimmingTrailingBlankLines, server: server),
                    "\(step.command)")
            }
        }
    }

    @Test func enablingATrippedSwitchWithoutATerminalNeedsYesAndThenPrintsTheEvidence() async throws {
        try await LiveServer.run(bootstrapped: true) { server in
            try await Self.setUp(server)
            let refused = await server.flagctl("enable", "plugin_switch_feed_promos", "--city", "lagos")
            #expect(refused.status == 64)
            #expect(
                refused.error.contains("add --yes to enable plugin_switch_feed_promos in cities lagos"),
                "\(refused.error)")
            #expect(
                await server.state().flagSet.flag("plugin_switch_feed_promos")?.pluginSwitch?.disabledScopes == [
                    Scope(cities: ["lagos"])
                ])
            let enabled = await server.flagctl("enable", "plugin_switch_feed_promos", "--city", "lagos", "--yes")
            #expect(enabled.status == 0, "\(enabled.error)")
            #expect(
                enabled.output.contains("note: the crash guard turned plugin_switch_feed_promos off in city lagos"),
                "\(enabled.output)")
            #expect(enabled.output.contains("crash rate 8.33% (50 of 600 sessions) in city lagos over 10m"))
            #expect(await server.state().flagSet.flag("plugin_switch_feed_promos")?.pluginSwitch?.disabledScopes == [])
            // A switch the guard did not turn off is enabled without a question, as before.
            let plain = await server.flagctl("enable", "plugin_switch_surge_notice", "--city", "berlin")
            #expect(plain.status == 0, "\(plain.error)")
            let trips = await server.flagctl("guard", "trips", "-o", "json")
            let tree = try JSONValue.parse(Array(trips.output.utf8))
            #expect(tree["trips"]?.arrayValue?.first?["reenabled"]?["actor"] == .string("amara"))
            #expect(tree["trips"]?.arrayValue?.first?["in_force"] == .bool(false))
        }
    }

    @Test func proposalsAreListedAppliedAndDismissedFromFlagctl() async throws {
        try await LiveServer.run(bootstrapped: true) { server in
            // A namespace whose guard only proposes (max_trips_per_hour: 0), set through the API as a person would.
            let url = URL(string: server.url + "/v1/namespaces/rider/flag-set")!
            var read = URLRequest(url: url)
            read.setValue("Bearer \(server.tokens["admin"]!)", forHTTPHeaderField: "Authorization")
            var flagSet = try #require(
                try JSONValue.parse(Array(try await URLSession.shared.data(for: read).0))["flag_set"]?.objectValue)
            flagSet["crash_guard"] = .object(JSONObject([("max_trips_per_hour", .int(0))]))
            var write = read
            write.httpMethod = "PUT"
            write.httpBody = Data(
                JSONValue.object(JSONObject([("flag_set", .object(flagSet))])).serializedString().utf8)
            let (_, written) = try await URLSession.shared.data(for: write)
            try #require((written as? HTTPURLResponse)?.statusCode == 200)
            let traffic = "plugin_switch_map_traffic"
            let promos = "plugin_switch_feed_promos"
            // Enough healthy sessions that each switch trips whichever of the two the guard confirms first: its
            // sessions without it include the other's crashed ones once both batches are in the store (with 400
            // healthy sessions the map layer's 25 % was not twice the 21 % of sessions without it, so a guard that
            // confirmed it after the promotions card's batch had committed rightly left it alone).
            try await Self.post(
                (0..<2000).map { Self.session("ok-\($0)", crashed: false, switches: [], city: "nairobi") }, to: server)
            for (key, every) in [(traffic, 4), (promos, 2)] {
                try await Self.post(
                    (0..<300).map {
                        Self.session("\(key)-\($0)", crashed: $0 % every == 0, switches: [key], city: "nairobi")
                    }, to: server)
            }
            var proposals: [JSONValue] = []
            try await waitUntil("the crash guard proposes twice") {
                let status = await server.flagctl("guard", "status", "-o", "json")
                proposals = (try? JSONValue.parse(Array(status.output.utf8)))?["proposals"]?.arrayValue ?? []
                return proposals.count >= 2
            }
            let ids = Dictionary(
                uniqueKeysWithValues: proposals.compactMap { proposal in
                    proposal["switch"]?.stringValue.flatMap { key in proposal["id"]?.int64Value.map { (key, $0) } }
                })
            let applyID = try #require(ids[traffic])
            let dismissID = try #require(ids[promos])
            let listed = await server.flagctl("guard", "status")
            #expect(
                listed.output.contains(
                    "trip budget    none: the guard only proposes global disables (max_trips_per_hour 0)"),
                "\(listed.output)")
            #expect(
                listed.output.contains(
                    "scoped budget  none: the guard only proposes scoped disables (max_scoped_trips_per_hour 0)"),
                "\(listed.output)")
            #expect(listed.output.contains("turn \(traffic) off everywhere, proposed at "), "\(listed.output)")
            #expect(
                listed.output.contains(
                    "'flagctl guard apply \(applyID) -n rider' or 'flagctl guard dismiss \(applyID) -n rider --reason …'"
                ))
            #expect(listed.output.contains("proposal \(applyID) waits for a person"))

            let refused = await server.flagctl("guard", "apply", String(applyID))
            #expect(
                refused.status == 64 && refused.error.contains("add --yes to apply proposal \(applyID)"),
                "\(refused.error)")
            let applied = await server.flagctlOnTerminal(
                "guard", "apply", String(applyID), "--reason", "INC-4510: map layer crashes on 5.14")
            #expect(applied.status == 0, "\(applied.error)")
            #expect(
                applied.error.contains(
                    "the crash guard proposes turning \(traffic) off everywhere, as its budget of automatic global disables (max_trips_per_hour) is spent:"
                ),
                "\(applied.error)")
            #expect(
                applied.output.hasPrefix(
                    "applied crash guard proposal \(applyID): turned \(traffic) off everywhere (namespace rider is at version "
                ),
                "\(applied.output)")
            #expect(await server.state().flagSet.flag(traffic)?.pluginSwitch?.disabled == true)

            let noReason = await server.flagctl("guard", "dismiss", String(dismissID))
            #expect(noReason.status == 64)
            let dismissed = await server.flagctl(
                "guard", "dismiss", String(dismissID), "--reason", "a device farm's crashes, not riders'")
            #expect(dismissed.status == 0, "\(dismissed.error)")
            #expect(
                dismissed.output
                    == "dismissed crash guard proposal \(dismissID): \(promos) stays on everywhere; the guard leaves it alone for its cool-down\n"
            )
            let again = await server.flagctl("guard", "dismiss", String(dismissID), "--reason", "twice")
            #expect(again.output == "proposal \(dismissID) was dismissed already; nothing changed\n")
            let settled = await server.flagctl("guard", "dismiss", String(applyID), "--reason", "too late")
            #expect(settled.status == 1 && settled.error.contains("proposal \(applyID) is settled"), "\(settled.error)")
            let missing = await server.flagctl("guard", "apply", "999999", "--yes")
            #expect(missing.status == 4)
            #expect(await server.state().flagSet.flag(promos)?.pluginSwitch?.disabled == false)
        }
    }

    @Test func guardCommandsExplainWhatIsWrong() async throws {
        try await LiveServer.run(bootstrapped: true) { server in
            let missing = await server.flagctl("guard", "status", "plugin_switch_nope")
            #expect(missing.status == 4)
            #expect(missing.error.contains("has no plugin switch 'plugin_switch_nope'"))
            let none = await server.flagctl("guard", "trips")
            #expect(none.status == 0)
            #expect(none.output == "the crash guard has turned nothing off in namespace rider in the last 8 days\n")
            let window = await server.flagctl("experiment", "confirmation_button_copy", "--window", "forever")
            #expect(window.status == 64)
            #expect(window.error.contains("--window 'forever' is not a duration from 1m to 30d"))
            let notExperiment = await server.flagctl("experiment", "plugin_switch_prefs_saved_places")
            #expect(notExperiment.status == 1)
            #expect(
                notExperiment.error.contains(
                    "'plugin_switch_prefs_saved_places' runs no experiment: its rollouts (default and rules) are 0 or 100 %"
                ),
                "\(notExperiment.error)")
            let unknown = await server.flagctl("experiment", "nope")
            #expect(unknown.status == 4)
            let client = await server.flagctl("guard", "status", as: "app")
            #expect(client.status == 5)
        }
    }
}
