import Foundation
import HTTPTypes
import Logging
import Prometheus
import ServiceLifecycle
import SwitchyardCore
import SwitchyardStorage
import TestSupport
import Testing

@testable import SwitchyardServer

/// The real server on a random loopback port, driven with URLSession: long-polls end to end.
struct LiveLongPollTests {
    @Test func aWaiterWokenByAChangeThroughTheAPIReceivesTheNewSnapshot() async throws {
        let app = try await TestApp.make()
        defer { app.close() }
        try await app.withLiveServer { base in
            let waiter = LiveClient(base: base, token: app.tokens["client"])
            let editor = LiveClient(base: base, token: app.tokens["editor"])
            let first = try await waiter.send("GET", "/v1/namespaces/rider/snapshot")
            let tag = try #require(first.headers[.eTag])
            async let woken = waiter.send(
                "GET", "/v1/namespaces/rider/snapshot?wait=60", headers: ["If-None-Match": tag])
            // The change may land before the waiter parks; either way the waiter must get version 2.
            let change = try await editor.send(
                "POST", "/v1/namespaces/rider/kill-switches/kill_home_feed/kill",
                body: #"{"reason": "live test"}"#)
            #expect(change.status == .ok)
            let response = try await woken
            #expect(response.status == .ok)
            let snapshot = try SnapshotDocument.decode(response.body)
            #expect(snapshot.version == 2)
            #expect(snapshot.flagSet.killSwitch("kill_home_feed")?.isKilledEverywhere == true)
            #expect(response.headers[.eTag] == snapshot.entityTag)
        }
    }

    @Test func everyParkedWaiterIsWokenOnceByOneChange() async throws {
        let app = try await TestApp.make()
        defer { app.close() }
        try await app.withLiveServer { base in
            let tag = try #require(
                try await LiveClient(base: base, token: app.tokens["client"]).send(
                    "GET", "/v1/namespaces/rider/snapshot"
                ).headers[.eTag])
            let versions = try await withThrowingTaskGroup(of: Int64.self) { group in
                for _ in 0..<40 {
                    group.addTask {
                        let client = LiveClient(base: base, token: app.tokens["client"])
                        let response = try await client.send(
                            "GET", "/v1/namespaces/rider/snapshot?wait=60", headers: ["If-None-Match": tag])
                        return try SnapshotDocument.decode(response.body).version
                    }
                }
                let metrics = LiveClient(base: base, token: app.tokens["metrics"])
                try await waitUntil {
                    (try? await metrics.send("GET", "/metrics").text.contains("flagsd_long_poll_waiters 40")) == true
                }
                _ = try await LiveClient(base: base, token: app.tokens["editor"])
                    .send(
                        "POST", "/v1/namespaces/rider/flags/plugin_switch_map_traffic/rollout",
                        body: #"{"rollout": 77}"#)
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(versions == Array(repeating: 2, count: 40))
        }
    }

    @Test func aWaitThatEndsWithoutAChangeGets304() async throws {
        let app = try await TestApp.make()
        defer { app.close() }
        try await app.withLiveServer { base in
            let client = LiveClient(base: base, token: app.tokens["client"])
            let tag = try #require(try await client.send("GET", "/v1/namespaces/rider/snapshot").headers[.eTag])
            let response = try await client.send(
                "GET", "/v1/namespaces/rider/snapshot?wait=1", headers: ["If-None-Match": "W/\(tag)"])
            #expect(response.status == .notModified)
            #expect(response.headers[.eTag] == tag)
            #expect(response.body.isEmpty)
            let changes = try await client.send("GET", "/v1/namespaces/rider/changes?after=1&wait=1")
            #expect(changes.status == .ok)
            #expect(changes.json["changes"] == .array([]))
        }
    }

    @Test func gzipCrossesTheWireWithTheSameETag() async throws {
        let app = try await TestApp.make()
        defer { app.close() }
        try await app.withLiveServer { base in
            let client = LiveClient(base: base, token: app.tokens["client"])
            let plain = try await client.send(
                "GET", "/v1/namespaces/rider/snapshot", headers: ["Accept-Encoding": "identity"])
            let gzip = try await client.send(
                "GET", "/v1/namespaces/rider/snapshot", headers: ["Accept-Encoding": "gzip"])
            #expect(gzip.headers[.contentEncoding] == "gzip")
            #expect(gzip.headers[.eTag] == plain.headers[.eTag])
            #expect(gzip.headers[.vary] == "Accept, Accept-Encoding")
            // URLSession may inflate the body itself; either way it must be the same snapshot.
            let body = gzip.body.starts(with: [0x1F, 0x8B]) ? try Gzip.decompress(gzip.body) : gzip.body
            #expect(body == plain.body)
        }
    }

    @Test func pastTheWaiterCapRequestsGet503WithRetryAfter() async throws {
        let app = try await TestApp.make(
            configuration: ServerConfiguration(port: 0, maximumWait: 600, maximumWaiters: 1, retryAfter: 7))
        defer { app.close() }
        try await app.withLiveServer { base in
            let tag = try #require(
                try await LiveClient(base: base, token: app.tokens["client"]).send(
                    "GET", "/v1/namespaces/rider/snapshot"
                ).headers[.eTag])
            async let parked = LiveClient(base: base, token: app.tokens["client"])
                .send("GET", "/v1/namespaces/rider/snapshot?wait=60", headers: ["If-None-Match": tag])
            let metrics = LiveClient(base: base, token: app.tokens["metrics"])
            try await waitUntil {
                (try? await metrics.send("GET", "/metrics").text.contains("flagsd_long_poll_waiters 1")) == true
            }
            let refused = try await LiveClient(base: base, token: app.tokens["client"])
                .send("GET", "/v1/namespaces/rider/snapshot?wait=60", headers: ["If-None-Match": tag])
            #expect(refused.status == .serviceUnavailable)
            #expect(refused.headers[.retryAfter] == "7")
            #expect(refused.json["type"] == .string("urn:switchyard:problem:overloaded"))
            _ = try await LiveClient(base: base, token: app.tokens["editor"])
                .send("POST", "/v1/namespaces/rider/flags/plugin_switch_map_traffic/disable")
            #expect(try await parked.status == .ok)
        }
    }

    @Test func gracefulShutdownAnswersParkedWaitersAtOnce() async throws {
        let app = try await TestApp.make(configuration: ServerConfiguration(port: 0, maximumWait: 600))
        defer { app.close() }
        let (ports, continuation) = AsyncStream<Int>.makeStream()
        let server = try await buildApplication(
            configuration: ServerConfiguration(port: 0, maximumWait: 600), store: app.store,
            logger: app.logger
        ) { continuation.yield($0) }
        let group = ServiceGroup(configuration: .init(services: [server], logger: app.logger))
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            let port = try #require(await ports.first { _ in true })
            let base = URL(string: "http://127.0.0.1:\(port)")!
            let client = LiveClient(base: base, token: app.tokens["client"], timeout: 120)
            let tag = try #require(try await client.send("GET", "/v1/namespaces/rider/snapshot").headers[.eTag])
            let waiter = Task {
                try await LiveClient(base: base, token: app.tokens["client"], timeout: 120)
                    .send("GET", "/v1/namespaces/rider/snapshot?wait=600", headers: ["If-None-Match": tag])
            }
            try await waitUntil { server.context.hub.waiterCount == 1 }
            await group.triggerGracefulShutdown()
            // A liveness deadline far below the 600 s wait: the waiter must be answered by the shutdown.
            let response = try await withDeadline(.seconds(60)) { try await waiter.value }
            #expect(response.status == .notModified)
            try await tasks.waitForAll()
        }
    }
}

struct DeadlineExceeded: Error {}

/// Runs an operation, failing if it has not finished by a generous deadline.
func withDeadline<T: Sendable>(_ timeout: Duration, _ operation: @escaping @Sendable () async throws -> T) async throws
    -> T
{
    try await withThrowingTaskGroup(of: T?.self) { group in
        group.addTask { try await operation() }
        group.addTask {
            try await Task.sleep(for: timeout)
            return nil
        }
        guard let first = try await group.next(), let value = first else {
            group.cancelAll()
            throw DeadlineExceeded()
        }
        group.cancelAll()
        return value
    }
}
