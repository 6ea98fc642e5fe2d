import Foundation
import HTTPTypes
import NIOCore
import SwitchyardCore
import SwitchyardSQLite
import SwitchyardStorage
import TestSupport
import Testing

@testable import SwitchyardServer

/// Deltas on `GET /v1/namespaces/{ns}/snapshot`: asked for with `Accept`, from the version in `If-None-Match`,
/// built once per base and shared, through the router and the fast path alike; the full snapshot whenever a delta
/// cannot be given, and always for a client that does not ask.
struct SnapshotDeltaTests {
    static let accept: HTTPFields = [.accept: "\(SnapshotDelta.mediaType), application/json"]

    /// The rider namespace at version 1 (its tag and decoded snapshot) after one rollout change to version 2.
    func changedApp(configuration: ServerConfiguration = ServerConfiguration(port: 0, maximumWait: 600)) async throws
        -> (TestApp, tag: String, base: Snapshot)
    {
        let app = try await TestApp.make(configuration: configuration)
        let first = try await app.send(.get, "/v1/namespaces/rider/snapshot", token: "client")
        let tag = try #require(first.headers[.eTag])
        let change = try await app.send(
            .post, "/v1/namespaces/rider/flags/plugin_switch_feed_weather/rollout", token: "editor",
            body: #"{"rollout": 4200}"#)
        #expect(change.status == .ok)
        return (app, tag, try SnapshotDocument.decode(first.body))
    }

    @Test func aClientThatAsksGetsWhatChangedSinceItsVersionAndProvesTheResult() async throws {
        let (app, tag, base) = try await changedApp()
        defer { app.close() }
        var headers = Self.accept
        headers[.ifNoneMatch] = tag
        let response = try await app.send(.get, "/v1/namespaces/rider/snapshot", token: "client", headers: headers)
        #expect(response.status == .ok)
        #expect(response.headers[.contentType] == SnapshotDelta.mediaType)
        #expect(response.headers[.cacheControl] == "no-store")
        #expect(response.headers[.vary] == "Accept, Accept-Encoding")
        let delta = try SnapshotDelta.decode(response.body)
        #expect(delta.baseVersion == 1 && delta.version == 2)
        #expect(delta.upsertedFlags.map(\.key) == ["plugin_switch_feed_weather"])
        #expect(delta.removedFlags.isEmpty && delta.upsertedKillSwitches.isEmpty && delta.pluginPointOrder == nil)
        #expect(response.headers[.eTag] == delta.entityTag)

        let full = try await app.send(.get, "/v1/namespaces/rider/snapshot", token: "client")
        let target = try SnapshotDocument.decode(full.body)
        #expect(
            try base.applying(delta) == target,
            "the delta leads exactly to the full snapshot, checksum and digest included")
        #expect(delta.checksum == SnapshotDocument.checksum(of: target))
        #expect(response.body.count * 2 < full.body.count)

        headers[.acceptEncoding] = "gzip"
        let gzip = try await app.send(.get, "/v1/namespaces/rider/snapshot", token: "client", headers: headers)
        #expect(gzip.headers[.contentEncoding] == "gzip")
        #expect(try Gzip.decompress(gzip.body) == response.body)
    }

    /// A version published from the one before (its compiled form made by applying the delta) still offers the
    /// store's flag set to flagsd itself: settings snapshots do not carry (the crash guard policy) and the order.
    @Test func aVersionPublishedFromTheOneBeforeKeepsTheStoresFlagSet() async throws {
        let (app, _, _) = try await changedApp()
        defer { app.close() }
        let policy = CrashGuardPolicy(tripSources: [.reporters], cities: ["lagos"])
        _ = try await app.server.context.service.change(
            "rider", ChangeRequest(author: ChangeAuthor(actor: "setup", source: .api))
        ) { flagSet in
            var flagSet = flagSet
            flagSet.crashGuard = policy
            // A new flag first: applying a delta appends it, the store keeps it where it was put.
            flagSet.flags.insert(
                FlagDefinition(
                    key: "button_color",
                    kind: .experiment(
                        Experiment(
                            valueType: .string,
                            variants: [
                                Variant(key: "control", value: .string("grey")),
                                Variant(key: "blue", value: .string("blue")),
                            ],
                            defaultVariant: "control", weights: ["control": 1, "blue": 1]))), at: 0)
            return flagSet
        }
        let stored = try #require(try await app.store.namespace("rider")).flagSet
        let published = try #require(app.hub.snapshot(of: "rider"))
        #expect(published.flagSet.crashGuard == policy)
        #expect(published.flagSet == stored)
        #expect(published.flagSet.flags.map(\.key) == stored.flags.map(\.key))
    }

