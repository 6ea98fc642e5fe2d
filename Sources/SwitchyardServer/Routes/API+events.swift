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
    /// id acknowledged (counted now or before) in `accepted`, and every refused event in `rejected` with its
    /// reason. Observers (the crash guard) are told after the commit.
    func postEvents(_ request: Request, context: FlagsRequestContext) async throws -> Response {
        let namespace = try parameter("namespace", context)
        try await auth.authorize(request, role: .client, namespace: namespace)
        guard service.hub.snapshot(of: namespace) != nil else { throw APIError.namespaceNotFound(namespace) }
        let body = try await request.jsonBody(limit: bodyLimit)
        let now = Date()
        let limits = service.configuration.eventLimits
        let batch = try EventBatch(body, now: now, limits: limits)

        let result = batch.events.isEmpty
            ? EventIngestResult(counted: [], duplicates: [])
            : try await store.ingestEvents(batch.events, in: namespace, receivedAt: now)

        record(batch, result, namespace: namespace)
        let counted = Set(result.counted)
        let committed = CommittedEvents(namespace: namespace, events: batch.events.filter { counted.contains($0.id) }, receivedAt: now)
        if !committed.events.isEmpty { await service.eventObservers.notify(committed) }
        if service.eventIDPruner.claim(now: now) {
            do {
                let forgotten = try await store.pruneEventIDs(before: now - limits.idRetention.seconds)
                if forgotten > 0 { service.logger.info("forgot old event ids", metadata: ["count": .stringConvertible(forgotten)]) }
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
        let accepted = batch.events.map(\.id) + batch.repeated
        return .json(.object(JSONObject([
            ("accepted", .array(accepted.map(JSONValue.string))),
            ("rejected", .array(rejected)),
            ("duplicates", .array((result.duplicates + batch.repeated).map(JSONValue.string))),
        ])))
    }

    /// Events counted, refused (by reason) and repeated, in /metrics.
    private func record(_ batch: EventBatch, _ result: EventIngestResult, namespace: String) {
        let factory = service.metricsFactory
        let counted = Set(result.counted)
        var byType: [String: Int] = [:]
        for event in batch.events where counted.contains(event.id) {
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
        let duplicates = result.duplicates.count + batch.repeated.count
        if duplicates > 0 {
            Counter(label: "flagsd_events_duplicate_total", dimensions: [("namespace", namespace)], factory: factory)
                .increment(by: duplicates)
        }
    }
}
