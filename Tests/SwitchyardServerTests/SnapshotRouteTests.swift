import HTTPTypes
import SwitchyardCore
import SwitchyardSQLite
import SwitchyardStorage
import TestSupport
import Testing

@testable import SwitchyardServer

/// `GET /v1/namespaces/{ns}/snapshot` and `/changes` in-process: tags, conditional GETs, gzip, parameters.
struct SnapshotRouteTests {
    @Test func theSnapshotCarriesItsVersionAsETagAndDecodes() async throws {
        let app = try await TestApp.make()
        defer { app.close() }
        let response = try await app.send(.get, "/v1/namespaces/rider/snapshot", token: "client")
        #expect(response.status == .ok)
        let snapshot = try SnapshotDocument.decode(response.body)
        #expect(snapshot.version == 1)
        #expect(snapshot.flagSet == Fixtures.rider())
        #expect(response.headers[.eTag] == snapshot.entityTag)
        #expect(response.headers[.vary] == "Accept, Accept-Encoding")
        #expect(response.headers[.contentType] == "application/json")
    }

    @Test func gzipIsServedWhenAcceptedWithTheSameETag() async throws {
        let app = try await TestApp.make()
        defer { app.close() }
        let plain = try await app.send(.get, "/v1/namespaces/rider/snapshot", token: "client")
        let gzip = try await app.send(
            .get, "/v1/namespaces/rider/snapshot", token: "client",
            headers: [.acceptEncoding: "br;q=1, gzip;q=0.5"])
        #expect(gzip.headers[.contentEncoding] == "gzip")
        #expect(gzip.headers[.eTag] == plain.headers[.eTag])
        #expect(try Gzip.decompress(gzip.body) == plain.body)
        #expect(gzip.body.count < plain.body.count)
        let refused = try await app.send(
            .get, "/v1/namespaces/rider/snapshot", token: "client",
            headers: [.acceptEncoding: "gzip;q=0, identity"])
        #expect(refused.headers[.contentEncoding] == nil)
        #expect(refused.body == plain.body)
    }

