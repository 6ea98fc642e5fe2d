import ClientTestSupport
import Foundation
import SwitchyardClientTesting
import SwitchyardCore
import Testing

@testable import SwitchyardClient

/// Bundled defaults → last known good snapshot from disk → live; no snapshot at all → the core flow.
struct StartOrderTests {
    static let promos = PluginSwitch("plugin_switch_feed_promos")
    static let news = PluginSwitch("plugin_switch_feed_news")

    func storeCache(_ harness: ClientHarness, _ snapshot: Snapshot) throws {
        try SnapshotCache(directory: harness.directory.url, namespace: snapshot.namespace, maximumSnapshotSize: 1 << 20)
            .store(snapshot, fetchedAt: harness.clock.date)
    }

    @Test func withoutAnySnapshotEveryPluginSwitchIsOff() throws {
        let harness = try ClientHarness()
        let client = FlagClient(configuration: harness.configuration(server: try ClientHarness.deadServerURL()))
        for key in Fixtures.allSwitchKeys { #expect(!client.isEnabled(PluginSwitch(key))) }
        let details = client.details(for: Self.promos)
        #expect(details.value == .boolean(false))
        #expect(details.errorCode == .providerNotReady)
        #expect(client.status.snapshot == nil)
    }

    @Test func theBundledSnapshotServesWithReasonCachedWhenThereIsNoCache() throws {
        let harness = try ClientHarness()
        var configuration = harness.configuration(server: try ClientHarness.deadServerURL())
        configuration.bundledSnapshot = SnapshotDocument.encode(
            Fixtures.snapshot(version: 2, on: ["plugin_switch_feed_news"]))
        let client = FlagClient(configuration: configuration)
        #expect(client.isEnabled(Self.news))
        #expect(!client.isEnabled(Self.promos))
        let details = client.details(for: Self.news)
        #expect(details.reason == .cached)
        #expect(details.metadata["cached_reason"] == .string("STATIC"))
        #expect(client.status.snapshot?.origin == .bundled)
    }

    @Test func theCachedSnapshotReplacesTheBundledOne() throws {
        let harness = try ClientHarness()
        try storeCache(harness, Fixtures.snapshot(version: 5, on: ["plugin_switch_feed_promos"]))
        var configuration = harness.configuration(server: try ClientHarness.deadServerURL())
        configuration.bundledSnapshot = SnapshotDocument.encode(
            Fixtures.snapshot(version: 2, on: ["plugin_switch_feed_news"]))
        let client = FlagClient(configuration: configuration)
        #expect(client.isEnabled(Self.promos))
        #expect(!client.isEnabled(Self.news))
        #expect(client.details(for: Self.promos).reason == .cached)
        #expect(client.status.snapshot?.origin == .cache)
        #expect(client.status.snapshot?.version == 5)
    }

    @Test func aCacheOlderThanTheBundledSnapshotOfTheSameEpochIsIgnored() throws {
        let harness = try ClientHarness()
        try storeCache(harness, Fixtures.snapshot(version: 1, on: ["plugin_switch_feed_promos"]))
        var configuration = harness.configuration(server: try ClientHarness.deadServerURL())
        configuration.bundledSnapshot = SnapshotDocument.encode(
            Fixtures.snapshot(version: 2, on: ["plugin_switch_feed_news"]))
        let client = FlagClient(configuration: configuration)
        #expect(client.status.snapshot?.version == 2)
        #expect(client.isEnabled(Self.news))
        #expect(harness.reports.contains(.snapshotIgnored) { $0.message.contains("older than the bundled") })
    }

    @Test(arguments: ["empty", "truncated", "foreign", "other namespace", "garbage"])
    func anUnusableCacheFileIsIgnoredAndReported(damage: String) throws {
        let harness = try ClientHarness()
        let cacheURL = harness.directory.file(SnapshotCache.fileName)
        switch damage {
        case "empty":
            try Data().write(to: cacheURL)
        case "truncated":
            try storeCache(harness, Fixtures.snapshot(version: 5, on: ["plugin_switch_feed_promos"]))
            let bytes = try Data(contentsOf: cacheURL)
            try bytes.prefix(bytes.count / 2).write(to: cacheURL)
        case "foreign":
            try Data("{\"hello\": \"world\"}\n".utf8).write(to: cacheURL)
        case "other namespace":
            try storeCache(
                harness, Fixtures.snapshot(version: 5, namespace: "driver", on: ["plugin_switch_feed_promos"]))
        default:
            try Data((0..<4096).map { UInt8(truncatingIfNeeded: $0 &* 31) }).write(to: cacheURL)
        }
        var configuration = harness.configuration(server: try ClientHarness.deadServerURL())
        configuration.bundledSnapshot = SnapshotDocument.encode(
            Fixtures.snapshot(version: 2, on: ["plugin_switch_feed_news"]))
        let client = FlagClient(configuration: configuration)
        #expect(client.status.snapshot?.origin == .bundled)
        #expect(client.isEnabled(Self.news))
        #expect(!client.isEnabled(Self.promos))
        #expect(harness.reports.contains(.snapshotIgnored) { $0.message.contains(SnapshotCache.fileName) })
    }

    @Test func anUnusableCacheWithoutBundledDefaultsLeavesTheCoreFlow() throws {
        let harness = try ClientHarness()
        try Data("not a cache".utf8).write(to: harness.directory.file(SnapshotCache.fileName))
        let client = FlagClient(configuration: harness.configuration(server: try ClientHarness.deadServerURL()))
        for key in Fixtures.allSwitchKeys { #expect(!client.isEnabled(PluginSwitch(key))) }
        #expect(harness.reports.contains(.snapshotIgnored))
    }

    @Test func aBundledSnapshotOfAnotherNamespaceIsIgnored() throws {
        let harness = try ClientHarness()
        var configuration = harness.configuration(server: try ClientHarness.deadServerURL())
        configuration.bundledSnapshot = SnapshotDocument.encode(
            Fixtures.snapshot(version: 2, namespace: "driver", on: ["plugin_switch_feed_news"]))
        let client = FlagClient(configuration: configuration)
        #expect(!client.isEnabled(Self.news))
        #expect(harness.reports.contains(.snapshotIgnored) { $0.message.contains("driver") })
    }

    @Test func aCorruptBundledSnapshotIsIgnored() throws {
        let harness = try ClientHarness()
        var configuration = harness.configuration(server: try ClientHarness.deadServerURL())
        var bytes = SnapshotDocument.encode(Fixtures.snapshot(version: 2, on: ["plugin_switch_feed_news"]))
        bytes.removeLast(10)
        configuration.bundledSnapshot = bytes
        let client = FlagClient(configuration: configuration)
        #expect(!client.isEnabled(Self.news))
        #expect(harness.reports.contains(.snapshotIgnored) { $0.message.contains("bundled") })
    }

    @Test func anUnwritableDirectoryLeavesTheClientWorkingInMemory() throws {
        let harness = try ClientHarness()
        let blocker = harness.directory.file("not-a-directory")
        try Data("x".utf8).write(to: blocker)
        var configuration = harness.configuration(server: try ClientHarness.deadServerURL())
        configuration.directory = blocker.appendingPathComponent("state")
        configuration.bundledSnapshot = SnapshotDocument.encode(
            Fixtures.snapshot(version: 2, on: ["plugin_switch_feed_news"]))
        let client = FlagClient(configuration: configuration)
        #expect(client.isEnabled(Self.news))
        client.recordActive(Self.news)
        client.endSession()
        #expect(harness.reports.contains(.storageFailed))
    }
}