    @Test func aClientThatDoesNotAskAlwaysGetsTheFullSnapshot() async throws {
        let (app, tag, _) = try await changedApp()
        defer { app.close() }
        for accept in [
            nil, "application/json", "*/*", "\(SnapshotDelta.mediaType);q=0, application/json",
            "application/vnd.switchyard.snapshot-delta+jsonx",
        ] {
            var headers: HTTPFields = [.ifNoneMatch: tag]
            if let accept { headers[.accept] = accept }
            let response = try await app.send(.get, "/v1/namespaces/rider/snapshot", token: "client", headers: headers)
            #expect(response.status == .ok)
            #expect(response.headers[.contentType] == "application/json", "Accept: \(accept ?? "none")")
            #expect(try SnapshotDocument.decode(response.body).version == 2)
        }
    }

    @Test func theFullSnapshotAnswersABaseOfAnotherEpochAnUnknownOneOrOneOlderThanTheKeptDeltas() async throws {
        var configuration = ServerConfiguration(port: 0)
        configuration.deltaVersions = 2
        let (app, tag, _) = try await changedApp(configuration: configuration)
        defer { app.close() }
        let epoch = tag.dropFirst().prefix { $0 != "." }
        for rollout in [4300, 4400] {
            _ = try await app.send(
                .post, "/v1/namespaces/rider/flags/plugin_switch_feed_weather/rollout", token: "editor",
                body: #"{"rollout": \#(rollout)}"#)
        }
        // Version 4 now; deltas are kept from versions 2 and 3.
        for (base, expectDelta) in [
            ("\"\(epoch).1\"", false), ("\"\(epoch).2\"", true), ("\"\(epoch).3\"", true),
            ("\"\(epoch).0\"", false), ("\"other-epoch.3\"", false), ("*", false),
        ] {
            var headers = Self.accept
            headers[.ifNoneMatch] = base
            let response = try await app.send(.get, "/v1/namespaces/rider/snapshot", token: "client", headers: headers)
            #expect(response.status == (base == "*" ? .notModified : .ok), "If-None-Match: \(base)")
            guard response.status == .ok else { continue }
            let isDelta = response.headers[.contentType] == SnapshotDelta.mediaType
            #expect(isDelta == expectDelta, "If-None-Match: \(base)")
            if isDelta { #expect(try SnapshotDelta.decode(response.body).version == 4) }
        }
    }

    @Test func noDeltaIsGivenWhenTheyAreTurnedOff() async throws {
        var configuration = ServerConfiguration(port: 0)
        configuration.deltaVersions = 0
        let (app, tag, _) = try await changedApp(configuration: configuration)
        defer { app.close() }
        var headers = Self.accept
        headers[.ifNoneMatch] = tag
        let response = try await app.send(.get, "/v1/namespaces/rider/snapshot", token: "client", headers: headers)
        #expect(response.headers[.contentType] == "application/json")
    }

    @Test func aWaiterThatAsksIsWokenWithTheDeltaAndOneThatDoesNotWithTheSnapshot() async throws {
        let app = try await TestApp.make(configuration: ServerConfiguration(port: 0, maximumWait: 600))
        defer { app.close() }
        let tag = try #require(
            try await app.send(.get, "/v1/namespaces/rider/snapshot", token: "client").headers[.eTag])
        var headers = Self.accept
        headers[.ifNoneMatch] = tag
        // Long-polls of up to 600 s, parked within 300 s: they still wait when the change is made.
        async let deltaWaiter = app.send(
            .get, "/v1/namespaces/rider/snapshot?wait=600", token: "client", headers: headers)
        async let plainWaiter = app.send(
            .get, "/v1/namespaces/rider/snapshot?wait=600", token: "client", headers: [.ifNoneMatch: tag])
        try await waitUntil("two parked waiters") { app.hub.waiterCount == 2 }
        _ = try await app.send(
            .post, "/v1/namespaces/rider/kill-switches/kill_home_feed/kill", token: "editor",
            body: #"{"reason": "incident", "scope": {"cities": ["lagos"]}}"#)
        let delta = try await deltaWaiter
        #expect(delta.headers[.contentType] == SnapshotDelta.mediaType)
        let decoded = try SnapshotDelta.decode(delta.body)
        #expect(decoded.upsertedKillSwitches.map(\.key) == ["kill_home_feed"])
        #expect(decoded.upsertedFlags.isEmpty)
        let plain = try await plainWaiter
        #expect(try SnapshotDocument.decode(plain.body).version == 2)
    }

    @Test func aDeltaIsBuiltOncePerBaseAndSharedByEveryRequest() throws {
        let flagSet = Fixtures.rider()
        let first = PublishedSnapshot(Snapshot(epoch: "e", version: 1, flagSet: flagSet), deltaVersions: 10)
        var changed = flagSet
        changed.flags[0].description = "changed"
        let second = PublishedSnapshot(
            Snapshot(epoch: "e", version: 2, flagSet: changed), previous: first, deltaVersions: 10)
        guard case .delta(let one) = second.deltaAnswer(from: 1), case .delta(let other) = second.deltaAnswer(from: 1)
        else {
            Issue.record("no delta from version 1")
            return
        }
        #expect(one === other)
        #expect(
            second.digest == SnapshotDigest(changed).value(for: Snapshot(epoch: "e", version: 2, flagSet: changed)),
            "the digest carried from the previous version's equals one computed afresh")
        guard case .full(.unknownBase) = second.deltaAnswer(from: 0) else {
            Issue.record("a delta from an unknown version")
            return
        }
    }

    /// Each version's document is written from the previous version's pieces and its checksum hashed from the
    /// first run of flags that changed: after random one-flag changes anywhere in a namespace of several runs (first,
    /// middle and last flags, added flags that split a run, removed ones, the namespace's description in the head),
    /// the published bytes and checksum are exactly the canonical document's, computed afresh.
    @Test(arguments: [UInt64(1), 2, 3])
    func eachVersionsDocumentAndChecksumEqualTheCanonicalOnesAfterChanges(seed: UInt64) {
        var random = SeededRandom(seed: seed)
        func key(_ number: Int) -> String { "plugin_switch_\(String(number + 100_000).dropFirst())" }
        var flagSet = FlagSet(
            namespace: "runs",
            flags: (0..<700).map { FlagDefinition(key: key($0 * 10), kind: .pluginSwitch(PluginSwitchDefinition())) })
        var published = PublishedSnapshot(Snapshot(epoch: "e", version: 1, flagSet: flagSet), deltaVersions: 10)
        for version in Int64(2)...60 {
            let index = [0, flagSet.flags.count - 1, Int.random(in: 0..<flagSet.flags.count, using: &random)][
                Int(version % 3)]
            switch Int.random(in: 0..<6, using: &random) {
            case 0:
                flagSet.flags[index].pluginSwitch?.rollout = Rollout(
                    basisPoints: Int.random(in: 0...10_000, using: &random))!
            case 1:
                flagSet.flags[index].description = "changed at \(version)"
            case 2:
                // Between two existing keys: enough of them in one run split it.
                let number = Int.random(in: 0..<7_000, using: &random) * 10 + Int.random(in: 1...9, using: &random)
                if !flagSet.flags.contains(where: { $0.key == key(number) }) {
                    flagSet.flags.append(
                        FlagDefinition(key: key(number), kind: .pluginSwitch(PluginSwitchDefinition())))
                }
            case 3:
                flagSet.flags.remove(at: index)
            case 4:
                flagSet.description = version % 2 == 0 ? "namespace at \(version)" : nil
            default:
                flagSet.flags[index].pluginSwitch?.disabled.toggle()
            }
            let snapshot = Snapshot(epoch: "e", version: version, flagSet: flagSet)
            published = PublishedSnapshot(snapshot, previous: published, deltaVersions: 10)
            let same = Array(buffer: published.body) == SnapshotDocument.encode(snapshot)
            #expect(same, "version \(version): the bytes written from the previous version's pieces")
            #expect(published.checksum == SnapshotDocument.checksum(of: snapshot), "version \(version): the checksum")
        }
    }

    @Test func aDeltaNoSmallerThanTheSnapshotIsNotGiven() {
        let tiny = FlagSet(
            namespace: "tiny",
            flags: [FlagDefinition(key: "plugin_switch_a", kind: .pluginSwitch(PluginSwitchDefinition()))])
        let first = PublishedSnapshot(Snapshot(epoch: "e", version: 1, flagSet: tiny), deltaVersions: 10)
        var changed = tiny
        changed.flags[0].pluginSwitch?.rollout = .full
        let second = PublishedSnapshot(
            Snapshot(epoch: "e", version: 2, flagSet: changed), previous: first, deltaVersions: 10)
        guard case .full(.notSmaller) = second.deltaAnswer(from: 1) else {
            Issue.record("a delta as large as the snapshot was given")
            return
        }
    }

    @Test func theHistoryKeepsTheLastVersionsAndStartsAgainAfterAGap() {
        var history = DeltaHistory(epoch: "e")
        var one = ChangedObjects()
        one.flags = ["a"]
        var two = ChangedObjects()
        two.flags = ["b"]
        history = history.appending(from: 1, to: 2, changes: one, limit: 3)
        history = history.appending(from: 2, to: 3, changes: two, limit: 3)
        #expect(history.changes(since: 1)?.flags == ["a", "b"])
        #expect(history.changes(since: 2)?.flags == ["b"])
        #expect(history.changes(since: 0) == nil)
        // Another instance committed versions 4 and 5 before this one read them: one entry covers both.
        history = history.appending(from: 3, to: 5, changes: one, limit: 3)
        #expect(history.changes(since: 3)?.flags == ["a"])
        #expect(history.changes(since: 4) == nil, "a version inside a skipped range cannot start a delta")
        history = history.appending(from: 5, to: 6, changes: two, limit: 3)
        #expect(history.changes(since: 2) == nil, "older than the last three versions")
        #expect(history.oldestBase == 3)
        // A publication that does not continue the newest version (a restart of the history) keeps only itself.
        history = history.appending(from: 8, to: 9, changes: one, limit: 3)
        #expect(history.oldestBase == 8)
    }

    @Test func acceptIsReadForTheDeltaTypeWithItsQuality() {
        #expect(AcceptsDelta("application/vnd.switchyard.snapshot-delta+json").accepted)
        #expect(AcceptsDelta("Application/VND.Switchyard.Snapshot-Delta+JSON, application/json").accepted)
        #expect(AcceptsDelta("application/json, application/vnd.switchyard.snapshot-delta+json; q=0.5").accepted)
        #expect(!AcceptsDelta("application/vnd.switchyard.snapshot-delta+json;q=0").accepted)
        #expect(!AcceptsDelta("application/json").accepted)
        #expect(!AcceptsDelta("*/*").accepted)
        #expect(!AcceptsDelta(nil).accepted)
        #expect(!AcceptsDelta("application/vnd.switchyard.snapshot-delta+json-v2").accepted)
        #expect(
            AcceptsDelta(
                "text/html;level=1, \tapplication/vnd.switchyard.snapshot-delta+json ; charset=utf-8 ;Q=0.001 "
            ).accepted)
        #expect(!AcceptsDelta("application/json, application/vnd.switchyard.snapshot-delta+json; Q=0.000").accepted)
        #expect(!AcceptsDelta("application/vnd.switchyard.snapshot-delta+json;q=-1").accepted)
        #expect(AcceptsDelta("application/vnd.switchyard.snapshot-delta+json;q=1.0").accepted)
        #expect(!AcceptsDelta("x-application/vnd.switchyard.snapshot-delta+json").accepted)
        #expect(!AcceptsDelta("").accepted)
    }

