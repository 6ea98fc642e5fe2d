import GRDB
import SwitchyardCore
import SwitchyardStorage

extension SQLiteFlagStore {
    /// The schema, one migration per released change; never edit a migration once released.
    static let migrator: DatabaseMigrator = {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1: namespaces, change log, audit log, tokens") { db in
            // A row per namespace ever created; `version` is the counter each change takes the next value of.
            try db.execute(
                sql: """
                    CREATE TABLE namespace (
                        epoch TEXT PRIMARY KEY NOT NULL,
                        name TEXT NOT NULL,
                        version INTEGER NOT NULL,
                        flag_set TEXT NOT NULL,
                        reason_policy TEXT NOT NULL,
                        created_ms INTEGER NOT NULL,
                        updated_ms INTEGER NOT NULL,
                        deleted_ms INTEGER
                    );
                    CREATE UNIQUE INDEX namespace_live_name ON namespace(name) WHERE deleted_ms IS NULL;

                    CREATE TABLE change (
                        epoch TEXT NOT NULL REFERENCES namespace(epoch),
                        version INTEGER NOT NULL,
                        time_ms INTEGER NOT NULL,
                        actor TEXT NOT NULL,
                        source TEXT NOT NULL,
                        reason TEXT,
                        summary TEXT NOT NULL,
                        changes TEXT NOT NULL,
                        PRIMARY KEY (epoch, version)
                    ) WITHOUT ROWID;

                    CREATE TABLE audit (
                        id INTEGER PRIMARY KEY AUTOINCREMENT,
                        time_ms INTEGER NOT NULL,
                        actor TEXT NOT NULL,
                        source TEXT NOT NULL,
                        action TEXT NOT NULL,
                        namespace TEXT,
                        version INTEGER,
                        reason TEXT,
                        summary TEXT NOT NULL,
                        changes TEXT NOT NULL
                    );
                    CREATE INDEX audit_time ON audit(time_ms);
                    CREATE INDEX audit_actor ON audit(actor, id);
                    CREATE INDEX audit_namespace ON audit(namespace, id);

                    CREATE TABLE audit_target (
                        target TEXT NOT NULL,
                        audit_id INTEGER NOT NULL REFERENCES audit(id),
                        PRIMARY KEY (target, audit_id)
                    ) WITHOUT ROWID;

                    CREATE TABLE token (
                        id TEXT PRIMARY KEY NOT NULL,
                        name TEXT NOT NULL,
                        role TEXT NOT NULL,
                        namespaces TEXT,
                        secret_hash BLOB NOT NULL UNIQUE,
                        created_ms INTEGER NOT NULL,
                        created_by TEXT NOT NULL,
                        revoked_ms INTEGER
                    );
                    CREATE UNIQUE INDEX token_live_name ON token(name) WHERE revoked_ms IS NULL;
                    """)
        }
        migrator.registerMigration("v2: a request rate per token") { db in
            // The most OFREP evaluation requests per minute a token may send; NULL: the server's default.
            try db.execute(sql: "ALTER TABLE token ADD COLUMN rate_per_minute INTEGER")
        }
        migrator.registerMigration("v3: event ids and counters") { db in
            // The ids of events counted, per namespace; forgotten once older than the server accepts events.
            // Counters per namespace, subject (baseline, switch, variant), dimension (all, city, cohort) and minute.
            try db.execute(
                sql: """
                    CREATE TABLE event_id (
                        namespace TEXT NOT NULL,
                        id TEXT NOT NULL,
                        time_ms INTEGER NOT NULL,
                        received_ms INTEGER NOT NULL,
                        PRIMARY KEY (namespace, id)
                    ) WITHOUT ROWID;
                    CREATE INDEX event_id_time ON event_id(time_ms);

                    CREATE TABLE event_count (
                        namespace TEXT NOT NULL,
                        subject_kind TEXT NOT NULL,
                        subject TEXT NOT NULL,
                        variant TEXT NOT NULL,
                        dimension TEXT NOT NULL,
                        value TEXT NOT NULL,
                        bucket_ms INTEGER NOT NULL,
                        sessions INTEGER NOT NULL,
                        crashed INTEGER NOT NULL,
                        exposures INTEGER NOT NULL,
                        PRIMARY KEY (namespace, subject_kind, subject, variant, dimension, value, bucket_ms)
                    ) WITHOUT ROWID;
                    CREATE INDEX event_count_bucket ON event_count(namespace, bucket_ms);
                    """)
        }
        migrator.registerMigration("v4: evidence of automatic changes") { db in
            // The crash guard's evidence (counts, rate, bound, window, scope) as canonical JSON; NULL for people's changes.
            try db.execute(
                sql: """
                    ALTER TABLE change ADD COLUMN evidence TEXT;
                    ALTER TABLE audit ADD COLUMN evidence TEXT;
                    """)
        }
        migrator.registerMigration("v5: event sources, admission windows, crash records") { db in
            // Counters per source (client, reporter): each source is judged on its own sessions. Existing counters
            // were all reported by clients.
            // Admission windows: sessions per unit and per source address, events per city and cohort, per window
            // (the caps and the most frequent values; see EventAdmission).
            // Crashed sessions with their unit, address, city, cohorts and switches: distinct units and addresses,
            // and which switches a crash may be blamed on.
            try db.execute(
                sql: """
                    CREATE TABLE event_count_v5 (
                        namespace TEXT NOT NULL,
                        source TEXT NOT NULL,
                        subject_kind TEXT NOT NULL,
                        subject TEXT NOT NULL,
                        variant TEXT NOT NULL,
                        dimension TEXT NOT NULL,
                        value TEXT NOT NULL,
                        bucket_ms INTEGER NOT NULL,
                        sessions INTEGER NOT NULL,
                        crashed INTEGER NOT NULL,
                        exposures INTEGER NOT NULL,
                        PRIMARY KEY (namespace, source, subject_kind, subject, variant, dimension, value, bucket_ms)
                    ) WITHOUT ROWID;
                    INSERT INTO event_count_v5
                        SELECT namespace, 'client', subject_kind, subject, variant, dimension, value, bucket_ms, sessions, crashed, exposures
                        FROM event_count;
                    DROP TABLE event_count;
                    ALTER TABLE event_count_v5 RENAME TO event_count;
                    CREATE INDEX event_count_bucket ON event_count(namespace, bucket_ms);

                    CREATE TABLE event_window (
                        namespace TEXT NOT NULL,
                        window_ms INTEGER NOT NULL,
                        kind TEXT NOT NULL,
                        value TEXT NOT NULL,
                        events INTEGER NOT NULL,
                        PRIMARY KEY (namespace, window_ms, kind, value)
                    ) WITHOUT ROWID;

                    CREATE TABLE event_crash (
                        namespace TEXT NOT NULL,
                        id TEXT NOT NULL,
                        source TEXT NOT NULL,
                        bucket_ms INTEGER NOT NULL,
                        unit TEXT NOT NULL,
                        address TEXT,
                        city TEXT,
                        cohorts TEXT NOT NULL,
                        switches TEXT NOT NULL,
                        PRIMARY KEY (namespace, id)
                    ) WITHOUT ROWID;
                    CREATE INDEX event_crash_bucket ON event_crash(namespace, bucket_ms);
                    """)
        }
        migrator.registerMigration(eventsMovedMigration) { db in
            // Moved by the events file's first migration (eventsMigrator), which ran before this one.
            try db.execute(
                sql: """
                    DROP TABLE IF EXISTS event_id;
                    DROP TABLE IF EXISTS event_count;
                    DROP TABLE IF EXISTS event_window;
                    DROP TABLE IF EXISTS event_crash;
                    """)
        }
        migrator.registerMigration("v7: a row per flag-set object") { db in
            // A change writes the rows of the objects it touched, not the whole flag set as one text.
            try db.execute(
                sql: """
                    CREATE TABLE namespace_object (
                        epoch TEXT NOT NULL REFERENCES namespace(epoch),
                        kind TEXT NOT NULL,
                        key TEXT NOT NULL,
                        position INTEGER NOT NULL,
                        body TEXT NOT NULL,
                        PRIMARY KEY (epoch, kind, key)
                    ) WITHOUT ROWID
                    """)
            let rows = try Row.fetchCursor(db, sql: "SELECT epoch, name, flag_set FROM namespace")
            while let row = try rows.next() {
                let epoch: String = row["epoch"]
                let name: String = row["name"]
                let text: String = row["flag_set"]
                guard let tree = (try? JSONValue.parse(text))?.objectValue else {
                    throw StorageError(
                        .corrupt, "the stored flag set of namespace '\(name)' (epoch \(epoch)) is not a JSON object")
                }
                for object in FlagSet.storedObjects(ofTree: tree) {
                    try insert(object, epoch: epoch, into: db)
                }
            }
            try db.execute(sql: "ALTER TABLE namespace DROP COLUMN flag_set")
        }
        return migrator
    }()

    /// Writes one stored object's row (inserting or replacing it).
    static func insert(_ object: StoredObject, epoch: String, into db: Database) throws {
        try db.execute(
            sql: """
                INSERT OR REPLACE INTO namespace_object (epoch, kind, key, position, body) VALUES (?, ?, ?, ?, ?)
                """, arguments: [epoch, object.kind, object.key, object.position, object.body])
    }

    /// The migration of the database file that drops its event tables (after the events file copied them).
    static let eventsMovedMigration = "v6: event tables moved to their own file"

    /// The last migration of the database file that leaves the event tables in it: the events file's first migration
    /// copies them from there.
    static let lastMigrationWithEvents = "v5: event sources, admission windows, crash records"

    /// The tables of client events, in the events file as they were in the database file (migrations v3 and v5).
    static let eventTables = ["event_id", "event_count", "event_window", "event_crash"]

    /// The events file's schema, one migration per released change; never edit a migration once released.
    ///
    /// - Parameter main: the database file, whose event tables (from before the events had a file of their own) the
    ///   first migration copies, in its transaction: copied once, or not at all.
    static func eventsMigrator(movingFrom main: DatabasePool) -> DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1: event ids, counters, admission windows, crash records") { db in
            // As in the database file's v3 and v5 (the comments there say what each holds).
            try db.execute(
                sql: """
                    CREATE TABLE event_id (
                        namespace TEXT NOT NULL,
                        id TEXT NOT NULL,
                        time_ms INTEGER NOT NULL,
                        received_ms INTEGER NOT NULL,
                        PRIMARY KEY (namespace, id)
                    ) WITHOUT ROWID;
                    CREATE INDEX event_id_time ON event_id(time_ms);

                    CREATE TABLE event_count (
                        namespace TEXT NOT NULL,
                        source TEXT NOT NULL,
                        subject_kind TEXT NOT NULL,
                        subject TEXT NOT NULL,
                        variant TEXT NOT NULL,
                        dimension TEXT NOT NULL,
                        value TEXT NOT NULL,
                        bucket_ms INTEGER NOT NULL,
                        sessions INTEGER NOT NULL,
                        crashed INTEGER NOT NULL,
                        exposures INTEGER NOT NULL,
                        PRIMARY KEY (namespace, source, subject_kind, subject, variant, dimension, value, bucket_ms)
                    ) WITHOUT ROWID;
                    CREATE INDEX event_count_bucket ON event_count(namespace, bucket_ms);

                    CREATE TABLE event_window (
                        namespace TEXT NOT NULL,
                        window_ms INTEGER NOT NULL,
                        kind TEXT NOT NULL,
                        value TEXT NOT NULL,
                        events INTEGER NOT NULL,
                        PRIMARY KEY (namespace, window_ms, kind, value)
                    ) WITHOUT ROWID;

                    CREATE TABLE event_crash (
                        namespace TEXT NOT NULL,
                        id TEXT NOT NULL,
                        source TEXT NOT NULL,
                        bucket_ms INTEGER NOT NULL,
                        unit TEXT NOT NULL,
                        address TEXT,
                        city TEXT,
                        cohorts TEXT NOT NULL,
                        switches TEXT NOT NULL,
                        PRIMARY KEY (namespace, id)
                    ) WITHOUT ROWID;
                    CREATE INDEX event_crash_bucket ON event_crash(namespace, bucket_ms);
                    """)
            for table in eventTables {
                try main.read { source in
                    guard try source.tableExists(table) else { return }
                    let columns = try source.columns(in: table).map(\.name)
                    let insert = try db.makeStatement(
                        sql: """
                            INSERT INTO \(table) (\(columns.joined(separator: ", "))) VALUES (\(columns.map { _ in "?" }.joined(separator: ", ")))
                            """)
                    let rows = try Row.fetchCursor(
                        source, sql: "SELECT \(columns.joined(separator: ", ")) FROM \(table)")
                    while let row = try rows.next() {
                        try insert.execute(arguments: StatementArguments(row.databaseValues))
                    }
                }
            }
        }
        migrator.registerMigration("v2: the units and networks that reported each city and cohort") { db in
            // EventAdmission.Reach: one bit per unit and per network (by hash) that reported a value in the window.
            try db.execute(
                sql: """
                    ALTER TABLE event_window ADD COLUMN units INTEGER NOT NULL DEFAULT 0;
                    ALTER TABLE event_window ADD COLUMN networks INTEGER NOT NULL DEFAULT 0;
                    """)
        }
        migrator.registerMigration("v3: outcome metrics per unit, experiment units and their pre-exposure values") {
            db in
            // metric_total: each unit's running total of each metric (sessions, crashed_sessions and the tracked ones).
            // experiment_unit: the units of each experiment's phase, with their arm and when they entered.
            // experiment_pre: a unit's totals when it entered (its pre-exposure values, for CUPED).
            // experiment_arm: how many units each arm of a phase holds (the bound on units per arm).
            try db.execute(
                sql: """
                    CREATE TABLE metric_total (
                        namespace TEXT NOT NULL,
                        unit TEXT NOT NULL,
                        metric TEXT NOT NULL,
                        total REAL NOT NULL,
                        updated_ms INTEGER NOT NULL,
                        PRIMARY KEY (namespace, unit, metric)
                    ) WITHOUT ROWID;
                    CREATE INDEX metric_total_updated ON metric_total(updated_ms);

                    CREATE TABLE experiment_unit (
                        namespace TEXT NOT NULL,
                        experiment TEXT NOT NULL,
                        phase TEXT NOT NULL,
                        unit TEXT NOT NULL,
                        arm TEXT NOT NULL,
                        entered_ms INTEGER NOT NULL,
                        PRIMARY KEY (namespace, experiment, phase, unit)
                    ) WITHOUT ROWID;
                    CREATE INDEX experiment_unit_of_unit ON experiment_unit(namespace, unit);

                    CREATE TABLE experiment_pre (
                        namespace TEXT NOT NULL,
                        experiment TEXT NOT NULL,
                        phase TEXT NOT NULL,
                        unit TEXT NOT NULL,
                        metric TEXT NOT NULL,
                        total REAL NOT NULL,
                        PRIMARY KEY (namespace, experiment, phase, unit, metric)
                    ) WITHOUT ROWID;

                    CREATE TABLE experiment_arm (
                        namespace TEXT NOT NULL,
                        experiment TEXT NOT NULL,
                        phase TEXT NOT NULL,
                        arm TEXT NOT NULL,
                        units INTEGER NOT NULL,
                        PRIMARY KEY (namespace, experiment, phase, arm)
                    ) WITHOUT ROWID;
                    """)
        }
        migrator.registerMigration("v4: the source address that entered each experiment unit") { db in
            // A release plan's guardrails count the networks behind a decision (null: entered before this).
            try db.execute(sql: "ALTER TABLE experiment_unit ADD COLUMN address TEXT")
        }
        return migrator
    }
}
