import Foundation
import HTTPTypes
import SwitchyardCore
import SwitchyardGuard
import SwitchyardStorage
import TestSupport
import Testing

/// Checked by someone else's code: flagsd (the binary, on a free loopback port, seeded from a flag file) counts a
/// simulated fleet's sessions and outcomes; its answer and its per-unit export are handed to
/// Tests/experiment-python, which recomputes every figure with numpy, scipy and statsmodels (pinned in its
/// requirements.txt, installed into .build/experiment-venv on first use) and must agree to 1e-9.
@Suite(.serialized)
struct ExperimentRecomputeTests {
    static let adminToken = "experiment-recompute-admin-0123456789"

    /// A switch at 30 %, an experiment over three variants, one metric of each kind; caps high enough for the fleet.
    static let flagFile = """
        namespace: lab
        crash_guard:
          max_sessions_per_unit: 100
          max_sessions_per_address: 100000
        plugin_points:
          - name: confirmation
            switches: [plugin_switch_fare_hint]
        flags:
          plugin_switch_fare_hint:
            rollout: 30
          exp_copy:
            type: experiment
            value_type: string
            variants:
              - {key: control, value: Book}
              - {key: bold, value: BOOK}
              - {key: short, value: Go}
            default_variant: control
            weights: {control: 2, bold: 1, short: 1}
        metrics:
          trip_booked:
            kind: conversion
          bookings:
            kind: count
            cap: 5
          fare:
            kind: value
            cap: 60
          fare_per_booking:
            kind: ratio
            numerator: fare
            denominator: bookings
            better: lower

        """

    /// The checks recompute_test.py makes for each experiment; each must print `ok <name>`.
    static func checks(_ flag: String) -> [String] {
        [
            "units per arm and phase match the export", "sample ratio p-value (scipy gammaln)",
            "each arm's mean per metric (statsmodels DescrStatsW; ratios of sums)",
            "differences and their confidence sequences (statsmodels CompareMeans, OLS for CUPED)",
            "relative lifts and their intervals (delta method)",
            "verdicts follow the intervals and each metric's direction",
        ]
        .map { "\(flag): \($0)" }
    }

