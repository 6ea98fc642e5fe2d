import ClientTestSupport
import Foundation
import SwitchyardClientTesting
import SwitchyardCore
import TestSupport
import Testing

@testable import SwitchyardClient

/// The sync loop against a real HTTP server on loopback, healthy and hostile.
struct ClientSyncTests {
    static let promos = PluginSwitch("plugin_switch_feed_promos")
    static let news = PluginSwitch("plugin_switch_feed_news")

    /// A client whose last known good snapshot (version 5, promos on) is on disk.
    func clientWithCache(
        _ harness: ClientHarness, server: URL, configure: (inout FlagClient.Configuration) -> Void = { _ in }
    ) throws -> FlagClient {
        try SnapshotCache(directory: harness.directory.url, namespace: "rider", maximumSnapshotSize: 1 << 20)
            .store(Fixtures.snapshot(version: 5, on: ["plugin_switch_feed_promos"]), fetchedAt: harness.clock.date)
        var configuration = harness.configuration(server: server)
        configure(&configuration)
        return FlagClient(configuration: configuration)
    }

    func version(_ client: FlagClient) -> Int64? { client.status.snapshot?.version }

    @Test func aLiveSnapshotReplacesTheCacheIsPersistedAndServesWithoutCachedReason() async throws {
        let harness = try ClientHarness()
        let server = try FlagsdStandIn()
        defer { server.stop() }
        server.publish(Fixtures.snapshot(version: 6, on: ["plugin_switch_feed_news"]))
        let client = try clientWithCache(harness, server: server.baseURL)
        #expect(client.details(for: Self.promos).reason == .cached)
        try await whileRunning(client) {
            try await waitUntil { version(client) == 6 }
        }
        #expect(client.isEnabled(Self.news))
        #expect(!client.isEnabled(Self.promos))
        #expect(client.details(for: Self.news).reason == .static)
        #expect(client.status.snapshot?.origin == .server)
        let restarted = FlagClient(configuration: harness.configuration(server: server.baseURL))
        #expect(restarted.status.snapshot?.version == 6)
        #expect(restarted.details(for: Self.news).reason == .cached)
    }

    /// The cache keeps the document as the server sent it (verified by its checksum), not an encoding of what was
    /// decoded from it: here one re-indented by a proxy, which the checksum's canonical form still accepts.
    @Test func theCacheStoresTheVerifiedDocumentAsReceived() async throws {
        let harness = try ClientHarness()
        let server = try FlagsdStandIn()
        defer { server.stop() }
        let snapshot = Fixtures.snapshot(version: 6, on: ["plugin_switch_feed_news"])
        let reindented = try JSONSerialization.data(
            withJSONObject: JSONSerialization.jsonObject(with: Data(SnapshotDocument.encode(snapshot))),
            options: [.prettyPrinted])
        #expect(Array(reindented) != SnapshotDocument.encode(snapshot))
        server.publish(snapshot, bytes: Array(reindented))
        let client = FlagClient(configuration: harness.configuration(server: server.baseURL))
        try await whileRunning(client) {
            try await waitUntil { version(client) == 6 }
        }
        let file = try Data(contentsOf: harness.directory.file(SnapshotCache.fileName))
        #expect(file.suffix(reindented.count) == reindented)
        let restarted = FlagClient(configuration: harness.configuration(server: server.baseURL))
        #expect(restarted.status.snapshot?.version == 6)
        #expect(restarted.isEnabled(Self.news))
    }

    @Test func requestsCarryTheTokenTheEntityTagAndALongPollWait() async throws {
        let harness = try ClientHarness()
        let server = try FlagsdStandIn()
        defer { server.stop() }
        server.publish(Fixtures.snapshot(version: 5, on: ["plugin_switch_feed_promos"]))
        let client = try clientWithCache(harness, server: server.baseURL)
        try await whileRunning(client) {
            try await waitUntil { server.snapshotRequests.count >= 2 }
        }
        let requests = server.snapshotRequests
        try #require(requests.count >= 2)
        #expect(requests[0].headers["authorization"] == "Bearer client-token-1")
        #expect(requests[0].headers["if-none-match"] == "\"\(Fixtures.epoch).5\"")
        #expect(requests[0].query["wait"] == nil)
        #expect(requests[1].query["wait"] == "1")
        #expect(requests[1].path == "/v1/namespaces/rider/snapshot")
    }

    @Test func aServerConfirmationOfTheCacheEndsTheCachedReason() async throws {
        let harness = try ClientHarness()
        let server = try FlagsdStandIn()
        defer { server.stop() }
        server.publish(Fixtures.snapshot(version: 5, on: ["plugin_switch_feed_promos"]))
        let client = try clientWithCache(harness, server: server.baseURL)
        var changes = client.changes.makeAsyncIterator()
        await whileRunning(client) {
            let change = await changes.next()
            #expect(change?.cause == .confirmedLive)
        }
        #expect(client.details(for: Self.promos).reason == .static)
        #expect(client.isEnabled(Self.promos))
    }

