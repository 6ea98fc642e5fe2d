import ClientTestSupport
import Foundation
import SwitchyardClientTesting
import SwitchyardCore
import TestSupport
import Testing

@testable import SwitchyardClient

struct ConcurrencyTests {
    static let promos = PluginSwitch("plugin_switch_feed_promos")
    static let news = PluginSwitch("plugin_switch_feed_news")
    static let copy = ExperimentFlag("exp_checkout_copy", default: "Book")

    /// Reader threads call the front end in loops (pausing 1 ms every 1,000 reads) while the sync loop installs snapshot after snapshot
    /// from a loopback server and the context changes. Run under `--sanitize=thread` to check for races.
    @Test func readsStayConsistentWhileUpdatesLand() async throws {
        let harness = try ClientHarness()
        let server = try FlagsdStandIn()
        defer { server.stop() }
        server.publish(Fixtures.snapshot(version: 1))
        let client = FlagClient(configuration: harness.configuration(server: server.baseURL))
        let stop = LockedBox(false)
        let reads = LockedBox(0)
        let sawOn = LockedBox(false)
        let finished = DispatchGroup()
        for reader in 0..<4 {
            finished.enter()
            Thread {
                var count = 0
                var on = false
                while !stop.current {
                    on = client.isEnabled(reader % 2 == 0 ? Self.promos : Self.news) || on
                    _ = client.value(of: Self.copy)
                    count += 1
                    if count % 1000 == 0 {
                        _ = client.details(for: Self.promos)
                        // A breath every 1,000 reads: four spinning readers on a 2-core machine would otherwise
                        // starve the sync loop and every other test in the process.
                        usleep(1000)
                    }
                }
                reads.withLock { $0 += count }
                if on { sawOn.withLock { $0 = true } }
                finished.leave()
            }.start()
        }
        try await whileRunning(client) {
            for version in Int64(2)...40 {
                let on: Set<String> = version % 2 == 0 ? ["plugin_switch_feed_promos"] : ["plugin_switch_feed_news"]
                server.publish(Fixtures.snapshot(version: version, on: on))
                try await waitUntil { client.status.snapshot?.version == version }
                if version % 10 == 0 { client.updateContext { $0.city = version % 20 == 0 ? "lagos" : "paris" } }
            }
        }
        stop.withLock { $0 = true }
        finished.wait()
        #expect(reads.current > 0)
        #expect(sawOn.current)
        #expect(client.isEnabled(Self.promos), "version 40 turns promos on")
        #expect(!client.isEnabled(Self.news))
    }
}
