import Foundation
import HTTPTypes
import SwitchyardCore
import SwitchyardSQLite
import SwitchyardStorage
import Synchronization
import TestSupport
import Testing

@testable import SwitchyardServer

/// `POST /v1/namespaces/{ns}/events`: validation, idempotency, storage, metrics and the observer hook.
struct EventRouteTests {
    static let path = "/v1/namespaces/rider/events"

    static func time(_ offset: TimeInterval = 0) -> String {
        (Date() + offset).iso8601
    }

    static func session(
        _ id: String, crashed: Bool = false, switches: [String] = ["plugin_switch_feed_promos"],
        city: String = "lagos", cohorts: [String] = ["beta"], at offset: TimeInterval = -5,
        variants: JSONObject? = nil
    ) -> JSONObject {
        var event = JSONObject([
            ("id", .string(id)), ("type", .string("session")), ("time", .string(time(offset))),
            ("app_version", .string("5.12.0")),
            ("platform", .string("ios")), ("city", .string(city)), ("cohorts", .array(cohorts.map(JSONValue.string))),
            ("session_id", .string(id)), ("start", .string(time(offset - 600))), ("end", .string(time(offset - 60))),
            ("crashed", .bool(crashed)), ("switches", .array(switches.map(JSONValue.string))),
        ])
        if let variants { event["variants"] = .object(variants) }
        return event
    }

    static func exposure(_ id: String, flag: String = "checkout_button", variant: String = "bold") -> JSONObject {
        JSONObject([
            ("id", .string(id)), ("type", .string("exposure")), ("time", .string(time(-1))), ("cohorts", .array([])),
            ("flag", .string(flag)), ("variant", .string(variant)), ("epoch", .string("e")), ("version", .int(3)),
        ])
    }

    static func body(_ events: [JSONObject]) -> String {
        JSONValue.object(JSONObject([("events", .array(events.map(JSONValue.object)))])).serializedString()
    }

    static func strings(_ value: JSONValue?) -> [String] {
        value?.arrayValue?.compactMap(\.stringValue) ?? ["not a list"]
    }

    func counts(_ app: TestApp, _ subjects: Set<EventSubject.Kind>? = nil) async throws -> [EventCount] {
        try await app.store.eventCounts(
            EventCountQuery(
                namespace: "rider", from: Date() - 86_400, until: Date() + 86_400,
                subjects: subjects, dimensions: [.all]))
    }

    @Test func minuteCountersOlderThanTwoDaysBecomeOnePerHour() async throws {
        let app = try await TestApp.make()
        defer { app.close() }
        // Two sessions in one hour of three days ago (late reports, within the 7 days accepted), 10 minutes apart.
        let hour = ((Date().timeIntervalSince1970 - 3 * 86_400) / 3600).rounded(.down) * 3600
        let at = { (minute: Double) in hour + minute * 60 - Date().timeIntervalSince1970 }
        let response = try await app.send(
            .post, Self.path, token: "client",
            body: Self.body([Self.session("late1", at: at(10)), Self.session("late2", at: at(20))]))
        #expect(response.status == .ok, "\(response.text)")
        // The batch's answer starts the hourly upkeep, which rolls them up into the hour's counter.
        let start = Date(timeIntervalSince1970: hour)
        try await waitUntil("the two minutes are one hour") {
            let buckets = try await app.store.eventCounts(
                EventCountQuery(
                    namespace: "rider", from: start, until: start + 3600,
                    subjects: [.baseline], dimensions: [.all], perBucket: true))
            return buckets.map(\.bucket) == [start] && buckets.map(\.tally.sessions) == [2]
        }
    }

