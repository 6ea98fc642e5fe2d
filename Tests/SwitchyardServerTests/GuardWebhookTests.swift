import Foundation
import HTTPTypes
import Hummingbird
import InMemoryLogging
import LiveFlagsdSupport
import Logging
import NIOCore
import Prometheus
import ServiceLifecycle
import SwitchyardCore
import SwitchyardStorage
import Synchronization
import TestSupport
import Testing

@testable import SwitchyardServer

/// The crash guard's webhook, against a real receiver on loopback, through a live flagsd.
struct GuardWebhookTests {
    /// A webhook receiver on a free loopback port that answers the first `failures` requests with 500.
    final class Receiver: Sendable {
        let bodies = Mutex<[(headers: HTTPFields, body: JSONValue, bytes: [UInt8])]>([])
        let failures: Int

        init(failures: Int) {
            self.failures = failures
        }

        var received: [(headers: HTTPFields, body: JSONValue, bytes: [UInt8])] { bodies.withLock { $0 } }

        /// Runs the receiver for the duration of `body`, passing its URL.
        func run<T: Sendable>(_ body: @Sendable (URL) async throws -> T) async throws -> T {
            let router = Router()
            router.post("/hooks/crash-guard") { request, _ -> HTTPResponse.Status in
                let buffer = try await request.body.collect(upTo: 1 << 20)
                let bytes = Array(buffer.readableBytesView)
                let json = (try? JSONValue.parse(bytes)) ?? .null
                let count = self.bodies.withLock { bodies in
                    bodies.append((request.headers, json, bytes))
                    return bodies.count
                }
                return count <= self.failures ? .internalServerError : .noContent
            }
            let (ports, continuation) = AsyncStream<Int>.makeStream()
            var logger = Logger(label: "webhook-receiver")
            logger.logLevel = .critical
            let application = Application(
                router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)),
                onServerRunning: { continuation.yield($0.localAddress?.port ?? 0) }, logger: logger)
            return try await whileServing(application, ports: ports, logger: logger) { port in
                try await body(URL(string: "http://127.0.0.1:\(port)/hooks/crash-guard")!)
            }
        }
    }

    @Test func aTripIsAnnouncedToTheWebhookAndAFailedDeliveryIsRetried() async throws {
        let receiver = Receiver(failures: 1)
        try await receiver.run { url in
            var configuration = ServerConfiguration(port: 0)
            configuration.guardWebhookURL = url
            configuration.guardWebhookSecret = Array(Self.secret.utf8)
            // 300 sessions at least: the trip comes with the last batch, so its evidence covers them all.
            var policy = CrashGuardTests.policy
            policy.minimumSessions = 300
            let app = try await CrashGuardTests.app(configuration: configuration, policy: policy)
            defer { app.close() }
            try await app.withLiveServer { base in
                let client = LiveClient(base: base, token: app.tokens["client"])
                let events = CrashGuardTests.sessions(
                    "w", count: 300, crashEvery: 5, switches: [CrashGuardTests.promos])
                try await CrashGuardRestartTests.post(client, events, firstAddress: 1)
                try await waitUntil("a retried delivery", timeout: .seconds(60)) { receiver.received.count >= 2 }
            }
            let deliveries = receiver.received
            #expect(deliveries.count == 2)
            let payload = try #require(deliveries.last?.body)
            #expect(deliveries.first?.body == payload)
            #expect(payload["event"] == .string("crash_guard.tripped"))
            #expect(payload["namespace"] == .string("rider"))
            #expect(payload["switch"] == .string(CrashGuardTests.promos))
            #expect(payload["actor"] == .string("crash-guard"))
            #expect(payload["version"] == .int64(3))
            #expect(payload["evidence"]?["sessions"] == .int64(300))
            #expect(payload["evidence"]?["crashes"] == .int64(60))
            #expect(deliveries.last?.headers[HTTPField.Name("X-Switchyard-Event")!] == "crash_guard.tripped")
            #expect(deliveries.last?.headers[.contentType] == "application/json")
            // Signed: the receiver recomputes HMAC-SHA256 of "<t>.<body>" with the shared secret.
            for delivery in deliveries {
                let signature = try #require(delivery.headers[HTTPField.Name("X-Switchyard-Signature")!])
                let parts = Dictionary(
                    uniqueKeysWithValues: signature.split(separator: ",").map { part in
                        (String(part.prefix { $0 != "=" }), String(part.drop { $0 != "=" }.dropFirst()))
                    })
                let time = try #require(parts["t"].flatMap(Int64.init))
                #expect(abs(Double(time) - Date().timeIntervalSince1970) < 600)
                #expect(
                    parts["v1"]
                        == Self.hmacSHA256(
                            key: Array(Self.secret.utf8), message: Array("\(time).".utf8) + delivery.bytes))
            }
        }
    }

    static let secret = "webhook-secret-0123456789abcdef"

    /// HMAC-SHA256 (RFC 2104) in hex, written here from the RFC over SwitchyardCore's SHA-256: a second
    /// implementation to check flagsd's (swift-crypto's) against.
    static func hmacSHA256(key: [UInt8], message: [UInt8]) -> String {
        var block = key.count > 64 ? SHA256.digest(key) : key
        block += Array(repeating: 0, count: 64 - block.count)
        let inner = SHA256.digest(block.map { $0 ^ 0x36 } + message)
        return SHA256.hex(SHA256.digest(block.map { $0 ^ 0x5C } + inner))
    }

    /// A failed delivery is logged naming the webhook's host, never its URL (which often holds a token of the
    /// receiver's); the signature is the documented one.
    @Test func logsNameTheWebhooksHostNeverItsURL() async throws {
        let logs = InMemoryLogHandler()
        // A loopback port nothing listens on: the first attempt fails at once, and its retry is logged.
        let url = try #require(URL(string: "http://127.0.0.1:1/services/T000/B000/XXXXSECRETXXXX?token=hunter2"))
        let webhook = GuardWebhook(
            url: url, metricsFactory: PrometheusMetricsFactory(registry: PrometheusCollectorRegistry()),
            logger: Logger(label: "test") { _ in logs })
        let delivering = Task { await webhook.run() }
        webhook.announce(.object(JSONObject([("event", .string("crash_guard.tripped"))])))
        try await waitUntil("a failed delivery is logged", timeout: .seconds(60)) { !logs.entries.isEmpty }
        delivering.cancel()
        _ = await delivering.value
        let logged = logs.entries.map { "\($0.message) \($0.metadata)" }.joined(separator: "\n")
        #expect(logged.contains("127.0.0.1"), "\(logged)")
        #expect(!logged.contains("XXXXSECRETXXXX") && !logged.contains("hunter2"), "\(logged)")
        #expect(
            GuardWebhook.signature(
                Array("{}".utf8), secret: Array(Self.secret.utf8), time: Date(timeIntervalSince1970: 1_800_000_000))
                == "t=1800000000,v1="
                + Self.hmacSHA256(key: Array(Self.secret.utf8), message: Array("1800000000.{}".utf8)))
    }

    @Test func aProposalIsAnnouncedWithHowToApplyIt() async throws {
        let receiver = Receiver(failures: 0)
        try await receiver.run { url in
            var configuration = ServerConfiguration(port: 0)
            configuration.guardWebhookURL = url
            var policy = CrashGuardTests.policy
            policy.maximumTripsPerHour = 0
            policy.minimumSessions = 300
            let app = try await CrashGuardTests.app(configuration: configuration, policy: policy)
            defer { app.close() }
            try await app.withLiveServer { base in
                let client = LiveClient(base: base, token: app.tokens["client"])
                try await CrashGuardRestartTests.post(
                    client,
                    CrashGuardTests.sessions("w", count: 300, crashEvery: 5, switches: [CrashGuardTests.promos]),
                    firstAddress: 1)
                try await waitUntil("an announced proposal", timeout: .seconds(60)) { !receiver.received.isEmpty }
            }
            let delivery = try #require(receiver.received.first)
            #expect(delivery.headers[HTTPField.Name("X-Switchyard-Event")!] == "crash_guard.proposed")
            let proposal = try #require(delivery.body["proposal"]?.int64Value)
            #expect(delivery.body["event"] == .string("crash_guard.proposed"))
            #expect(delivery.body["switch"] == .string(CrashGuardTests.promos))
            #expect(delivery.body["proposed_because"] == .string("budget"))
            #expect(delivery.body["apply"] == .string("flagctl guard apply \(proposal) -n rider"))
            #expect(delivery.body["evidence"]?["crashes"] == .int64(60))
            #expect(try await CrashGuardTests.gate(app)?.disabled == false)
        }
    }
}
