public import Foundation
import Logging
import PostgresNIO
import SwitchyardCore
public import SwitchyardStorage

/// The `EventStore` operations. Ids are unique per namespace (a primary key), so a batch retried through another
/// instance, even at the same moment, counts once: the second insert of an id waits for the first transaction and
/// then finds it. Ids and counters are written in sorted order, so concurrent batches cannot deadlock. Every
/// operation here runs on the events pool (see `PostgresFlagStore`).
extension PostgresFlagStore {
    /// With `synced` false, the transaction commits without waiting for its WAL record to reach the disk
    /// (`synchronous_commit = off` for it alone): the next synced commit, which waits for the WAL up to its own
    /// record, makes it durable too.
    public func ingestEvents(
        _ events: [StoredEvent], in namespace: String, receivedAt: Date, admission: EventAdmission,
        synced: Bool
    ) async throws -> EventIngestResult {
        let received = receivedAt.milliseconds
        // The first event of each id in the batch; later ones with the same id are duplicates.
        var seen = Set<String>()
        let unique = events.filter { seen.insert($0.id).inserted }
        let sorted = unique.sorted { $0.id < $1.id }
        return try await transaction(on: .events) { connection in
            if !synced { try await connection.query("SET LOCAL synchronous_commit TO OFF", logger: self.logger) }
            guard try await Self.liveNamespaceRow(connection, namespace, lock: false, logger: self.logger) != nil else {
                throw StorageError.namespaceNotFound(namespace)
            }
            var recorded = Set<String>()
            if !sorted.isEmpty {
                let rows = try await connection.query(
                    """
                    INSERT INTO event_id (namespace, id, time_ms, received_ms)
                    SELECT \(namespace), e.id, e.time_ms, \(received)
                    FROM unnest(\(sorted.map(\.id))::text[], \(sorted.map(\.time.milliseconds))::bigint[]) AS e(id, time_ms)
                    ORDER BY e.id
                    ON CONFLICT (namespace, id) DO NOTHING
                    RETURNING id
                    """, logger: self.logger
                ).collect()
                for row in rows { recorded.insert(try row.decode(String.self)) }
            }
            var fresh: [StoredEvent] = []
            var duplicates: [String] = []
            var used = Set<String>()
            for event in events {
                if recorded.contains(event.id), used.insert(event.id).inserted {
                    fresh.append(event)
                } else {
                    duplicates.append(event.id)
                }
            }
            let (counted, dropped) = try await self.admit(fresh, in: namespace, admission: admission, connection)
            let increments = EventAggregation.increments(of: counted)
            if !increments.isEmpty {
                _ = try await connection.query(
                    """
                    INSERT INTO event_count (namespace, source, subject_kind, subject, variant, dimension, value, bucket_ms,
                                             sessions, crashed, exposures)
                    SELECT \(namespace), c.source, c.subject_kind, c.subject, c.variant, c.dimension, c.value, c.bucket_ms,
                           c.sessions, c.crashed, c.exposures
                    FROM unnest(\(increments.map(\.key.source.rawValue))::text[],
                                \(increments.map(\.key.subject.kind.rawValue))::text[], \(increments.map(\.key.subject.key))::text[],
                                \(increments.map(\.key.subject.variant))::text[], \(increments.map(\.key.dimension.kind.rawValue))::text[],
                                \(increments.map(\.key.dimension.value))::text[], \(increments.map(\.key.bucket))::bigint[],
                                \(increments.map(\.tally.sessions))::bigint[], \(increments.map(\.tally.crashedSessions))::bigint[],
                                \(increments.map(\.tally.exposures))::bigint[])
                         WITH ORDINALITY AS c(source, subject_kind, subject, variant, dimension, value, bucket_ms, sessions, crashed,
                                              exposures, position)
                    ORDER BY c.position
                    ON CONFLICT (namespace, source, subject_kind, subject, variant, dimension, value, bucket_ms) DO UPDATE SET
                        sessions = event_count.sessions + excluded.sessions, crashed = event_count.crashed + excluded.crashed,
                        exposures = event_count.exposures + excluded.exposures
                    """, logger: self.logger
                ).collect()
            }
            let crashes = EventAggregation.crashes(of: counted)
            if !crashes.isEmpty {
                _ = try await connection.query(
                    """
                    INSERT INTO event_crash (namespace, id, source, bucket_ms, unit, address, city, cohorts, switches)
                    SELECT \(namespace), c.id, c.source, c.bucket_ms, c.unit, NULLIF(c.address, ''), NULLIF(c.city, ''), c.cohorts, c.switches
                    FROM unnest(\(crashes.map(\.id))::text[], \(crashes.map(\.source.rawValue))::text[], \(crashes.map(\.bucket))::bigint[],
                                \(crashes.map(\.unit))::text[], \(crashes.map { $0.address ?? "" })::text[], \(crashes.map { $0.city ?? "" })::text[],
                                \(crashes.map { CrashRecord.storedList($0.cohorts) })::text[], \(crashes.map { CrashRecord.storedList($0.switches) })::text[])
                         WITH ORDINALITY AS c(id, source, bucket_ms, unit, address, city, cohorts, switches, position)
                    ORDER BY c.position
                    ON CONFLICT (namespace, id) DO NOTHING
                    """, logger: self.logger
                ).collect()
            }
            let entered = try await self.enter(
                ExperimentStep.steps(of: counted, experiments: admission.experiments), in: namespace,
                admission: admission, received: received, connection)
            return EventIngestResult(
                counted: fresh.map(\.id), duplicates: duplicates, dropped: dropped, admitted: counted,
                enteredUnits: entered)
        }
    }

