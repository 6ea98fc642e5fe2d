public import Foundation
import GRDB
import Logging
import SwitchyardCore
public import SwitchyardStorage

extension SQLiteFlagStore {
    /// Counts events in the events file, on ``BackgroundThreads/events`` with GRDB's blocking API (the work, and
    /// the wait for the events' writer, hold one of those threads: never a thread of Swift's pool, never the flags'
    /// writer).
    ///
    /// A part of a batch whose last part is still to come (`synced` false) commits without waiting for the disk:
    /// its commit is made durable by the next synced commit of the events file (the last part's), which syncs the
    /// write-ahead log and with it every frame before its own. A process killed meanwhile loses nothing (the
    /// operating system has the frames); a power failure may lose the part, and then nothing of the batch was
    /// acknowledged.
    public func ingestEvents(
        _ events: [StoredEvent], in namespace: String, receivedAt: Date, admission: EventAdmission,
        synced: Bool
    ) async throws -> EventIngestResult {
        try await access {
            try await withTaskExecutorPreference(BackgroundThreads.events) {
                guard try self.pool.read({ db in try Self.liveNamespaceRow(db, namespace) }) != nil else {
                    throw StorageError.namespaceNotFound(namespace)
                }
                let count = { (db: Database) in
                    try Self.ingest(events, in: namespace, receivedAt: receivedAt, admission: admission, db)
                }
                if synced { return try self.events.write(count) }
                return try self.events.writeWithoutTransaction { db in
                    try db.execute(sql: "PRAGMA synchronous = NORMAL")
                    let outcome = Result {
                        var result: EventIngestResult?
                        try db.inTransaction {
                            result = try count(db)
                            return .commit
                        }
                        return result ?? EventIngestResult(counted: [], duplicates: [])
                    }
                    // Back to syncing every commit before anything else writes (a batch is durable when answered).
                    try db.execute(sql: "PRAGMA synchronous = FULL")
                    return try outcome.get()
                }
            }
        }
    }

    /// Reads the events file on ``BackgroundThreads/events`` with GRDB's blocking API: counting and reading counters
    /// share those threads and their priority.
    func readEvents<T: Sendable>(_ read: @escaping @Sendable (Database) throws -> T) async throws -> T {
        try await withTaskExecutorPreference(BackgroundThreads.events) {
            try self.events.read(read)
        }
    }

    /// The ingestion transaction's work (see `EventStore.ingestEvents`).
    static func ingest(
        _ events: [StoredEvent], in namespace: String, receivedAt: Date, admission: EventAdmission, _ db: Database
    ) throws
        -> EventIngestResult
    {
        let received = receivedAt.milliseconds
        let remember = try db.cachedStatement(
            sql: """
                INSERT OR IGNORE INTO event_id (namespace, id, time_ms, received_ms) VALUES (?, ?, ?, ?)
                """)
        var fresh: [StoredEvent] = []
        var duplicates: [String] = []
        for event in events {
            try remember.execute(arguments: [namespace, event.id, event.time.milliseconds, received])
            if db.changesCount > 0 { fresh.append(event) } else { duplicates.append(event.id) }
        }
        let (counted, dropped) = try Self.admit(fresh, in: namespace, admission: admission, db)
        let add = try db.cachedStatement(
            sql: """
                INSERT INTO event_count (namespace, source, subject_kind, subject, variant, dimension, value, bucket_ms,
                                         sessions, crashed, exposures)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT (namespace, source, subject_kind, subject, variant, dimension, value, bucket_ms) DO UPDATE SET
                    sessions = sessions + excluded.sessions, crashed = crashed + excluded.crashed,
                    exposures = exposures + excluded.exposures
                """)
        for (key, tally) in EventAggregation.increments(of: counted) {
            try add.execute(arguments: [
                namespace, key.source.rawValue, key.subject.kind.rawValue, key.subject.key, key.subject.variant,
                key.dimension.kind.rawValue, key.dimension.value, key.bucket,
                tally.sessions, tally.crashedSessions, tally.exposures,
            ])
        }
        let crash = try db.cachedStatement(
            sql: """
                INSERT OR IGNORE INTO event_crash (namespace, id, source, bucket_ms, unit, address, city, cohorts, switches)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
                """)
        for record in EventAggregation.crashes(of: counted) {
            try crash.execute(arguments: [
                namespace, record.id, record.source.rawValue, record.bucket, record.unit, record.address,
                record.city, CrashRecord.storedList(record.cohorts), CrashRecord.storedList(record.switches),
            ])
        }
        let entered = try Self.enter(
            ExperimentStep.steps(of: counted, experiments: admission.experiments), in: namespace,
            admission: admission, received: received, db)
        return EventIngestResult(
            counted: fresh.map(\.id), duplicates: duplicates, dropped: dropped, admitted: counted, enteredUnits: entered
        )
    }

