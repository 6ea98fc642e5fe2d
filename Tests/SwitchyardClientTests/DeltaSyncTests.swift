import ClientTestSupport
import Foundation
import SwitchyardClientTesting
import SwitchyardCore
import TestSupport
import Testing

@testable import SwitchyardClient

/// Deltas in the client runtime against a server on loopback: applied by recompiling what changed, proved by their
/// digest, kept on disk as the last known good, named in `FlagsChange`; a gap, a tampered delta or a server that
/// sends one unasked never leaves anything half applied, and the client fetches the full snapshot instead.
struct DeltaSyncTests {
    static let promos = PluginSwitch("plugin_switch_feed_promos")
    static let news = PluginSwitch("plugin_switch_feed_news")
    static let copy = ExperimentFlag("exp_checkout_copy", default: "none")

    func version(_ client: FlagClient) -> Int64? { client.status.snapshot?.version }

    @Test func aChangeArrivesAsADeltaNamingExactlyWhatChangedAndIsKeptOnDisk() async throws {
        let harness = try ClientHarness()
        let server = try FlagsdStandIn()
        defer { server.stop() }
        server.publish(Fixtures.snapshot(version: 1))
        let client = FlagClient(configuration: harness.configuration(server: server.baseURL))
        var changes = client.changes.makeAsyncIterator()
        try await whileRunning(client) {
            try await waitUntil { version(client) == 1 }
            #expect(!client.isEnabled(Self.promos))
            _ = await changes.next()
            server.publish(Fixtures.snapshot(version: 2, on: ["plugin_switch_feed_promos"]))
            try await waitUntil { version(client) == 2 }
            let change = try #require(await changes.next())
            #expect(change.cause == .snapshotInstalled)
            #expect(change.changed?.flags == ["plugin_switch_feed_promos"])
            #expect(change.changed?.killSwitches == [] && change.changed?.pluginPoints == [])
            #expect(client.isEnabled(Self.promos), "the switch handle reads the new definition")
            #expect(!client.isEnabled(Self.news))
            #expect(client.status.deltasApplied == 1)
            #expect(server.deltasServed == 1)

            // A kill switch change: named as such, and it covers the point's switches.
            server.publish(
                Fixtures.snapshot(version: 3, on: ["plugin_switch_feed_promos"], killedGroups: ["kill_home_feed"]))
            try await waitUntil { version(client) == 3 }
            let kill = try #require(await changes.next())
            #expect(kill.changed?.killSwitches == ["kill_home_feed"] && kill.changed?.flags == [])
            #expect(!client.isEnabled(Self.promos))
            #expect(client.status.deltasApplied == 2)
        }
        // The last known good on disk is what the deltas led to: a new launch starts from version 3.
        #expect(FileManager.default.fileExists(atPath: harness.directory.file(SnapshotCache.deltasFileName).path))
        let relaunched = FlagClient(configuration: harness.configuration(server: try ClientHarness.deadServerURL()))
        #expect(relaunched.status.snapshot?.version == 3)
        #expect(!relaunched.isEnabled(Self.promos))
        #expect(relaunched.details(for: Self.promos).reason == .cached)
    }

    @Test func aSwitchHandleReadsTheFlagADeltaAddsAndTheDefaultOnceADeltaRemovesIt() async throws {
        let tipping = PluginSwitch("plugin_switch_tipping")
        // The namespace without the tipping switch (nor its place in the checkout point).
        func withoutTipping(version: Int64) -> Snapshot {
            var snapshot = Fixtures.snapshot(version: version)
            snapshot.flagSet.flags.removeAll { $0.key == tipping.key }
            snapshot.flagSet.pluginPoints = snapshot.flagSet.pluginPoints.map { point in
                var point = point
                point.switches.removeAll { $0 == tipping.key }
                return point
            }
            return snapshot
        }
        let harness = try ClientHarness()
        let server = try FlagsdStandIn()
        defer { server.stop() }
        server.publish(withoutTipping(version: 1))
        let client = FlagClient(configuration: harness.configuration(server: server.baseURL))
        var changes = client.changes.makeAsyncIterator()
        try await whileRunning(client) {
            try await waitUntil { version(client) == 1 }
            _ = await changes.next()
            #expect(!client.isEnabled(tipping), "a switch the snapshot lacks is off")

            server.publish(Fixtures.snapshot(version: 2, on: [tipping.key]))
            try await waitUntil { version(client) == 2 }
            let added = try #require(await changes.next())
            #expect(added.changed?.flags == [tipping.key] && added.changed?.pluginPoints == ["checkout"])
            #expect(client.isEnabled(tipping), "the handle made before the flag existed reads the delta's definition")

            server.publish(withoutTipping(version: 3))
            try await waitUntil { version(client) == 3 }
            let removed = try #require(await changes.next())
            #expect(removed.changed?.flags == [tipping.key] && removed.changed?.pluginPoints == ["checkout"])
            #expect(!client.isEnabled(tipping), "removed by a delta: off again")
            #expect(client.status.deltasApplied == 2 && server.deltasServed == 2)
        }
    }