    /// Enters units in their experiments' arms and adds to their metric totals (see `EventStore.ingestEvents`), as
    /// ``ExperimentWrites`` works them out from what the database holds: three reads and four writes per batch. Two
    /// instances entering the same unit at once: the second insert finds the first's row and writes nothing more for
    /// it; the bound on units per arm may be passed by one batch per instance.
    ///
    /// - Returns: how many units entered an arm.
    func enter(
        _ steps: [ExperimentStep], in namespace: String, admission: EventAdmission, received: Int64,
        _ connection: PostgresConnection
    ) async throws -> Int {
        guard !steps.isEmpty else { return 0 }
        let candidates = ExperimentWrites.candidates(of: steps)
        var recorded = Set<String>()
        if !candidates.pairs.isEmpty {
            for row in try await connection.query(
                """
                SELECT u.experiment, u.phase, u.unit FROM experiment_unit u
                JOIN unnest(\(candidates.pairs.map(\.phase.experiment))::text[], \(candidates.pairs.map(\.phase.phase))::text[],
                            \(candidates.pairs.map(\.unit))::text[]) AS c(experiment, phase, unit)
                  ON u.experiment = c.experiment AND u.phase = c.phase AND u.unit = c.unit
                WHERE u.namespace = \(namespace)
                """, logger: logger
            ).collect() {
                let (experiment, phase, unit) = try row.decode((String, String, String).self)
                recorded.insert(ExperimentWrites.key(experiment, phase, unit))
            }
        }
        var arms: [String: Int] = [:]
        if !candidates.phases.isEmpty {
            for row in try await connection.query(
                """
                SELECT a.experiment, a.phase, a.arm, a.units FROM experiment_arm a
                JOIN unnest(\(candidates.phases.map(\.experiment))::text[], \(candidates.phases.map(\.phase))::text[]) AS p(experiment, phase)
                  ON a.experiment = p.experiment AND a.phase = p.phase
                WHERE a.namespace = \(namespace)
                """, logger: logger
            ).collect() {
                let (experiment, phase, arm, units) = try row.decode((String, String, String, Int64).self)
                arms[ExperimentWrites.key(experiment, phase, arm)] = Int(units)
            }
        }
        var totals: [String: [String: Double]] = [:]
        for row in try await connection.query(
            """
            SELECT unit, metric, total FROM metric_total WHERE namespace = \(namespace) AND unit = ANY(\(candidates.units)::text[])
            """, logger: logger
        ).collect() {
            let (unit, metric, total) = try row.decode((String, String, Double).self)
            totals[unit, default: [:]][metric] = total
        }
        let writes = ExperimentWrites(
            steps, recorded: recorded, arms: arms, totals: totals, maximumUnitsPerArm: admission.maximumUnitsPerArm)
        var entered = Set<String>()
        let entries = writes.entries
        if !entries.isEmpty {
            for row in try await connection.query(
                """
                INSERT INTO experiment_unit (namespace, experiment, phase, unit, arm, entered_ms, address)
                SELECT \(namespace), e.experiment, e.phase, e.unit, e.arm, e.entered_ms, NULLIF(e.address, '')
                FROM unnest(\(entries.map(\.experiment))::text[], \(entries.map(\.phase))::text[], \(entries.map(\.unit))::text[],
                            \(entries.map(\.arm))::text[], \(entries.map(\.entered))::bigint[], \(entries.map { $0.address ?? "" })::text[])
                     WITH ORDINALITY AS e(experiment, phase, unit, arm, entered_ms, address, position)
                ORDER BY e.position
                ON CONFLICT (namespace, experiment, phase, unit) DO NOTHING
                RETURNING experiment, phase, unit
                """, logger: logger
            ).collect() {
                let (experiment, phase, unit) = try row.decode((String, String, String).self)
                entered.insert(ExperimentWrites.key(experiment, phase, unit))
            }
        }
        let kept = entries.filter { entered.contains(ExperimentWrites.key($0.experiment, $0.phase, $0.unit)) }
        var armCounts: [String: (experiment: String, phase: String, arm: String, units: Int64)] = [:]
        for entry in kept {
            armCounts[
                ExperimentWrites.key(entry.experiment, entry.phase, entry.arm),
                default: (entry.experiment, entry.phase, entry.arm, 0)
            ].units += 1
        }
        let counts = armCounts.sorted { $0.key < $1.key }.map(\.value)
        if !counts.isEmpty {
            _ = try await connection.query(
                """
                INSERT INTO experiment_arm (namespace, experiment, phase, arm, units)
                SELECT \(namespace), a.experiment, a.phase, a.arm, a.units
                FROM unnest(\(counts.map(\.experiment))::text[], \(counts.map(\.phase))::text[], \(counts.map(\.arm))::text[],
                            \(counts.map(\.units))::bigint[]) WITH ORDINALITY AS a(experiment, phase, arm, units, position)
                ORDER BY a.position
                ON CONFLICT (namespace, experiment, phase, arm) DO UPDATE SET units = experiment_arm.units + excluded.units
                """, logger: logger
            ).collect()
        }
        let pre = kept.flatMap { entry in
            entry.pre.sorted { $0.key < $1.key }.map { (entry.experiment, entry.phase, entry.unit, $0.key, $0.value) }
        }
        if !pre.isEmpty {
            _ = try await connection.query(
                """
                INSERT INTO experiment_pre (namespace, experiment, phase, unit, metric, total)
                SELECT \(namespace), p.experiment, p.phase, p.unit, p.metric, p.total
                FROM unnest(\(pre.map(\.0))::text[], \(pre.map(\.1))::text[], \(pre.map(\.2))::text[], \(pre.map(\.3))::text[],
                            \(pre.map(\.4))::float8[]) AS p(experiment, phase, unit, metric, total)
                ON CONFLICT DO NOTHING
                """, logger: logger
            ).collect()
        }
        let additions = writes.additions
        if !additions.isEmpty {
            // The time moves only once a slack old: an update that sets no indexed column to a new value may leave
            // the indexes alone (a heap-only tuple, when the row's page has room for the new version).
            let stale = received - ExperimentWrites.totalsTimeSlackMilliseconds
            _ = try await connection.query(
                """
                INSERT INTO metric_total (namespace, unit, metric, total, updated_ms)
                SELECT \(namespace), a.unit, a.metric, a.total, \(received)
                FROM unnest(\(additions.map(\.unit))::text[], \(additions.map(\.metric))::text[], \(additions.map(\.value))::float8[])
                     WITH ORDINALITY AS a(unit, metric, total, position)
                ORDER BY a.position
                ON CONFLICT (namespace, unit, metric) DO UPDATE SET total = metric_total.total + excluded.total,
                    updated_ms = CASE WHEN metric_total.updated_ms < \(stale) THEN excluded.updated_ms ELSE metric_total.updated_ms END
                """, logger: logger
            ).collect()
        }
        return kept.count
    }

