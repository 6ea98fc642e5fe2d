import Foundation
import SwitchyardCore

extension FlagClient {
    /// Queues an event and wakes the sender. Never blocks on disk or network.
    func enqueue(_ event: JSONObject) {
        let dropped = queue.enqueue(event)
        if dropped > 0 {
            report(
                ClientReport(
                    kind: .eventsDropped,
                    message: "the event queue is full (\(queue.capacity) events): dropped the \(dropped) oldest"))
        }
        eventWakeup.withLock { $0 }?.yield()
    }

    /// What became of a batch.
    package enum BatchResult: Sendable, Equatable {
        /// The server acknowledged these ids (accepted or rejected for good).
        case acknowledged(Set<String>)
        /// The batch is unacceptable as a whole (400, 422): drop it.
        case dropped
        /// The batch is too large (413): send smaller batches.
        case tooLarge
        /// Try again later.
        case retry(retryAfter: Duration?)
    }

    /// Sends queued events in batches until cancelled: waits for events, lets a few more gather
    /// (`flushDelay`), sends, and backs off with jitter on failures.
    package func runEvents<C: Clock<Duration>>(clock: C) async {
        let (wakeups, continuation) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        eventWakeup.withLock { $0 = continuation }
        defer {
            eventWakeup.withLock { $0 = nil }
            continuation.finish()
        }
        var signals = wakeups.makeAsyncIterator()
        var failures = 0
        var batchSize = max(1, configuration.events.batchSize)
        while !Task.isCancelled {
            persistQueue()
            if queue.isEmpty {
                guard await signals.next() != nil else { return }
                if configuration.events.flushDelay > .zero {
                    do { try await clock.sleep(for: configuration.events.flushDelay) } catch { return }
                }
                continue
            }
            let batch = queue.batch(limit: batchSize)
            let result = await send(batch)
            if Task.isCancelled { return }
            switch result {
            case .acknowledged(let ids):
                queue.remove(ids)
                failures = 0
            case .dropped:
                queue.remove(Set(batch.map(\.id)))
                failures = 0
            case .tooLarge:
                if batch.count > 1 {
                    batchSize = max(1, batch.count / 2)
                } else {
                    queue.remove(Set(batch.map(\.id)))
                    report(
                        ClientReport(
                            kind: .eventsRejected,
                            message: "the server refused event \(batch[0].id) as too large (413); dropped it"))
                }
            case .retry(let retryAfter):
                failures += 1
                let wait =
                    min(retryAfter ?? .zero, configuration.maximumRetryAfter)
                    + configuration.backoff.delay(afterFailures: failures, random: configuration.random())
                do { try await clock.sleep(for: wait) } catch { return }
            }
        }
    }

    func persistQueue() {
        do { try queue.persist() } catch {
            report(
                ClientReport(
                    kind: .storageFailed, message: "\(error.message); queued events stay in memory", error: error))
        }
    }

    /// Sends one batch to `POST /v1/namespaces/{ns}/events`.
    package func send(_ batch: [EventQueue.Entry]) async -> BatchResult {
        guard let url = endpoint("events") else {
            report(
                ClientReport(
                    kind: .eventsFailed,
                    message:
                        "cannot build an events URL from \(configuration.serverURL) and namespace '\(namespace)'; the events stay queued"
                ))
            return .retry(retryAfter: nil)
        }
        var body = Array(#"{"events":["#.utf8)
        for (index, entry) in batch.enumerated() {
            if index > 0 { body.append(UInt8(ascii: ",")) }
            body += entry.line
        }
        body += Array("]}".utf8)
        let request = HTTPRequest(
            method: "POST", url: url,
            headers: [
                "Authorization": "Bearer \(configuration.token)", "Content-Type": "application/json",
                "Accept": "application/json",
            ],
            body: body, timeout: configuration.requestTimeout, maximumResponseSize: 1 << 20)
        let response: HTTPResponse
        do {
            response = try await eventTransport.send(request)
        } catch is CancellationError {
            return .retry(retryAfter: nil)
        } catch {
            report(
                ClientReport(
                    kind: .eventsFailed, message: "sending \(batch.count) event(s) failed: \(error); they stay queued",
                    error: error))
            return .retry(retryAfter: nil)
        }
        switch response.status {
        case 200..<300:
            return acknowledgement(of: batch, in: response)
        case 400, 422:
            report(
                ClientReport(
                    kind: .eventsRejected,
                    message:
                        "the server refused a batch of \(batch.count) event(s) as invalid (\(response.status)): \(response.bodyExcerpt); dropped it"
                ))
            return .dropped
        case 413:
            return .tooLarge
        default:
            report(
                ClientReport(
                    kind: .eventsFailed,
                    message:
                        "the server answered \(response.status) to a batch of \(batch.count) event(s): \(response.bodyExcerpt); they stay queued",
                    error: ClientError(.httpStatus, "events: \(response.status)", status: response.status)))
            return .retry(retryAfter: response.retryAfter)
        }
    }

    /// Reads `{"accepted": [id, …], "rejected": [{"id": …, "reason": …}, …]}`.
    private func acknowledgement(of batch: [EventQueue.Entry], in response: HTTPResponse) -> BatchResult {
        guard let reply = try? JSONValue.parse(response.body), let accepted = reply["accepted"]?.arrayValue else {
            report(
                ClientReport(
                    kind: .eventsFailed,
                    message:
                        "the server's reply to a batch of events is not {\"accepted\": [...], \"rejected\": [...]}: \(response.bodyExcerpt); the events stay queued",
                    error: ClientError(.protocolViolation, "unreadable events reply")))
            return .retry(retryAfter: nil)
        }
        let sent = Set(batch.map(\.id))
        var acknowledged = Set(accepted.compactMap(\.stringValue)).intersection(sent)
        var reasons: [String] = []
        for entry in reply["rejected"]?.arrayValue ?? [] {
            guard let id = entry["id"]?.stringValue, sent.contains(id) else { continue }
            acknowledged.insert(id)
            reasons.append("\(id): \(entry["reason"]?.stringValue ?? "no reason given")")
        }
        if !reasons.isEmpty {
            report(
                ClientReport(
                    kind: .eventsRejected,
                    message:
                        "the server rejected \(reasons.count) event(s), which are dropped: \(reasons.prefix(5).joined(separator: "; "))"
                ))
        }
        guard !acknowledged.isEmpty else {
            report(
                ClientReport(
                    kind: .eventsFailed,
                    message: "the server acknowledged none of \(batch.count) event(s); they stay queued"))
            return .retry(retryAfter: nil)
        }
        return .acknowledged(acknowledged)
    }
}
