import Foundation
import Logging
import PostgresNIO
import SwitchyardStorage

extension PostgresFlagStore {
    /// One schema change; never edit a migration once released, add one.
    struct Migration: Sendable {
        let id: Int
        let name: String
        let statements: [String]
    }

    /// The schema, in the order it is applied. The same tables as the SQLite backend, in PostgreSQL's types.
    static let migrations: [Migration] = [
        Migration(
            id: 1, name: "namespaces, change log, audit log, tokens",
            statements: [
                // A row per namespace ever created; `version` is the counter each change takes the next value of,
                // under the row's lock.
                """
                CREATE TABLE namespace (
                    epoch TEXT PRIMARY KEY,
                    name TEXT NOT NULL,
                    version BIGINT NOT NULL,
                    flag_set TEXT NOT NULL,
                    reason_policy TEXT NOT NULL,
                    created_ms BIGINT NOT NULL,
                    updated_ms BIGINT NOT NULL,
                    deleted_ms BIGINT
                )
                """,
                "CREATE UNIQUE INDEX namespace_live_name ON namespace(name) WHERE deleted_ms IS NULL",
                """
                CREATE TABLE change (
                    epoch TEXT NOT NULL REFERENCES namespace(epoch),
                    version BIGINT NOT NULL,
                    time_ms BIGINT NOT NULL,
                    actor TEXT NOT NULL,
                    source TEXT NOT NULL,
                    reason TEXT,
                    summary TEXT NOT NULL,
                    changes TEXT NOT NULL,
                    PRIMARY KEY (epoch, version)
                )
                """,
                """
                CREATE TABLE audit (
                    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                    time_ms BIGINT NOT NULL,
                    actor TEXT NOT NULL,
                    source TEXT NOT NULL,
                    action TEXT NOT NULL,
                    namespace TEXT,
                    version BIGINT,
                    reason TEXT,
                    summary TEXT NOT NULL,
                    changes TEXT NOT NULL
                )
                """,
                "CREATE INDEX audit_time ON audit(time_ms)",
                "CREATE INDEX audit_actor ON audit(actor, id)",
                "CREATE INDEX audit_namespace ON audit(namespace, id)",
                """
                CREATE TABLE audit_target (
                    target TEXT NOT NULL,
                    audit_id BIGINT NOT NULL REFERENCES audit(id),
                    PRIMARY KEY (target, audit_id)
                )
                """,
                """
                CREATE TABLE token (
                    id TEXT PRIMARY KEY,
                    name TEXT NOT NULL,
                    role TEXT NOT NULL,
                    namespaces TEXT,
                    rate_per_minute INTEGER,
                    secret_hash BYTEA NOT NULL UNIQUE,
                    created_ms BIGINT NOT NULL,
                    created_by TEXT NOT NULL,
                    revoked_ms BIGINT
                )
                """,
                "CREATE UNIQUE INDEX token_live_name ON token(name) WHERE revoked_ms IS NULL",
            ]),
        Migration(
            id: 2, name: "event ids and counters",
            statements: [
                // The ids of events counted, per namespace (the primary key makes a batch retried through any
                // instance count once); forgotten once older than the server accepts events.
                """
                CREATE TABLE event_id (
                    namespace TEXT NOT NULL,
                    id TEXT NOT NULL,
                    time_ms BIGINT NOT NULL,
                    received_ms BIGINT NOT NULL,
                    PRIMARY KEY (namespace, id)
                )
                """,
                "CREATE INDEX event_id_time ON event_id(time_ms)",
                // Counters per namespace, subject (baseline, switch, variant), dimension (all, city, cohort) and minute.
                """
                CREATE TABLE event_count (
                    namespace TEXT NOT NULL,
                    subject_kind TEXT NOT NULL,
                    subject TEXT NOT NULL,
                    variant TEXT NOT NULL,
                    dimension TEXT NOT NULL,
                    value TEXT NOT NULL,
                    bucket_ms BIGINT NOT NULL,
                    sessions BIGINT NOT NULL,
                    crashed BIGINT NOT NULL,
                    exposures BIGINT NOT NULL,
                    PRIMARY KEY (namespace, subject_kind, subject, variant, dimension, value, bucket_ms)
                )
                """,
                "CREATE INDEX event_count_bucket ON event_count(namespace, bucket_ms)",
            ]),
        Migration(
            id: 3, name: "evidence of automatic changes",
            statements: [
                // The crash guard's evidence (counts, rate, bound, window, scope) as canonical JSON; NULL for people's changes.
                "ALTER TABLE change ADD COLUMN evidence TEXT",
                "ALTER TABLE audit ADD COLUMN evidence TEXT",
            ]),
        Migration(
            id: 4, name: "event sources, admission windows, crash records",
            statements: [
                // Counters per source (client, reporter): each source is judged on its own sessions. Existing counters
                // were all reported by clients.
                "ALTER TABLE event_count ADD COLUMN source TEXT NOT NULL DEFAULT 'client'",
                "ALTER TABLE event_count ALTER COLUMN source DROP DEFAULT",
                "ALTER TABLE event_count DROP CONSTRAINT event_count_pkey",
                "ALTER TABLE event_count ADD PRIMARY KEY (namespace, source, subject_kind, subject, variant, dimension, value, bucket_ms)",
                // Sessions per unit and per source address, events per city and cohort, per window (EventAdmission).
                """
                CREATE TABLE event_window (
                    namespace TEXT NOT NULL,
                    window_ms BIGINT NOT NULL,
                    kind TEXT NOT NULL,
                    value TEXT NOT NULL,
                    events BIGINT NOT NULL,
                    PRIMARY KEY (namespace, window_ms, kind, value)
                )
                """,
                // Crashed sessions with their unit, address, city, cohorts and switches (JSON arrays).
                """
                CREATE TABLE event_crash (
                    namespace TEXT NOT NULL,
                    id TEXT NOT NULL,
                    source TEXT NOT NULL,
                    bucket_ms BIGINT NOT NULL,
                    unit TEXT NOT NULL,
                    address TEXT,
                    city TEXT,
                    cohorts TEXT NOT NULL,
                    switches TEXT NOT NULL,
                    PRIMARY KEY (namespace, id)
                )
                """,
                "CREATE INDEX event_crash_bucket ON event_crash(namespace, bucket_ms)",
            ]),
        Migration(
            id: 5, name: "the units and networks that reported each city and cohort",
            statements: [
                // EventAdmission.Reach: one bit per unit and per network (by hash) that reported a value in the window.
                "ALTER TABLE event_window ADD COLUMN units BIGINT NOT NULL DEFAULT 0",
                "ALTER TABLE event_window ADD COLUMN networks BIGINT NOT NULL DEFAULT 0",
            ]),
        Migration(
            id: 6, name: "outcome metrics per unit, experiment units and their pre-exposure values",
            statements: [
                // Each unit's running total of each metric (sessions, crashed_sessions and the tracked ones).
                """
                CREATE TABLE metric_total (
                    namespace TEXT NOT NULL, unit TEXT NOT NULL, metric TEXT NOT NULL,
                    total DOUBLE PRECISION NOT NULL, updated_ms BIGINT NOT NULL,
                    PRIMARY KEY (namespace, unit, metric))
                """,
                "CREATE INDEX metric_total_updated ON metric_total(updated_ms)",
                // The units of each experiment's phase, with their arm and when they entered.
                """
                CREATE TABLE experiment_unit (
                    namespace TEXT NOT NULL, experiment TEXT NOT NULL, phase TEXT NOT NULL, unit TEXT NOT NULL,
                    arm TEXT NOT NULL, entered_ms BIGINT NOT NULL,
                    PRIMARY KEY (namespace, experiment, phase, unit))
                """,
                "CREATE INDEX experiment_unit_of_unit ON experiment_unit(namespace, unit)",
                // A unit's totals when it entered (its pre-exposure values, for CUPED).
                """
                CREATE TABLE experiment_pre (
                    namespace TEXT NOT NULL, experiment TEXT NOT NULL, phase TEXT NOT NULL, unit TEXT NOT NULL, metric TEXT NOT NULL,
                    total DOUBLE PRECISION NOT NULL,
                    PRIMARY KEY (namespace, experiment, phase, unit, metric))
                """,
                // How many units each arm of a phase holds (the bound on units per arm).
                """
                CREATE TABLE experiment_arm (
                    namespace TEXT NOT NULL, experiment TEXT NOT NULL, phase TEXT NOT NULL, arm TEXT NOT NULL, units BIGINT NOT NULL,
                    PRIMARY KEY (namespace, experiment, phase, arm))
                """,
            ]),
        Migration(
            id: 7, name: "the source address that entered each experiment unit",
            statements: [
                // A release plan's guardrails count the networks behind a decision (null: entered before this).
                "ALTER TABLE experiment_unit ADD COLUMN address TEXT"
            ]),
        Migration(
            id: 8, name: "a row per flag-set object",
            statements: [
                // A change writes the rows of the objects it touched (StoredObject), not the whole flag set as one text.
                """
                CREATE TABLE namespace_object (
                    epoch TEXT NOT NULL REFERENCES namespace(epoch),
                    kind TEXT NOT NULL, key TEXT NOT NULL, position BIGINT NOT NULL, body TEXT NOT NULL,
                    PRIMARY KEY (epoch, kind, key))
                """,
                // The stored text is canonical JSON; `json` (not `jsonb`) keeps each member's text as it was.
                """
                INSERT INTO namespace_object (epoch, kind, key, position, body)
                SELECT n.epoch, 'namespace', f.field, 0, (n.flag_set::json -> f.field)::text
                FROM namespace n CROSS JOIN (VALUES ('description'), ('crash_guard')) AS f(field)
                WHERE n.flag_set::json -> f.field IS NOT NULL
                """,
                """
                INSERT INTO namespace_object (epoch, kind, key, position, body)
                SELECT n.epoch, 'plugin_point', p.value ->> 'name', p.ordinality - 1, p.value::text
                FROM namespace n, json_array_elements(COALESCE(n.flag_set::json -> 'plugin_points', '[]'::json)) WITH ORDINALITY AS p(value, ordinality)
                """,
                """
                INSERT INTO namespace_object (epoch, kind, key, position, body)
                SELECT n.epoch, m.kind, o.key, 0, o.value::text
                FROM namespace n
                CROSS JOIN (VALUES ('kill_switch', 'kill_switches'), ('flag', 'flags'), ('metric', 'metrics')) AS m(kind, member),
                LATERAL json_each(COALESCE(n.flag_set::json -> m.member, '{}'::json)) AS o
                """,
                "ALTER TABLE namespace DROP COLUMN flag_set",
            ]),
    ]