    /// Enters units in their experiments' arms and adds to their metric totals (see `EventStore.ingestEvents`), as
    /// ``ExperimentWrites`` works them out from what the events file holds.
    /// - Returns: how many units entered an arm.
    static func enter(
        _ steps: [ExperimentStep], in namespace: String, admission: EventAdmission, received: Int64, _ db: Database
    ) throws -> Int {
        guard !steps.isEmpty else { return 0 }
        let candidates = ExperimentWrites.candidates(of: steps)
        let exists = try db.cachedStatement(
            sql: """
                SELECT 1 FROM experiment_unit WHERE namespace = ? AND experiment = ? AND phase = ? AND unit = ?
                """)
        var recorded = Set<String>()
        for (phase, unit) in candidates.pairs
        where try Int.fetchOne(exists, arguments: [namespace, phase.experiment, phase.phase, unit]) != nil {
            recorded.insert(ExperimentWrites.key(phase.experiment, phase.phase, unit))
        }
        let armsOf = try db.cachedStatement(
            sql: "SELECT arm, units FROM experiment_arm WHERE namespace = ? AND experiment = ? AND phase = ?")
        var arms: [String: Int] = [:]
        for phase in candidates.phases {
            for row in try Row.fetchAll(armsOf, arguments: [namespace, phase.experiment, phase.phase]) {
                arms[ExperimentWrites.key(phase.experiment, phase.phase, row["arm"])] = row["units"]
            }
        }
        let totalsOf = try db.cachedStatement(
            sql: "SELECT metric, total FROM metric_total WHERE namespace = ? AND unit = ?")
        var totals: [String: [String: Double]] = [:]
        for unit in candidates.units {
            for row in try Row.fetchAll(totalsOf, arguments: [namespace, unit]) {
                totals[unit, default: [:]][row["metric"]] = row["total"]
            }
        }
        let writes = ExperimentWrites(
            steps, recorded: recorded, arms: arms, totals: totals, maximumUnitsPerArm: admission.maximumUnitsPerArm)
        let insertUnit = try db.cachedStatement(
            sql: """
                INSERT INTO experiment_unit (namespace, experiment, phase, unit, arm, entered_ms, address) VALUES (?, ?, ?, ?, ?, ?, ?)
                """)
        let countArm = try db.cachedStatement(
            sql: """
                INSERT INTO experiment_arm (namespace, experiment, phase, arm, units) VALUES (?, ?, ?, ?, 1)
                ON CONFLICT (namespace, experiment, phase, arm) DO UPDATE SET units = units + 1
                """)
        let insertPre = try db.cachedStatement(
            sql: """
                INSERT INTO experiment_pre (namespace, experiment, phase, unit, metric, total) VALUES (?, ?, ?, ?, ?, ?)
                """)
        for entry in writes.entries {
            try insertUnit.execute(arguments: [
                namespace, entry.experiment, entry.phase, entry.unit, entry.arm, entry.entered, entry.address,
            ])
            try countArm.execute(arguments: [namespace, entry.experiment, entry.phase, entry.arm])
            for (metric, total) in entry.pre.sorted(by: { $0.key < $1.key }) {
                try insertPre.execute(arguments: [namespace, entry.experiment, entry.phase, entry.unit, metric, total])
            }
        }
        // The total, then its time only when that is a slack old (SQLite rewrites an index entry whenever its
        // column is set, even to the same value: a second statement leaves the index alone on most batches).
        let add = try db.cachedStatement(
            sql: """
                INSERT INTO metric_total (namespace, unit, metric, total, updated_ms) VALUES (?, ?, ?, ?, ?)
                ON CONFLICT (namespace, unit, metric) DO UPDATE SET total = total + excluded.total
                """)
        let touch = try db.cachedStatement(
            sql: """
                UPDATE metric_total SET updated_ms = ? WHERE namespace = ? AND unit = ? AND metric = ? AND updated_ms < ?
                """)
        let stale = received - ExperimentWrites.totalsTimeSlackMilliseconds
        for addition in writes.additions {
            try add.execute(arguments: [namespace, addition.unit, addition.metric, addition.value, received])
            try touch.execute(arguments: [received, namespace, addition.unit, addition.metric, stale])
        }
        return writes.entries.count
    }

