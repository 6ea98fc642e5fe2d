import Foundation
import HTTPTypes
import SwitchyardCore
import SwitchyardStorage
import SwitchyardWire
import TestSupport
import Testing

@testable import SwitchyardServer

/// Outcome metrics end to end in one process: metric events in, `GET …/experiments/{key}` and its per-unit CSV out.
struct ExperimentRouteTests {
    static let path = "/v1/namespaces/lab/events"
    static let fareHint = "plugin_switch_fare_hint"

    /// A namespace with a switch at 25 %, an experiment split 50/50, and four metrics of every kind.
    static func lab() -> FlagSet {
        FlagSet(
            namespace: "lab",
            pluginPoints: [PluginPointDefinition(name: "confirmation", switches: [fareHint])],
            flags: [
                FlagDefinition(
                    key: fareHint, kind: .pluginSwitch(PluginSwitchDefinition(rollout: Rollout(basisPoints: 2500)!))),
                FlagDefinition(
                    key: "exp_copy",
                    kind: .experiment(
                        Experiment(
                            valueType: .string,
                            variants: [
                                Variant(key: "control", value: .string("Book")),
                                Variant(key: "bold", value: .string("BOOK")),
                            ],
                            defaultVariant: "control", weights: ["control": 1, "bold": 1]))),
            ],
            metrics: [
                MetricDefinition(name: "trip_booked", kind: .conversion),
                MetricDefinition(name: "fare", kind: .value, cap: 50),
                MetricDefinition(name: "bookings", kind: .count),
                MetricDefinition(name: "fare_per_booking", kind: .ratio, numerator: "fare", denominator: "bookings"),
            ])
    }

    static func metric(
        _ id: String, unit: String?, _ name: String, value: Double? = nil, splits: [String: Bool] = [:],
        variants: [String: String] = [:]
    ) -> JSONObject {
        var event = JSONObject([
            ("id", .string(id)), ("type", .string("metric")), ("time", .string((Date() - 5).iso8601)),
            ("metric", .string(name)), ("cohorts", .array([])),
        ])
        if let unit { event["unit"] = .string(unit) }
        if let value { event["value"] = .double(value) }
        event["splits"] = .object(
            JSONObject(splits.sorted { $0.key < $1.key }.map { ($0.key, JSONValue.bool($0.value)) }))
        event["variants"] = .object(
            JSONObject(variants.sorted { $0.key < $1.key }.map { ($0.key, JSONValue.string($0.value)) }))
        return event
    }

    static func session(_ id: String, unit: String, crashed: Bool, splits: [String: Bool]) -> JSONObject {
        var event = EventRouteTests.session(id, crashed: crashed, switches: [], cohorts: [])
        event["unit"] = .string(unit)
        event["splits"] = .object(JSONObject(splits.map { ($0.key, JSONValue.bool($0.value)) }))
        return event
    }

    /// Posts a unit's events from an address of its own (the caps per address stay out of the way).
    static func post(_ app: TestApp, _ events: [JSONObject], peer: Int) async throws -> TestResponse {
        let response = try await app.send(
            .post, path, token: "client", body: EventRouteTests.body(events),
            peer: IPAddress("127.0.\(peer / 250).\(peer % 250 + 1)"))
        #expect(response.status == .ok, "\(response.text)")
        return response
    }