    @Test func aChangeOnTheServerArrivesThroughTheLongPollAndIsPublished() async throws {
        let harness = try ClientHarness()
        let server = try FlagsdStandIn()
        defer { server.stop() }
        server.publish(Fixtures.snapshot(version: 1))
        let client = FlagClient(configuration: harness.configuration(server: server.baseURL))
        var changes = client.changes.makeAsyncIterator()
        try await whileRunning(client) {
            #expect(await changes.next()?.snapshot?.version == 1)
            try await waitUntil { server.snapshotRequests.contains { $0.query["wait"] != nil } }
            server.publish(Fixtures.snapshot(version: 2, on: ["plugin_switch_feed_promos"]))
            let change = await changes.next()
            #expect(change?.cause == .snapshotInstalled)
            #expect(change?.snapshot?.version == 2)
        }
        #expect(client.isEnabled(Self.promos))
    }

    @Test func aServerDownAtStartKeepsTheCacheAndIsPickedUpWhenItComesUp() async throws {
        let harness = try ClientHarness()
        let port: Int
        do {
            let probe = try TestHTTPServer { _ in .close }
            port = probe.port
            probe.stop()
        }
        let client = try clientWithCache(harness, server: URL(string: "http://127.0.0.1:\(port)")!)
        // The server comes up while the client runs, and stops only after the client has: stopped first, it would
        // fail the client's next long-poll (and with the test clock, its backoffs pass at once) before the checks
        // below.
        let server = try await whileRunning(client) {
            try await waitUntil { harness.reports.of(.syncFailed).count >= 2 }
            #expect(client.isEnabled(Self.promos))
            #expect(client.status.consecutiveFailures >= 2)
            #expect(client.status.lastError?.kind == .transport)
            let server = try FlagsdStandIn(port: port)
            server.publish(Fixtures.snapshot(version: 6, on: ["plugin_switch_feed_news"]))
            try await waitUntil { version(client) == 6 }
            return server
        }
        defer { server.stop() }
        #expect(client.isEnabled(Self.news))
        #expect(client.status.consecutiveFailures == 0)
        #expect(harness.clock.sleeps.count >= 2)
    }

    /// Each hostile answer is refused, reported, backed off from, and the cached snapshot keeps serving; the next
    /// healthy answer is installed.
    @Test(arguments: HostileAnswer.allCases)
    func aHostileAnswerNeverReplacesTheGoodSnapshot(_ answer: HostileAnswer) async throws {
        // The manual clock holds the loop in its backoff until the test has looked.
        let harness = try ClientHarness(manualClock: true)
        let server = try FlagsdStandIn()
        defer { server.stop() }
        server.script([answer.reply])
        server.publish(Fixtures.snapshot(version: 7, on: ["plugin_switch_feed_news"]))
        let client = try clientWithCache(harness, server: server.baseURL) { configuration in
            // Only the trickle needs a short deadline; the others must fail for their own reason, even on a
            // loaded machine (under the thread sanitizer the 50 MB case starves the rest).
            configuration.requestTimeout = answer == .slowTrickle ? .milliseconds(700) : .seconds(30)
        }
        var changes = client.changes.makeAsyncIterator()
        try await whileRunning(client) {
            try await waitUntil { harness.reports.contains(.syncFailed) && harness.clock.sleeperCount == 1 }
            let failure = try #require(harness.reports.of(.syncFailed).first?.error as? ClientError)
            #expect(failure.kind == answer.expectedKind, "\(failure)")
            #expect(client.isEnabled(Self.promos), "the cached snapshot keeps serving")
            #expect(client.status.snapshot?.version == 5)
            let backoff = try #require(harness.clock.sleeps.first)
            #expect(backoff > .zero)
            harness.clock.advance(by: backoff)
            #expect(await changes.next()?.snapshot?.version == 7)
        }
        #expect(client.isEnabled(Self.news))
        #expect(!client.isEnabled(Self.promos))
    }

    @Test func aSnapshotForAnotherNamespaceIsRefused() async throws {
        let harness = try ClientHarness()
        let server = try FlagsdStandIn()
        defer { server.stop() }
        let foreign = Fixtures.snapshot(version: 9, namespace: "driver", on: ["plugin_switch_split_fare"])
        server.script([
            .response(status: 200, headers: ["ETag": foreign.entityTag], body: SnapshotDocument.encode(foreign))
        ])
        server.publish(Fixtures.snapshot(version: 5, on: ["plugin_switch_feed_promos"]))
        let client = try clientWithCache(harness, server: server.baseURL)
        try await whileRunning(client) {
            try await waitUntil { harness.reports.contains(.syncFailed) }
            #expect((harness.reports.of(.syncFailed).first?.error as? ClientError)?.kind == .wrongNamespace)
            try await waitUntil { client.status.snapshot?.origin == .server }
        }
        #expect(version(client) == 5)
        #expect(!client.isEnabled(PluginSwitch("plugin_switch_split_fare")))
    }