    public func experimentUnits(in namespace: String, experiment: String) async throws -> [ExperimentUnitRecord] {
        try await access {
            try await readEvents { db in
                var units: [String: ExperimentUnitRecord] = [:]
                var order: [String] = []
                let rows = try Row.fetchCursor(
                    db,
                    sql: """
                        SELECT phase, unit, arm, entered_ms, address FROM experiment_unit WHERE namespace = ? AND experiment = ?
                        ORDER BY entered_ms, unit
                        """, arguments: [namespace, experiment])
                while let row = try rows.next() {
                    let phase: String = row["phase"]
                    let unit: String = row["unit"]
                    let key = ExperimentWrites.key(experiment, phase, unit)
                    order.append(key)
                    units[key] = ExperimentUnitRecord(
                        unit: unit, arm: row["arm"], phase: phase, entered: Date(milliseconds: row["entered_ms"]),
                        address: row["address"])
                }
                let totals = try Row.fetchCursor(
                    db,
                    sql: """
                        SELECT u.phase, u.unit, t.metric, t.total FROM experiment_unit u
                        JOIN metric_total t ON t.namespace = u.namespace AND t.unit = u.unit
                        WHERE u.namespace = ? AND u.experiment = ?
                        """, arguments: [namespace, experiment])
                while let row = try totals.next() {
                    let phase: String = row["phase"]
                    let unit: String = row["unit"]
                    units[ExperimentWrites.key(experiment, phase, unit)]?.totals[row["metric"]] = row["total"]
                }
                let pre = try Row.fetchCursor(
                    db,
                    sql: """
                        SELECT phase, unit, metric, total FROM experiment_pre WHERE namespace = ? AND experiment = ?
                        """, arguments: [namespace, experiment])
                while let row = try pre.next() {
                    let phase: String = row["phase"]
                    let unit: String = row["unit"]
                    units[ExperimentWrites.key(experiment, phase, unit)]?.pre[row["metric"]] = row["total"]
                }
                return order.compactMap { units[$0] }
            }
        }
    }

    public func pruneExperimentRecords(before date: Date) async throws -> Int {
        // A phase whose newest unit entered before the date is over: its units, pre-exposure values and counts go.
        let phases = try await access {
            try await self.readEvents { db in
                try Row.fetchAll(
                    db,
                    sql: """
                        SELECT namespace, experiment, phase FROM experiment_unit GROUP BY namespace, experiment, phase
                        HAVING MAX(entered_ms) < ?
                        """, arguments: [date.milliseconds]
                ).map { row in
                    [row["namespace"] as String, row["experiment"] as String, row["phase"] as String]
                }
            }
        }
        var removed = 0
        for phase in phases {
            for (table, key) in [
                ("experiment_pre", "unit, metric"), ("experiment_unit", "unit"), ("experiment_arm", "arm"),
            ] {
                removed += try await prune(
                    """
                    DELETE FROM \(table) WHERE namespace = ? AND experiment = ? AND phase = ? AND (\(key)) IN (
                        SELECT \(key) FROM \(table) WHERE namespace = ? AND experiment = ? AND phase = ? LIMIT ?)
                    """, arguments: StatementArguments(phase + phase))
            }
        }
        // Totals of units quiet since the date (their time a slack behind it: ExperimentWrites.totalsTimeSlackMilliseconds),
        // unless an experiment still holds the unit (its values count from them).
        removed += try await prune(
            """
            DELETE FROM metric_total WHERE (namespace, unit, metric) IN (
                SELECT t.namespace, t.unit, t.metric FROM metric_total t WHERE t.updated_ms < ? AND NOT EXISTS (
                    SELECT 1 FROM experiment_unit u WHERE u.namespace = t.namespace AND u.unit = t.unit) LIMIT ?)
            """, arguments: [date.milliseconds - ExperimentWrites.totalsTimeSlackMilliseconds])
        return removed
    }

