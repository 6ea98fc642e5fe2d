import Foundation
import HTTPTypes
import PostgresTestSupport
import SwitchyardCore
import SwitchyardPostgres
import Synchronization
import TestSupport
import Testing

/// Several flagsd processes (the built binary) on one PostgreSQL database, as behind a load balancer. One test at a
/// time: each runs two or three debug flagsd processes, and the rest of the suite shares the same two cores.
@Suite(.serialized) struct MultiInstanceTests {
    static let adminToken = "multi-instance-admin-token-0123456789"

    /// Starts `count` flagsd processes on a database; the first one alone first, so it seeds the database.
    func instances(_ count: Int, database: String, folder: URL, arguments: [String] = []) async throws -> [(
        child: ChildFlagsd, client: LiveClient
    )] {
        var started: [(ChildFlagsd, LiveClient)] = []
        for _ in 0..<count {
            let child = try ChildFlagsd(
                database: database, folder: folder, adminToken: Self.adminToken,
                arguments: ["--sync-interval", "2", "--max-wait", "900"] + arguments)
            let port = try await child.port()
            started.append((child, LiveClient(base: URL(string: "http://127.0.0.1:\(port)")!, token: Self.adminToken)))
        }
        return started
    }

    func withInstances<T>(
        _ count: Int, serverURL: String? = nil, arguments: [String] = [],
        _ body: ([(child: ChildFlagsd, client: LiveClient)]) async throws -> T
    ) async throws -> T {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("flagsd-multi-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let (url, drop) = try await TestPostgres.createDatabase(on: serverURL, timeout: 60)
        let started = try await instances(count, database: url, folder: folder, arguments: arguments)
        defer {
            for instance in started { instance.child.kill() }
            try? FileManager.default.removeItem(at: folder)
        }
        do {
            let result = try await body(started)
            await drop()
            return result
        } catch {
            await drop()
            throw error
        }
    }

    func createRider(_ client: LiveClient) async throws -> String {
        let created = try await client.send(
            "POST", "/v1/namespaces",
            body: #"{"name": "rider", "reason_policy": "never", "flag_set": \#(Fixtures.riderJSON())}"#)
        #expect(created.status == .created, "\(created.text)")
        return try #require(created.headers[.eTag])
    }

    /// Parks `count` long-polls on an instance after `etag`, each on its own connection. The instances hold a
    /// long-poll up to 900 s (`--max-wait 900`): a test that makes a change after parking waits 600 s, longer than
    /// `waitForWaiters` and whatever it awaits before the change, so the long-polls are still parked when it comes.
    func park(_ count: Int, on client: LiveClient, after etag: String, wait: Int = 600) -> [Task<
        TestResponse, any Error
    >] {
        (0..<count).map { _ in
            let own = LiveClient(base: client.base, token: client.token, timeout: TimeInterval(wait + 60))
            return Task {
                try await own.send(
                    "GET", "/v1/namespaces/rider/snapshot?wait=\(wait)", headers: ["If-None-Match": etag])
            }
        }
    }

    /// Waits until an instance reports this many parked waiters, within a deadline shorter than their wait.
    func waitForWaiters(_ count: Int, on client: LiveClient, within deadline: Duration = .seconds(300)) async throws {
        let seen = Mutex<String>("nothing")
        try await waitUntil(
            "\(count) waiters on \(client.base) (last seen: \(seen.withLock { $0 }))", timeout: deadline
        ) {
            let metrics = try await client.send("GET", "/metrics").text
            let line = metrics.split(separator: "\n").first { $0.hasPrefix("flagsd_long_poll_waiters ") }
            seen.withLock { $0 = line.map(String.init) ?? "no flagsd_long_poll_waiters line" }
            return line.map { Double($0.split(separator: " ").last ?? "") == Double(count) } ?? false
        }
    }

    @Test func aChangeThroughOneInstanceWakesTheWaitersOfTheOthersWithTheSameBytes() async throws {
        try await withInstances(3) { instances in
            let (a, b, c) = (instances[0].client, instances[1].client, instances[2].client)
            let etag = try await createRider(a)
            // Every instance learns of the new namespace by itself.
            for client in [b, c] {
                try await waitUntil {
                    try await client.send("GET", "/v1/namespaces/rider/snapshot").headers[.eTag] == etag
                }
            }
            let waiters = park(5, on: b, after: etag) + park(5, on: c, after: etag)
            try await waitForWaiters(5, on: b)
            try await waitForWaiters(5, on: c)

            let changed = try await a.send(
                "POST", "/v1/namespaces/rider/flags/plugin_switch_map_traffic/rollout", body: #"{"rollout": 5000}"#)
            #expect(changed.status == .ok)
            let newTag = try #require(changed.headers[.eTag])
            #expect(newTag != etag)

            let reference = try await a.send("GET", "/v1/namespaces/rider/snapshot")
            #expect(reference.headers[.eTag] == newTag)
            for waiter in waiters {
                let response = try await waiter.value
                #expect(response.status == .ok)
                #expect(response.headers[.eTag] == newTag)
                #expect(response.body == reference.body, "every instance serves the same bytes for the same version")
            }
            // The change log long-poll follows on every instance too.
            let watcher = LiveClient(base: c.base, token: Self.adminToken, timeout: 660)
            async let followed = watcher.send("GET", "/v1/namespaces/rider/changes?after=2&wait=600")
            try await waitForWaiters(1, on: c)
            #expect(
                try await b.send("POST", "/v1/namespaces/rider/flags/plugin_switch_map_traffic/disable", body: "{}")
                    .status == .ok)
            let log = try await followed
            #expect(log.json["changes"]?.arrayValue?.compactMap { $0["version"]?.int64Value } == [3])
        }
    }

    @Test func concurrentWritersThroughDifferentInstancesGetStrictlyIncreasingVersions() async throws {
        try await withInstances(3) { instances in
            _ = try await createRider(instances[0].client)
            let versions = try await withThrowingTaskGroup(of: (Int, Int64).self) { group in
                for index in 1...24 {
                    let client = LiveClient(base: instances[index % 3].client.base, token: Self.adminToken)
                    group.addTask {
                        let response = try await client.send(
                            "POST", "/v1/namespaces/rider/flags/plugin_switch_map_traffic/rollout",
                            body: #"{"rollout": \#(index)}"#)
                        #expect(response.status == .ok, "\(response.text)")
                        return (index, response.json["version"]?.int64Value ?? -1)
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(Set(versions.map(\.1)) == Set(2...25))
            let log = try await instances[1].client.send("GET", "/v1/namespaces/rider/changes?after=1&limit=100")
            let entries = log.json["changes"]?.arrayValue ?? []
            #expect(entries.compactMap { $0["version"]?.int64Value } == Array(2...25))
            for (rollout, version) in versions {
                let entry = entries.first { $0["version"]?.int64Value == version }
                #expect(entry?["changes"]?.arrayValue?.first?["after"]?["rollout"]?.int64Value == Int64(rollout))
            }
            // Every instance ends at the last version with the same bytes.
            var bodies: [[UInt8]] = []
            for instance in instances {
                try await waitUntil {
                    try await instance.client.send("GET", "/v1/namespaces/rider/snapshot").headers[.eTag]?.hasSuffix(
                        ".25\"") == true
                }
                bodies.append(try await instance.client.send("GET", "/v1/namespaces/rider/snapshot").body)
            }
            #expect(Set(bodies).count == 1)
        }
    }

    @Test func everyInstanceServesTheSameDeltaForAChangeMadeThroughAnother() async throws {
        try await withInstances(2) { instances in
            let (a, b) = (instances[0].client, instances[1].client)
            let etag = try await createRider(a)
            try await waitUntil("instance B serving the namespace created through A") {
                try await b.send("GET", "/v1/namespaces/rider/snapshot").headers[.eTag] == etag
            }
            let base = try SnapshotDocument.decode(try await b.send("GET", "/v1/namespaces/rider/snapshot").body)
            let accept = ["If-None-Match": etag, "Accept": "\(SnapshotDelta.mediaType), application/json"]
            // Long-polls that accept deltas, parked on both instances (900 s cap, 600 s wait: still parked at the change).
            let waiters = [a, b].map { client in
                let own = LiveClient(base: client.base, token: client.token, timeout: 660)
                return Task { try await own.send("GET", "/v1/namespaces/rider/snapshot?wait=600", headers: accept) }
            }
            try await waitForWaiters(1, on: a)
            try await waitForWaiters(1, on: b)
            let changed = try await a.send(
                "POST", "/v1/namespaces/rider/flags/plugin_switch_map_traffic/rollout", body: #"{"rollout": 4321}"#)
            #expect(changed.status == .ok)
            #expect(changed.headers[.eTag] != etag, "the change takes a new version")
            var bodies: [[UInt8]] = []
            for waiter in waiters {
                let response = try await waiter.value
                #expect(response.status == .ok)
                #expect(response.headers[.contentType] == SnapshotDelta.mediaType, "\(response.text)")
                bodies.append(response.body)
            }
            #expect(
                bodies[0] == bodies[1],
                "the instance that made the change and the one that followed it serve the same delta")
            let delta = try SnapshotDelta.decode(bodies[1])
            #expect(delta.upsertedFlags.map(\.key) == ["plugin_switch_map_traffic"])
            let full = try SnapshotDocument.decode(try await b.send("GET", "/v1/namespaces/rider/snapshot").body)
            #expect(try base.applying(delta) == full)

            // A second change through B; a client still at the first version asks either instance: one delta for both.
            #expect(
                try await b.send("POST", "/v1/namespaces/rider/flags/plugin_switch_map_traffic/disable", body: "{}")
                    .status == .ok)
            try await waitUntil("instance A serving the change made through B") {
                try await a.send("GET", "/v1/namespaces/rider/snapshot").headers[.eTag]
                    == (try await b.send("GET", "/v1/namespaces/rider/snapshot").headers[.eTag])
            }
            let fromA = try await a.send("GET", "/v1/namespaces/rider/snapshot", headers: accept)
            let fromB = try await b.send("GET", "/v1/namespaces/rider/snapshot", headers: accept)
            #expect(
                fromA.headers[.contentType] == SnapshotDelta.mediaType
                    && fromB.headers[.contentType] == SnapshotDelta.mediaType)
            #expect(fromA.body == fromB.body)
            #expect(try base.applying(try SnapshotDelta.decode(fromA.body)).version == full.version + 1)
        }
    }

    @Test func tokensAndAuditAreSharedByEveryInstance() async throws {
        try await withInstances(2) { instances in
            let (a, b) = (instances[0].client, instances[1].client)
            _ = try await createRider(a)
            let created = try await a.send("POST", "/v1/tokens", body: #"{"name": "ci", "role": "editor"}"#)
            #expect(created.status == .created)
            let secret = try #require(created.json["token"]?.stringValue)
            let asCI = LiveClient(base: b.base, token: secret)
            try await waitUntil {
                try await asCI.send("GET", "/v1/namespaces/rider/flags").status == .ok
            }
            #expect(
                try await asCI.send("POST", "/v1/namespaces/rider/flags/plugin_switch_feed_weather/disable", body: "{}")
                    .status == .ok)
            let audit = try await a.send("GET", "/v1/audit?actor=ci")
            #expect(audit.json["entries"]?.arrayValue?.count == 1)
            #expect(try await b.send("DELETE", "/v1/tokens/ci").status == .ok)
            let onA = LiveClient(base: a.base, token: secret)
            try await waitUntil {
                try await onA.send("GET", "/v1/namespaces/rider/flags").status == .unauthorized
            }
        }
    }

    /// Two instances run the same release plan, each looking every 0.2 s, while clients keep reporting healthy
    /// sessions; one is killed (SIGKILL) while they step it. Each stage is left exactly once, the survivor takes the
    /// plan to the end, and the steps' versions follow each other. The clients' clocks are flagsd's
    /// (`--events-max-skew 0s`), so each stage counts from the first minute after it began.
    @Test func aReleasePlanIsSteppedOnceAcrossInstancesAndGoesOnAfterOneIsKilled() async throws {
        let arguments = ["--release-interval", "0.2", "--trusted-proxies", "127.0.0.1", "--events-max-skew", "0s"]
        try await withInstances(2, arguments: arguments) { instances in
            let (a, b) = (instances[0].client, instances[1].client)
            _ = try await createRider(a)
            let created = try await a.send(
                "POST", "/v1/tokens", body: #"{"name": "rider-app", "role": "client", "namespaces": ["rider"]}"#)
            let app = LiveClient(base: b.base, token: try #require(created.json["token"]?.stringValue))
            let path = "/v1/namespaces/rider/flags/plugin_switch_feed_promos/release"
            let plan =
                #"{"stages": [{"cities": ["lagos"], "rollout": 1000}, {"cities": ["lagos"], "rollout": 10000}, "#
                + #"{"cities": ["nairobi"], "rollout": 10000}, {"rollout": 5000}, {"rollout": 10000}], "#
                + #""soak": "0s", "min_sessions": 40, "margin": 1000}"#
            let started = try await a.send("POST", "\(path)/start", body: #"{"plan": \#(plan)}"#)
            #expect(started.status == .ok, "\(started.text)")
            // Clients report healthy sessions, with the switch and without it, in both cities, until the plan ends,
            // each batch from an address of its own (an address's sessions are capped per 10-minute window).
            let traffic = Task {
                var round = 0
                while !Task.isCancelled {
                    round += 1
                    for city in ["lagos", "nairobi"] {
                        let now = Date()
                        let events =
                            CrashGuardTests.sessions(
                                "r\(round)-\(city)-with", count: 25, crashEvery: 0,
                                switches: ["plugin_switch_feed_promos"], city: city, time: now)
                            + CrashGuardTests.sessions(
                                "r\(round)-\(city)-without", count: 25, crashEvery: 0, switches: [], city: city,
                                time: now)
                        _ = try? await app.send(
                            "POST", "/v1/namespaces/rider/events",
                            headers: ["X-Forwarded-For": CrashGuardTests.freshAddress()],
                            body: CrashGuardTests.batch(events))
                    }
                    try? await Task.sleep(for: .milliseconds(300))
                }
            }
            defer { traffic.cancel() }
            func stage(on client: LiveClient) async throws -> (String?, Int64?) {
                let plan = try await client.send("GET", path).json["plan"]?["state"]
                return (plan?["status"]?.stringValue, plan?["stage"]?.int64Value)
            }
            // Each stage waits for its first whole minute: generous deadlines of several minutes a stage.
            try await waitUntil("the plan reaches stage 3", timeout: .seconds(600)) {
                (try await stage(on: b).1 ?? 0) >= 2
            }
            instances[0].child.kill()
            try await waitUntil("the surviving instance completes the plan", timeout: .seconds(900)) {
                try await stage(on: b).0 == "completed"
            }
            let audit = try await b.send("GET", "/v1/audit?namespace=rider&source=release-plan&limit=100").json
            let entries = (audit["entries"]?.arrayValue ?? []).reversed()
            #expect(
                entries.map { $0["evidence"]?["stage"]?.int64Value } == [0, 1, 2, 3, 4],
                "each stage left once: \(entries.map { $0.serializedString() })")
            let versions = entries.compactMap { $0["version"]?.int64Value }
            #expect(
                versions == Array((versions.first ?? 0)..<((versions.first ?? 0) + Int64(versions.count))),
                "one version after the other: \(versions)")
        }
    }

    @Test func withPostgreSQLStoppedInstancesServeWhatTheyHoldRefuseWritesAndRecoverWhenItReturns() async throws {
        try await PrivateServer.with { server in
            try await withInstances(2, serverURL: server.url) { instances in
                let (a, b) = (instances[0].client, instances[1].client)
                let etag = try await createRider(a)
                try await waitUntil {
                    try await b.send("GET", "/v1/namespaces/rider/snapshot").headers[.eTag] == etag
                }
                let before = try await b.send("GET", "/v1/namespaces/rider/snapshot")
                #expect(try await b.send("GET", "/readyz").json["status"] == .string("ready"))
                // Parked within 2 × 25 s, shorter than their 60 s wait: all six are parked at once before the outage.
                let parked = park(3, on: a, after: etag, wait: 60) + park(3, on: b, after: etag, wait: 60)
                try await waitForWaiters(3, on: a, within: .seconds(25))
                try await waitForWaiters(3, on: b, within: .seconds(25))

                try await server.stop()
                let database = try PostgresStoreConfiguration(url: server.url)
                /// What clients read never names the database or quotes PostgreSQL's own text (the log does).
                func expectNoDatabaseIdentity(
                    _ response: TestResponse, sourceLocation: SourceLocation = #_sourceLocation
                ) {
                    for secret in [
                        "postgres://", "\(database.host):\(database.port)", ":\(database.port)/",
                        "\(database.username)@",
                        "SQLSTATE", "connection refused", "Connection refused",
                    ] {
                        #expect(!response.text.contains(secret), "\(response.text)", sourceLocation: sourceLocation)
                    }
                }
                for client in [a, b] {
                    try await waitUntil("degraded on \(client.base)") {
                        let ready = try await client.send("GET", "/readyz")
                        return ready.status == .ok && ready.json["status"] == .string("degraded")
                    }
                    let ready = try await client.send("GET", "/readyz")
                    #expect(ready.json["detail"]?.stringValue?.isEmpty == false)
                    expectNoDatabaseIdentity(ready)
                    // Snapshots held are served, to tokens already known.
                    let snapshot = try await client.send("GET", "/v1/namespaces/rider/snapshot")
                    #expect(snapshot.status == .ok)
                    #expect(snapshot.body == before.body)
                    // Writes fail at once with a problem document saying why.
                    let refused = try await client.send(
                        "POST", "/v1/namespaces/rider/flags/plugin_switch_map_traffic/rollout",
                        body: #"{"rollout": 42}"#)
                    #expect(refused.status == .serviceUnavailable)
                    #expect(refused.headers[.contentType] == "application/problem+json")
                    #expect(refused.json["type"] == .string("urn:switchyard:problem:storage-unavailable"))
                    #expect(refused.json["detail"]?.stringValue?.contains("unreachable") == true)
                    #expect(refused.headers[.retryAfter] != nil)
                    expectNoDatabaseIdentity(refused)
                    expectNoDatabaseIdentity(try await client.send("GET", "/v1/audit"))
                    expectNoDatabaseIdentity(try await client.send("GET", "/v1/tokens"))
                }
                // The long-polls parked before the outage end normally: nothing changed.
                for waiter in parked {
                    let response = try await waiter.value
                    #expect(response.status == .notModified)
                    #expect(response.headers[.eTag] == etag)
                }
                // Long-polls keep being accepted while degraded.
                let duringOutage = park(2, on: b, after: etag, wait: 900)
                try await waitForWaiters(2, on: b)

                try await server.start()
                // A liveness deadline, not a figure: after a long outage PostgresNIO's pool waits up to a minute between
                // attempts to reconnect, and the store replaces it after three failed probes of up to the operation
                // timeout (60 s here) once its listener is back.
                for client in [a, b] {
                    try await waitUntil("ready again on \(client.base)", timeout: .seconds(240)) {
                        try await client.send("GET", "/readyz").json["status"] == .string("ready")
                    }
                }
                let changed = try await a.send(
                    "POST", "/v1/namespaces/rider/flags/plugin_switch_map_traffic/rollout", body: #"{"rollout": 42}"#)
                #expect(changed.status == .ok, "\(changed.text)")
                let newTag = try #require(changed.headers[.eTag])
                for waiter in duringOutage {
                    let response = try await waiter.value
                    #expect(response.status == .ok)
                    #expect(response.headers[.eTag] == newTag)
                }
            }
        }
    }
}