    @Test func unitsOfASwitchAtAPartialRolloutAreComparedPerMetricAndExportedPerUnit() async throws {
        let app = try await TestApp.make(namespaces: [], flagSets: [Self.lab()])
        defer { app.close() }
        // Before it enters: unit w0 books a trip for 7 (its pre-exposure fare).
        _ = try await Self.post(app, [Self.metric("pre", unit: "w0", "fare", value: 7)], peer: 0)
        // 8 units with the switch (6 book, at 20; one of them at 80, capped at 50), 24 without (12 book, at 10).
        for index in 0..<32 {
            let with = index < 8
            let unit = with ? "w\(index)" : "o\(index - 8)"
            let splits = [Self.fareHint: with]
            var events = [Self.session("s-\(unit)", unit: unit, crashed: index % 5 == 0, splits: splits)]
            if with ? index < 6 : index % 2 == 0 {
                let fare: Double = with ? (index == 1 ? 80 : 20) : 10
                events += [
                    Self.metric("b-\(unit)", unit: unit, "trip_booked", splits: splits),
                    Self.metric("n-\(unit)", unit: unit, "bookings", splits: splits),
                    Self.metric("f-\(unit)", unit: unit, "fare", value: fare, splits: splits),
                ]
            }
            _ = try await Self.post(app, events, peer: index + 1)
        }

        let response = try await app.send(.get, "/v1/namespaces/lab/experiments/\(Self.fareHint)", token: "editor")
        #expect(response.status == .ok, "\(response.text)")
        let json = response.json
        #expect(json["type"] == .string("plugin_switch"))
        #expect(json["phase"] == .string("25%"))
        #expect(json["control"] == .string("without"))
        #expect(
            json["arms"]?.arrayValue?.map { [$0["arm"]?.stringValue, $0["units"]?.int64Value.map(String.init)] }
                == [["without", "24"], ["with", "8"]])
        #expect(json["sample_ratio"]?["status"] == .string("ok"))
        #expect(json["trustworthy"] == .bool(true))
        #expect(json["variants"] == nil, "crash counts per variant are an experiment flag's")
        let metrics = try #require(json["metrics"]?.arrayValue)
        #expect(
            metrics.compactMap { $0["name"]?.stringValue }
                == [
                    "sessions", "crashed_sessions", "crash_rate", "bookings", "fare", "fare_per_booking", "trip_booked",
                ],
            "the built-in metrics, then the declared ones by name")
        func metric(_ name: String) -> JSONValue? { metrics.first { $0["name"] == .string(name) } }
        func mean(_ name: String, _ arm: String) -> Double? {
            metric(name)?["arms"]?.arrayValue?.first { $0["arm"] == .string(arm) }?["mean"]?.doubleValue
        }
        #expect(mean("trip_booked", "with") == 0.75)
        #expect(mean("trip_booked", "without") == 0.5)
        // Five fares of 20 and one of 80 capped at 50, over 8 units; w0's fare before it entered is not counted.
        let fareWith: Double = 150.0 / 8
        #expect(mean("fare", "with") == fareWith)
        #expect(mean("fare", "without") == 5)
        #expect(mean("fare_per_booking", "with") == 150.0 / 6)
        #expect(mean("sessions", "with") == 1)
        let booked = try #require(metric("trip_booked")?["comparisons"]?.arrayValue?.first)
        #expect(booked["arm"] == .string("with"))
        let difference = try #require(booked["difference"])
        #expect(difference["estimate"]?.doubleValue.map { abs($0 - 0.25) < 1e-12 } == true)
        let lower = try #require(difference["lower"]?.doubleValue)
        let upper = try #require(difference["upper"]?.doubleValue)
        #expect(lower < 0.25 && 0.25 < upper)
        #expect(booked["verdict"] == .string(lower > 0 ? "better" : "inconclusive"))
        #expect(booked["relative"]?["estimate"]?.doubleValue.map { abs($0 - 0.5) < 1e-12 } == true)
        let fare = try #require(metric("fare")?["comparisons"]?.arrayValue?.first)
        #expect(fare["cuped"] == .bool(true), "w0 has a pre-exposure fare")

        let csv = try await app.send(.get, "/v1/namespaces/lab/experiments/\(Self.fareHint)/units", token: "editor")
        #expect(csv.status == .ok)
        #expect(csv.headers[.contentType] == "text/csv; charset=utf-8")
        let lines = csv.text.split(separator: "\n").map(String.init)
        #expect(lines.first == "unit,arm,phase,entered,metric,value,pre")
        #expect(lines.count == 1 + 32 * 5, "every unit has a row for each metric but the ratio")
        let rows = lines.dropFirst().map { $0.split(separator: ",", omittingEmptySubsequences: false).map(String.init) }
        #expect(rows.allSatisfy { $0.count == 7 && $0[2] == "25%" })
        let w0Fare = rows.filter { $0[4] == "fare" && $0[6] == "7.0" }
        #expect(w0Fare.count == 1 && w0Fare.first?[5] == "20.0" && w0Fare.first?[1] == "with")
        #expect(rows.filter { $0[4] == "fare" && $0[5] == "50.0" }.count == 1)
        #expect(Set(rows.map(\.[0])).count == 32, "units are stored as digests, one per unit")
    }

    @Test func unitsSplitOtherwiseThanDeclaredMakeTheResultsUntrustworthy() async throws {
        let app = try await TestApp.make(namespaces: [], flagSets: [Self.lab()])
        defer { app.close() }
        let events = (0..<60).map {
            Self.metric("m\($0)", unit: "u\($0)", "trip_booked", variants: ["exp_copy": "bold"])
        }
        _ = try await Self.post(app, events, peer: 0)
        let json = try await app.send(.get, "/v1/namespaces/lab/experiments/exp_copy", token: "editor").json
        #expect(json["sample_ratio"]?["status"] == .string("mismatch"))
        #expect(json["trustworthy"] == .bool(false))
        #expect(json["sample_ratio"]?["message"]?.stringValue?.contains("0 / 60 (control / bold)") == true)
        #expect(json["arms"]?.arrayValue?.map { $0["arm"] } == [.string("control"), .string("bold")])
        // An experiment flag's answer keeps its crash counts per variant.
        #expect(json["variants"]?.arrayValue?.count == 2)
    }

    @Test func badMetricEventsAreRefusedOrDroppedWithTheReason() async throws {
        let app = try await TestApp.make(namespaces: [], flagSets: [Self.lab()])
        defer { app.close() }
        var negative = Self.metric("negative", unit: "u", "fare")
        negative["value"] = .int(-3)
        var stringValue = Self.metric("string", unit: "u", "fare")
        stringValue["value"] = .string("16")
        var badSplit = Self.metric("split", unit: "u", "fare")
        badSplit["splits"] = .object(JSONObject([(Self.fareHint, .string("yes"))]))
        let response = try await Self.post(
            app,
            [
                Self.metric("no-unit", unit: nil, "fare", value: 3), negative, stringValue,
                Self.metric("huge", unit: "u", "fare", value: 2e9), badSplit,
                Self.metric("unknown", unit: "u", "trips_taken"), Self.metric("ratio", unit: "u", "fare_per_booking"),
                Self.metric("builtin", unit: "u", "sessions"), Self.metric("good", unit: "u", "fare", value: 3),
            ], peer: 0)
        let reasons = Dictionary(
            uniqueKeysWithValues: (response.json["rejected"]?.arrayValue ?? []).compactMap { entry in
                entry["id"]?.stringValue.map { ($0, entry["reason"]?.stringValue ?? "") }
            })
        #expect(reasons.keys.sorted() == ["huge", "negative", "no-unit", "split", "string"])
        #expect(reasons["no-unit"]?.hasPrefix("unit: is required") == true)
        #expect(reasons["negative"]?.contains("value: -3 is not between 0 and 1000000000") == true)
        #expect(reasons["string"]?.contains("value: must be a number") == true)
        #expect(reasons["split"]?.contains("splits.plugin_switch_fare_hint: must be true or false") == true)
        let dropped = (response.json["dropped"]?.arrayValue ?? []).map {
            [$0["id"]?.stringValue ?? "", $0["reason"]?.stringValue ?? ""]
        }
        #expect(
            dropped == [["unknown", "unknown_metric"], ["ratio", "unknown_metric"], ["builtin", "unknown_metric"]])
        #expect(EventRouteTests.strings(response.json["accepted"]).sorted() == ["builtin", "good", "ratio", "unknown"])
        let metrics = try await app.send(.get, "/metrics", token: "metrics").text
        #expect(metrics.contains(#"flagsd_events_dropped_total{namespace="lab",reason="unknown_metric"} 3"#))
        #expect(metrics.contains(#"flagsd_events_ingested_total{namespace="lab",type="metric"} 1"#))
    }

    @Test func theRouteNamesWhatIsWrongWithItsQuery() async throws {
        let app = try await TestApp.make(namespaces: [], flagSets: [Self.lab()])
        defer { app.close() }
        let missing = try await app.send(.get, "/v1/namespaces/lab/experiments/nope", token: "editor")
        #expect(missing.status == .notFound)
        let phase = try await app.send(
            .get, "/v1/namespaces/lab/experiments/\(Self.fareHint)?phase=50%25", token: "editor")
        #expect(phase.status == .badRequest)
        #expect(phase.text.contains("phase='50%' is no phase of plugin_switch_fare_hint with units (none yet)"))
        let control = try await app.send(
            .get, "/v1/namespaces/lab/experiments/\(Self.fareHint)?control=maybe", token: "editor")
        #expect(control.status == .badRequest)
        #expect(control.text.contains("control='maybe' is not an arm"))
        let client = try await app.send(.get, "/v1/namespaces/lab/experiments/\(Self.fareHint)", token: "client")
        #expect(client.status == .forbidden, "results are for editors: a client token is public")
        // Nothing entered yet: the current phase with empty arms, every metric, no interval.
        let empty = try await app.send(.get, "/v1/namespaces/lab/experiments/\(Self.fareHint)", token: "editor").json
        #expect(empty["phase"] == .string("25%"))
        #expect(empty["sample_ratio"]?["status"] == .string("not_checked"))
        #expect(
            empty["metrics"]?.arrayValue?.first?["comparisons"]?.arrayValue?.first?["difference"]?["lower"] == .null)
    }

    /// Both kinds of answer match docs/openapi.yaml's schema, and flagctl's typed body reads a switch's back as it was sent.
    @Test(
        .enabled(
            if: Repository.pythonIsAvailable,
            "needs python3 (scripts/check-openapi sets up its validator in .build/check-venv)"))
    func theAnswersMatchTheDocumentsSchemaAndTheTypedBody() async throws {
        let app = try await TestApp.make(namespaces: [], flagSets: [Self.lab()])
        defer { app.close() }
        for index in 0..<12 {
            let with = index % 4 == 0
            _ = try await Self.post(
                app,
                [
                    Self.session("s\(index)", unit: "u\(index)", crashed: false, splits: [Self.fareHint: with]),
                    Self.metric(
                        "m\(index)", unit: "u\(index)", "fare", value: Double(index), splits: [Self.fareHint: with],
                        variants: ["exp_copy": index % 2 == 0 ? "bold" : "control"]),
                ], peer: index)
        }
        let switchAnswer = try await app.send(.get, "/v1/namespaces/lab/experiments/\(Self.fareHint)", token: "editor")
        let flagAnswer = try await app.send(.get, "/v1/namespaces/lab/experiments/exp_copy", token: "editor")
        #expect(switchAnswer.status == .ok && flagAnswer.status == .ok)
        let fare = flagAnswer.json["metrics"]?.arrayValue?.first { $0["name"] == .string("fare") }
        #expect(fare?["history"]?.arrayValue?.isEmpty == false, "the fare's course over time has a point now")
        try await OpenAPISyncTests.expectSchemasMatch([
            ("ExperimentResults", switchAnswer.json), ("ExperimentResults", flagAnswer.json),
        ])
        #expect(try ExperimentResultsBody(json: switchAnswer.json).json == switchAnswer.json)
        let flagBody = try ExperimentResultsBody(json: flagAnswer.json)
        #expect(flagBody.metrics.count == 7)
        // An experiment flag's crash counts are typed too: the whole answer reads back as written.
        #expect(flagBody.json == flagAnswer.json)
        #expect(flagBody.crashes?.variants.map(\.variant).sorted() == ["bold", "control"])
        #expect(try ExperimentResultsBody(json: switchAnswer.json).crashes == nil)
    }
}
