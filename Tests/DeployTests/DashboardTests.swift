import Foundation
import SwitchyardCore
import TestSupport
import Testing
import Yams

/// Dashboards/: the Grafana dashboard and the Prometheus alert rules use only metrics and labels a live flagsd
/// exposes, the rules pass promtool's check and their unit tests, and they cover what issue 10 asks for.
struct DashboardTests {
    static let dashboardPath = "Dashboards/flagsd.json"
    static let alertsPath = "Dashboards/alerts.yml"

    static func dashboard() throws -> JSONValue {
        try JSONValue.parse(Array(try Repository.text(dashboardPath).utf8))
    }

    /// Every panel, rows' nested panels included.
    static func panels(_ dashboard: JSONValue) -> [JSONValue] {
        (dashboard["panels"]?.arrayValue ?? []).flatMap { [$0] + ($0["panels"]?.arrayValue ?? []) }
    }

    /// Every PromQL expression: panel targets, template variable queries (`label_values(<expr>, label)`), alert rules.
    static func expressions() throws -> [(source: String, expression: String)] {
        let dashboard = try dashboard()
        var found: [(String, String)] = []
        for panel in panels(dashboard) {
            for target in panel["targets"]?.arrayValue ?? [] {
                if let expression = target["expr"]?.stringValue {
                    found.append(("panel '\(panel["title"]?.stringValue ?? "")'", expression))
                }
            }
        }
        for variable in dashboard["templating"]?["list"]?.arrayValue ?? [] where variable["type"] == .string("query") {
            let query = variable["query"]?["query"]?.stringValue ?? variable["query"]?.stringValue ?? ""
            let inner = matches(#"^label_values\((.*),\s*[A-Za-z_]+\)$"#, in: query, group: 1).first ?? query
            found.append(("variable '\(variable["name"]?.stringValue ?? "")'", inner))
        }
        for (name, expression) in try alertRules() {
            found.append(("alert \(name)", expression))
        }
        return found
    }

    /// The alert rules as (name, expression).
    static func alertRules() throws -> [(String, String)] {
        let document = try #require(try Yams.load(yaml: try Repository.text(alertsPath)) as? [String: Any])
        let groups = try #require(document["groups"] as? [[String: Any]])
        return groups.flatMap { group in
            ((group["rules"] as? [[String: Any]]) ?? []).compactMap { rule in
                guard let name = rule["alert"] as? String ?? rule["record"] as? String,
                    let expression = rule["expr"] as? String
                else { return nil }
                return (name, expression)
            }
        }
    }

    /// A live flagsd's /metrics after requests of every kind, a long-poll woken by a change, auth failures, events,
    /// and a crash guard trip.
    static func exercisedMetrics(_ flagsd: LiveFlagsd) async throws -> String {
        let client = try #require(
            try await flagsd.send(
                "POST", "/v1/tokens", body: #"{"name": "metrics-app", "role": "client", "namespaces": ["rider"]}"#
            )
            .body.data(using: .utf8).flatMap { try? JSONValue.parse(Array($0)) }?["token"]?.stringValue)
        _ = try await flagsd.send("GET", "/healthz", token: nil)
        _ = try await flagsd.send("GET", "/readyz", token: nil)
        _ = try await flagsd.send("GET", "/v1/namespaces/rider/snapshot", token: client)
        _ = try await flagsd.send("GET", "/v1/namespaces/rider/flags", token: "not-a-token")
        _ = try await flagsd.send("GET", "/no/such/route")
        // The long-poll parks, then a change wakes it. The flagsd of this test holds a long-poll up to 600 s
        // (--max-wait 600): the change below comes within the 300 s deadline for parking, so the long-poll is
        // still parked when the change is made, however slow the machine.
        async let parked = flagsd.send(
            "GET", "/v1/namespaces/rider/changes?after=1&wait=600", token: client, timeout: 900)
        try await waitUntil("the long-poll parks", timeout: .seconds(300)) {
            try await flagsd.send("GET", "/metrics").body.contains("flagsd_long_poll_waiters 1")
        }
        let change = try await flagsd.send(
            "POST", "/v1/namespaces/rider/flags/plugin_switch_map_traffic/disable",
            body: #"{"reason": "metrics test"}"#)
        try #require(change.status == 200, "\(change.body)")
        #expect(try await parked.status == 200)
        // Events: two counted, one refused (too old); the same batch again counts nothing twice.
        let now = Date()
        let time = ISO8601DateFormatter().string(from: now)
        let start = ISO8601DateFormatter().string(from: now.addingTimeInterval(-60))
        let batch = """
            {"events": [
              {"id": "\(UUID().uuidString)", "type": "session", "time": "\(time)", "city": "lagos", "cohorts": [],
               "session_id": "\(UUID().uuidString)", "start": "\(start)", "end": "\(time)", "crashed": true,
               "switches": ["plugin_switch_feed_promos"]},
              {"id": "\(UUID().uuidString)", "type": "exposure", "time": "\(time)", "cohorts": [],
               "flag": "confirmation_button_copy", "variant": "book_now"},
              {"id": "\(UUID().uuidString)", "type": "session", "time": "2001-01-01T00:00:00Z", "cohorts": [],
               "session_id": "x", "start": "2001-01-01T00:00:00Z", "end": "2001-01-01T00:00:00Z", "crashed": false, "switches": []},
              {"id": "\(UUID().uuidString)", "type": "session", "time": "\(time)", "city": "lagos", "cohorts": [],
               "session_id": "\(UUID().uuidString)", "start": "\(start)", "end": "\(time)", "crashed": true,
               "switches": ["plugin_switch_made_up"]}
            ]}
            """
        for _ in 0..<2 {
            let events = try await flagsd.send("POST", "/v1/namespaces/rider/events", token: client, body: batch)
            try #require(events.status == 200, "\(events.body)")
        }
        // The crash guard trips: 250 sessions with split fare from their own units, one in ten crashed (the built-in
        // bound is 2 %), in batches of 25 that the load balancer in front (127.0.0.1, trusted) forwards from 10 networks (/24s).
        let sessions = (0..<250).map { index in
            #"{"id": "\#(UUID().uuidString)", "type": "session", "time": "\#(time)", "city": "lagos", "cohorts": [], "#
                + #""session_id": "\#(UUID().uuidString)", "unit": "\#(UUID().uuidString)", "start": "\#(start)", "end": "\#(time)", "#
                + #""crashed": \#(index % 10 == 0), "switches": ["plugin_switch_split_fare"]}"#
        }
        for (index, start) in stride(from: 0, to: sessions.count, by: 25).enumerated() {
            let crashes = try await flagsd.send(
                "POST", "/v1/namespaces/rider/events", token: client,
                body: #"{"events": [\#(sessions[start..<(start + 25)].joined(separator: ","))]}"#,
                headers: ["X-Forwarded-For": "10.4.\(index + 1).1"])
            try #require(crashes.status == 200, "\(crashes.body)")
        }
        // Refusals (flagsd runs with a long-poll rate of 1 a minute and an event rate of 30 a minute per address): from
        // an address of its own, a second long-poll gets 429, and batches of 4 events get 429 once 30 are spent.
        let refusedAddress = ["X-Forwarded-For": "10.5.0.1"]
        let first = try await flagsd.send(
            "GET", "/v1/namespaces/rider/changes?after=\(Int64.max)&wait=1", token: client, headers: refusedAddress)
        try #require(first.status == 200, "\(first.body)")
        let second = try await flagsd.send(
            "GET", "/v1/namespaces/rider/changes?after=\(Int64.max)&wait=1", token: client, headers: refusedAddress)
        try #require(second.status == 429, "\(second.body)")
        var eventsRefused = false
        for _ in 0..<10 where !eventsRefused {
            eventsRefused =
                try await flagsd.send(
                    "POST", "/v1/namespaces/rider/events", token: client, body: batch, headers: refusedAddress
                ).status == 429
        }
        try #require(eventsRefused, "a batch past the address's event rate gets 429")
        let tripped =
            #"switchyard_guard_trips_total{namespace="rider",switch="plugin_switch_split_fare",scope="global"} 1"#
        try await waitUntil("the crash guard trips plugin_switch_split_fare", timeout: .seconds(300)) {
            try await flagsd.send("GET", "/metrics").body.contains(tripped)
        }
        // A release plan: its gauges and step counters appear once the runner (every second here) looks at it.
        let started = try await flagsd.send(
            "POST", "/v1/namespaces/rider/flags/plugin_switch_feed_promos/release/start",
            body:
                #"{"plan": {"stages": [{"cities": ["lagos"], "rollout": 100}, {"rollout": 10000}], "soak": "1h"}, "reason": "metrics test"}"#
        )
        try #require(started.status == 200, "\(started.body)")
        let stage = #"switchyard_release_stage{namespace="rider",switch="plugin_switch_feed_promos"} 1"#
        try await waitUntil("the release plan's runner looks at the plan", timeout: .seconds(300)) {
            try await flagsd.send("GET", "/metrics").body.contains(stage)
        }
        return try await flagsd.send("GET", "/metrics").body
    }

    @Test func everyMetricAndLabelTheDashboardAndAlertsUseIsInALiveFlagsdsMetrics() async throws {
        let flagsd = try await LiveFlagsd.start(arguments: [
            "--max-wait", "600", "--trusted-proxies", "127.0.0.1", "--release-interval", "1",
            "--long-poll-rate-per-address", "1", "--events-rate-per-address", "30",
        ])
        defer { flagsd.stop() }
        let exposed = exposedMetrics(try await Self.exercisedMetrics(flagsd))
        #expect(
            exposed["flagsd_http_requests_total"] != nil, "the live flagsd exposes no metrics: \(exposed.keys.sorted())"
        )
        // Prometheus adds job and instance to every series it scrapes, and makes `up` itself.
        let scrapeLabels: Set<String> = ["job", "instance"]
        let synthesized: [String: Set<String>] = ["up": []]
        var checked = 0
        for (source, expression) in try Self.expressions() {
            let usage = PromQLUsage(expression)
            #expect(!usage.selectors.isEmpty, "\(source): no metric found in \(expression)")
            var labelsInExpression = scrapeLabels
            for selector in usage.selectors {
                checked += 1
                guard let labels = exposed[selector.metric] ?? synthesized[selector.metric] else {
                    Issue.record(
                        "\(source) uses \(selector.metric.isEmpty ? "a nameless selector" : selector.metric), which flagsd's /metrics does not have"
                    )
                    continue
                }
                labelsInExpression.formUnion(labels)
                let unknown = Set(selector.labels).subtracting(labels).subtracting(scrapeLabels)
                #expect(
                    unknown.isEmpty,
                    "\(source) matches \(selector.metric) on labels it does not carry: \(unknown.sorted()) (it has \(labels.sorted()))"
                )
            }
            let grouping = Set(usage.groupingLabels).subtracting(labelsInExpression)
            #expect(grouping.isEmpty, "\(source) groups by labels no metric of it carries: \(grouping.sorted())")
        }
        #expect(checked >= 25)
    }

    /// Every series the dashboard and the alert rules read exists from flagsd's start, before any request or
    /// event made it: a panel shows 0, not "No data", and a counter's first increase is seen as one. A release
    /// plan's series are the plan's: they exist from the runner's first look at it, before it can take a step (a
    /// switch without a plan has none, so a namespace of ten thousand switches does not expose sixty thousand
    /// zeros).
    @Test func everySeriesTheDashboardAndAlertsReadExistsFromTheStart() async throws {
        let flagsd = try await LiveFlagsd.start(arguments: ["--release-interval", "1"])
        defer { flagsd.stop() }
        // The crash guard's first load, at start, records the switches' series; wait for it, nothing else (no
        // request, no event).
        try await waitUntil("the crash guard's first load", timeout: .seconds(300)) {
            try await flagsd.send("GET", "/metrics").body.contains("switchyard_guard_window_sessions{")
        }
        // A plan whose first stage soaks an hour: the runner looks at it within a second and takes no step.
        let started = try await flagsd.send(
            "POST", "/v1/namespaces/rider/flags/plugin_switch_feed_promos/release/start",
            body:
                #"{"plan": {"stages": [{"rollout": 100}, {"rollout": 10000}], "soak": "1h"}, "reason": "series test"}"#
        )
        try #require(started.status == 200, "\(started.body)")
        let noStep =
            #"switchyard_release_steps_total{namespace="rider",switch="plugin_switch_feed_promos",action="rolled_back"} 0"#
        try await waitUntil("the release runner's first look at the plan", timeout: .seconds(300)) {
            try await flagsd.send("GET", "/metrics").body.contains(noStep)
        }
        let exposed = exposedMetrics(try await flagsd.send("GET", "/metrics").body)
        for (source, expression) in try Self.expressions() {
            for selector in PromQLUsage(expression).selectors where selector.metric != "up" {
                #expect(
                    exposed[selector.metric] != nil,
                    "\(source) reads \(selector.metric), which a fresh flagsd does not expose yet")
            }
        }
    }

    @Test func theDashboardShowsWhatTheIssueAsksFor() throws {
        let used = Set(try Self.expressions().flatMap { PromQLUsage($0.expression).selectors.map(\.metric) })
        for (what, metric) in [
            ("request rates", "flagsd_http_requests_total"),
            ("latency", "flagsd_http_request_duration_seconds_bucket"),
            ("long-poll waiters", "flagsd_long_poll_waiters"),
            ("change propagation", "flagsd_change_propagation_seconds_bucket"),
            ("namespace versions per instance", "flagsd_namespace_version"),
            ("changes by actor", "flagsd_changes_by_actor_total"),
            ("crash rates per plugin switch", "switchyard_guard_window_crashes"),
            ("crash guard trips", "switchyard_guard_trips_total"),
            ("crash guard proposals", "switchyard_guard_open_proposals"),
            ("events left out of the counts", "flagsd_events_dropped_total"),
            ("release plan stages", "switchyard_release_stage"),
            ("release plan steps", "switchyard_release_steps_total"),
        ] {
            #expect(used.contains(metric), "the dashboard shows no \(what) (\(metric))")
        }
        let versions = try Self.expressions().filter {
            $0.source.hasPrefix("panel") && $0.expression.contains("flagsd_namespace_version")
        }
        #expect(
            versions.contains { PromQLUsage($0.expression).groupingLabels.contains("instance") },
            "versions are not shown per instance")
    }

    @Test func theDashboardIsWellFormedForGrafana() throws {
        let dashboard = try Self.dashboard()
        #expect(dashboard["uid"]?.stringValue?.isEmpty == false)
        #expect(dashboard["title"]?.stringValue?.isEmpty == false)
        #expect(dashboard["schemaVersion"]?.int64Value ?? 0 >= 36)
        let variables = Set((dashboard["templating"]?["list"]?.arrayValue ?? []).compactMap { $0["name"]?.stringValue })
        #expect(variables == ["datasource", "instance", "namespace"])
        var ids = Set<Int64>()
        for panel in Self.panels(dashboard) {
            let title = panel["title"]?.stringValue ?? "?"
            let id = try #require(panel["id"]?.int64Value, "panel '\(title)' has no id")
            #expect(ids.insert(id).inserted, "panel id \(id) is used twice")
            let x = panel["gridPos"]?["x"]?.int64Value ?? -1
            let width = panel["gridPos"]?["w"]?.int64Value ?? 0
            #expect(x >= 0 && width > 0 && x + width <= 24, "panel '\(title)' does not fit the 24-column grid")
            guard panel["type"] != .string("row") else { continue }
            // Data from the datasource the viewer picks, never one fixed uid (so the file imports anywhere).
            #expect(panel["datasource"]?["uid"] == .string("${datasource}"), "panel '\(title)'")
            let targets = panel["targets"]?.arrayValue ?? []
            #expect(!targets.isEmpty, "panel '\(title)' has no query")
            for target in targets {
                #expect(target["datasource"]?["uid"] == .string("${datasource}"), "panel '\(title)'")
                let expression = target["expr"]?.stringValue ?? ""
                for variable in matches(#"\$(?!__)([A-Za-z_]+)"#, in: expression, group: 1) {
                    #expect(
                        variables.contains(variable),
                        "panel '\(title)' uses $\(variable), which the dashboard does not define")
                }
            }
            #expect(panel["description"]?.stringValue?.isEmpty == false, "panel '\(title)' has no description")
        }
    }

    @Test func promtoolChecksTheRulesAndTheirUnitTestsPass() async throws {
        let promtool = try requireProgram("promtool", package: "prometheus")
        let check = try await runProgram(promtool, ["check", "rules", Self.alertsPath], in: Repository.root)
        #expect(check.status == 0, "promtool check rules:\n\(check.output)\(check.error)")
        #expect(check.output.contains("SUCCESS"))
        let unitTests = try await runProgram(
            promtool, ["test", "rules", "alerts.test.yml"], in: Repository.url("Dashboards"))
        #expect(unitTests.status == 0, "promtool test rules:\n\(unitTests.output)\(unitTests.error)")
    }

    @Test func theAlertsCoverTheIssuesListAndSayWhatToDo() throws {
        let document = try #require(try Yams.load(yaml: try Repository.text(Self.alertsPath)) as? [String: Any])
        let rules = ((document["groups"] as? [[String: Any]]) ?? []).flatMap { ($0["rules"] as? [[String: Any]]) ?? [] }
        let names = Set(rules.compactMap { $0["alert"] as? String })
        for name in [
            "FlagsdLongPollWaitersNearCap", "FlagsdNamespaceVersionDrift", "FlagsdHighErrorRate",
            "SwitchyardCrashGuardTripped",
        ] {
            #expect(names.contains(name), "no \(name) alert")
        }
        for rule in rules {
            let name = rule["alert"] as? String ?? "?"
            let labels = rule["labels"] as? [String: Any] ?? [:]
            let annotations = rule["annotations"] as? [String: Any] ?? [:]
            #expect(["page", "warning"].contains(labels["severity"] as? String ?? ""), "\(name) has no severity")
            #expect((annotations["summary"] as? String)?.isEmpty == false, "\(name) has no summary")
            #expect((annotations["description"] as? String)?.isEmpty == false, "\(name) has no description")
            #expect(rule["for"] != nil, "\(name) fires on a single evaluation")
        }
        // Each alert has a unit test in alerts.test.yml.
        let tests = try Repository.text("Dashboards/alerts.test.yml")
        for name in names {
            #expect(tests.contains("alertname: \(name)"), "alerts.test.yml does not test \(name)")
        }
    }
}