    @Test(
        .enabled(
            if: Repository.pythonIsAvailable,
            "needs python3 (Tests/experiment-python sets up numpy, scipy and statsmodels)"))
    func scipyAndStatsmodelsRecomputeEveryFigureFromTheExport() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
            "flagsd-recompute-\(UUID().uuidString)")
        let flags = folder.appendingPathComponent("Flags")
        try FileManager.default.createDirectory(at: flags, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        try Self.flagFile.write(to: flags.appendingPathComponent("lab.yaml"), atomically: true, encoding: .utf8)
        let child = try ChildFlagsd(
            database: folder.appendingPathComponent("flags.sqlite").path, folder: folder,
            adminToken: Self.adminToken, flagsDirectory: flags.path)
        defer { child.kill() }
        let url = URL(string: "http://127.0.0.1:\(try await child.port())")!
        let admin = LiveClient(base: url, token: Self.adminToken, timeout: 60)
        let created = try await admin.send(
            "POST", "/v1/tokens", body: #"{"name": "fleet", "role": "client", "namespaces": ["lab"]}"#)
        try #require(created.status == .created, "\(created.text)")
        let fleet = LiveClient(base: url, token: try #require(created.json["token"]?.stringValue), timeout: 60)

        // 600 riders: their split and variant as the client runtime reports them; riders with the switch book more and
        // pay more; a third booked before they entered (CUPED's pre-exposure values).
        var random = SplitMix64(seed: 30)
        var early: [JSONValue] = []
        var later: [JSONValue] = []
        let variants = ["control", "control", "bold", "short"]
        for index in 0..<600 {
            let unit = String(format: "%032x", index + 1)
            let with = random.next() % 10 < 3
            let splits = JSONValue.object(JSONObject([("plugin_switch_fare_hint", .bool(with))]))
            let served = JSONValue.object(JSONObject([("exp_copy", .string(variants[Int(random.next() % 4)]))]))
            func event(_ type: String, _ id: String, _ members: [(String, JSONValue)]) -> JSONValue {
                .object(
                    JSONObject(
                        [
                            ("id", .string("\(id)-\(index)")), ("type", .string(type)),
                            ("time", .string((Date() - 30).iso8601)),
                            ("unit", .string(unit)), ("cohorts", .array([])),
                        ] + members))
            }
            if index % 3 == 0 {
                early.append(
                    event(
                        "metric", "pre", [("metric", .string("fare")), ("value", .double(Double(random.next() % 40)))]))
                early.append(event("metric", "pre-booking", [("metric", .string("bookings"))]))
            }
            later.append(
                event(
                    "session", "s",
                    [
                        ("session_id", .string("s-\(index)")), ("start", .string((Date() - 600).iso8601)),
                        ("end", .string((Date() - 60).iso8601)), ("crashed", .bool(random.next() % 50 == 0)),
                        ("switches", .array([])), ("splits", splits), ("variants", served),
                    ]))
            let books = Int(random.next() % 100) < (with ? 45 : 35)
            guard books else { continue }
            for trip in 0..<Int(1 + random.next() % 3) {
                let fare = Double(10 + random.next() % 30) + (with ? 4 : 0) + (index % 3 == 0 ? 0.5 : 0)
                later.append(
                    event(
                        "metric", "b\(trip)",
                        [("metric", .string("trip_booked")), ("splits", splits), ("variants", served)]))
                later.append(
                    event(
                        "metric", "n\(trip)",
                        [("metric", .string("bookings")), ("splits", splits), ("variants", served)]))
                later.append(
                    event(
                        "metric", "f\(trip)",
                        [
                            ("metric", .string("fare")), ("value", .double(fare)), ("splits", splits),
                            ("variants", served),
                        ]))
            }
        }
        for batch in [early]
            + stride(from: 0, to: later.count, by: 500).map({ Array(later[$0..<min($0 + 500, later.count)]) })
        {
            let body = JSONValue.object(JSONObject([("events", .array(batch))])).serializedString()
            let response = try await fleet.send("POST", "/v1/namespaces/lab/events", body: body)
            try #require(response.status == .ok, "\(response.text)")
            #expect(
                response.json["rejected"] == .array([]) && response.json["dropped"] == .array([]), "\(response.text)")
        }

        var arguments: [String] = []
        for flag in ["plugin_switch_fare_hint", "exp_copy"] {
            let results = try await admin.send("GET", "/v1/namespaces/lab/experiments/\(flag)")
            let units = try await admin.send("GET", "/v1/namespaces/lab/experiments/\(flag)/units")
            try #require(results.status == .ok && units.status == .ok, "\(results.text)")
            #expect(results.json["metrics"]?.arrayValue?.count == 7)
            // Something to recompute: intervals, CUPED where units booked before, a sample ratio checked.
            #expect(results.json["sample_ratio"]?["status"] == .string("ok"), "\(results.text)")
            let fare = results.json["metrics"]?.arrayValue?.first { $0["name"] == .string("fare") }
            #expect(fare?["comparisons"]?[0]?["cuped"] == .bool(true))
            #expect(fare?["comparisons"]?[0]?["difference"]?["lower"]?.doubleValue != nil)
            let resultsFile = folder.appendingPathComponent("\(flag).json")
            let unitsFile = folder.appendingPathComponent("\(flag).csv")
            try Data(results.body).write(to: resultsFile)
            try Data(units.body).write(to: unitsFile)
            arguments += [resultsFile.path, unitsFile.path]
        }
        let result = try await Repository.runScript("Tests/experiment-python/run", arguments)
        let lines = result.output.split(separator: "\n").map(String.init)
        for check in Self.checks("plugin_switch_fare_hint") + Self.checks("exp_copy") {
            #expect(
                lines.contains("ok \(check)"),
                "\(lines.first { $0.hasPrefix("FAIL \(check):") } ?? "no line for '\(check)'")")
        }
        #expect(result.status == 0, "Tests/experiment-python/run exited with \(result.status):\n\(result.output)")
    }
}