    public func experimentUnits(in namespace: String, experiment: String) async throws -> [ExperimentUnitRecord] {
        var units: [String: ExperimentUnitRecord] = [:]
        var order: [String] = []
        for row in try await rows(
            """
            SELECT phase, unit, arm, entered_ms, address FROM experiment_unit WHERE namespace = \(namespace) AND experiment = \(experiment)
            ORDER BY entered_ms, unit
            """, on: .events)
        {
            let (phase, unit, arm, entered, address) = try row.decode((String, String, String, Int64, String?).self)
            let key = ExperimentWrites.key(experiment, phase, unit)
            order.append(key)
            units[key] = ExperimentUnitRecord(
                unit: unit, arm: arm, phase: phase, entered: Date(milliseconds: entered), address: address)
        }
        for row in try await rows(
            """
            SELECT u.phase, u.unit, t.metric, t.total FROM experiment_unit u
            JOIN metric_total t ON t.namespace = u.namespace AND t.unit = u.unit
            WHERE u.namespace = \(namespace) AND u.experiment = \(experiment)
            """, on: .events)
        {
            let (phase, unit, metric, total) = try row.decode((String, String, String, Double).self)
            units[ExperimentWrites.key(experiment, phase, unit)]?.totals[metric] = total
        }
        for row in try await rows(
            """
            SELECT phase, unit, metric, total FROM experiment_pre WHERE namespace = \(namespace) AND experiment = \(experiment)
            """, on: .events)
        {
            let (phase, unit, metric, total) = try row.decode((String, String, String, Double).self)
            units[ExperimentWrites.key(experiment, phase, unit)]?.pre[metric] = total
        }
        return order.compactMap { units[$0] }
    }