/// The PromQL reader the tests above rely on.
struct PromQLUsageTests {
    @Test func readsMetricsLabelsAndGroupingAndSkipsFunctionsKeywordsAndVariables() {
        let usage = PromQLUsage(
            #"""
            histogram_quantile(0.99, sum by (le, route) (rate(flagsd_http_request_duration_seconds_bucket{instance=~"$instance",route!~".*/(snapshot|changes)"}[$__rate_interval])))
              / on (instance) group_left max without (job) (up{job="flagsd"} offset 5m) > bool 0.5 and inf
            """#)
        #expect(
            usage.selectors == [
                .init(metric: "flagsd_http_request_duration_seconds_bucket", labels: ["instance", "route"]),
                .init(metric: "up", labels: ["job"]),
            ])
        #expect(usage.groupingLabels == ["le", "route", "instance", "job"])
        #expect(
            PromQLUsage(#"sum(rate(x_total{a="b,c}d"}[5m:1m])) by (z)"#).selectors == [
                .init(metric: "x_total", labels: ["a"])
            ])
        #expect(PromQLUsage(#"sum(rate(x_total{a="b,c}d"}[5m:1m])) by (z)"#).groupingLabels == ["z"])
    }

    @Test func readsTheLabelsOfAnExposition() {
        let metrics = exposedMetrics(
            """
            # TYPE a counter
            a{x="1",y="q\\"uo,te"} 3
            a{x="2"} 1
            b 0
            """)
        #expect(metrics == ["a": ["x", "y"], "b": []])
    }
}
