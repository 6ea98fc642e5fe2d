import Foundation
import Logging
import ServiceLifecycle
import SwitchyardClient
import SwitchyardCore
import SwitchyardSQLite
import SwitchyardServer
import SwitchyardStorage
import Synchronization
import TestSupport
import Testing

/// A fleet of devices, each a real `FlagClient` with its own directory, launching again and again against a
/// live flagsd on loopback. One plugin crashes in 5 % of the sessions it runs in, three others in 0.1 %. A crash
/// is an unclean exit: the app never calls `endSession()`, and the next launch reports the session as crashed.
/// The crash guard must disable the crashing plugin within its window, every device must take the change and
/// stop running it, and no healthy plugin may be touched.
struct CrashGuardFleetTests {
    static let crashing = "plugin_switch_feed_crashing"
    static let healthy = ["plugin_switch_map_traffic", "plugin_switch_prefs_saved_places", "plugin_switch_split_fare"]
    static let cities = ["lagos", "nairobi", "paris", "lima"]

    /// Four plugin points with one switch each, every switch on for half the units; the test's guard policy. The fleet
    /// is a device farm: every device behind one address (loopback) and relaunched every few seconds, so one
    /// address suffices and the caps are raised, as docs/crash-guard.md advises for a farm.
    static func flagSet() -> FlagSet {
        let keys = [crashing] + healthy
        return FlagSet(
            namespace: "fleet",
            pluginPoints: keys.enumerated().map {
                PluginPointDefinition(name: "point_\($0.offset)", switches: [$0.element])
            },
            flags: keys.map {
                FlagDefinition(
                    key: $0, kind: .pluginSwitch(PluginSwitchDefinition(rollout: Rollout(basisPoints: 5000)!)))
            },
            crashGuard: CrashGuardPolicy(
                minimumSessions: 100, minimumCrashes: 5, maximumCrashRate: Rollout(basisPoints: 200),
                confidence: Rollout(basisPoints: 9900), minimumAddresses: 1, maximumSessionsPerUnit: 100,
                maximumSessionsPerAddress: 100_000))
    }

    /// One device: its directory, unit, city, transports (reused across launches) and random numbers.
    final class Device: @unchecked Sendable {
        let unit: String
        let city: String
        let directory: URL
        let snapshots = URLSessionTransport()
        let events = URLSessionTransport()
        var random: SplitMixRandom
        /// Per launch: the snapshot version it ran with, the switches active, whether it crashed.
        var sessions: [(version: Int64?, active: [String], crashed: Bool)] = []

        init(index: Int, folder: URL) {
            unit = "device-\(index)"
            city = CrashGuardFleetTests.cities[index % CrashGuardFleetTests.cities.count]
            directory = folder.appendingPathComponent(unit)
            random = SplitMixRandom(seed: UInt64(index + 1) * 0x9E37_79B9)
        }

        /// One launch: the client reports the previous session, runs the plugins its snapshot turns on, crashes
        /// (no endSession) or ends cleanly, and stops once its events are sent.
        func launch(server: URL, token: String) async throws {
            var configuration = FlagClient.Configuration(
                serverURL: server, namespace: "fleet", token: token,
                context: EvaluationContext(unitId: unit, city: city, appVersion: "5.14.0", platform: "ios"),
                directory: directory)
            configuration.snapshotTransport = snapshots
            configuration.eventTransport = events
            configuration.events.flushDelay = .milliseconds(10)
            configuration.crashLoopGuard = .off
            let client = FlagClient(configuration: configuration)
            let sync = Task { await client.run() }
            // The first launch waits for a snapshot; later ones start from the last known good one, as apps do.
            try await waitUntil("device \(unit) has a snapshot", every: .milliseconds(5)) {
                client.status.snapshot != nil
            }
            // The version before the evaluations: the sync may install a newer one while they run, and a session is
            // recorded with a version it surely evaluated on, or an older one (never a newer one than it ran on).
            let version = client.status.snapshot?.version
            var active: [String] = []
            var crashed = false
            for key in [CrashGuardFleetTests.crashing] + CrashGuardFleetTests.healthy {
                let pluginSwitch = PluginSwitch(key)
                guard client.isEnabled(pluginSwitch) else { continue }
                client.recordActive(pluginSwitch)
                active.append(key)
                if random.uniform() < (key == CrashGuardFleetTests.crashing ? 0.05 : 0.001) { crashed = true }
            }
            if !crashed { client.endSession() }
            sessions.append((version, active, crashed))
            try await waitUntil("device \(unit) sent its events", every: .milliseconds(5)) {
                client.status.queuedEvents == 0
            }
            sync.cancel()
            await sync.value
        }
    }

