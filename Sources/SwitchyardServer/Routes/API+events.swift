import Foundation
import Hummingbird
import Logging
import Metrics
import SwitchyardCore
import SwitchyardStorage

extension API {
    /// `POST /v1/namespaces/{namespace}/events`: a batch of client events (sessions, exposures).
    ///
    /// Valid events whose ids are new are counted before the answer, durably, by the ingestion queue (one batch at a
    /// time, in small transactions: ``EventIngestor``), so no flag change waits long behind events; the answer lists every
    /// id acknowledged (counted now or before) in `accepted`, every refused event in `rejected` with its reason,
    /// and among the accepted ones those left out of the counts in `dropped` (a switch, flag or variant the
    /// namespace does not have; past the caps per unit and per source address). Observers (the crash guard) are
    /// told after the commit.
    ///
    /// Events posted with a reporter token (or a higher role) are counted as the reporter's; others as clients'.
    /// Each batch's source address is recorded with its events (``TrustedProxies``).
    ///
    /// 429 with `Retry-After`, counting nothing, when the token's or the source address's event rate is spent or
    /// the ingestion backlog is full.
    ///
    /// All of it runs on ``BackgroundThreads/events``, at a lower priority than the rest of flagsd: reading,
    /// checking, counting (the SQLite store writes there too) and the observers, so that a flood of events takes the
    /// processors only when flag changes, snapshots and evaluations leave them free.
    func postEvents(_ request: Request, context: FlagsRequestContext) async throws -> Response {
        try await withTaskExecutorPreference(BackgroundThreads.events) {
            try await countEvents(request, context: context)
        }
    }

    private func countEvents(_ request: Request, context: FlagsRequestContext) async throws -> Response {
        let namespace = try parameter("namespace", context)
        let token = try await auth.authorize(request, role: .client, namespace: namespace)
        guard let snapshot = service.hub.snapshot(of: namespace) else { throw APIError.namespaceNotFound(namespace) }
        let body = try await request.jsonBody(limit: bodyLimit)
        let now = Date()
        let limits = service.configuration.eventLimits
        let source: EventSource = token.role >= .reporter ? .reporter : .client
        let address = service.sourceAddress(of: request, context: context)
        var batch = try EventBatch(body, now: now, limits: limits, source: source, address: address?.key)
        try spendEventBudgets(batch.posted, token: token, address: source == .client ? address : nil, namespace: namespace)
        let flagSet = snapshot.flagSet
        let unknown = batch.removeUnknown(in: flagSet)
        let admission = EventAdmission(policy: CrashGuardPolicy.resolved(namespace: flagSet.crashGuard, switch: nil))

        let result: EventIngestResult
        if batch.events.isEmpty {
            result = EventIngestResult(counted: [], duplicates: [])
        } else {
            let observers = service.eventObservers
            do {
                // In the batch's turn: written and told to the observers outside their reloads from the store.
                result = try await service.eventIngestor.ingest(batch.events, section: { writeParts in
                    try await observers.counting(namespace) {
                        let result = try await writeParts()
                        let committed = CommittedEvents(namespace: namespace, events: result.admitted, receivedAt: now)
                        if !committed.events.isEmpty { await observers.notify(committed) }
                        return result
                    }
                }) { [store] part, last in
                    try await store.ingestEvents(part, in: namespace, receivedAt: now, admission: admission, synced: last)
                }
            } catch let refusal as EventIngestor.Refusal {
                refused("backlog_full", namespace: namespace)
                throw APIError.tooManyRequests(retryAfter: service.configuration.retryAfter, "Too many events waiting",
                                               "flagsd has \(refusal.backlog) events waiting to be counted, its most (\(refusal.capacity)); nothing of this batch was counted: send it again after \(service.configuration.retryAfter) s (Retry-After)")
            }
        }

        let dropped = unknown + result.dropped
        record(batch, result, dropped: dropped, namespace: namespace)
        if service.eventIDPruner.claim(now: now) {
            // Before the answer, not beside it: a task outliving the request could still hold a store connection
            // when the store closes. Each step is a small transaction, and once an hour.
            await EventIDPruner.maintain(store, now: now, idRetention: limits.idRetention,
                                         countRetention: service.configuration.eventCountRetention, logger: service.logger)
        }

        var rejected: [JSONValue] = []
        for rejection in batch.rejected {
            var entry = JSONObject()
            entry["id"] = rejection.id.map(JSONValue.string) ?? .null
            entry["index"] = .int(rejection.index)
            entry["reason"] = .string(rejection.reason)
            rejected.append(.object(entry))
        }
        let accepted = batch.events.map(\.id) + unknown.map(\.id) + batch.repeated
        return .json(.object(JSONObject([
            ("accepted", .array(accepted.map(JSONValue.string))),
            ("rejected", .array(rejected)),
            ("duplicates", .array((result.duplicates + batch.repeated).map(JSONValue.string))),
            ("dropped", .array(dropped.map { .object(JSONObject([("id", .string($0.id)), ("reason", .string($0.reason.rawValue))])) })),
        ])))
    }

