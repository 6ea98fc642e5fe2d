import ClientTestSupport
import Foundation
import HTTPTypes
import SwitchyardCore
import SwitchyardStorage
import TestSupport
import Testing

@testable import SwitchyardClient
@testable import SwitchyardServer

/// The client runtime against the real flagsd on loopback, following changes through deltas: each change leaves it
/// with exactly the snapshot a full download gives; a client several versions behind gets one delta for all of
/// them, one older than the deltas flagsd keeps gets the full snapshot, as does one of another epoch (the namespace
/// created again) and one that never asks for deltas.
struct DeltaEndToEndTests {
    static let weather = PluginSwitch("plugin_switch_feed_weather")
    static let promos = PluginSwitch("plugin_switch_feed_promos")

    /// A client of namespace `rider` on a live flagsd, with the runtime's own URLSession transport.
    func client(_ harness: ClientHarness, _ app: TestApp, server: URL, deltas: Bool = true) -> FlagClient {
        var configuration = harness.configuration(server: server)
        configuration.token = app.tokens["client"]!
        configuration.deltas = deltas
        // Long-polls end within a second, so a client that is stopped and started again asks anew at once.
        configuration.longPollWait = .seconds(1)
        return FlagClient(configuration: configuration)
    }

    func installed(_ client: FlagClient) -> CompiledSnapshot? {
        client.shared.withLock { $0.compiled }
    }

