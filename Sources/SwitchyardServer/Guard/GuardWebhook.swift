import Crypto
import Foundation
import Logging
import Metrics
import SwitchyardCore
import SwitchyardGuard
import SwitchyardStorage
import Synchronization

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Announces the crash guard's trips and proposals to a URL: one `POST` of JSON each, retried with backoff, never
/// in the way of ingestion (they are queued and delivered by the guard's worker).
///
/// ```json
/// {"event": "crash_guard.tripped", "namespace": "rider", "switch": "plugin_switch_feed_promos",
///  "scope": {"cities": ["lagos"]}, "scope_text": "city lagos", "version": 42, "time": "2026-11-24T09:12:03.118Z",
///  "actor": "crash-guard", "summary": "…", "reason": "…", "evidence": {…}}
/// {"event": "crash_guard.proposed", "namespace": "rider", "proposal": 1234, "switch": "plugin_switch_map_traffic",
///  "scope": {}, "scope_text": "everywhere", "time": "…", "proposed_because": "budget", "reason": "…",
///  "evidence": {…}, "apply": "flagctl guard apply 1234 -n rider", "dismiss": "flagctl guard dismiss 1234 -n rider"}
/// ```
///
/// Any 2xx answer delivers it; anything else (another status, no answer within 5 s, no connection) is retried
/// after 1, 2, 4, 8 and 16 s, then given up and logged. Only the process whose change committed announces a
/// trip, so several flagsd sharing a store announce it once.
///
/// With a secret, each post carries `X-Switchyard-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>"
/// with the secret>`: the receiver recomputes it over the raw body, compares in constant time, and refuses a `t` more
/// than a few minutes old (a replay). Logs name the webhook's host, never its URL (a URL often carries a token).
final class GuardWebhook: Sendable {
    struct Delivery: Sendable {
        var event: String
        var body: [UInt8]
        var attempts = 0
    }

    static let maximumAttempts = 6
    static let timeout: TimeInterval = 5

    let url: URL
    /// What logs say of the URL: its host.
    let host: String
    private let secret: SymmetricKey?
    private let pending = Mutex<[Delivery]>([])
    private let wakeups: AsyncStream<Void>
    private let wake: AsyncStream<Void>.Continuation
    private let session: URLSession
    private let metricsFactory: any MetricsFactory
    private let logger: Logger
    /// Waiting for the delay before a retry; `idle()` returns once the queue is empty.
    private let busy = Mutex(false)

    init(url: URL, secret: [UInt8]? = nil, metricsFactory: any MetricsFactory, logger: Logger) {
        self.url = url
        host = url.host ?? "?"
        self.secret = secret.map { SymmetricKey(data: $0) }
        self.metricsFactory = metricsFactory
        self.logger = logger
        (wakeups, wake) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = Self.timeout
        configuration.timeoutIntervalForResource = Self.timeout
        configuration.urlCache = nil
        configuration.httpCookieStorage = nil
        session = URLSession(configuration: configuration)
    }

    deinit {
        session.invalidateAndCancel()
    }

    /// The body announcing a trip.
    static func payload(_ trip: GuardTrip, record: ChangeRecord) -> JSONValue {
        .object(
            JSONObject([
                ("event", .string("crash_guard.tripped")), ("namespace", .string(record.namespace)),
                ("switch", .string(trip.key)),
                ("scope", .object(trip.scope.tree)), ("scope_text", .string(trip.scopeText)),
                ("version", .int64(record.version)),
                ("time", .string(record.time.iso8601)), ("actor", .string(record.actor)),
                ("summary", .string(record.summary)),
                ("reason", record.reason.map(JSONValue.string) ?? .null), ("evidence", record.evidence ?? .null),
            ]))
    }

    /// The body announcing a proposal.
    static func payload(_ proposal: GuardHistory.Proposal, namespace: String, entry: AuditEntry) -> JSONValue {
        .object(
            JSONObject([
                ("event", .string("crash_guard.proposed")), ("namespace", .string(namespace)),
                ("proposal", .int64(proposal.id)),
                ("switch", .string(proposal.key)), ("scope", .object(proposal.scope.tree)),
                ("scope_text", .string(proposal.scope.guardText)), ("time", .string(entry.time.iso8601)),
                ("summary", .string(entry.summary)), ("proposed_because", .string(proposal.why)),
                ("reason", entry.reason.map(JSONValue.string) ?? .null), ("evidence", proposal.evidence),
                ("apply", .string("flagctl guard apply \(proposal.id) -n \(namespace)")),
                ("dismiss", .string("flagctl guard dismiss \(proposal.id) -n \(namespace) --reason '…'")),
            ]))
    }