    @Test func theCrashingPluginIsDisabledEveryDeviceTakesTheChangeAndNoHealthyPluginIsTouched() async throws {
        try await FleetServer.run { fleet in
            let (store, url, token, folder) = (fleet.store, fleet.url, fleet.token, fleet.folder)
            let devices = (0..<48).map { Device(index: $0, folder: folder) }

            // Launch every device again and again, 16 at a time, until the guard trips and every device has run
            // twice on the trip's version and launched three more times (40 launches each at most: a launch starts
            // from the last snapshot saved, and on a busy machine its sync may finish only after it ran).
            var tripVersion: Int64?
            var launchesAfterTrip = 0
            for _ in 0..<40 {
                try await withThrowingTaskGroup(of: Void.self) { launches in
                    for (index, device) in devices.enumerated() {
                        if index >= 16 { try await launches.next() }
                        launches.addTask { try await device.launch(server: url, token: token) }
                    }
                    try await launches.waitForAll()
                }
                if let trip = tripVersion {
                    launchesAfterTrip += 1
                    let everyDeviceTookIt = devices.allSatisfy { device in
                        device.sessions.count { ($0.version ?? 0) >= trip } >= 2
                    }
                    if launchesAfterTrip >= 3, everyDeviceTookIt { break }
                } else {
                    tripVersion = try await store.audit(AuditQuery(namespace: "fleet", source: .crashGuard)).entries
                        .last?.version
                }
            }

            let trip = try #require(tripVersion, "the crash guard did not trip")
            let trips = try await store.audit(AuditQuery(namespace: "fleet", source: .crashGuard)).entries
            // Exactly one trip: the crashing plugin, everywhere (its crashes are spread over every city).
            #expect(trips.count == 1, "\(trips.map(\.summary))")
            let entry = try #require(trips.first)
            #expect(entry.summary == "crash guard: disable \(Self.crashing) everywhere")
            let evidence = try #require(entry.evidence)
            let sessions = try #require(evidence["sessions"]?.int64Value)
            let crashes = try #require(evidence["crashes"]?.int64Value)
            #expect(sessions >= 100 && crashes >= 5)
            // Counted by unit: the devices sent their units (digests, never the ids), and the crashes came from several.
            #expect((evidence["units"]?.int64Value ?? 0) >= 5, "\(evidence)")
            // Within the window: the evidence's span is the policy's 10 minutes at most (and the whole test ran in less).
            let from = try #require(evidence["from"]?.stringValue.flatMap(Date.init(iso8601:)))
            let until = try #require(evidence["until"]?.stringValue.flatMap(Date.init(iso8601:)))
            #expect(until.timeIntervalSince(from) <= 660)
            let state = try #require(try await store.namespace("fleet"))
            #expect(state.flagSet.flag(Self.crashing)?.pluginSwitch?.disabled == true)
            for key in Self.healthy { #expect(state.flagSet.flag(key)?.pluginSwitch?.disabled == false, "\(key)") }

            // Every device took the change, and from then on never ran the crashing plugin again.
            for device in devices {
                let after = device.sessions.filter { ($0.version ?? 0) >= trip }
                #expect(
                    after.count >= 2, "\(device.unit) did not take version \(trip): \(device.sessions.map(\.version))")
                #expect(!after.contains { $0.active.contains(Self.crashing) }, "\(device.unit)")
            }
            // The crashes of the crashing plugin stopped; sessions of healthy plugins kept running.
            let lastRounds = devices.flatMap { $0.sessions.suffix(2) }
            #expect(!lastRounds.contains { $0.crashed && $0.active.contains(Self.crashing) })
            #expect(lastRounds.contains { !$0.active.isEmpty })
        }
    }
}

/// A seeded generator for the devices' crashes (SplitMix64).
struct SplitMixRandom: Sendable {
    private var state: UInt64

    init(seed: UInt64) {
        state = seed
    }

    mutating func uniform() -> Double {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return Double((z ^ (z >> 31)) >> 11) * 0x1.0p-53
    }
}