    @Test func aDeltaWhoseResultIsNotTheServersSnapshotIsRefusedAndTheFullSnapshotFetched() async throws {
        let harness = try ClientHarness()
        let server = try FlagsdStandIn()
        defer { server.stop() }
        let base = Fixtures.snapshot(version: 1)
        server.publish(base)
        let client = FlagClient(configuration: harness.configuration(server: server.baseURL))
        try await whileRunning(client) {
            try await waitUntil { version(client) == 1 }
            // A hostile server: the delta turns promos on but claims the digest of a snapshot where it is off.
            let target = Fixtures.snapshot(version: 2, on: ["plugin_switch_feed_news"])
            var delta = SnapshotDelta(from: base, to: Fixtures.snapshot(version: 2, on: ["plugin_switch_feed_promos"]))
            delta.digest = SnapshotDigest(target.flagSet).value(for: target)
            server.scriptChange([
                .response(status: 200, headers: ["Content-Type": SnapshotDelta.mediaType], body: delta.encode())
            ])
            server.publish(Fixtures.snapshot(version: 2, on: ["plugin_switch_feed_news"]))
            try await waitUntil { version(client) == 2 }
            #expect(
                client.isEnabled(Self.news) && !client.isEnabled(Self.promos),
                "the full snapshot, not the delta's result")
            #expect(client.status.deltasApplied == 0)
            #expect(harness.reports.contains(.syncFailed) { $0.message.contains("digest") })
            let requests = server.snapshotRequests
            let full = try #require(requests.last { $0.headers["accept"] == "application/json" })
            #expect(
                full.headers["if-none-match"] == base.entityTag,
                "the full snapshot is asked from the version still held")
            #expect(full.query["wait"] == nil, "at once")
        }
    }

    @Test func aDeltaFromAnotherVersionIsAGapAndNothingOfItIsApplied() async throws {
        let harness = try ClientHarness()
        let server = try FlagsdStandIn()
        defer { server.stop() }
        server.publish(Fixtures.snapshot(version: 1))
        let client = FlagClient(configuration: harness.configuration(server: server.baseURL))
        try await whileRunning(client) {
            try await waitUntil { version(client) == 1 }
            let gap = SnapshotDelta(
                from: Fixtures.snapshot(version: 7),
                to: Fixtures.snapshot(version: 8, on: ["plugin_switch_feed_promos"]))
            server.scriptChange([
                .response(status: 200, headers: ["Content-Type": SnapshotDelta.mediaType], body: gap.encode())
            ])
            server.publish(Fixtures.snapshot(version: 2, on: ["plugin_switch_feed_news"]))
            try await waitUntil { version(client) == 2 }
            #expect(client.isEnabled(Self.news) && !client.isEnabled(Self.promos))
            #expect(harness.reports.contains(.syncFailed) { $0.message.contains("gap") })
        }
    }

    @Test func aDeltaTheClientDidNotAskForIsRefused() async throws {
        let harness = try ClientHarness()
        let server = try FlagsdStandIn()
        defer { server.stop() }
        let base = Fixtures.snapshot(version: 1)
        server.publish(base)
        var configuration = harness.configuration(server: server.baseURL)
        configuration.deltas = false
        let client = FlagClient(configuration: configuration)
        try await whileRunning(client) {
            try await waitUntil { version(client) == 1 }
            let delta = SnapshotDelta(from: base, to: Fixtures.snapshot(version: 2, on: ["plugin_switch_feed_promos"]))
            server.scriptChange([
                .response(status: 200, headers: ["Content-Type": SnapshotDelta.mediaType], body: delta.encode())
            ])
            server.publish(Fixtures.snapshot(version: 2, on: ["plugin_switch_feed_promos"]))
            try await waitUntil { version(client) == 2 }
            #expect(harness.reports.contains(.syncFailed) { $0.message.contains("unusable snapshot") })
            #expect(
                server.snapshotRequests.allSatisfy { $0.headers["accept"] == "application/json" },
                "deltas turned off: never asked")
            #expect(client.status.deltasApplied == 0 && server.deltasServed == 0)
        }
    }

    @Test func aDeltaAppliedOverACachedSnapshotOfALaunchIsProvedAgainstItsDigest() async throws {
        let harness = try ClientHarness()
        let server = try FlagsdStandIn()
        defer { server.stop() }
        let cached = Fixtures.snapshot(version: 4)
        try SnapshotCache(directory: harness.directory.url, namespace: "rider", maximumSnapshotSize: 1 << 20)
            .store(try SnapshotDocument.decode(SnapshotDocument.encode(cached)), fetchedAt: harness.clock.date)
        server.publish(cached)
        server.publish(
            Fixtures.snapshot(version: 6, on: ["plugin_switch_tipping"], experimentWeights: ["treatment": 1]))
        let client = FlagClient(configuration: harness.configuration(server: server.baseURL))
        #expect(client.value(of: Self.copy) != "none")
        try await whileRunning(client) {
            try await waitUntil { version(client) == 6 }
        }
        #expect(client.status.deltasApplied == 1, "the first request, from the cached version, got a delta")
        #expect(client.value(of: Self.copy) == "Let's go")
    }

    @Test func theJournalOfDeltasIsReplayedAtLaunchUpToTheFirstBadRecord() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let cache = SnapshotCache(directory: directory.url, namespace: "rider", maximumSnapshotSize: 1 << 20)
        let versions = (1...4).map {
            Fixtures.snapshot(version: Int64($0), on: $0 % 2 == 0 ? ["plugin_switch_tipping"] : [])
        }
        try cache.store(versions[0], fetchedAt: Date(timeIntervalSince1970: 1_000))
        _ = try cache.load()
        for (base, target) in zip(versions, versions.dropFirst()) {
            try cache.append(
                SnapshotDelta(from: base, to: target), result: target, fetchedAt: Date(timeIntervalSince1970: 2_000))
        }
        let loaded = try #require(try cache.load())
        #expect(loaded.snapshot == versions[3])
        #expect(loaded.compiled?.snapshot.version == 4)
        #expect(loaded.fetchedAt == Date(timeIntervalSince1970: 2_000))

        // A torn last record (a crash while appending) leaves the version before it.
        let url = directory.file(SnapshotCache.deltasFileName)
        var bytes = try Data(contentsOf: url)
        bytes.removeLast(40)
        try bytes.write(to: url)
        #expect(try cache.load()?.snapshot.version == 3)
        // An altered record stops the replay there (the second mention is in the delta itself, after its header).
        bytes = try Data(contentsOf: url)
        let header = try #require(bytes.firstRange(of: Data("\"base_version\":2".utf8)))
        let body = try #require(bytes[header.upperBound...].firstRange(of: Data("\"base_version\":2".utf8)))
        bytes.replaceSubrange(body, with: Data("\"base_version\":7".utf8))
        try bytes.write(to: url)
        #expect(try cache.load()?.snapshot.version == 2)
        // The next delta rewrites the snapshot rather than appending after a bad record.
        try cache.append(SnapshotDelta(from: versions[1], to: versions[2]), result: versions[2], fetchedAt: Date())
        #expect(!FileManager.default.fileExists(atPath: url.path))
        #expect(try cache.load()?.snapshot.version == 3)
    }
}
