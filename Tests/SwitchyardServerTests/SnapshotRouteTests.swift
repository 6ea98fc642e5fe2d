import HTTPTypes
import SwitchyardCore
@testable import SwitchyardServer
import SwitchyardStorage
import TestSupport
import Testing

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
        let gzip = try await app.send(.get, "/v1/namespaces/rider/snapshot", token: "client",
                                      headers: [.acceptEncoding: "br;q=1, gzip;q=0.5"])
        #expect(gzip.headers[.contentEncoding] == "gzip")
        #expect(gzip.headers[.eTag] == plain.headers[.eTag])
        #expect(try Gzip.decompress(gzip.body) == plain.body)
        #expect(gzip.body.count < plain.body.count)
        let refused = try await app.send(.get, "/v1/namespaces/rider/snapshot", token: "client",
                                         headers: [.acceptEncoding: "gzip;q=0, identity"])
        #expect(refused.headers[.contentEncoding] == nil)
        #expect(refused.body == plain.body)
    }

    @Test func ifNoneMatchComparesWeaklyAndIgnoresOtherEpochs() async throws {
        let app = try await TestApp.make()
        defer { app.close() }
        let tag = try #require(try await app.send(.get, "/v1/namespaces/rider/snapshot", token: "client").headers[.eTag])
        for header in [tag, "W/\(tag)", "\"x.1\", \(tag)", "*"] {
            let response = try await app.send(.get, "/v1/namespaces/rider/snapshot", token: "client", headers: [.ifNoneMatch: header])
            #expect(response.status == .notModified, "If-None-Match: \(header)")
            #expect(response.headers[.eTag] == tag)
            #expect(response.body.isEmpty)
        }
        for header in ["\"another.1\"", "garbage", "W/\"\(tag.dropFirst().dropLast().dropLast()).0\""] {
            let response = try await app.send(.get, "/v1/namespaces/rider/snapshot", token: "client", headers: [.ifNoneMatch: header])
            #expect(response.status == .ok, "If-None-Match: \(header)")
        }
    }

    @Test func aTagOfAnotherEpochOrAnOlderVersionIsAnsweredAtOnceEvenWithWait() async throws {
        let app = try await TestApp.make()
        defer { app.close() }
        let tag = try #require(try await app.send(.get, "/v1/namespaces/rider/snapshot", token: "client").headers[.eTag])
        let epoch = tag.dropFirst().prefix { $0 != "." }
        for header in ["\"other.1\"", "\"\(epoch).0\"", "unparsable"] {
            let response = try await app.send(.get, "/v1/namespaces/rider/snapshot?wait=30", token: "client", headers: [.ifNoneMatch: header])
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
        let tag = try #require(try await app.send(.get, "/v1/namespaces/rider/snapshot", token: "client").headers[.eTag])
        async let waiting = app.send(.get, "/v1/namespaces/rider/snapshot?wait=600", token: "client", headers: [.ifNoneMatch: tag])
        try await waitUntil(timeout: .seconds(300)) { app.hub.waiterCount == 1 }
        let change = try await app.send(.post, "/v1/namespaces/rider/flags/plugin_switch_feed_weather/rollout", token: "editor",
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
        _ = try await app.send(.post, "/v1/namespaces/rider/flags/plugin_switch_feed_weather/disable", token: "editor", body: #"{"reason": "r1"}"#)
        let all = try await app.send(.get, "/v1/namespaces/rider/changes", token: "client")
        #expect(all.status == .ok)
        #expect(all.json["changes"]?.arrayValue?.compactMap { $0["version"]?.int64Value } == [1, 2])
        #expect(all.json["version"]?.int64Value == 2)
        #expect(all.json["next_after"]?.int64Value == 2)
        let entry = try #require(all.json["changes"]?.arrayValue?.last)
        #expect(entry["actor"] == .string("editor"))
        #expect(entry["reason"] == .string("r1"))
        #expect(entry["source"] == .string("api"))
        #expect(entry["changes"]?.arrayValue?.first?["after"]?["disabled"] == .bool(true))

        // A long-poll of up to 600 s, parked within 300 s: it still waits when the change is made.
        async let waiting = app.send(.get, "/v1/namespaces/rider/changes?after=2&wait=600", token: "client")
        try await waitUntil(timeout: .seconds(300)) { app.hub.waiterCount == 1 }
        _ = try await app.send(.post, "/v1/namespaces/rider/flags/plugin_switch_feed_weather/enable", token: "editor",
                               headers: [.init("X-Switchyard-Source")!: "cli"])
        let next = try await waiting
        #expect(next.json["changes"]?.arrayValue?.compactMap { $0["version"]?.int64Value } == [3])
        #expect(next.json["changes"]?.arrayValue?.first?["source"] == .string("cli"))

        let one = try await app.send(.get, "/v1/namespaces/rider/changes/2", token: "client")
        #expect(one.json["version"]?.int64Value == 2)
        #expect(try await app.send(.get, "/v1/namespaces/rider/changes/9", token: "client").status == .notFound)
        #expect(try await app.send(.get, "/v1/namespaces/rider/changes/zero", token: "client").problemPaths == ["version"])
        #expect(try await app.send(.get, "/v1/namespaces/rider/changes?after=-1", token: "client").problemPaths == ["after"])
        let limited = try await app.send(.get, "/v1/namespaces/rider/changes?after=0&limit=1", token: "client")
        #expect(limited.json["changes"]?.arrayValue?.count == 1)
        #expect(limited.json["next_after"]?.int64Value == 1)
    }
}