    public func pruneExperimentRecords(before date: Date) async throws -> Int {
        let cutoff = date.milliseconds
        let rows = try await rows(
            """
            WITH over AS (
                SELECT namespace, experiment, phase FROM experiment_unit GROUP BY namespace, experiment, phase
                HAVING MAX(entered_ms) < \(cutoff)
            ),
            pre AS (DELETE FROM experiment_pre p USING over o
                    WHERE p.namespace = o.namespace AND p.experiment = o.experiment AND p.phase = o.phase RETURNING 1),
            units AS (DELETE FROM experiment_unit u USING over o
                      WHERE u.namespace = o.namespace AND u.experiment = o.experiment AND u.phase = o.phase RETURNING 1),
            arms AS (DELETE FROM experiment_arm a USING over o
                     WHERE a.namespace = o.namespace AND a.experiment = o.experiment AND a.phase = o.phase RETURNING 1)
            SELECT (SELECT count(*) FROM pre)::bigint + (SELECT count(*) FROM units)::bigint + (SELECT count(*) FROM arms)::bigint
            """, on: .events)
        // Totals of units quiet since the date that no phase holds (after the phases above are gone); their time is
        // a slack behind (ExperimentWrites.totalsTimeSlackMilliseconds).
        let quiet = cutoff - ExperimentWrites.totalsTimeSlackMilliseconds
        let totals = try await self.rows(
            """
            WITH gone AS (DELETE FROM metric_total t WHERE t.updated_ms < \(quiet) AND NOT EXISTS (
                SELECT 1 FROM experiment_unit u WHERE u.namespace = t.namespace AND u.unit = t.unit) RETURNING 1)
            SELECT count(*)::bigint FROM gone
            """, on: .events)
        return Int(try rows.first?.decode(Int64.self) ?? 0) + Int(try totals.first?.decode(Int64.self) ?? 0)
    }