    @Test func aBatchIsCountedBeforeItIsAcknowledged() async throws {
        let app = try await TestApp.make()
        defer { app.close() }
        let response = try await app.send(
            .post, Self.path, token: "client",
            body: Self.body([
                Self.session("s1", crashed: true, variants: JSONObject([("checkout_button", .string("bold"))])),
                Self.session("s2", switches: []),
                Self.exposure("e1"),
            ]))
        #expect(response.status == .ok, "\(response.text)")
        #expect(Self.strings(response.json["accepted"]) == ["s1", "s2", "e1"])
        #expect(response.json["rejected"] == .array([]))
        #expect(response.json["duplicates"] == .array([]))
        let counts = try await counts(app)
        #expect(counts.first { $0.subject == .baseline }?.tally == EventTally(sessions: 2, crashedSessions: 1))
        #expect(
            counts.first { $0.subject == .pluginSwitch("plugin_switch_feed_promos") }?.tally
                == EventTally(sessions: 1, crashedSessions: 1))
        #expect(
            counts.first { $0.subject == .variant("bold", of: "checkout_button") }?.tally
                == EventTally(sessions: 1, crashedSessions: 1, exposures: 1))
    }

    @Test func aRetriedBatchNeverCountsTwiceAlsoAfterARestart() async throws {
        let app = try await TestApp.make()
        let batch = Self.body([Self.session("s1", crashed: true), Self.exposure("e1")])
        #expect(try await app.send(.post, Self.path, token: "client", body: batch).status == .ok)
        let retried = try await app.send(.post, Self.path, token: "client", body: batch)
        #expect(Self.strings(retried.json["accepted"]) == ["s1", "e1"])
        #expect(Self.strings(retried.json["duplicates"]) == ["s1", "e1"])

        let restarted = try await app.restarted()
        defer { restarted.close() }
        let afterRestart = try await restarted.send(
            .post, Self.path, token: "client",
            body: Self.body([Self.session("s1", crashed: true), Self.session("s2"), Self.session("s2")]))
        #expect(Self.strings(afterRestart.json["accepted"]) == ["s1", "s2", "s2"])
        #expect(Self.strings(afterRestart.json["duplicates"]) == ["s1", "s2"])
        let counts = try await counts(restarted, [.baseline])
        #expect(counts.map(\.tally) == [EventTally(sessions: 2, crashedSessions: 1)])
    }

    @Test func eachInvalidEventIsRejectedWithAReasonNamingItsFieldAndTheOthersCount() async throws {
        let app = try await TestApp.make()
        defer { app.close() }
        var noID = Self.session("x")
        noID["id"] = nil
        var badCrashed = Self.session("bad-crashed")
        badCrashed["crashed"] = .string("yes")
        var badSwitch = Self.session("bad-switch", switches: ["plugin switch feed"])
        badSwitch["end"] = .string("yesterday")
        var noVariant = Self.exposure("no-variant")
        noVariant["variant"] = nil
        var unknown = Self.exposure("unknown-type")
        unknown["type"] = .string("purchase")
        var backwards = Self.session("backwards")
        backwards["start"] = .string(Self.time(60))
        let response = try await app.send(
            .post, Self.path, token: "client",
            body: JSONValue.object(
                JSONObject([
                    (
                        "events",
                        .array([
                            .object(Self.session("good")),
                            .object(noID),
                            .object(Self.session("future", at: 3 * 86_400 + 60)),
                            .object(Self.session("ancient", at: -30 * 86_400)),
                            .object(badCrashed),
                            .object(badSwitch),
                            .object(noVariant),
                            .object(unknown),
                            .object(backwards),
                            .string("not an event"),
                        ])
                    )
                ])
            ).serializedString())
        #expect(response.status == .ok, "\(response.text)")
        #expect(Self.strings(response.json["accepted"]) == ["good"])
        let rejected = response.json["rejected"]?.arrayValue ?? []
        #expect(rejected.map { $0["index"]?.int64Value ?? -1 } == [1, 2, 3, 4, 5, 6, 7, 8, 9])
        #expect(
            rejected.map { $0["id"] } == [
                .null, .string("future"), .string("ancient"), .string("bad-crashed"), .string("bad-switch"),
                .string("no-variant"), .string("unknown-type"), .string("backwards"), .null,
            ])
        let reasons = rejected.map { $0["reason"]?.stringValue ?? "" }
        try #require(reasons.count == 9, "\(response.text)")
        #expect(reasons[0] == "id: is required")
        #expect(reasons[1].hasPrefix("time: "))
        #expect(
            reasons[1].contains(
                "is 3 days in the future, more than the 10 minutes of clock skew this server allows (check the device clock)"
            ))
        #expect(reasons[2].contains("is 30 days old; this server counts events up to 7 days old"))
        #expect(reasons[3] == "crashed: must be true or false, not a string")
        #expect(
            reasons[4]
                == "end: 'yesterday' is not an RFC 3339 time such as 2026-11-22T09:20:40.118Z; switches[0]: 'plugin switch feed' is not a flag key (letters, digits, '.', '_' and '-')"
        )
        #expect(reasons[5] == "variant: is required")
        #expect(reasons[6] == "type: 'purchase' is not an event type of this server (session, exposure, metric)")
        #expect(reasons[7].hasPrefix("end: ") && reasons[7].contains("is before start"))
        #expect(reasons[8] == "an event must be a JSON object, not a string")
        #expect(try await counts(app, [.baseline]).map(\.tally) == [EventTally(sessions: 1)])

        let metrics = try await app.send(.get, "/metrics", token: "metrics").text
        #expect(metrics.contains(#"flagsd_events_ingested_total{namespace="rider",type="session"} 1"#))
        #expect(metrics.contains(#"flagsd_events_rejected_total{namespace="rider",reason="invalid"} 6"#))
        #expect(metrics.contains(#"flagsd_events_rejected_total{namespace="rider",reason="in_future"} 1"#))
        #expect(metrics.contains(#"flagsd_events_rejected_total{namespace="rider",reason="too_old"} 1"#))
        #expect(metrics.contains(#"flagsd_events_rejected_total{namespace="rider",reason="unknown_type"} 1"#))
    }

    @Test func unknownMembersAreIgnoredSoNewerClientsCanAddFields() async throws {
        let app = try await TestApp.make()
        defer { app.close() }
        var event = Self.session("s1")
        event["battery"] = .int(42)
        let response = try await app.send(
            .post, Self.path, token: "client",
            body: #"{"client": "ios/5.13", "events": [\#(JSONValue.object(event).serializedString())]}"#)
        #expect(Self.strings(response.json["accepted"]) == ["s1"])
    }

    @Test(arguments: [
        ("not json", "the body is not valid JSON", ""),
        (#"{"events": [{"id": "a", "type": "session""#, "the body is not valid JSON", ""),
        ("[1, 2]", "the body must be a JSON object {\"events\": [...]}, not a list", ""),
        ("{}", "events: is required (send {\"events\": [...]})", "events"),
        (#"{"events": {"id": "a"}}"#, "events: must be a list of events, not an object", "events"),
    ])
    func aMalformedBodyIsA400NamingThePath(body: String, detail: String, path: String) async throws {
        let app = try await TestApp.make()
        defer { app.close() }
        let response = try await app.send(.post, Self.path, token: "client", body: body)
        #expect(response.status == .badRequest)
        #expect(response.headers[.contentType] == "application/problem+json")
        #expect(response.json["detail"]?.stringValue?.hasPrefix(detail) == true, "\(response.text)")
        #expect(response.problemPaths == [path])
    }

    @Test func tooManyEventsOrTooLargeABodyIsA413() async throws {
        var configuration = ServerConfiguration(port: 0, maximumBodySize: 64 * 1024)
        configuration.maximumEventsPerBatch = 3
        let app = try await TestApp.make(configuration: configuration)
        defer { app.close() }
        let four = try await app.send(
            .post, Self.path, token: "client", body: Self.body((1...4).map { Self.session("s\($0)") }))
        #expect(four.status == .contentTooLarge)
        #expect(
            four.json["detail"]?.stringValue
                == "events: 4 events in one batch; this server takes at most 3 (send smaller batches)")
        #expect(four.problemPaths == ["events"])
        let big = try await app.send(
            .post, Self.path, token: "client",
            body: Self.body([Self.session(String(repeating: "x", count: 70 * 1024))]))
        #expect(big.status == .contentTooLarge)
        #expect(try await counts(app).isEmpty)
    }

    @Test func anUnknownNamespaceIs404() async throws {
        let app = try await TestApp.make()
        defer { app.close() }
        let response = try await app.send(
            .post, "/v1/namespaces/nope/events", token: "admin", body: Self.body([Self.session("s1")]))
        #expect(response.status == .notFound)
        #expect(response.json["detail"]?.stringValue?.contains("'nope'") == true)
    }

    @Test func theUnitIsKeptAsADigestAndAReportersEventsAreTheReporters() async throws {
        let app = try await TestApp.make()
        defer { app.close() }
        var crashed = Self.session("s1", crashed: true)
        crashed["unit"] = .string("rider-42")
        _ = try await app.send(.post, Self.path, token: "client", body: Self.body([crashed]))
        var reported = Self.session("r1", crashed: true)
        reported["unit"] = .string("device-7")
        let response = try await app.send(.post, Self.path, token: "reporter", body: Self.body([reported]))
        #expect(Self.strings(response.json["accepted"]) == ["r1"])
        let records = try await app.store.crashRecords(in: "rider", from: Date() - 3600, until: Date() + 3600)
        #expect(Set(records.map(\.unit)) == [EventBatch.unitKey("rider-42"), EventBatch.unitKey("device-7")])
        #expect(!records.contains { $0.unit.contains("rider-42") || $0.unit.contains("device-7") })
        #expect(records.first { $0.id == "s1" }?.address == "127.0.0.1")
        #expect(records.first { $0.id == "r1" }?.source == .reporter)
        let counts = try await counts(app, [.baseline])
        #expect(Set(counts.map(\.source)) == [.client, .reporter])
    }

    @Test func observersHearOfEachCommittedBatchWithWhatItTouched() async throws {
        let app = try await TestApp.make()
        defer { app.close() }
        let observer = RecordingObserver()
        app.server.context.eventObservers.add(observer)
        _ = try await app.send(
            .post, Self.path, token: "client",
            body: Self.body([
                Self.session(
                    "s1", crashed: true, switches: ["plugin_switch_feed_promos", "plugin_switch_feed_weather"],
                    variants: JSONObject([("checkout_button", .string("bold"))])),
                Self.exposure("e1", flag: "checkout_button", variant: "control"),
            ]))
        _ = try await app.send(.post, Self.path, token: "client", body: Self.body([Self.session("s1", crashed: true)]))
        let batches = observer.batches
        #expect(batches.count == 1)
        let batch = try #require(batches.first)
        #expect(batch.namespace == "rider")
        #expect(batch.events.map(\.id) == ["s1", "e1"])
        #expect(batch.switches == ["plugin_switch_feed_promos", "plugin_switch_feed_weather"])
        #expect(batch.flags == ["checkout_button"])
        #expect(batch.sessions == 1)
        #expect(batch.crashedSessions == 1)
    }
}

final class RecordingObserver: EventObserver {
    private let recorded = Mutex<[CommittedEvents]>([])

    var batches: [CommittedEvents] { recorded.withLock { $0 } }

    func eventsCommitted(_ batch: CommittedEvents) async {
        recorded.withLock { $0.append(batch) }
    }
}

/// `EventBatch` on its own: limits and the clock-skew edges.
struct EventBatchTests {
    static let now = Date(timeIntervalSince1970: 1_800_000_000)

    func read(_ time: Date) throws -> EventBatch {
        let event = JSONObject([
            ("id", .string("e")), ("type", .string("exposure")), ("time", .string(time.iso8601)),
            ("flag", .string("f")), ("variant", .string("v")),
        ])
        return try EventBatch(
            .object(JSONObject([("events", .array([.object(event)]))])), now: Self.now, limits: EventLimits())
    }

    @Test func timesUpToTheSkewAheadAndTheMaximumAgeBehindAreAccepted() throws {
        #expect(try read(Self.now + 600).events.count == 1)
        #expect(try read(Self.now + 601).rejected.first?.category == "in_future")
        #expect(try read(Self.now - 7 * 86_400).events.count == 1)
        #expect(try read(Self.now - 7 * 86_400 - 1).rejected.first?.category == "too_old")
    }

    @Test func idsAreRememberedADayLongerThanEventsAreAccepted() {
        #expect(EventLimits().idRetention == .seconds(8 * 86_400))
    }
}