    /// Queues an announcement; returns at once.
    func announce(_ payload: JSONValue) {
        let event = payload["event"]?.stringValue ?? "crash_guard"
        pending.withLock { $0.append(Delivery(event: event, body: Array(payload.serializedString().utf8))) }
        wake.yield()
    }

    /// Delivers queued announcements until cancelled.
    func run() async {
        for await _ in wakeups {
            while let delivery = pending.withLock({ $0.isEmpty ? nil : $0.removeFirst() }) {
                await deliver(delivery)
                if Task.isCancelled { break }
            }
        }
        let dropped = pending.withLock { $0.count }
        if dropped > 0 {
            logger.warning(
                "crash guard webhook: \(dropped) announcement(s) not delivered at shutdown (the audit log has every trip)",
                metadata: ["webhook_host": .string(host)])
        }
    }

    /// Whether nothing is queued or being delivered (for tests).
    var isIdle: Bool {
        pending.withLock { $0.isEmpty } && !busy.withLock { $0 }
    }

    private func deliver(_ delivery: Delivery) async {
        busy.withLock { $0 = true }
        defer { busy.withLock { $0 = false } }
        var delivery = delivery
        while delivery.attempts < Self.maximumAttempts {
            delivery.attempts += 1
            let outcome = await post(delivery.body, event: delivery.event)
            if outcome == nil {
                record(delivery.attempts == 1 ? "delivered" : "delivered_after_retry")
                return
            }
            guard delivery.attempts < Self.maximumAttempts else { break }
            let delay = Double(1 << (delivery.attempts - 1))
            logger.notice(
                "crash guard webhook: \(outcome!); retrying in \(Int(delay)) s",
                metadata: ["webhook_host": .string(host), "attempt": .stringConvertible(delivery.attempts)])
            record("retried")
            do { try await Task.sleep(for: .seconds(delay)) } catch {
                pending.withLock { $0.insert(delivery, at: 0) }
                return
            }
        }
        record("failed")
        logger.error(
            "crash guard webhook: gave up after \(Self.maximumAttempts) attempts (the audit log has every trip and proposal)",
            metadata: ["webhook_host": .string(host)])
    }

    /// Sends one request; nil when it was delivered, else what went wrong.
    private func post(_ body: [UInt8], event: String) async -> String? {
        var request = URLRequest(url: url)
        request.httpMethod = "POST"
        request.timeoutInterval = Self.timeout
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.setValue("flagsd crash guard", forHTTPHeaderField: "User-Agent")
        request.setValue(event, forHTTPHeaderField: "X-Switchyard-Event")
        if let secret {
            request.setValue(
                Self.signature(body, key: secret, time: Date()), forHTTPHeaderField: "X-Switchyard-Signature")
        }
        request.httpBody = Data(body)
        let session = self.session
        return await withCheckedContinuation { (continuation: CheckedContinuation<String?, Never>) in
            session.dataTask(with: request) { _, response, error in
                if let error {
                    continuation.resume(returning: "no answer (\(error.localizedDescription))")
                } else if let status = (response as? HTTPURLResponse)?.statusCode, !(200..<300).contains(status) {
                    continuation.resume(returning: "answered \(status)")
                } else {
                    continuation.resume(returning: nil)
                }
            }.resume()
        }
    }

    /// The signature header's value for a secret (for tests and receivers' examples).
    static func signature(_ body: [UInt8], secret: [UInt8], time: Date) -> String {
        signature(body, key: SymmetricKey(data: secret), time: time)
    }

    /// The signature header's value: `t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">`.
    static func signature(_ body: [UInt8], key: SymmetricKey, time: Date) -> String {
        let seconds = Int64(time.timeIntervalSince1970.rounded(.down))
        var message = Array("\(seconds).".utf8)
        message.append(contentsOf: body)
        let code = HMAC<Crypto.SHA256>.authenticationCode(for: message, using: key)
        return "t=\(seconds),v1=" + SwitchyardCore.SHA256.hex(Array(code))
    }

    private func record(_ result: String) {
        Counter(
            label: "switchyard_guard_webhook_deliveries_total", dimensions: [("result", result)],
            factory: metricsFactory
        ).increment()
    }
}
