import Foundation
import Hummingbird
import Logging
import Metrics
import SwitchyardCore
import SwitchyardStorage
import SwitchyardWire

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
    /// 429 with `Retry-After`, counting nothing, when the source address's or the token's event rate is spent or
    /// the ingestion backlog is full. A refusal costs only the one refused: the address is checked before the body
    /// is read (an address with nothing left is refused without parsing what it sent) and charged first, and a
    /// batch refused by one budget is charged to none (``spendEventBudgets(_:token:source:address:namespace:)``).
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
        guard let snapshot = app.hub.snapshot(of: namespace) else { throw APIError.namespaceNotFound(namespace) }
        let source: EventSource = token.role >= .reporter ? .reporter : .client
        let address = app.sourceAddress(of: request, context: context)
        if source == .client, let address, let rate = app.configuration.eventRatePerAddress,
            let refusal = app.eventRates.spend(address.budgets("events", ratePerMinute: rate), charge: false)
        {
            // Before the body is read: an address with nothing left costs no parsing.
            throw addressRefusal(address, rate, refusal, namespace: namespace)
        }
        let now = Date()
        let limits = app.configuration.eventLimits
        var batch: EventBatch
        do {
            batch = try EventBatch(
                try await request.jsonBody(limit: bodyLimit), now: now, limits: limits, source: source,
                address: address?.key)
        } catch {
            // A body that is no batch costs its sender an event per KiB it claims (at least one), so a stream of them
            // is refused like any other, however large.
            if source == .client, let address, let rate = app.configuration.eventRatePerAddress {
                let bytes = request.headers[.contentLength].flatMap(Int.init) ?? 0
                _ = app.eventRates.spend(address.budgets("events", ratePerMinute: rate, cost: max(1, bytes / 1024)))
            }
            throw error
        }
        // Names the namespace does not have are no valid events: taken out before the token pays.
        let unknown = batch.removeUnknown(in: snapshot)
        let spent = try spendEventBudgets(batch, token: token, source: source, address: address, namespace: namespace)
        let admission = {
            var admission = snapshot.admission
            admission.maximumUnitsPerArm = app.configuration.experimentUnitsPerArm
            return admission
        }()

        let result: EventIngestResult
        if batch.events.isEmpty {
            result = EventIngestResult(counted: [], duplicates: [])
        } else {
            let observers = app.eventObservers
            do {
                // In the batch's turn: written and told to the observers outside their reloads from the store.
                result = try await app.eventIngestor.ingest(
                    batch.events,
                    section: { writeParts in
                        try await observers.counting(namespace) {
                            let result = try await writeParts()
                            let committed = CommittedEvents(
                                namespace: namespace, events: result.admitted, receivedAt: now)
                            if !committed.events.isEmpty { await observers.notify(committed) }
                            return result
                        }
                    }
                ) { [store] part, last in
                    try await store.ingestEvents(
                        part, in: namespace, receivedAt: now, admission: admission, synced: last)
                }
            } catch let refusal as EventIngestor.Refusal {
                // Nothing of it was counted: it costs its sender's budgets nothing either.
                app.eventRates.refund(spent)
                refused(.backlogFull, namespace: namespace)
                throw APIError.tooManyRequests(
                    retryAfter: app.configuration.retryAfter, "Too many events waiting",
                    "flagsd has \(refusal.backlog) events waiting to be counted, its most (\(refusal.capacity)); nothing of this batch was counted: send it again after \(app.configuration.retryAfter) s (Retry-After)"
                )
            }
        }

        let dropped = unknown + result.dropped
        record(batch, result, dropped: dropped, namespace: namespace)
        if app.eventIDPruner.claim(now: now) {
            // Before the answer, not beside it: a task outliving the request could still hold a store connection
            // when the store closes. Each step is a small transaction, and once an hour.
            await EventIDPruner.maintain(
                store, now: now, idRetention: limits.idRetention,
                countRetention: app.configuration.eventCountRetention, logger: app.logger)
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
        return .json(
            .object(
                JSONObject([
                    ("accepted", .array(accepted.map(JSONValue.string))),
                    ("rejected", .array(rejected)),
                    ("duplicates", .array((result.duplicates + batch.repeated).map(JSONValue.string))),
                    (
                        "dropped",
                        .array(
                            dropped.map {
                                .object(JSONObject([("id", .string($0.id)), ("reason", .string($0.reason.rawValue))]))
                            })
                    ),
                ])))
    }

    /// Spends a batch from its source address's budget and its token's, all or nothing, the address's first.
    ///
    /// - The address (`--events-rate-per-address`, client tokens only, at each of its blocks: ``AddressBlock``) pays
    ///   for every element it posted, valid or not (at least 1 for an empty batch): junk costs its sender.
    /// - The token pays for the valid events only: `--events-rate-per-token` for reporter and higher tokens,
    ///   `--events-rate-per-client-token` (off by default) for client tokens, which the whole fleet shares and anyone
    ///   can hold, so a limit on them would let one party spend every app's budget.
    ///
    /// - Returns: the budgets charged (to give back if the batch is refused later).
    /// - Throws: `APIError` 429 with `Retry-After` naming the budget that refused; nothing is charged then.
    private func spendEventBudgets(
        _ batch: EventBatch, token: TokenRecord, source: EventSource, address: IPAddress?,
        namespace: String
    ) throws(APIError) -> [RateBuckets.Budget] {
        let configuration = app.configuration
        var budgets: [RateBuckets.Budget] = []
        if source == .client, let address, let rate = configuration.eventRatePerAddress {
            budgets = address.budgets("events", ratePerMinute: rate, cost: max(1, batch.posted))
        }
        let addressBudgets = budgets.count
        let tokenRate = source == .client ? configuration.eventRatePerClientToken : configuration.eventRatePerToken
        let valid = batch.events.count + batch.repeated.count
        if let tokenRate, valid > 0 {
            budgets.append(RateBuckets.Budget(key: "events-token:\(token.id)", ratePerMinute: tokenRate, cost: valid))
        }
        guard let refusal = app.eventRates.spend(budgets) else { return budgets }
        if refusal.index < addressBudgets, let address, let rate = configuration.eventRatePerAddress {
            throw addressRefusal(address, rate, refusal, namespace: namespace)
        }
        refused(.tokenRate, namespace: namespace)
        throw APIError.tooManyRequests(
            retryAfter: refusal.retryAfterSeconds, "Event rate exceeded",
            "token '\(token.name)' may post \(tokenRate ?? 0) events per minute and has used them; nothing of this batch was counted: send it again after \(refusal.retryAfterSeconds) s (Retry-After)"
        )
    }

    /// The 429 of a source address past its event rate, at the block that refused (counted as `address_rate`).
    private func addressRefusal(_ address: IPAddress, _ rate: Int, _ refusal: RateBuckets.Refusal, namespace: String)
        -> APIError
    {
        refused(.addressRate, namespace: namespace)
        let who =
            address.blocks.indices.contains(refusal.index)
            ? address.blocks[refusal.index] : AddressBlock(key: address.key, share: 1)
        return APIError.tooManyRequests(
            retryAfter: refusal.retryAfterSeconds, "Event rate exceeded",
            "\(who.sender) may post \(who.cap(rate)) events per minute and has used them; nothing of this batch was counted: send it again after \(refusal.retryAfterSeconds) s (Retry-After)"
        )
    }

    /// A batch refused with 429, in `flagsd_event_batches_refused_total` (the reason is a fixed word).
    private func refused(_ reason: KnownSeries.BatchRefusal, namespace: String) {
        KnownSeries.counter(reason, namespace: namespace, app.metricsFactory).increment()
    }

    /// Events counted, refused and left out (by reason) and repeated, in /metrics. Every label is a fixed word or
    /// the namespace of the route (which exists): never a value a client made up.
    private func record(_ batch: EventBatch, _ result: EventIngestResult, dropped: [EventDrop], namespace: String) {
        let factory = app.metricsFactory
        var byType: [String: Int] = [:]
        for event in result.admitted {
            switch event.payload {
            case .session: byType["session", default: 0] += 1
            case .exposure: byType["exposure", default: 0] += 1
            case .metric: byType["metric", default: 0] += 1
            }
        }
        for (type, count) in byType {
            Counter(
                label: "flagsd_events_ingested_total", dimensions: [("namespace", namespace), ("type", type)],
                factory: factory
            )
            .increment(by: count)
        }
        var byReason: [String: Int] = [:]
        for rejection in batch.rejected { byReason[rejection.category, default: 0] += 1 }
        for (reason, count) in byReason {
            Counter(
                label: "flagsd_events_rejected_total", dimensions: [("namespace", namespace), ("reason", reason)],
                factory: factory
            )
            .increment(by: count)
        }
        var byDrop: [EventDropReason: Int] = [:]
        for drop in dropped { byDrop[drop.reason, default: 0] += 1 }
        for (reason, count) in byDrop {
            KnownSeries.counter(reason, namespace: namespace, factory).increment(by: count)
        }
        if result.enteredUnits > 0 {
            Counter(
                label: "flagsd_experiment_units_entered_total", dimensions: [("namespace", namespace)], factory: factory
            )
            .increment(by: result.enteredUnits)
        }
        let duplicates = result.duplicates.count + batch.repeated.count
        if duplicates > 0 {
            Counter(label: "flagsd_events_duplicate_total", dimensions: [("namespace", namespace)], factory: factory)
                .increment(by: duplicates)
        }
    }
}
