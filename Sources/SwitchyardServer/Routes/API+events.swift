import Foundation
import Hummingbird
import Logging
import Metrics
import SwitchyardCore
import SwitchyardStorage

extension API {
    /// `POST /v1/namespaces/{namespace}/events`: a batch of client events (sessions, exposures).
    ///
    /// Valid events whose ids are new are counted in one transaction before the answer; the answer lists every
    /// id acknowledged (counted now or before) in `accepted`, every refused event in `rejected` with its reason,
    /// and among the accepted ones those left out of the counts in `dropped` (a switch, flag or variant the
    /// namespace does not have; past the caps per unit and per source address). Observers (the crash guard) are
    /// told after the commit.
    ///
    /// Events posted with a reporter token (or a higher role) are counted as the reporter's; others as clients'.
    /// Each batch's source address is recorded with its events (``TrustedProxies``).
    func postEvents(_ request: Request, context: FlagsRequestContext) async throws -> Response {
        let namespace = try parameter("namespace", context)
        let token = try await auth.authorize(request, role: .client, namespace: namespace)
        guard let snapshot = service.hub.snapshot(of: namespace) else { throw APIError.namespaceNotFound(namespace) }
        let body = try await request.jsonBody(limit: bodyLimit)
        let now = Date()
        let limits = service.configuration.eventLimits
        let source: EventSource = token.role >= .reporter ? .reporter : .client
        var batch = try EventBatch(body, now: now, limits: limits, source: source,
                                   address: service.sourceAddress(of: request, context: context)?.key)
        let flagSet = snapshot.flagSet
        let unknown = batch.removeUnknown(in: flagSet)
        let admission = EventAdmission(policy: CrashGuardPolicy.resolved(namespace: flagSet.crashGuard, switch: nil))

        let observers = service.eventObservers
        let events = batch.events
        let result = events.isEmpty
            ? EventIngestResult(counted: [], duplicates: [])
            : try await observers.counting(namespace) {
                let result = try await store.ingestEvents(events, in: namespace, receivedAt: now, admission: admission)
                let committed = CommittedEvents(namespace: namespace, events: result.admitted, receivedAt: now)
                if !committed.events.isEmpty { await observers.notify(committed) }
                return result
            }

        let dropped = unknown + result.dropped
        record(batch, result, dropped: dropped, namespace: namespace)
        if service.eventIDPruner.claim(now: now) {
            do {
                let forgotten = try await store.pruneEventIDs(before: now - limits.idRetention.seconds)
                if forgotten > 0 { service.logger.info("forgot old event ids", metadata: ["count": .stringConvertible(forgotten)]) }
                // Admission windows and crash records outlive the longest guard window (a day) by a day.
                let records = try await store.pruneEventRecords(before: now - 2 * 86_400)
                if records > 0 { service.logger.info("forgot old admission windows and crash records", metadata: ["count": .stringConvertible(records)]) }
            } catch {
                service.logger.warning("could not forget old event ids; will try again in an hour", metadata: ["error": "\(error)"])
            }
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