    /// Drives an admission plan over the namespace's admission windows, inside the ingestion transaction. Window
    /// rows are locked in key order (contributions, then frequencies), so concurrent batches cannot deadlock.
    func admit(
        _ events: [StoredEvent], in namespace: String, admission: EventAdmission, _ connection: PostgresConnection
    ) async throws
        -> (events: [StoredEvent], dropped: [EventDrop])
    {
        var plan = EventAdmission.Plan(events, admission: admission)
        @Sendable func add(_ counts: [(key: EventAdmission.WindowKey, count: Int64)]) async throws -> [EventAdmission
            .WindowKey: Int64]
        {
            guard !counts.isEmpty else { return [:] }
            let rows = try await connection.query(
                """
                INSERT INTO event_window (namespace, window_ms, kind, value, events)
                SELECT \(namespace), w.window_ms, w.kind, w.value, w.events
                FROM unnest(\(counts.map(\.key.window))::bigint[], \(counts.map(\.key.kind.rawValue))::text[],
                            \(counts.map(\.key.value))::text[], \(counts.map(\.count))::bigint[])
                     WITH ORDINALITY AS w(window_ms, kind, value, events, position)
                ORDER BY w.position
                ON CONFLICT (namespace, window_ms, kind, value) DO UPDATE SET events = event_window.events + excluded.events
                RETURNING window_ms, kind, value, events
                """, logger: self.logger
            ).collect()
            var totals: [EventAdmission.WindowKey: Int64] = [:]
            for row in rows {
                let (window, kindName, value, total) = try row.decode((Int64, String, String, Int64).self)
                guard let kind = EventAdmission.Kind(rawValue: kindName) else {
                    throw StorageError(.corrupt, "an admission window has an unknown kind '\(kindName)'")
                }
                totals[EventAdmission.WindowKey(window: window, kind: kind, value: value)] = total
            }
            return totals
        }
        while let contributions = plan.contributions { plan.admit(totals: try await add(contributions)) }
        let frequencies = plan.frequencies
        if !frequencies.isEmpty {
            // A value with a row already is added to; a new one is written only while its window and kind hold fewer
            // than the most values (two processes writing at once may each add one past it: the bound holds within a
            // batch's size per process).
            let capacity = Int64(min(admission.maximumValuesPerWindow, Int(Int64.max)))
            _ = try await connection.query(
                """
                WITH f AS (
                    SELECT * FROM unnest(\(frequencies.map(\.key.window))::bigint[], \(frequencies.map(\.key.kind.rawValue))::text[],
                                         \(frequencies.map(\.key.value))::text[], \(frequencies.map(\.sessions))::bigint[],
                                         \(frequencies.map(\.reach.units))::bigint[], \(frequencies.map(\.reach.networks))::bigint[])
                         WITH ORDINALITY AS f(window_ms, kind, value, events, units, networks, position)
                ),
                held AS (
                    SELECT w.window_ms, w.kind, count(*) AS values FROM event_window w
                    WHERE w.namespace = \(namespace) AND (w.window_ms, w.kind) IN (SELECT DISTINCT window_ms, kind FROM f)
                    GROUP BY w.window_ms, w.kind
                ),
                ranked AS (
                    SELECT f.*, EXISTS (SELECT 1 FROM event_window w WHERE w.namespace = \(namespace) AND w.window_ms = f.window_ms
                                        AND w.kind = f.kind AND w.value = f.value) AS known,
                           coalesce(h.values, 0) AS values
                    FROM f LEFT JOIN held h ON h.window_ms = f.window_ms AND h.kind = f.kind
                ),
                admitted AS (
                    SELECT *, count(*) FILTER (WHERE NOT known) OVER (PARTITION BY window_ms, kind ORDER BY position) AS nth
                    FROM ranked
                )
                INSERT INTO event_window (namespace, window_ms, kind, value, events, units, networks)
                SELECT \(namespace), window_ms, kind, value, events, units, networks FROM admitted
                WHERE known OR values + nth <= \(capacity)
                ORDER BY position
                ON CONFLICT (namespace, window_ms, kind, value) DO UPDATE SET events = event_window.events + excluded.events,
                    units = event_window.units | excluded.units, networks = event_window.networks | excluded.networks
                """, logger: self.logger
            ).collect()
        }
        var ranked: [EventAdmission.Ranking: Set<String>] = [:]
        for ranking in plan.rankings {
            let limit = Int64(admission.maximumScopeValues ?? Int.max)
            let rows = try await connection.query(
                """
                SELECT value FROM event_window WHERE namespace = \(namespace) AND window_ms = \(ranking.window) AND kind = \(ranking.kind.rawValue)
                ORDER BY events DESC, value COLLATE "C" LIMIT \(limit)
                """, logger: self.logger
            ).collect()
            ranked[ranking] = Set(try rows.map { try $0.decode(String.self) })
        }
        return plan.counted(ranked: ranked)
    }

