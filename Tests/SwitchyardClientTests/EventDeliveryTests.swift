import ClientTestSupport
import Foundation
import SwitchyardClientTesting
import SwitchyardCore
import TestSupport
import Testing

@testable import SwitchyardClient

struct EventDeliveryTests {
    static let promos = PluginSwitch("plugin_switch_feed_promos")
    static let copy = ExperimentFlag("exp_checkout_copy", default: "Book")

    func client(_ harness: ClientHarness, server: URL, capacity: Int = 1000, batchSize: Int = 100) -> FlagClient {
        var configuration = harness.configuration(server: server)
        configuration.bundledSnapshot = SnapshotDocument.encode(
            Fixtures.snapshot(version: 5, on: ["plugin_switch_feed_promos"]))
        configuration.events.capacity = capacity
        configuration.events.batchSize = batchSize
        return FlagClient(configuration: configuration)
    }

    func testEvent(_ number: Int) -> JSONObject {
        JSONObject([
            ("id", .string("event-\(number)")), ("type", .string("exposure")),
            ("time", .string("2026-11-22T00:00:00.000Z")),
        ])
    }

    @Test func eventIDsAreVersion7UUIDsThatSortByTheirTime() {
        let time = Date(timeIntervalSince1970: 1_796_000_000)
        let id = ClientEvent.newID(at: time)
        let hex = Array(id.replacingOccurrences(of: "-", with: ""))
        #expect(id.count == 36 && id == id.lowercased())
        #expect(UInt64(String(hex[0..<12]), radix: 16) == 1_796_000_000_000, "the time in milliseconds, first")
        #expect(hex[12] == "7", "version 7")
        #expect("89ab".contains(hex[16]), "RFC 9562's variant")
        #expect(ClientEvent.newID(at: time) != id, "random after the time")
        #expect(ClientEvent.newID(at: time + 0.002) > id)
        #expect(ClientEvent.newID(at: time - 3600) < id)
        #expect(ClientEvent.newID(at: Date(timeIntervalSince1970: -5)).hasPrefix("00000000-0000-7"))
        #expect(ClientEvent.newID(at: Date(timeIntervalSince1970: .infinity)).hasPrefix("ffffffff-ffff-7"))
    }

    @Test func theLastSessionIsSentAtTheNextLaunchAndLeavesTheQueueWhenAcknowledged() async throws {
        let harness = try ClientHarness()
        let server = try FlagsdStandIn()
        defer { server.stop() }
        server.publish(Fixtures.snapshot(version: 5))
        let first = client(harness, server: server.baseURL)
        first.recordActive(Self.promos)
        let second = client(harness, server: server.baseURL)
        #expect(second.status.queuedEvents == 1)
        try await whileRunning(second) {
            try await waitUntil { server.receivedEvents.count == 1 && second.status.queuedEvents == 0 }
            try await waitUntil {
                (try? FileIO.read(harness.directory.file(EventQueue.fileName), limit: 1 << 20))??.isEmpty == true
            }
        }
        let event = try #require(server.receivedEvents.first)
        #expect(event["type"] == .string("session"))
        #expect(event["crashed"] == .bool(true))
        #expect(event["switches"] == .array([.string("plugin_switch_feed_promos")]))
        let time = try #require(event["time"]?.stringValue)
        #expect(time.wholeMatch(of: /\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z/) != nil)
        let request = try #require(server.requests.first { $0.path.hasSuffix("/events") })
        #expect(request.headers["authorization"] == "Bearer client-token-1")
        #expect(request.headers["content-type"] == "application/json")
    }

    @Test func anExposureIsReportedOncePerVariantAndContext() async throws {
        let harness = try ClientHarness()
        let server = try FlagsdStandIn()
        defer { server.stop() }
        server.publish(Fixtures.snapshot(version: 5))
        let client = client(harness, server: server.baseURL)
        let value = client.value(of: Self.copy)
        #expect(["Confirm ride", "Let's go"].contains(value))
        for _ in 0..<10 { _ = client.value(of: Self.copy) }
        #expect(client.status.queuedEvents == 1)
        client.updateContext { $0.city = "paris" }
        _ = client.value(of: Self.copy)
        #expect(client.status.queuedEvents == 2)
        try await whileRunning(client) {
            try await waitUntil { server.receivedEvents.count == 2 }
        }
        try #require(server.receivedEvents.count == 2, "\(server.receivedEvents)")
        let exposure = try #require(server.receivedEvents.first)
        #expect(exposure["type"] == .string("exposure"))
        #expect(exposure["flag"] == .string("exp_checkout_copy"))
        #expect(exposure["variant"] == .string(value == "Confirm ride" ? "control" : "treatment"))
        #expect(exposure["version"] == .int(5))
        #expect(exposure["epoch"] == .string(Fixtures.epoch))
        #expect(server.receivedEvents[1]["city"] == .string("paris"))
        #expect(Set(server.receivedEvents.compactMap { $0["id"]?.stringValue }).count == 2)
    }

