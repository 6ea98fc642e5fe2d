import ClientTestSupport
import Foundation
import SwitchyardClientTesting
import SwitchyardCore
import TestSupport
import Testing

@testable import SwitchyardClient

struct StalenessTests {
    static let promos = PluginSwitch("plugin_switch_feed_promos")
    static let copy = ExperimentFlag("exp_checkout_copy", default: "Book")

    func client(_ harness: ClientHarness, server: URL, limit: Duration?) throws -> FlagClient {
        try SnapshotCache(directory: harness.directory.url, namespace: "rider", maximumSnapshotSize: 1 << 20)
            .store(
                Fixtures.snapshot(version: 5, on: ["plugin_switch_feed_promos"], experimentWeights: ["treatment": 1]),
                fetchedAt: harness.clock.date)
        var configuration = harness.configuration(server: server)
        configuration.stalenessLimit = limit
        return FlagClient(configuration: configuration)
    }

    @Test func theAgeOfTheSnapshotIsVisible() throws {
        let harness = try ClientHarness()
        let client = try client(harness, server: try ClientHarness.deadServerURL(), limit: nil)
        harness.clock.advance(by: .seconds(42))
        #expect(client.status.age == .seconds(42))
        #expect(!client.status.isStale)
    }

    @Test func withoutAPolicyAnOldSnapshotKeepsServing() throws {
        let harness = try ClientHarness()
        let client = try client(harness, server: try ClientHarness.deadServerURL(), limit: nil)
        harness.clock.advance(by: .seconds(365 * 24 * 3600))
        #expect(client.isEnabled(Self.promos))
    }

    @Test func pastTheLimitEveryPluginSwitchIsOffWithReasonStale() throws {
        let harness = try ClientHarness()
        let client = try client(harness, server: try ClientHarness.deadServerURL(), limit: .seconds(3600))
        harness.clock.advance(by: .seconds(3599))
        #expect(client.isEnabled(Self.promos))
        #expect(client.value(of: Self.copy) == "Let's go")
        harness.clock.advance(by: .seconds(1))
        #expect(!client.isEnabled(Self.promos))
        #expect(client.value(of: Self.copy) == "Book", "experiments serve their code default")
        let details = client.details(for: Self.promos)
        #expect(details.reason == .stale)
        #expect(details.metadata["age_seconds"] == .int(3600))
        #expect(client.status.isStale)
    }

    @Test func goingStaleIsPublishedAndAServerConfirmationMakesTheSnapshotFreshAgain() async throws {
        let harness = try ClientHarness(manualClock: true)
        let server = try FlagsdStandIn()
        defer { server.stop() }
        server.publish(Fixtures.snapshot(version: 5))
        server.script(Array(repeating: .response(status: 500), count: 3))
        let client = try client(harness, server: server.baseURL, limit: .seconds(60))
        var changes = client.changes.makeAsyncIterator()
        try await whileRunning(client) {
            // The sync loop backs off after the first 500; the staleness watch waits for the 60 s mark.
            try await waitUntil { harness.clock.sleeperCount == 2 }
            harness.clock.advance(by: .seconds(61))
            #expect(await changes.next()?.cause == .becameStale)
            #expect(!client.isEnabled(Self.promos))
            #expect(client.details(for: Self.promos).reason == .stale)
            // Time passes until the scripted failures are spent and the server confirms version 5.
            try await waitUntil("the server confirms version 5") {
                harness.clock.advance(by: .seconds(5))
                return client.status.snapshot?.origin == .server
            }
            #expect(await changes.next()?.cause == .confirmedLive)
            #expect(client.isEnabled(Self.promos))
            #expect(!client.status.isStale)
        }
    }
}

struct ContextTests {
    static let promos = PluginSwitch("plugin_switch_feed_promos")

    /// promos: on in Lagos only; a 50/50 experiment.
    func snapshot() -> Snapshot {
        var snapshot = Fixtures.snapshot(version: 3)
        let index = snapshot.flagSet.flags.firstIndex { $0.key == "plugin_switch_feed_promos" }!
        snapshot.flagSet.flags[index].kind = .pluginSwitch(
            SwitchyardCore.PluginSwitchDefinition(
                rules: [SwitchRule(conditions: Conditions(cities: ["lagos"]), rollout: .full)], rollout: .off))
        return snapshot
    }

    @Test func aNewContextIsEvaluatedAtOnceAndPublished() async throws {
        let harness = try ClientHarness()
        var configuration = harness.configuration(server: try ClientHarness.deadServerURL())
        configuration.bundledSnapshot = SnapshotDocument.encode(snapshot())
        let client = FlagClient(configuration: configuration)
        var changes = client.changes.makeAsyncIterator()
        #expect(client.isEnabled(Self.promos))
        client.updateContext { $0.city = "paris" }
        #expect(!client.isEnabled(Self.promos))
        #expect(client.context.city == "paris")
        #expect(await changes.next()?.cause == .contextChanged)
        client.updateContext(EvaluationContext(unitId: "rider-7", city: "lagos"))
        #expect(client.isEnabled(Self.promos))
    }

    @Test func aRuleThatNeedsABucketIsOffWithoutAUnitId() throws {
        let harness = try ClientHarness()
        var configuration = harness.configuration(
            server: try ClientHarness.deadServerURL(), context: EvaluationContext(city: "lagos"))
        configuration.bundledSnapshot = SnapshotDocument.encode(Fixtures.snapshot(version: 3))
        let client = FlagClient(configuration: configuration)
        let copy = ExperimentFlag("exp_checkout_copy", default: "Book")
        #expect(client.value(of: copy) == "Confirm ride", "the default variant when no bucket can be computed")
        #expect(client.details(for: copy).errorCode == .targetingKeyMissing)
        #expect(client.status.queuedEvents == 0, "no exposure without a unit")
    }

    @Test func aFlagOfAnotherTypeOrAMissingFlagServesTheCodeDefault() throws {
        let harness = try ClientHarness()
        var configuration = harness.configuration(server: try ClientHarness.deadServerURL())
        configuration.bundledSnapshot = SnapshotDocument.encode(
            Fixtures.snapshot(version: 3, on: ["plugin_switch_feed_promos"]))
        let client = FlagClient(configuration: configuration)
        #expect(client.value(of: ExperimentFlag("exp_checkout_copy", default: 7)) == 7)
        #expect(client.value(of: ExperimentFlag("exp_missing", default: true)))
        #expect(!client.isEnabled(PluginSwitch("exp_checkout_copy")), "an experiment is not a plugin switch")
        #expect(!client.isEnabled(PluginSwitch("plugin_switch_missing")))
        #expect(client.details(for: PluginSwitch("plugin_switch_missing")).errorCode == .flagNotFound)
    }
}