    public func scopeReach(in namespace: String, from: Date, until: Date) async throws -> [EventDimension:
        EventAdmission.Reach]
    {
        var reach: [EventDimension: EventAdmission.Reach] = [:]
        for row in try await rows(
            """
            SELECT kind, value, bit_or(units), bit_or(networks) FROM event_window
            WHERE namespace = \(namespace) AND window_ms >= \(from.milliseconds) AND window_ms < \(until.milliseconds)
                  AND kind IN ('city', 'cohort')
            GROUP BY kind, value
            """, on: .events)
        {
            let (kind, value, units, networks) = try row.decode((String, String, Int64, Int64).self)
            reach[EventDimension(kind: kind == "city" ? .city : .cohort, value: value)] = EventAdmission.Reach(
                units: units, networks: networks)
        }
        return reach
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
        if let sources = query.sources { list("source", sources.map(\.rawValue)) }
        let bucket = query.perBucket ? "bucket_ms" : "0::bigint"
        let sql = """
            SELECT source, subject_kind, subject, variant, dimension, value, \(bucket) AS bucket,
                   SUM(sessions)::bigint AS sessions, SUM(crashed)::bigint AS crashed, SUM(exposures)::bigint AS exposures
            FROM event_count WHERE \(clauses.joined(separator: " AND "))
            GROUP BY source, subject_kind, subject, variant, dimension, value, bucket
            HAVING SUM(sessions) != 0 OR SUM(crashed) != 0 OR SUM(exposures) != 0
            """
        var counts: [EventCount] = []
        for row in try await rows(PostgresQuery(unsafeSQL: sql, binds: bindings), on: .events) {
            let row = row.makeRandomAccess()
            counts.append(
                try EventCount(
                    stored: try row["source"].decode(String.self),
                    subjectKind: try row["subject_kind"].decode(String.self),
                    subject: try row["subject"].decode(String.self), variant: try row["variant"].decode(String.self),
                    dimensionKind: try row["dimension"].decode(String.self),
                    dimension: try row["value"].decode(String.self),
                    bucket: query.perBucket ? Date(milliseconds: try row["bucket"].decode(Int64.self)) : nil,
                    tally: EventTally(
                        sessions: try row["sessions"].decode(Int64.self),
                        crashedSessions: try row["crashed"].decode(Int64.self),
                        exposures: try row["exposures"].decode(Int64.self))))
        }
        return counts.sorted(by: EventCount.ordered)
    }

    public func crashRecords(in namespace: String, from: Date, until: Date) async throws -> [CrashRecord] {
        try await rows(
            """
            SELECT id, source, bucket_ms, unit, address, city, cohorts, switches FROM event_crash
            WHERE namespace = \(namespace) AND bucket_ms >= \(EventAggregation.bucketStart(of: from)) AND bucket_ms < \(until.milliseconds)
            ORDER BY bucket_ms, id COLLATE "C"
            """, on: .events
        ).map { row in
            let (id, sourceName, bucket, unit, address, city, cohorts, switches) =
                try row.decode((String, String, Int64, String, String?, String?, String, String).self)
            guard let source = EventSource(rawValue: sourceName) else {
                throw StorageError(.corrupt, "a crash record has an unknown source '\(sourceName)'")
            }
            return CrashRecord(
                id: id, source: source, bucket: bucket, unit: unit, address: address, city: city,
                cohorts: try CrashRecord.list(stored: cohorts), switches: try CrashRecord.list(stored: switches))
        }
    }