    /// Drives an admission plan over the namespace's admission windows, inside the ingestion transaction.
    static func admit(_ events: [StoredEvent], in namespace: String, admission: EventAdmission, _ db: Database) throws
        -> (events: [StoredEvent], dropped: [EventDrop])
    {
        var plan = EventAdmission.Plan(events, admission: admission)
        let add = try db.cachedStatement(
            sql: """
                INSERT INTO event_window (namespace, window_ms, kind, value, events) VALUES (?, ?, ?, ?, ?)
                ON CONFLICT (namespace, window_ms, kind, value) DO UPDATE SET events = events + excluded.events
                RETURNING events
                """)
        func totals(_ contributions: [(key: EventAdmission.WindowKey, count: Int64)]) throws -> [EventAdmission
            .WindowKey: Int64]
        {
            var totals: [EventAdmission.WindowKey: Int64] = [:]
            for (key, count) in contributions {
                totals[key] = try Int64.fetchOne(
                    add, arguments: [namespace, key.window, key.kind.rawValue, key.value, count])
            }
            return totals
        }
        while let contributions = plan.contributions { plan.admit(totals: try totals(contributions)) }
        // A value with a row already is added to; a new one is written only while its window and kind have room.
        let update = try db.cachedStatement(
            sql: """
                UPDATE event_window SET events = events + ?, units = units | ?, networks = networks | ?
                WHERE namespace = ? AND window_ms = ? AND kind = ? AND value = ?
                """)
        let insert = try db.cachedStatement(
            sql: """
                INSERT INTO event_window (namespace, window_ms, kind, value, events, units, networks) VALUES (?, ?, ?, ?, ?, ?, ?)
                """)
        var held: [EventAdmission.Ranking: Int] = [:]
        for frequency in plan.frequencies {
            let key = frequency.key
            try update.execute(arguments: [
                frequency.sessions, frequency.reach.units, frequency.reach.networks,
                namespace, key.window, key.kind.rawValue, key.value,
            ])
            guard db.changesCount == 0 else { continue }
            let ranking = EventAdmission.Ranking(window: key.window, kind: key.kind)
            let count =
                try held[ranking] ?? Int.fetchOne(
                    db,
                    sql: """
                        SELECT count(*) FROM event_window WHERE namespace = ? AND window_ms = ? AND kind = ?
                        """, arguments: [namespace, key.window, key.kind.rawValue]) ?? 0
            guard count < admission.maximumValuesPerWindow else {
                held[ranking] = count
                continue
            }
            try insert.execute(arguments: [
                namespace, key.window, key.kind.rawValue, key.value, frequency.sessions,
                frequency.reach.units, frequency.reach.networks,
            ])
            held[ranking] = count + 1
        }
        var ranked: [EventAdmission.Ranking: Set<String>] = [:]
        for ranking in plan.rankings {
            ranked[ranking] = Set(
                try String.fetchAll(
                    db,
                    sql: """
                        SELECT value FROM event_window WHERE namespace = ? AND window_ms = ? AND kind = ?
                        ORDER BY events DESC, value LIMIT ?
                        """,
                    arguments: [
                        namespace, ranking.window, ranking.kind.rawValue, admission.maximumScopeValues ?? Int.max,
                    ]))
        }
        return plan.counted(ranked: ranked)
    }

    public func scopeReach(in namespace: String, from: Date, until: Date) async throws -> [EventDimension:
        EventAdmission.Reach]
    {
        try await access {
            try await readEvents { db in
                var reach: [EventDimension: EventAdmission.Reach] = [:]
                let rows = try Row.fetchCursor(
                    db,
                    sql: """
                        SELECT kind, value, units, networks FROM event_window
                        WHERE namespace = ? AND window_ms >= ? AND window_ms < ? AND kind IN ('city', 'cohort')
                        """, arguments: [namespace, from.milliseconds, until.milliseconds])
                while let row = try rows.next() {
                    let kind: String = row["kind"]
                    let dimension = EventDimension(kind: kind == "city" ? .city : .cohort, value: row["value"])
                    reach[dimension, default: EventAdmission.Reach()].formUnion(
                        EventAdmission.Reach(units: row["units"], networks: row["networks"]))
                }
                return reach
            }
        }
    }