    /// Spends a batch's events from its token's budget and, for client tokens, its source address's
    /// (`--events-rate-per-token`, `--events-rate-per-address`).
    ///
    /// - Throws: `APIError` 429 with `Retry-After` when either budget is spent.
    private func spendEventBudgets(_ count: Int, token: TokenRecord, address: IPAddress?, namespace: String) throws(APIError) {
        let configuration = service.configuration
        if let rate = configuration.eventRatePerToken,
           case .limited(let seconds) = service.eventRates.spend("token:\(token.id)", cost: count, ratePerMinute: rate) {
            refused("token_rate", namespace: namespace)
            throw APIError.tooManyRequests(retryAfter: seconds, "Event rate exceeded",
                                           "token '\(token.name)' may post \(rate) events per minute and has used them; nothing of this batch was counted: send it again after \(seconds) s (Retry-After)")
        }
        if let rate = configuration.eventRatePerAddress, let address,
           case .limited(let seconds) = service.eventRates.spend("address:\(address.key)", cost: count, ratePerMinute: rate) {
            refused("address_rate", namespace: namespace)
            throw APIError.tooManyRequests(retryAfter: seconds, "Event rate exceeded",
                                           "this source address may post \(rate) events per minute and has used them; nothing of this batch was counted: send it again after \(seconds) s (Retry-After)")
        }
    }

    /// A batch refused with 429, in `flagsd_event_batches_refused_total` (the reason is a fixed word).
    private func refused(_ reason: String, namespace: String) {
        Counter(label: "flagsd_event_batches_refused_total", dimensions: [("namespace", namespace), ("reason", reason)],
                factory: service.metricsFactory).increment()
    }

    /// Events counted, refused and left out (by reason) and repeated, in /metrics. Every label is a fixed word or
    /// the namespace of the route (which exists): never a value a client made up.
    private func record(_ batch: EventBatch, _ result: EventIngestResult, dropped: [EventDrop], namespace: String) {
        let factory = service.metricsFactory
        var byType: [String: Int] = [:]
        for event in result.admitted {
            switch event.payload {
            case .session: byType["session", default: 0] += 1
            case .exposure: byType["exposure", default: 0] += 1
            }
        }
        for (type, count) in byType {
            Counter(label: "flagsd_events_ingested_total", dimensions: [("namespace", namespace), ("type", type)], factory: factory)
                .increment(by: count)
        }
        var byReason: [String: Int] = [:]
        for rejection in batch.rejected { byReason[rejection.category, default: 0] += 1 }
        for (reason, count) in byReason {
            Counter(label: "flagsd_events_rejected_total", dimensions: [("namespace", namespace), ("reason", reason)], factory: factory)
                .increment(by: count)
        }
        var byDrop: [String: Int] = [:]
        for drop in dropped { byDrop[drop.reason.rawValue, default: 0] += 1 }
        for (reason, count) in byDrop {
            Counter(label: "flagsd_events_dropped_total", dimensions: [("namespace", namespace), ("reason", reason)], factory: factory)
                .increment(by: count)
        }
        let duplicates = result.duplicates.count + batch.repeated.count
        if duplicates > 0 {
            Counter(label: "flagsd_events_duplicate_total", dimensions: [("namespace", namespace)], factory: factory)
                .increment(by: duplicates)
        }
    }
}