    /// The client holds exactly the server's current snapshot: the same flag set (and so the same checksum) and the
    /// same evaluation of every flag for a few contexts.
    func expectSameAsFullDownload(
        _ client: FlagClient, _ editor: LiveClient, sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        let full = try SnapshotDocument.decode(try await editor.send("GET", "/v1/namespaces/rider/snapshot").body)
        let held = try #require(installed(client), sourceLocation: sourceLocation)
        #expect(held.snapshot == full, sourceLocation: sourceLocation)
        #expect(
            SnapshotDocument.checksum(of: held.snapshot) == SnapshotDocument.checksum(of: full),
            sourceLocation: sourceLocation)
        let fresh = CompiledSnapshot(full)
        for context in [
            EvaluationContext(unitId: "u-1", city: "lagos", cohorts: ["beta"]),
            EvaluationContext(unitId: "u-2", city: "paris"),
            EvaluationContext(),
        ] {
            for flag in full.flagSet.flags {
                #expect(
                    held.evaluator(for: context).details(for: flag.key)
                        == fresh.evaluator(for: context).details(for: flag.key),
                    "\(flag.key) for \(context)", sourceLocation: sourceLocation)
            }
        }
    }

    @Test func aClientFollowsChangesOfEveryKindThroughDeltas() async throws {
        let app = try await TestApp.make(configuration: ServerConfiguration(port: 0, maximumWait: 30))
        defer { app.close() }
        let harness = try ClientHarness()
        try await app.withLiveServer { url in
            let editor = LiveClient(base: url, token: app.tokens["editor"])
            let client = client(harness, app, server: url)
            try await whileRunning(client) {
                try await waitUntil { client.status.snapshot?.version == 1 }
                var expected: Int64 = 1
                let changes: [(String, String, String)] = [
                    ("POST", "/v1/namespaces/rider/flags/plugin_switch_feed_weather/rollout", #"{"rollout": 10000}"#),
                    (
                        "POST", "/v1/namespaces/rider/kill-switches/kill_home_feed/kill",
                        #"{"reason": "incident", "scope": {"cities": ["lagos"]}}"#
                    ),
                    (
                        "POST", "/v1/namespaces/rider/flags",
                        #"{"key": "plugin_switch_new", "flag": {"type": "plugin_switch", "rollout": 5000}}"#
                    ),
                    ("DELETE", "/v1/namespaces/rider/flags/plugin_switch_new", "{}"),
                    (
                        "POST", "/v1/namespaces/rider/kill-switches/kill_home_feed/revive",
                        #"{"reason": "fixed", "all": true}"#
                    ),
                ]
                for (method, path, body) in changes {
                    let response = try await editor.send(method, path, body: body)
                    #expect(response.status.code < 300, "\(method) \(path): \(response.text)")
                    expected += 1
                    try await waitUntil("version \(expected)") { client.status.snapshot?.version == expected }
                    try await expectSameAsFullDownload(client, editor)
                }
                #expect(client.status.deltasApplied == changes.count, "every change arrived as a delta")
                #expect(client.isEnabled(Self.weather))
            }
        }
    }

    @Test func aClientBehindGetsOneDeltaForTheVersionsItMissedAndOneOlderThanTheKeptDeltasTheFullSnapshot() async throws
    {
        var configuration = ServerConfiguration(port: 0, maximumWait: 30)
        configuration.deltaVersions = 3
        let app = try await TestApp.make(configuration: configuration)
        defer { app.close() }
        let harness = try ClientHarness()
        try await app.withLiveServer { url in
            let editor = LiveClient(base: url, token: app.tokens["editor"])
            let client = client(harness, app, server: url)
            try await whileRunning(client) {
                try await waitUntil { client.status.snapshot?.version == 1 }
            }
            // Three changes while the client is away: within the three versions flagsd keeps deltas from.
            for rollout in [1000, 2000, 3000] {
                _ = try await editor.send(
                    "POST", "/v1/namespaces/rider/flags/plugin_switch_feed_weather/rollout",
                    body: #"{"rollout": \#(rollout)}"#)
            }
            try await whileRunning(client) {
                try await waitUntil { client.status.snapshot?.version == 4 }
                #expect(client.status.deltasApplied == 1, "one delta from version 1 to 4")
                try await expectSameAsFullDownload(client, editor)
            }
            // Four more: version 4 is now older than the kept deltas.
            for rollout in [4000, 5000, 6000, 7000] {
                _ = try await editor.send(
                    "POST", "/v1/namespaces/rider/flags/plugin_switch_feed_weather/rollout",
                    body: #"{"rollout": \#(rollout)}"#)
            }
            try await whileRunning(client) {
                try await waitUntil { client.status.snapshot?.version == 8 }
                #expect(client.status.deltasApplied == 1, "the full snapshot, not a delta")
                try await expectSameAsFullDownload(client, editor)
            }
        }
    }

    @Test func aNamespaceCreatedAgainReachesTheClientAsAFullSnapshotOfItsNewEpoch() async throws {
        let app = try await TestApp.make(configuration: ServerConfiguration(port: 0, maximumWait: 30))
        defer { app.close() }
        let harness = try ClientHarness()
        try await app.withLiveServer { url in
            let admin = LiveClient(base: url, token: app.tokens["admin"])
            let client = client(harness, app, server: url)
            var changes = client.changes.makeAsyncIterator()
            try await whileRunning(client) {
                try await waitUntil { client.status.snapshot?.version == 1 }
                let firstEpoch = client.status.snapshot?.epoch
                #expect(
                    try await admin.send(
                        "DELETE", "/v1/namespaces/rider", headers: ["X-Switchyard-Confirm": "rider"], body: "{}"
                    ).status.code < 300)
                var flagSet = Fixtures.rider().tree(unit: .basisPoints)
                flagSet["description"] = .string("created again")
                let created = try await admin.send(
                    "POST", "/v1/namespaces",
                    body: JSONValue.object(
                        JSONObject([
                            ("name", .string("rider")), ("flag_set", .object(flagSet)),
                        ])
                    ).serializedString())
                #expect(created.status == .created, "\(created.text)")
                try await waitUntil { client.status.snapshot.map { $0.epoch != firstEpoch } ?? false }
                var change: FlagsChange?
                while let next = await changes.next() {
                    if next.cause == .snapshotInstalled && next.snapshot?.epoch != firstEpoch {
                        change = next
                        break
                    }
                }
                #expect(change?.changed == nil, "another epoch: anything may have changed")
                #expect(client.status.deltasApplied == 0)
                try await expectSameAsFullDownload(client, admin)
            }
        }
    }

    @Test func aClientThatNeverAsksForDeltasIsServedFullSnapshots() async throws {
        let app = try await TestApp.make(configuration: ServerConfiguration(port: 0, maximumWait: 30))
        defer { app.close() }
        let harness = try ClientHarness()
        try await app.withLiveServer { url in
            let editor = LiveClient(base: url, token: app.tokens["editor"])
            let client = client(harness, app, server: url, deltas: false)
            try await whileRunning(client) {
                try await waitUntil { client.status.snapshot?.version == 1 }
                _ = try await editor.send(
                    "POST", "/v1/namespaces/rider/flags/plugin_switch_feed_promos/disable", body: #"{"reason": "r"}"#)
                try await waitUntil { client.status.snapshot?.version == 2 }
                #expect(!client.isEnabled(Self.promos))
                #expect(client.status.deltasApplied == 0)
                try await expectSameAsFullDownload(client, editor)
            }
        }
    }
}
