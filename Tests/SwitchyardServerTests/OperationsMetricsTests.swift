import Foundation
import HTTPTypes
import SwitchyardCore
import TestSupport
import Testing

@testable import SwitchyardServer

/// The metrics the dashboards and alert rules of Dashboards/ need beyond request counts: the waiter cap, the
/// fan-out of changes, change propagation, changes by actor.
struct OperationsMetricsTests {
    @Test func theWaiterCapIsExportedBesideTheWaiterCount() async throws {
        let app = try await TestApp.make(configuration: ServerConfiguration(port: 0, maximumWaiters: 1234))
        defer { app.close() }
        let text = try await app.send(.get, "/metrics", token: "metrics").text
        #expect(text.contains("flagsd_long_poll_max_waiters 1234"))
        #expect(text.contains("flagsd_long_poll_waiters 0"))
    }

    @Test func startingUpIsNotAChangeArriving() async throws {
        let app = try await TestApp.make()
        defer { app.close() }
        let text = try await app.send(.get, "/metrics", token: "metrics").text
        #expect(text.contains("flagsd_change_propagation_seconds_count 0"), "\(text)")
        #expect(text.contains("flagsd_long_poll_wakeups_total 0"))
    }

    @Test func aChangeCountsItsActorTheWaitersItWokeAndItsPropagation() async throws {
        // Long-polls of up to 600 s, parked within 300 s: both still wait when the change is made, however slow the machine.
        let app = try await TestApp.make(configuration: ServerConfiguration(port: 0, maximumWait: 600))
        defer { app.close() }
        async let parked = app.send(.get, "/v1/namespaces/rider/changes?after=1&wait=600", token: "client")
        async let second = app.send(.get, "/v1/namespaces/rider/changes?after=1&wait=600", token: "client")
        try await waitUntil(timeout: .seconds(300)) { app.hub.waiterCount == 2 }
        let change = try await app.send(
            .post, "/v1/namespaces/rider/flags/plugin_switch_map_traffic/disable", token: "editor")
        #expect(change.status == .ok)
        #expect(try await parked.json["version"] == .int(2))
        #expect(try await second.json["version"] == .int(2))
        _ = try await app.send(.post, "/v1/namespaces/rider/flags/plugin_switch_map_traffic/enable", token: "admin")

        let text = try await app.send(.get, "/metrics", token: "metrics").text
        #expect(text.contains("flagsd_long_poll_wakeups_total 2"), "\(text)")
        #expect(text.contains("flagsd_change_propagation_seconds_count 2"))
        #expect(text.contains(#"flagsd_changes_by_actor_total{namespace="rider",actor="editor"} 1"#))
        #expect(text.contains(#"flagsd_changes_by_actor_total{namespace="rider",actor="admin"} 1"#))
    }
}