    public func eventCounts(_ query: EventCountQuery) async throws -> [EventCount] {
        try await access {
            try await readEvents { db in
                var clauses = ["namespace = ?", "bucket_ms >= ?", "bucket_ms < ?"]
                var arguments: StatementArguments = [query.namespace, query.fromBucket, query.untilMilliseconds]
                func list(_ column: String, _ values: some Collection<String>) {
                    clauses.append("\(column) IN (SELECT value FROM json_each(?))")
                    arguments += [JSONValue.array(values.sorted().map(JSONValue.string)).serializedString()]
                }
                if let subjects = query.subjects { list("subject_kind", subjects.map(\.rawValue)) }
                if let keys = query.keys { list("subject", keys) }
                if let dimensions = query.dimensions { list("dimension", dimensions.map(\.rawValue)) }
                if let sources = query.sources { list("source", sources.map(\.rawValue)) }
                let bucket = query.perBucket ? "bucket_ms" : "0"
                let rows = try Row.fetchAll(
                    db,
                    sql: """
                        SELECT source, subject_kind, subject, variant, dimension, value, \(bucket) AS bucket,
                               SUM(sessions) AS sessions, SUM(crashed) AS crashed, SUM(exposures) AS exposures
                        FROM event_count WHERE \(clauses.joined(separator: " AND "))
                        GROUP BY source, subject_kind, subject, variant, dimension, value, bucket
                        HAVING SUM(sessions) != 0 OR SUM(crashed) != 0 OR SUM(exposures) != 0
                        """, arguments: arguments)
                var counts: [EventCount] = []
                for row in rows {
                    counts.append(
                        try EventCount(
                            stored: row["source"], subjectKind: row["subject_kind"], subject: row["subject"],
                            variant: row["variant"], dimensionKind: row["dimension"], dimension: row["value"],
                            bucket: query.perBucket ? Date(milliseconds: row["bucket"]) : nil,
                            tally: EventTally(
                                sessions: row["sessions"], crashedSessions: row["crashed"], exposures: row["exposures"])
                        ))
                }
                return counts.sorted(by: EventCount.ordered)
            }
        }
    }

    public func crashRecords(in namespace: String, from: Date, until: Date) async throws -> [CrashRecord] {
        try await access {
            try await readEvents { db in
                try Row.fetchAll(
                    db,
                    sql: """
                        SELECT id, source, bucket_ms, unit, address, city, cohorts, switches FROM event_crash
                        WHERE namespace = ? AND bucket_ms >= ? AND bucket_ms < ? ORDER BY bucket_ms, id
                        """, arguments: [namespace, EventAggregation.bucketStart(of: from), until.milliseconds]
                ).map { row in
                    let sourceName: String = row["source"]
                    guard let source = EventSource(rawValue: sourceName) else {
                        throw StorageError(.corrupt, "a crash record has an unknown source '\(sourceName)'")
                    }
                    return CrashRecord(
                        id: row["id"], source: source, bucket: row["bucket_ms"], unit: row["unit"],
                        address: row["address"],
                        city: row["city"], cohorts: try CrashRecord.list(stored: row["cohorts"]),
                        switches: try CrashRecord.list(stored: row["switches"]))
                }
            }
        }
    }

    /// The most rows one pruning transaction deletes: pruning a day of ids at once would hold the writer, and every
    /// flag change behind it, for seconds.
    static let pruneRowsPerTransaction = 2_000

    @discardableResult
    public func pruneEventIDs(before date: Date) async throws -> Int {
        try await prune(
            """
            DELETE FROM event_id WHERE (namespace, id) IN (SELECT namespace, id FROM event_id WHERE time_ms < ? LIMIT ?)
            """, before: date)
    }

    @discardableResult
    public func pruneEventRecords(before date: Date) async throws -> Int {
        let windows = try await prune(
            """
            DELETE FROM event_window WHERE (namespace, window_ms, kind, value) IN
                (SELECT namespace, window_ms, kind, value FROM event_window WHERE window_ms < ? LIMIT ?)
            """, before: date)
        let crashes = try await prune(
            """
            DELETE FROM event_crash WHERE (namespace, id) IN (SELECT namespace, id FROM event_crash WHERE bucket_ms < ? LIMIT ?)
            """, before: date)
        return windows + crashes
    }