    @Test func anOlderVersionIsRefusedAndANewerOneLaterAccepted() async throws {
        let harness = try ClientHarness()
        let server = try FlagsdStandIn()
        defer { server.stop() }
        server.publish(Fixtures.snapshot(version: 3, on: ["plugin_switch_feed_news"]))
        let client = try clientWithCache(harness, server: server.baseURL)
        try await whileRunning(client) {
            try await waitUntil { harness.reports.contains(.syncFailed) }
            #expect((harness.reports.of(.syncFailed).first?.error as? ClientError)?.kind == .olderVersion)
            #expect(version(client) == 5)
            #expect(client.isEnabled(Self.promos))
            server.publish(Fixtures.snapshot(version: 6, on: ["plugin_switch_feed_news"]))
            try await waitUntil { version(client) == 6 }
        }
        #expect(client.isEnabled(Self.news))
    }

    @Test func aNewEpochIsAcceptedEvenWithALowerVersion() async throws {
        let harness = try ClientHarness()
        let server = try FlagsdStandIn()
        defer { server.stop() }
        server.publish(Fixtures.snapshot(version: 1, epoch: "epoch-2", on: ["plugin_switch_feed_news"]))
        let client = try clientWithCache(harness, server: server.baseURL)
        try await whileRunning(client) {
            try await waitUntil { client.status.snapshot?.epoch == "epoch-2" }
        }
        #expect(client.isEnabled(Self.news))
    }

    /// 503 (too many waiters) and 429 (too many from this address) alike.
    @Test(arguments: [503, 429]) func aBusyServerIsHonouredRetryAfterAndAll(status: Int) async throws {
        let harness = try ClientHarness()
        let server = try FlagsdStandIn()
        defer { server.stop() }
        server.script([.response(status: status, headers: ["Retry-After": "7"], body: Array("busy".utf8))])
        server.publish(Fixtures.snapshot(version: 6))
        let client = try clientWithCache(harness, server: server.baseURL)
        try await whileRunning(client) {
            try await waitUntil { version(client) == 6 }
        }
        let throttled = try #require(harness.reports.of(.syncFailed).first?.error as? ClientError)
        #expect(throttled.kind == .throttled)
        #expect(throttled.status == status)
        let firstSleep = try #require(harness.clock.sleeps.first)
        #expect(firstSleep >= .seconds(7))
        #expect(firstSleep <= .seconds(8))
    }
}

/// The hostile answers of `aHostileAnswerNeverReplacesTheGoodSnapshot`.
enum HostileAnswer: String, CaseIterable, CustomTestStringConvertible {
    case internalError
    case garbage
    case truncatedJSON
    case connectionClosedMidBody
    case closedWithoutAnswer
    case fiftyMegabytes
    case slowTrickle
    case unauthorized

    var testDescription: String { rawValue }

    var reply: TestHTTPServer.Reply {
        let good = SnapshotDocument.encode(Fixtures.snapshot(version: 7, on: ["plugin_switch_feed_news"]))
        switch self {
        case .internalError:
            return .response(status: 500, body: Array("database on fire".utf8))
        case .garbage:
            return .response(status: 200, body: Array("\u{1}\u{2}garbage<html>".utf8))
        case .truncatedJSON:
            return .response(status: 200, body: Array(good.prefix(good.count / 2)))
        case .connectionClosedMidBody:
            return .raw(
                Array("HTTP/1.1 200 OK\r\nContent-Length: \(good.count)\r\n\r\n".utf8) + good.prefix(good.count / 3))
        case .closedWithoutAnswer:
            return .close
        case .fiftyMegabytes:
            return .response(status: 200, body: [UInt8](repeating: UInt8(ascii: " "), count: 50 << 20))
        case .slowTrickle:
            return .trickle(status: 200, headers: [:], body: good, chunkSize: 1, pause: .milliseconds(50))
        case .unauthorized:
            return .response(status: 401, body: Array(#"{"title":"bad token"}"#.utf8))
        }
    }

    var expectedKind: ClientError.Kind {
        switch self {
        case .internalError, .unauthorized: .httpStatus
        case .garbage, .truncatedJSON: .invalidSnapshot
        case .connectionClosedMidBody, .closedWithoutAnswer: .transport
        case .fiftyMegabytes: .tooLarge
        case .slowTrickle: .timedOut
        }
    }
}
