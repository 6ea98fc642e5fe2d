public import Foundation
import GRDB
import SwitchyardCore

extension SQLiteFlagStore {
    public func ingestEvents(_ events: [StoredEvent], in namespace: String, receivedAt: Date) async throws -> EventIngestResult {
        let received = receivedAt.milliseconds
        return try await access {
            try await self.pool.write { db in
                guard try Self.liveNamespaceRow(db, namespace) != nil else { throw StorageError.namespaceNotFound(namespace) }
                let remember = try db.cachedStatement(sql: """
                    INSERT OR IGNORE INTO event_id (namespace, id, time_ms, received_ms) VALUES (?, ?, ?, ?)
                    """)
                var counted: [StoredEvent] = []
                var duplicates: [String] = []
                for event in events {
                    try remember.execute(arguments: [namespace, event.id, event.time.milliseconds, received])
                    if db.changesCount > 0 { counted.append(event) } else { duplicates.append(event.id) }
                }
                let add = try db.cachedStatement(sql: """
                    INSERT INTO event_count (namespace, subject_kind, subject, variant, dimension, value, bucket_ms,
                                             sessions, crashed, exposures)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    ON CONFLICT (namespace, subject_kind, subject, variant, dimension, value, bucket_ms) DO UPDATE SET
                        sessions = sessions + excluded.sessions, crashed = crashed + excluded.crashed,
                        exposures = exposures + excluded.exposures
                    """)
                for (key, tally) in EventAggregation.increments(of: counted) {
                    try add.execute(arguments: [namespace, key.subject.kind.rawValue, key.subject.key, key.subject.variant,
                                                key.dimension.kind.rawValue, key.dimension.value, key.bucket,
                                                tally.sessions, tally.crashedSessions, tally.exposures])
                }
                return EventIngestResult(counted: counted.map(\.id), duplicates: duplicates)
            }
        }
    }

    public func eventCounts(_ query: EventCountQuery) async throws -> [EventCount] {
        try await access {
            try await self.pool.read { db in
                var clauses = ["namespace = ?", "bucket_ms >= ?", "bucket_ms < ?"]
                var arguments: StatementArguments = [query.namespace, query.fromBucket, query.untilMilliseconds]
                func list(_ column: String, _ values: some Collection<String>) {
                    clauses.append("\(column) IN (SELECT value FROM json_each(?))")
                    arguments += [JSONValue.array(values.sorted().map(JSONValue.string)).serializedString()]
                }
                if let subjects = query.subjects { list("subject_kind", subjects.map(\.rawValue)) }
                if let keys = query.keys { list("subject", keys) }
                if let dimensions = query.dimensions { list("dimension", dimensions.map(\.rawValue)) }
                let bucket = query.perBucket ? "bucket_ms" : "0"
                let rows = try Row.fetchAll(db, sql: """
                    SELECT subject_kind, subject, variant, dimension, value, \(bucket) AS bucket,
                           SUM(sessions) AS sessions, SUM(crashed) AS crashed, SUM(exposures) AS exposures
                    FROM event_count WHERE \(clauses.joined(separator: " AND "))
                    GROUP BY subject_kind, subject, variant, dimension, value, bucket
                    HAVING SUM(sessions) != 0 OR SUM(crashed) != 0 OR SUM(exposures) != 0
                    """, arguments: arguments)
                var counts: [EventCount] = []
                for row in rows {
                    let subjectKind: String = row["subject_kind"]
                    let dimensionKind: String = row["dimension"]
                    guard let subject = EventSubject.Kind(rawValue: subjectKind), let dimension = EventDimension.Kind(rawValue: dimensionKind) else {
                        throw StorageError(.corrupt, "an event counter has an unknown subject '\(subjectKind)' or dimension '\(dimensionKind)'")
                    }
                    counts.append(EventCount(
                        subject: EventSubject(kind: subject, key: row["subject"], variant: row["variant"]),
                        dimension: EventDimension(kind: dimension, value: row["value"]),
                        bucket: query.perBucket ? Date(milliseconds: row["bucket"]) : nil,
                        tally: EventTally(sessions: row["sessions"], crashedSessions: row["crashed"], exposures: row["exposures"])))
                }
                return counts.sorted { lhs, rhs in
                    if lhs.subject != rhs.subject { return lhs.subject < rhs.subject }
                    if lhs.dimension != rhs.dimension { return lhs.dimension < rhs.dimension }
                    return (lhs.bucket ?? .distantPast) < (rhs.bucket ?? .distantPast)
                }
            }
        }
    }

    @discardableResult
    public func pruneEventIDs(before date: Date) async throws -> Int {
        try await access {
            try await self.pool.write { db in
                try db.execute(sql: "DELETE FROM event_id WHERE time_ms < ?", arguments: [date.milliseconds])
                return db.changesCount
            }
        }
    }
}