    @Test func aFullQueueDropsItsOldestEvents() throws {
        let harness = try ClientHarness()
        let client = client(harness, server: try ClientHarness.deadServerURL(), capacity: 3)
        for number in 1...5 { client.enqueue(testEvent(number)) }
        #expect(client.queue.entries.map(\.id) == ["event-3", "event-4", "event-5"])
        #expect(client.queue.droppedCount == 2)
        #expect(harness.reports.of(.eventsDropped).count == 2)
    }

    @Test func queuedEventsSurviveARelaunchAndTornLinesAreSkipped() throws {
        let harness = try ClientHarness()
        let first = client(harness, server: try ClientHarness.deadServerURL())
        first.enqueue(testEvent(1))
        first.enqueue(testEvent(2))
        first.endSession()
        let path = harness.directory.file(EventQueue.fileName)
        var bytes = try Data(contentsOf: path)
        bytes.append(contentsOf: Array("{\"id\":\"torn".utf8))
        try bytes.write(to: path)
        let second = client(harness, server: try ClientHarness.deadServerURL())
        #expect(second.queue.entries.map(\.id).prefix(2) == ["event-1", "event-2"])
        #expect(second.queue.entries.count == 3, "two events and the clean session of the first launch")
        #expect(harness.reports.contains(.storageFailed) { $0.message.contains("skipped 1 unreadable line") })
    }

    @Test func serverErrorsKeepEventsQueuedAndTheSenderBacksOffHonouringRetryAfter() async throws {
        let harness = try ClientHarness()
        let server = try FlagsdStandIn()
        defer { server.stop() }
        server.publish(Fixtures.snapshot(version: 5))
        server.scriptEvents([.response(status: 500), .response(status: 503, headers: ["Retry-After": "9"]), .close])
        let client = client(harness, server: server.baseURL)
        client.enqueue(testEvent(1))
        try await whileRunning(client) {
            try await waitUntil { client.status.queuedEvents == 0 }
        }
        #expect(server.eventBatchCount == 4, "500, 503, a closed connection, then the accepted batch")
        #expect(harness.reports.of(.eventsFailed).count == 3)
        #expect(harness.clock.sleeps.contains { $0 >= .seconds(9) })
        #expect(Set(server.receivedEvents.compactMap { $0["id"]?.stringValue }) == ["event-1"])
    }

    @Test func a429KeepsTheWholeBatchQueuedUntilRetryAfterAndThenDeliversItOnce() async throws {
        let harness = try ClientHarness()
        let server = try FlagsdStandIn()
        defer { server.stop() }
        server.publish(Fixtures.snapshot(version: 5))
        server.scriptEvents([
            .response(status: 429, headers: ["Retry-After": "20"]),
            .response(status: 429, headers: ["Retry-After": "3"]),
        ])
        let client = client(harness, server: server.baseURL)
        for number in 1...5 { client.enqueue(testEvent(number)) }
        try await whileRunning(client) {
            try await waitUntil { client.status.queuedEvents == 0 }
        }
        #expect(server.eventBatchCount == 3, "429, 429, then the accepted batch")
        // Each refusal is waited out: at least its Retry-After, plus the jittered backoff.
        #expect(harness.clock.sleeps.contains { $0 >= .seconds(20) })
        #expect(harness.clock.sleeps.contains { $0 >= .seconds(3) && $0 < .seconds(20) })
        // Every post carried the five: nothing left the queue while refused.
        let ids = (1...5).map { "event-\($0)" }
        #expect(server.receivedEvents.compactMap { $0["id"]?.stringValue } == ids + ids + ids)
    }