    @discardableResult
    public func compactEventCounts(rollUp: Range<Date>, deleteBefore: Date) async throws -> EventCompaction {
        var compaction = EventCompaction()
        let hours = EventCompaction.hours(in: rollUp)
        for namespace in try await namespaces().map(\.name) {
            // One read first (it does not wait for the writer): the hours that still hold minute counters, usually
            // none or the latest one, instead of a probe for each of the hundreds of hours in the range.
            let pending =
                hours.isEmpty
                ? []
                : try await access { [first = hours[0], last = hours[hours.count - 1]] in
                    try await self.events.read { db in
                        try Int64.fetchAll(
                            db,
                            sql: """
                                SELECT DISTINCT bucket_ms - bucket_ms % ? FROM event_count
                                WHERE namespace = ? AND bucket_ms > ? AND bucket_ms < ? AND bucket_ms % ? != 0 ORDER BY 1
                                """,
                            arguments: [
                                EventAggregation.hourMilliseconds, namespace, first,
                                last + EventAggregation.hourMilliseconds, EventAggregation.hourMilliseconds,
                            ])
                    }
                }
            for hour in pending {
                while true {
                    let moved = try await access {
                        try await self.events.write { db in
                            try Self.rollUp(namespace, hour: hour, limit: Self.pruneRowsPerTransaction, db)
                        }
                    }
                    compaction.rolledUp += moved
                    if moved < Self.pruneRowsPerTransaction { break }
                }
            }
            while true {
                let deleted = try await access {
                    try await self.events.write { db in
                        try db.execute(
                            sql: """
                                DELETE FROM event_count WHERE (namespace, source, subject_kind, subject, variant, dimension, value, bucket_ms) IN
                                    (SELECT namespace, source, subject_kind, subject, variant, dimension, value, bucket_ms FROM event_count
                                     WHERE namespace = ? AND bucket_ms < ? LIMIT ?)
                                """, arguments: [namespace, deleteBefore.milliseconds, Self.pruneRowsPerTransaction])
                        return db.changesCount
                    }
                }
                compaction.deleted += deleted
                if deleted < Self.pruneRowsPerTransaction { break }
            }
        }
        return compaction
    }

    /// Adds up to `limit` minute counters of one hour (after its first minute) into the counter at the hour's start,
    /// and removes them. Returns how many it moved.
    static func rollUp(_ namespace: String, hour: Int64, limit: Int, _ db: Database) throws -> Int {
        let rows = try Row.fetchAll(
            db,
            sql: """
                SELECT source, subject_kind, subject, variant, dimension, value, bucket_ms, sessions, crashed, exposures FROM event_count
                WHERE namespace = ? AND bucket_ms > ? AND bucket_ms < ? LIMIT ?
                """, arguments: [namespace, hour, hour + EventAggregation.hourMilliseconds, limit])
        struct Key: Hashable { var source, subjectKind, subject, variant, dimension, value: String }
        var sums: [Key: (sessions: Int64, crashed: Int64, exposures: Int64)] = [:]
        let delete = try db.cachedStatement(
            sql: """
                DELETE FROM event_count WHERE namespace = ? AND source = ? AND subject_kind = ? AND subject = ? AND variant = ?
                    AND dimension = ? AND value = ? AND bucket_ms = ?
                """)
        for row in rows {
            let key = Key(
                source: row["source"], subjectKind: row["subject_kind"], subject: row["subject"],
                variant: row["variant"],
                dimension: row["dimension"], value: row["value"])
            var sum = sums[key] ?? (0, 0, 0)
            sum.sessions += row["sessions"]
            sum.crashed += row["crashed"]
            sum.exposures += row["exposures"]
            sums[key] = sum
            let bucket: Int64 = row["bucket_ms"]
            try delete.execute(arguments: [
                namespace, key.source, key.subjectKind, key.subject, key.variant, key.dimension, key.value, bucket,
            ])
        }
        let add = try db.cachedStatement(
            sql: """
                INSERT INTO event_count (namespace, source, subject_kind, subject, variant, dimension, value, bucket_ms, sessions, crashed, exposures)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT (namespace, source, subject_kind, subject, variant, dimension, value, bucket_ms) DO UPDATE SET
                    sessions = sessions + excluded.sessions, crashed = crashed + excluded.crashed, exposures = exposures + excluded.exposures
                """)
        for (key, sum) in sums {
            try add.execute(arguments: [
                namespace, key.source, key.subjectKind, key.subject, key.variant, key.dimension, key.value, hour,
                sum.sessions, sum.crashed, sum.exposures,
            ])
        }
        return rows.count
    }

    /// Runs a bounded `DELETE` (arguments: the date, the limit) in transactions of its own until it deletes fewer
    /// rows than the limit, so that a change waits for one small transaction at most.
    ///
    /// - Returns: the rows deleted in all.
    private func prune(_ sql: String, before date: Date) async throws -> Int {
        try await prune(sql, arguments: [date.milliseconds])
    }

    /// Runs a `DELETE … LIMIT ?` in small transactions until it deletes fewer rows than the limit.
    private func prune(_ sql: String, arguments: StatementArguments) async throws -> Int {
        var forgotten = 0
        while true {
            let deleted = try await access {
                try await self.events.write { db in
                    try db.execute(sql: sql, arguments: arguments + [Self.pruneRowsPerTransaction])
                    return db.changesCount
                }
            }
            forgotten += deleted
            if deleted < Self.pruneRowsPerTransaction { return forgotten }
        }
    }
}
