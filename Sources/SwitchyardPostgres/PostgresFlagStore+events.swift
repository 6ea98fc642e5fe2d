public import Foundation
import Logging
import PostgresNIO
import SwitchyardCore
public import SwitchyardStorage

/// The `EventStore` operations. Ids are unique per namespace (a primary key), so a batch retried through another
/// instance, even at the same moment, counts once: the second insert of an id waits for the first transaction and
/// then finds it. Ids and counters are written in sorted order, so concurrent batches cannot deadlock.
extension PostgresFlagStore {
    public func ingestEvents(_ events: [StoredEvent], in namespace: String, receivedAt: Date) async throws -> EventIngestResult {
        let received = receivedAt.milliseconds
        // The first event of each id in the batch; later ones with the same id are duplicates.
        var seen = Set<String>()
        let unique = events.filter { seen.insert($0.id).inserted }
        let sorted = unique.sorted { $0.id < $1.id }
        return try await transaction { connection in
            guard try await Self.liveNamespaceRow(connection, namespace, lock: false, logger: self.logger) != nil else {
                throw StorageError.namespaceNotFound(namespace)
            }
            var fresh = Set<String>()
            if !sorted.isEmpty {
                let rows = try await connection.query("""
                    INSERT INTO event_id (namespace, id, time_ms, received_ms)
                    SELECT \(namespace), e.id, e.time_ms, \(received)
                    FROM unnest(\(sorted.map(\.id))::text[], \(sorted.map(\.time.milliseconds))::bigint[]) AS e(id, time_ms)
                    ORDER BY e.id
                    ON CONFLICT (namespace, id) DO NOTHING
                    RETURNING id
                    """, logger: self.logger).collect()
                for row in rows { fresh.insert(try row.decode(String.self)) }
            }
            var counted: [StoredEvent] = []
            var duplicates: [String] = []
            var used = Set<String>()
            for event in events {
                if fresh.contains(event.id), used.insert(event.id).inserted {
                    counted.append(event)
                } else {
                    duplicates.append(event.id)
                }
            }
            let increments = EventAggregation.increments(of: counted)
            if !increments.isEmpty {
                _ = try await connection.query("""
                    INSERT INTO event_count (namespace, subject_kind, subject, variant, dimension, value, bucket_ms,
                                             sessions, crashed, exposures)
                    SELECT \(namespace), c.subject_kind, c.subject, c.variant, c.dimension, c.value, c.bucket_ms,
                           c.sessions, c.crashed, c.exposures
                    FROM unnest(\(increments.map(\.key.subject.kind.rawValue))::text[], \(increments.map(\.key.subject.key))::text[],
                                \(increments.map(\.key.subject.variant))::text[], \(increments.map(\.key.dimension.kind.rawValue))::text[],
                                \(increments.map(\.key.dimension.value))::text[], \(increments.map(\.key.bucket))::bigint[],
                                \(increments.map(\.tally.sessions))::bigint[], \(increments.map(\.tally.crashedSessions))::bigint[],
                                \(increments.map(\.tally.exposures))::bigint[])
                         WITH ORDINALITY AS c(subject_kind, subject, variant, dimension, value, bucket_ms, sessions, crashed, exposures, position)
                    ORDER BY c.position
                    ON CONFLICT (namespace, subject_kind, subject, variant, dimension, value, bucket_ms) DO UPDATE SET
                        sessions = event_count.sessions + excluded.sessions, crashed = event_count.crashed + excluded.crashed,
                        exposures = event_count.exposures + excluded.exposures
                    """, logger: self.logger).collect()
            }
            return EventIngestResult(counted: counted.map(\.id), duplicates: duplicates)
        }
    }

    public func eventCounts(_ query: EventCountQuery) async throws -> [EventCount] {
        var clauses = ["namespace = $1", "bucket_ms >= $2", "bucket_ms < $3"]
        var bindings = PostgresBindings()
        bindings.append(query.namespace)
        bindings.append(query.fromBucket)
        bindings.append(query.untilMilliseconds)
        func list(_ column: String, _ values: some Collection<String>) {
            bindings.append(values.sorted())
            clauses.append("\(column) = ANY($\(bindings.count))")
        }
        if let subjects = query.subjects { list("subject_kind", subjects.map(\.rawValue)) }
        if let keys = query.keys { list("subject", keys) }
        if let dimensions = query.dimensions { list("dimension", dimensions.map(\.rawValue)) }
        let bucket = query.perBucket ? "bucket_ms" : "0::bigint"
        let sql = """
            SELECT subject_kind, subject, variant, dimension, value, \(bucket) AS bucket,
                   SUM(sessions)::bigint AS sessions, SUM(crashed)::bigint AS crashed, SUM(exposures)::bigint AS exposures
            FROM event_count WHERE \(clauses.joined(separator: " AND "))
            GROUP BY subject_kind, subject, variant, dimension, value, bucket
            HAVING SUM(sessions) != 0 OR SUM(crashed) != 0 OR SUM(exposures) != 0
            """
        var counts: [EventCount] = []
        for row in try await rows(PostgresQuery(unsafeSQL: sql, binds: bindings)) {
            let row = row.makeRandomAccess()
            let subjectKind = try row["subject_kind"].decode(String.self)
            let dimensionKind = try row["dimension"].decode(String.self)
            guard let subject = EventSubject.Kind(rawValue: subjectKind), let dimension = EventDimension.Kind(rawValue: dimensionKind) else {
                throw StorageError(.corrupt, "an event counter has an unknown subject '\(subjectKind)' or dimension '\(dimensionKind)'")
            }
            counts.append(EventCount(
                subject: EventSubject(kind: subject, key: try row["subject"].decode(String.self), variant: try row["variant"].decode(String.self)),
                dimension: EventDimension(kind: dimension, value: try row["value"].decode(String.self)),
                bucket: query.perBucket ? Date(milliseconds: try row["bucket"].decode(Int64.self)) : nil,
                tally: EventTally(sessions: try row["sessions"].decode(Int64.self), crashedSessions: try row["crashed"].decode(Int64.self),
                                  exposures: try row["exposures"].decode(Int64.self))))
        }
        return counts.sorted { lhs, rhs in
            if lhs.subject != rhs.subject { return lhs.subject < rhs.subject }
            if lhs.dimension != rhs.dimension { return lhs.dimension < rhs.dimension }
            return (lhs.bucket ?? .distantPast) < (rhs.bucket ?? .distantPast)
        }
    }

    @discardableResult
    public func pruneEventIDs(before date: Date) async throws -> Int {
        let rows = try await rows("""
            WITH forgotten AS (DELETE FROM event_id WHERE time_ms < \(date.milliseconds) RETURNING 1)
            SELECT count(*)::bigint FROM forgotten
            """)
        return Int(try rows.first?.decode(Int64.self) ?? 0)
    }
}