    @discardableResult
    public func pruneEventIDs(before date: Date) async throws -> Int {
        let rows = try await rows(
            """
            WITH forgotten AS (DELETE FROM event_id WHERE time_ms < \(date.milliseconds) RETURNING 1)
            SELECT count(*)::bigint FROM forgotten
            """, on: .events)
        return Int(try rows.first?.decode(Int64.self) ?? 0)
    }

    @discardableResult
    public func compactEventCounts(rollUp: Range<Date>, deleteBefore: Date) async throws -> EventCompaction {
        var compaction = EventCompaction()
        let hours = EventCompaction.hours(in: rollUp)
        let limit = 2_000
        for namespace in try await namespaces().map(\.name) {
            // The hours that still hold minute counters (usually none or the latest one), in one query, instead of a
            // statement for each of the hundreds of hours in the range.
            let hourLength = EventAggregation.hourMilliseconds
            let (first, last) = (hours.first ?? 0, hours.last ?? -hourLength)
            let pending =
                hours.isEmpty
                ? []
                : try await rows(
                    """
                    SELECT DISTINCT bucket_ms - bucket_ms % \(hourLength) AS hour FROM event_count
                    WHERE namespace = \(namespace) AND bucket_ms > \(first) AND bucket_ms < \(last + hourLength)
                        AND bucket_ms % \(hourLength) <> 0 ORDER BY hour
                    """, on: .events
                ).map { try $0.decode(Int64.self) }
            for hour in pending {
                while true {
                    // Moves up to `limit` minute counters of the hour into the hour's counter, in one statement.
                    let end = hour + 3_600_000
                    let rows = try await rows(
                        """
                        WITH moved AS (
                            DELETE FROM event_count WHERE ctid IN (
                                SELECT ctid FROM event_count WHERE namespace = \(namespace) AND bucket_ms > \(hour) AND bucket_ms < \(end)
                                LIMIT \(limit))
                            RETURNING source, subject_kind, subject, variant, dimension, value, sessions, crashed, exposures),
                        added AS (
                            -- Runs to completion though nothing reads it (as every data-modifying WITH does).
                            INSERT INTO event_count (namespace, source, subject_kind, subject, variant, dimension, value, bucket_ms,
                                                     sessions, crashed, exposures)
                            SELECT \(namespace), source, subject_kind, subject, variant, dimension, value, \(hour),
                                   SUM(sessions)::bigint, SUM(crashed)::bigint, SUM(exposures)::bigint
                            FROM moved GROUP BY source, subject_kind, subject, variant, dimension, value
                            ON CONFLICT (namespace, source, subject_kind, subject, variant, dimension, value, bucket_ms) DO UPDATE SET
                                sessions = event_count.sessions + EXCLUDED.sessions, crashed = event_count.crashed + EXCLUDED.crashed,
                                exposures = event_count.exposures + EXCLUDED.exposures
                        )
                        SELECT count(*)::bigint FROM moved
                        """, on: .events)
                    let moved = Int(try rows.first?.decode(Int64.self) ?? 0)
                    compaction.rolledUp += moved
                    if moved < limit { break }
                }
            }
            let rows = try await rows(
                """
                WITH deleted AS (DELETE FROM event_count WHERE namespace = \(namespace) AND bucket_ms < \(deleteBefore.milliseconds) RETURNING 1)
                SELECT count(*)::bigint FROM deleted
                """, on: .events)
            compaction.deleted += Int(try rows.first?.decode(Int64.self) ?? 0)
        }
        return compaction
    }

    @discardableResult
    public func pruneEventRecords(before date: Date) async throws -> Int {
        let rows = try await rows(
            """
            WITH windows AS (DELETE FROM event_window WHERE window_ms < \(date.milliseconds) RETURNING 1),
                 crashes AS (DELETE FROM event_crash WHERE bucket_ms < \(date.milliseconds) RETURNING 1)
            SELECT (SELECT count(*) FROM windows)::bigint + (SELECT count(*) FROM crashes)::bigint
            """, on: .events)
        return Int(try rows.first?.decode(Int64.self) ?? 0)
    }
}