    @Test func onlyAcknowledgedEventsLeaveTheQueueAndRejectedOnesAreNotRetried() async throws {
        let harness = try ClientHarness()
        let server = try FlagsdStandIn()
        defer { server.stop() }
        server.publish(Fixtures.snapshot(version: 5))
        let reply = #"{"accepted":["event-1"],"rejected":[{"id":"event-2","reason":"time is 3 days in the future"}]}"#
        server.scriptEvents([.response(status: 200, body: Array(reply.utf8))])
        let client = client(harness, server: server.baseURL)
        for number in 1...3 { client.enqueue(testEvent(number)) }
        try await whileRunning(client) {
            try await waitUntil { client.status.queuedEvents == 0 }
        }
        let ids = server.receivedEvents.compactMap { $0["id"]?.stringValue }
        #expect(ids == ["event-1", "event-2", "event-3", "event-3"])
        #expect(harness.reports.contains(.eventsRejected) { $0.message.contains("3 days in the future") })
    }

    @Test func anInvalidBatchIsDroppedAndATooLargeOneIsSplit() async throws {
        let harness = try ClientHarness()
        let server = try FlagsdStandIn()
        defer { server.stop() }
        server.publish(Fixtures.snapshot(version: 5))
        server.scriptEvents([.response(status: 413), .response(status: 400, body: Array("bad".utf8))])
        let client = client(harness, server: server.baseURL, batchSize: 4)
        for number in 1...4 { client.enqueue(testEvent(number)) }
        try await whileRunning(client) {
            try await waitUntil { client.status.queuedEvents == 0 }
        }
        #expect(server.eventBatchCount == 3)
        let ids = server.receivedEvents.compactMap { $0["id"]?.stringValue }
        #expect(ids == ["event-1", "event-2", "event-3", "event-4", "event-1", "event-2", "event-3", "event-4"])
        #expect(harness.reports.contains(.eventsRejected) { $0.message.contains("400") })
    }

    @Test func anUnreadableReplyKeepsTheEventsQueued() async throws {
        let harness = try ClientHarness()
        let server = try FlagsdStandIn()
        defer { server.stop() }
        server.publish(Fixtures.snapshot(version: 5))
        server.scriptEvents([.response(status: 200, body: Array("ok".utf8))])
        let client = client(harness, server: server.baseURL)
        client.enqueue(testEvent(1))
        try await whileRunning(client) {
            try await waitUntil { client.status.queuedEvents == 0 }
        }
        #expect(server.eventBatchCount == 2)
        #expect(harness.reports.contains(.eventsFailed) { ($0.error as? ClientError)?.kind == .protocolViolation })
    }
}

struct RunLifecycleTests {
    /// An app stops the client's loops in the background and starts them again in the foreground.
    @Test func aClientRunsAgainAfterItsRunWasCancelled() async throws {
        let harness = try ClientHarness()
        let server = try FlagsdStandIn()
        defer { server.stop() }
        server.publish(Fixtures.snapshot(version: 1))
        let client = FlagClient(configuration: harness.configuration(server: server.baseURL))
        try await whileRunning(client) {
            try await waitUntil { client.status.snapshot?.version == 1 }
        }
        client.recordActive(PluginSwitch("plugin_switch_feed_news"))
        client.endSession()
        server.publish(Fixtures.snapshot(version: 2, on: ["plugin_switch_feed_promos"]))
        try await whileRunning(client) {
            try await waitUntil { client.status.snapshot?.version == 2 && client.status.queuedEvents == 0 }
            // The sender is idle, waiting for events: a new one must wake it.
            client.enqueue(JSONObject([("id", .string("after-restart")), ("type", .string("exposure"))]))
            try await waitUntil { server.receivedEvents.contains { $0["id"] == .string("after-restart") } }
        }
        #expect(client.isEnabled(PluginSwitch("plugin_switch_feed_promos")))
    }

    @Test func aSecondConcurrentRunReturnsAtOnce() async throws {
        let harness = try ClientHarness()
        let server = try FlagsdStandIn()
        defer { server.stop() }
        server.publish(Fixtures.snapshot(version: 1))
        let client = FlagClient(configuration: harness.configuration(server: server.baseURL))
        try await whileRunning(client) {
            try await waitUntil { client.status.snapshot?.version == 1 }
            await client.run()
        }
    }
}