    @Test func theFastPathAnswersDeltasAsTheRouterDoesParkedOrNot() async throws {
        let app = try await TestApp.make()
        defer { app.close() }
        let tag = try #require(
            try await app.send(.get, "/v1/namespaces/rider/snapshot", token: "client").headers[.eTag])
        let auth = ("Authorization", "Bearer \(app.tokens["client"]!)")
        let accept = ("Accept", "\(SnapshotDelta.mediaType), application/json")
        try await withLiveFlagsd(app) { server, port in
            var connections: [RawHTTPConnection] = []
            for encoding in ["gzip", "identity"] {
                let connection = try RawHTTPConnection(port: port)
                try connection.send(
                    RawHTTPConnection.get(
                        "/v1/namespaces/rider/snapshot?wait=60",
                        headers: [auth, accept, ("If-None-Match", tag), ("Accept-Encoding", encoding)]))
                connections.append(connection)
            }
            try await waitUntil { server.context.hub.waiterCount == 2 }
            let change = try await LiveClient(
                base: URL(string: "http://127.0.0.1:\(port)")!, token: app.tokens["editor"]
            )
            .send("POST", "/v1/namespaces/rider/flags/plugin_switch_map_traffic/rollout", body: #"{"rollout": 4200}"#)
            #expect(change.status == .ok)
            var bodies: [[UInt8]] = []
            for (index, connection) in connections.enumerated() {
                let woken = try await connection.readResponse()
                #expect(woken.headers[.contentType] == SnapshotDelta.mediaType)
                bodies.append(index == 0 ? try Gzip.decompress(woken.body) : woken.body)
            }
            #expect(bodies[0] == bodies[1])
            #expect(try SnapshotDelta.decode(bodies[0]).upsertedFlags.map(\.key) == ["plugin_switch_map_traffic"])

            // Not parked (its version is behind): answered at once with the same delta, built once.
            let connection = try RawHTTPConnection(port: port)
            let answeredBefore = server.snapshotFastPath.answeredCount
            try connection.send(
                RawHTTPConnection.get(
                    "/v1/namespaces/rider/snapshot?wait=60", headers: [auth, accept, ("If-None-Match", tag)]))
            let live = try await connection.readResponse()
            #expect(server.snapshotFastPath.answeredCount - answeredBefore == 1)
            #expect(live.headers[.contentType] == SnapshotDelta.mediaType)
            #expect(live.body == bodies[0])
        }
    }
}

extension SnapshotDeltaTests {
    @Test func answersToRequestsThatAcceptDeltasAreCountedByKind() async throws {
        let (app, tag, _) = try await changedApp()
        defer { app.close() }
        var headers = Self.accept
        headers[.ifNoneMatch] = tag
        _ = try await app.send(.get, "/v1/namespaces/rider/snapshot", token: "client", headers: headers)
        _ = try await app.send(.get, "/v1/namespaces/rider/snapshot", token: "client", headers: Self.accept)
        _ = try await app.send(.get, "/v1/namespaces/rider/snapshot", token: "client")
        let metrics = try await app.send(.get, "/metrics", token: "metrics").text
        #expect(metrics.contains(#"flagsd_snapshot_delta_answers_total{answer="delta"} 1"#), "\(metrics)")
        #expect(
            metrics.contains(#"flagsd_snapshot_delta_answers_total{answer="full"} 1"#),
            "a request without a tag, which accepted deltas")
    }
}