    /// An arbitrary constant naming the migration lock (`pg_advisory_xact_lock`).
    static let migrationLock: Int64 = 0x5357_5954_4348_5944

    /// Waits until the database answers (logging each failed attempt), then applies the migrations it lacks, one
    /// process at a time (an advisory lock), each in its own transaction.
    ///
    /// - Parameter waitingUpTo: how long to wait for the database to answer.
    /// - Throws: `StorageError` `unavailable` when the database does not answer in time or refuses a migration.
    public func migrate(waitingUpTo limit: Duration = .seconds(30)) async throws {
        let start = ContinuousClock.now
        var attempt = 0
        while true {
            attempt += 1
            do {
                try await checkHealthNow()
                break
            } catch let error as StorageError where ContinuousClock.now - start < limit {
                logger.notice(
                    "waiting for PostgreSQL",
                    metadata: [
                        "database": .string(configuration.displayURL), "attempt": .stringConvertible(attempt),
                        "error": .string(error.diagnostic ?? error.message),
                    ])
                try await Task.sleep(for: configuration.retryInterval)
            }
        }
        let applied = try await transaction { connection in
            _ = try await connection.query("SELECT pg_advisory_xact_lock(\(Self.migrationLock))", logger: self.logger)
                .collect()
            _ = try await connection.query(
                """
                CREATE TABLE IF NOT EXISTS switchyard_migration (
                    id INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_ms BIGINT NOT NULL)
                """, logger: self.logger
            ).collect()
            var done = Set<Int>()
            for row in try await connection.query("SELECT id FROM switchyard_migration", logger: self.logger).collect()
            {
                done.insert(try row.decode(Int.self))
            }
            var applied: [String] = []
            for migration in Self.migrations where !done.contains(migration.id) {
                for statement in migration.statements {
                    _ = try await connection.query(PostgresQuery(unsafeSQL: statement), logger: self.logger).collect()
                }
                let time = self.currentTime().milliseconds
                _ = try await connection.query(
                    """
                    INSERT INTO switchyard_migration (id, name, applied_ms) VALUES (\(migration.id), \(migration.name), \(time))
                    """, logger: self.logger
                ).collect()
                applied.append("v\(migration.id): \(migration.name)")
            }
            if let newest = done.max(), newest > Self.migrations.count {
                self.logger.warning(
                    "the database schema is newer than this flagsd (an upgraded instance migrated it); upgrade this instance too",
                    metadata: [
                        "schema": .stringConvertible(newest), "known": .stringConvertible(Self.migrations.count),
                    ])
            }
            return applied
        }
        for name in applied {
            logger.info(
                "migrated the PostgreSQL schema",
                metadata: ["migration": .string(name), "database": .string(configuration.displayURL)])
        }
    }
}