    @Test func ifNoneMatchComparesWeaklyAndIgnoresOtherEpochs() async throws {
        let app = try await TestApp.make()
        defer { app.close() }
        let tag = try #require(
            try await app.send(.get, "/v1/namespaces/rider/snapshot", token: "client").headers[.eTag])
        for header in [tag, "W/\(tag)", "\"x.1\", \(tag)", "*"] {
            let response = try await app.send(
                .get, "/v1/namespaces/rider/snapshot", token: "client", headers: [.ifNoneMatch: header])
            #expect(response.status == .notModified, "If-None-Match: \(header)")
            #expect(response.headers[.eTag] == tag)
            #expect(response.body.isEmpty)
        }
        for header in ["\"another.1\"", "garbage", "W/\"\(tag.dropFirst().dropLast().dropLast()).0\""] {
            let response = try await app.send(
                .get, "/v1/namespaces/rider/snapshot", token: "client", headers: [.ifNoneMatch: header])
            #expect(response.status == .ok, "If-None-Match: \(header)")
        }
    }

    @Test func aTagOfAnotherEpochOrAnOlderVersionIsAnsweredAtOnceEvenWithWait() async throws {
        let app = try await TestApp.make()
        defer { app.close() }
        let tag = try #require(
            try await app.send(.get, "/v1/namespaces/rider/snapshot", token: "client").headers[.eTag])
        let epoch = tag.dropFirst().prefix { $0 != "." }
        for header in ["\"other.1\"", "\"\(epoch).0\"", "unparsable"] {
            let response = try await app.send(
                .get, "/v1/namespaces/rider/snapshot?wait=30", token: "client", headers: [.ifNoneMatch: header])
            #expect(response.status == .ok, "If-None-Match: \(header)")
        }
    }

    @Test func waitMustBeAWholeNonNegativeNumber() async throws {
        let app = try await TestApp.make()
        defer { app.close() }
        for wait in ["-1", "abc", "1.5", ""] {
            let response = try await app.send(.get, "/v1/namespaces/rider/snapshot?wait=\(wait)", token: "client")
            #expect(response.status == .badRequest, "wait=\(wait)")
            #expect(response.problemPaths == ["wait"])
            #expect(response.headers[.contentType] == "application/problem+json")
        }
        let zero = try await app.send(.get, "/v1/namespaces/rider/snapshot?wait=0", token: "client")
        #expect(zero.status == .ok)
    }

    @Test func anUnknownNamespaceIs404() async throws {
        let app = try await TestApp.make()
        defer { app.close() }
        let response = try await app.send(.get, "/v1/namespaces/nope/snapshot", token: "client")
        #expect(response.status == .notFound)
        #expect(response.json["detail"]?.stringValue?.contains("'nope'") == true)
    }

    @Test func aChangeWakesAWaiterWithTheNewSnapshotInProcess() async throws {
        // A long-poll of up to 600 s, parked within 300 s: it still waits when the change is made.
        let app = try await TestApp.make(configuration: ServerConfiguration(port: 0, maximumWait: 600))
        defer { app.close() }
        let tag = try #require(
            try await app.send(.get, "/v1/namespaces/rider/snapshot", token: "client").headers[.eTag])
        async let waiting = app.send(
            .get, "/v1/namespaces/rider/snapshot?wait=600", token: "client", headers: [.ifNoneMatch: tag])
        try await waitUntil(timeout: .seconds(300)) { app.hub.waiterCount == 1 }
        let change = try await app.send(
            .post, "/v1/namespaces/rider/flags/plugin_switch_feed_weather/rollout", token: "editor",
            body: #"{"rollout": 4200}"#)
        #expect(change.status == .ok)
        let response = try await waiting
        #expect(response.status == .ok)
        let snapshot = try SnapshotDocument.decode(response.body)
        #expect(snapshot.version == 2)
        #expect(snapshot.flagSet.flag("plugin_switch_feed_weather")?.pluginSwitch?.rollout.basisPoints == 4200)
        #expect(app.hub.waiterCount == 0)
    }

    @Test func theChangesFeedListsChangesAfterAVersionAndWaitsForTheNext() async throws {
        let app = try await TestApp.make(configuration: ServerConfiguration(port: 0, maximumWait: 600))
        defer { app.close() }
        _ = try await app.send(
            .post, "/v1/namespaces/rider/flags/plugin_switch_feed_weather/disable", token: "editor",
            body: #"{"reason": "r1"}"#)
        let all = try await app.send(.get, "/v1/namespaces/rider/changes", token: "client")
        #expect(all.status == .ok)
        #expect(all.json["changes"]?.arrayValue?.compactMap { $0["version"]?.int64Value } == [1, 2])
        #expect(all.json["version"]?.int64Value == 2)
        #expect(all.json["next_after"]?.int64Value == 2)
        // A client token reads what snapshots show: what changed, not who or why.
        let entry = try #require(all.json["changes"]?.arrayValue?.last)
        #expect(entry["changes"]?.arrayValue?.first?["after"]?["disabled"] == .bool(true))
        #expect(entry.objectValue.map { Set($0.memberKeys) } == ["version", "time", "changes"])
        // An editor reads all of it.
        let full = try #require(
            try await app.send(.get, "/v1/namespaces/rider/changes", token: "editor").json["changes"]?.arrayValue?.last)
        #expect(full["actor"] == .string("editor"))
        #expect(full["reason"] == .string("r1"))
        #expect(full["source"] == .string("api"))

        // A long-poll of up to 600 s, parked within 300 s: it still waits when the change is made.
        async let waiting = app.send(.get, "/v1/namespaces/rider/changes?after=2&wait=600", token: "client")
        try await waitUntil(timeout: .seconds(300)) { app.hub.waiterCount == 1 }
        _ = try await app.send(
            .post, "/v1/namespaces/rider/flags/plugin_switch_feed_weather/enable", token: "editor",
            headers: [.init("X-Switchyard-Source")!: "cli"])
        let next = try await waiting
        #expect(next.json["changes"]?.arrayValue?.compactMap { $0["version"]?.int64Value } == [3])
        #expect(next.json["changes"]?.arrayValue?.first?["source"] == nil)
        #expect(
            try await app.send(.get, "/v1/namespaces/rider/changes/3", token: "editor").json["source"] == .string("cli")
        )

        let one = try await app.send(.get, "/v1/namespaces/rider/changes/2", token: "client")
        #expect(one.json["version"]?.int64Value == 2)
        #expect(try await app.send(.get, "/v1/namespaces/rider/changes/9", token: "client").status == .notFound)
        #expect(
            try await app.send(.get, "/v1/namespaces/rider/changes/zero", token: "client").problemPaths == ["version"])
        #expect(
            try await app.send(.get, "/v1/namespaces/rider/changes?after=-1", token: "client").problemPaths == ["after"]
        )
        let limited = try await app.send(.get, "/v1/namespaces/rider/changes?after=0&limit=1", token: "client")
        #expect(limited.json["changes"]?.arrayValue?.count == 1)
        #expect(limited.json["next_after"]?.int64Value == 1)
    }

    /// A client token ships in every app: the change feed shows it what snapshots show (issue 29). Release plans,
    /// crash guard policies, metrics, actors, reasons, summaries and evidence are the release manager's.
    @Test func aClientTokenReadsOfTheChangeFeedOnlyWhatSnapshotsShow() async throws {
        let app = try await TestApp.make()
        defer { app.close() }
        var flagSet = try #require(try await app.store.namespace("rider")).flagSet
        flagSet.crashGuard = CrashGuardPolicy(maximumCrashRate: Rollout(basisPoints: 150))
        flagSet.metrics = [MetricDefinition(name: "fare_collected", kind: .value, cap: 200)]
        let policy = JSONValue.object(
            JSONObject([
                ("flag_set", .object(flagSet.tree(unit: .basisPoints))), ("reason", .string("a stricter guard")),
            ]))
        let guarded = try await app.send(
            .put, "/v1/namespaces/rider/flag-set", token: "editor", body: policy.serializedString())
        #expect(guarded.status == .ok, "\(guarded.text)")
        let release =
            #"{"reason": "weather to Lagos", "plan": {"stages": [{"cities": ["lagos"], "rollout": 500}, {"rollout": 10000}]}}"#
        let started = try await app.send(
            .post, "/v1/namespaces/rider/flags/plugin_switch_feed_weather/release/start", token: "editor", body: release
        )
        #expect(started.status == .ok, "\(started.text)")
        let version = try #require(app.hub.snapshot(of: "rider")?.version)

        let editor = try await app.send(.get, "/v1/namespaces/rider/changes?after=1", token: "editor")
        let text = editor.text
        #expect(
            text.contains("crash_guard") && text.contains("\"release\"") && text.contains("weather to Lagos"), "\(text)"
        )
        let kinds = editor.json["changes"]?.arrayValue?.flatMap { $0["changes"]?.arrayValue ?? [] }.compactMap {
            $0["kind"]?.stringValue
        }
        #expect(kinds?.contains("metric") == true && text.contains("fare_collected"), "\(text)")

        let client = try await app.send(.get, "/v1/namespaces/rider/changes?after=1", token: "client")
        #expect(client.status == .ok)
        let entries = try #require(client.json["changes"]?.arrayValue)
        #expect(entries.compactMap { $0["version"]?.int64Value }.last == version)
        for entry in entries {
            #expect(
                entry.objectValue.map { Set($0.memberKeys) } == ["version", "time", "changes"],
                "\(entry.serializedString())")
        }
        #expect(
            !client.text.contains("crash_guard") && !client.text.contains("\"release\"")
                && !client.text.contains("weather to Lagos") && !client.text.contains("stricter"),
            "\(client.text)")
        #expect(!client.text.contains("fare_collected") && !client.text.contains("metric"), "\(client.text)")
        // The release's rollout in Lagos is what clients evaluate: it is there.
        #expect(client.text.contains("lagos"), "\(client.text)")
        let one = try await app.send(.get, "/v1/namespaces/rider/changes/\(version)", token: "client")
        #expect(one.json.objectValue.map { Set($0.memberKeys) } == ["version", "time", "changes"])
        // A reporter's token (a crash pipeline's) reads no flags: it sees the same as a client's.
        let reporter = try await app.send(.get, "/v1/namespaces/rider/changes/\(version)", token: "reporter")
        #expect(reporter.json.objectValue.map { Set($0.memberKeys) } == ["version", "time", "changes"])
        #expect(
            try await app.send(.get, "/v1/namespaces/rider/changes/\(version)", token: "editor").json["actor"]
                == .string("editor"))
    }
}
