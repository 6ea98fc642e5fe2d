public import Foundation
import GRDB
public import Logging
public import SwitchyardCore
public import SwitchyardStorage
import SwitchyardWire
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The embedded backend: two SQLite files through GRDB `DatabasePool`s in WAL mode: the flags (namespaces, change
/// and audit logs, tokens) in the file named, the client events' counters beside it (``eventsPath(for:)``).
///
/// Every commit is synced (`PRAGMA synchronous = FULL` on each writer), so a change is durable when
/// `change(_:_:mutation:)` returns, and an event batch when `ingestEvents` does. Events have a file of their own so
/// that counting them never holds the flags' writer, its write-ahead log or its checkpoints: a flag change shares
/// nothing with a flood of events but the disk and the processors, and events are written on
/// ``BackgroundThreads/events`` (lower priority) for the processors. Open one store per file per process.
///
/// ```swift
/// let store = try await SQLiteFlagStore(path: ".switchyard/flags.sqlite", logger: logger)
/// ```
public final class SQLiteFlagStore: FlagStore {
    let pool: DatabasePool
    /// The events' file: ids, counters, admission windows, crash records.
    let events: DatabasePool
    let logger: Logger
    public let now: @Sendable () -> Date
    let makeEpoch: @Sendable () -> String
    /// The last flag set parsed or committed per epoch, with its version.
    private let parsed = Mutex<[String: (version: Int64, flagSet: FlagSet)]>([:])

    /// Opens (creating when missing) a database file and its events file, and migrates them to the current schema.
    ///
    /// A file it creates, and its WAL and shared-memory files, only this user may read and write (mode 0600), in a
    /// folder it creates with mode 0700: the database holds the audit log and token hashes. An existing file is
    /// left as it is, with a warning when other users may read it.
    ///
    /// A database from before the events file had its own moves its event tables there on the first opening (one
    /// transaction in the events file, then the tables are dropped from the database).
    ///
    /// Opening syncs the files several times (the WAL set-up, each migration's commit), which takes seconds on a busy
    /// disk: it runs on a thread of its own, never holding a thread of Swift's cooperative pool meanwhile.
    ///
    /// - Parameters:
    ///   - path: the database file; its folder is created when missing.
    ///   - logger: where to log migrations.
    ///   - now: the clock for timestamps.
    ///   - makeEpoch: makes the random id of a new namespace.
    /// - Throws: `StorageError` `unavailable` when a file cannot be opened or migrated.
    public init(
        path: String, logger: Logger = Logger(label: "switchyard.storage"),
        now: @escaping @Sendable () -> Date = { Date() },
        makeEpoch: @escaping @Sendable () -> String = NamespaceRecord.randomEpoch
    ) async throws(StorageError) {
        self.logger = logger
        self.now = now
        self.makeEpoch = makeEpoch
        (pool, events) = try await awaitBlocking { () throws(StorageError) -> (DatabasePool, DatabasePool) in
            try Self.openFiles(at: path, logger: logger)
        }
    }

    /// The events' file beside a database file: `flags.sqlite` → `flags-events.sqlite` (`flags` → `flags-events`).
    public static func eventsPath(for path: String) -> String {
        let url = URL(fileURLWithPath: path)
        let suffix = url.pathExtension.isEmpty ? "" : "." + url.pathExtension
        return url.deletingPathExtension().path + "-events" + suffix
    }

    /// Opens and migrates both files, blocking the calling thread.
    private static func openFiles(at path: String, logger: Logger) throws(StorageError) -> (DatabasePool, DatabasePool)
    {
        let eventsPath = eventsPath(for: path)
        var opening = path
        do {
            let pool = try openPool(at: path, logger: logger)
            // Up to the last migration that keeps the event tables in this file (unless it is past it), so that the
            // events file's first migration can copy them.
            if try !pool.read({ db in try migrator.appliedIdentifiers(db) }).contains(eventsMovedMigration) {
                try migrator.migrate(pool, upTo: lastMigrationWithEvents)
            }
            opening = eventsPath
            convertEventsPages(eventsPath, logger: logger)
            let events = try openPool(at: eventsPath, logger: logger, events: true)
            try eventsMigrator(movingFrom: pool).migrate(events)
            opening = path
            try migrator.migrate(pool)
            return (pool, events)
        } catch {
            throw StorageError(
                .unavailable, "cannot open the SQLite database (check the path and its permissions)",
                diagnostic: "\(opening): \(error)")
        }
    }

    /// How the events file is laid out and written back.
    ///
    /// A batch of events changes pages all over the file: event ids, units' admission windows and metric totals
    /// are keyed by values spread over the key space, so each lands on a page of its own. A commit writes each page
    /// it changed, whole, to the write-ahead log, and a checkpoint writes it again to the file. Small pages write
    /// less of what did not change; rare checkpoints write a page that many batches changed once, and the file's
    /// neighbouring pages together (the file system writes back 4 KiB at a time, so a lone 1 KiB page costs 4).
    /// Together they write less than half the bytes per event of SQLite's defaults (4 KiB pages, a checkpoint
    /// every 1,000 pages), so the disk a flag change's sync shares with a flood of events is that much less busy
    /// (bench/README.md, "Goal 4: less than half the bytes per event").
    enum EventsFile {
        /// Bytes per page (SQLite's default: 4096). 1 KiB still holds index keys of up to about 230 bytes
        /// without overflow pages.
        static let pageSize = 1024
        /// Bytes of write-ahead log between automatic checkpoints, whatever the file's pages (SQLite's default: 1,000
        /// pages): 64 MiB. A checkpoint writes back each page changed since the one before once, however many batches
        /// changed it: against 16 MiB, 30 % fewer bytes per event in a flood, and the batches' answers no slower,
        /// though a checkpoint still runs in the commit that crosses it (bench/README.md, "Goal 4: what the
        /// checkpoints cost").
        static let checkpointBytes = 64 << 20
        /// The largest events file rewritten with these pages when flagsd starts (about 7 s here); a larger one keeps
        /// its pages (it still works, writing more per event).
        static let largestRewrittenAtStart = 1 << 30
    }

    /// Rewrites an events file whose pages are not ``EventsFile/pageSize`` big (one made before that size) with
    /// pages of that size, in one `VACUUM` (atomic: a crash meanwhile leaves the file as it was, and the next start
    /// begins again). Runs before the file's pool opens, so before flagsd listens: a file over
    /// ``EventsFile/largestRewrittenAtStart`` keeps its pages, with a notice saying how to rewrite it while flagsd is
    /// stopped. When another process holds the file open, or the rewrite fails, the file keeps its pages, with a
    /// warning; flagsd goes on either way.
    static func convertEventsPages(
        _ path: String, largest: Int = EventsFile.largestRewrittenAtStart, logger: Logger
    ) {
        guard let size = (try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? Int, size > 0 else {
            return
        }
        var metadata: Logger.Metadata = ["path": .string(path), "bytes": .stringConvertible(size)]
        do {
            var configuration = Configuration()
            configuration.busyMode = .timeout(10)
            let queue = try DatabaseQueue(path: path, configuration: configuration)
            defer { try? queue.close() }
            let pageSize = try queue.read { db in try Int.fetchOne(db, sql: "PRAGMA page_size") }
            guard let pageSize, pageSize != EventsFile.pageSize else { return }
            metadata["page_size"] = .stringConvertible(pageSize)
            guard size <= largest else {
                logger.notice(
                    """
                    the events file keeps its pages of \(pageSize) bytes: it is too large to rewrite at start; to \
                    write less per event, stop flagsd and run: sqlite3 \(path) 'PRAGMA journal_mode = DELETE; \
                    PRAGMA page_size = \(EventsFile.pageSize); VACUUM; PRAGMA journal_mode = WAL'
                    """, metadata: metadata)
                return
            }
            logger.notice(
                "rewriting the events file with pages of \(EventsFile.pageSize) bytes, once", metadata: metadata)
            let started = ContinuousClock.now
            try queue.writeWithoutTransaction { db in
                // The page size of a file in WAL mode cannot change: leave WAL mode (the pool sets it again).
                try db.execute(sql: "PRAGMA journal_mode = DELETE")
                try db.execute(sql: "PRAGMA page_size = \(EventsFile.pageSize)")
                try db.execute(sql: "VACUUM")
            }
            logger.notice(
                "rewrote the events file with pages of \(EventsFile.pageSize) bytes in \(started.duration(to: .now))",
                metadata: metadata)
        } catch let error as DatabaseError where error.resultCode == .SQLITE_BUSY {
            logger.warning("the events file keeps its pages: another process has it open", metadata: metadata)
        } catch {
            logger.warning("the events file keeps its pages: \(error)", metadata: metadata)
        }
    }

    /// Opens a pool that syncs every commit, creating the file privately when missing; the events file's with its
    /// pages and checkpoints (``EventsFile``).
    private static func openPool(at path: String, logger: Logger, events: Bool = false) throws -> DatabasePool {
        try createPrivately(path, logger: logger)
        var configuration = Configuration()
        configuration.busyMode = .timeout(10)
        configuration.prepareDatabase { db in
            if events {
                // The page size before anything is written (a no-op on a file that has pages already).
                try db.execute(sql: "PRAGMA page_size = \(EventsFile.pageSize)")
                // In pages of the file's size (a file too large to rewrite at start keeps larger ones).
                let pageSize = try Int.fetchOne(db, sql: "PRAGMA page_size") ?? EventsFile.pageSize
                try db.execute(sql: "PRAGMA wal_autocheckpoint = \(EventsFile.checkpointBytes / pageSize)")
            }
            try db.execute(sql: "PRAGMA foreign_keys = ON")
        }
        let pool = try DatabasePool(path: path, configuration: configuration)
        // Opening a WAL pool sets synchronous = NORMAL on the writer after prepareDatabase ran; a commit
        // would then survive a crash of flagsd but not a power failure. Set FULL again, on the writer.
        try pool.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA synchronous = FULL") }
        return pool
    }

    /// Creates a missing database file empty with mode 0600 (SQLite gives its WAL and shared-memory files the same
    /// mode), and a missing folder with mode 0700; warns about an existing file that other users may read.
    private static func createPrivately(_ path: String, logger: Logger) throws {
        let folder = URL(fileURLWithPath: path).deletingLastPathComponent()
        if !FileManager.default.fileExists(atPath: folder.path) {
            try FileManager.default.createDirectory(
                at: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        }
        let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL, 0o600)
        if descriptor >= 0 {
            #if canImport(Glibc)
                Glibc.close(descriptor)
            #else
                Darwin.close(descriptor)
            #endif
        } else if errno == EEXIST,
            let mode = (try? FileManager.default.attributesOfItem(atPath: path))?[.posixPermissions] as? Int,
            mode & 0o077 != 0
        {
            logger.warning(
                "other users may read the database file: it holds the audit log and token hashes; restrict it with chmod 600 (and its -wal and -shm files)",
                metadata: ["path": .string(path), "mode": .string(String(mode, radix: 8))])
        }
    }

    /// The clock's time, truncated to the milliseconds that are stored.
    private func currentTime() -> Date {
        Date(milliseconds: now().milliseconds)
    }

    /// Closes the database; later calls fail with `unavailable`.
    public func close() throws {
        try events.close()
        try pool.close()
    }

    /// The writer connection's `PRAGMA synchronous` (2 is FULL), for tests.
    package func writerSynchronousMode() async throws -> Int {
        try await pool.writeWithoutTransaction { db in
            try Int.fetchOne(db, sql: "PRAGMA synchronous") ?? -1
        }
    }

    /// An integer setting of the events' writer connection (`PRAGMA synchronous`, 2 being FULL; `page_size`,
    /// `wal_autocheckpoint`), for tests.
    package func eventsWriterSetting(_ pragma: String) async throws -> Int {
        try await events.writeWithoutTransaction { db in
            try Int.fetchOne(db, sql: "PRAGMA \(pragma)") ?? -1
        }
    }

    /// The writer connection's `PRAGMA journal_mode`, for tests.
    package func journalMode() async throws -> String {
        try await pool.writeWithoutTransaction { db in
            try String.fetchOne(db, sql: "PRAGMA journal_mode") ?? ""
        }
    }

    // MARK: Namespaces

    public func namespaces() async throws -> [NamespaceRecord] {
        try await access {
            try await self.pool.read { db in
                try Row.fetchAll(db, sql: "SELECT * FROM namespace WHERE deleted_ms IS NULL ORDER BY name")
                    .map(Self.namespaceRecord)
            }
        }
    }

    public func namespace(_ name: String) async throws -> NamespaceState? {
        try await access {
            try await self.pool.read { db in
                try Self.liveNamespaceRow(db, name).map { try self.state($0, db) }
            }
        }
    }

    public func createNamespace(_ flagSet: FlagSet, reasonPolicy: ReasonPolicy, request: ChangeRequest) async throws
        -> CommittedChange
    {
        let time = currentTime()
        let epoch = makeEpoch()
        return try await access {
            try await self.pool.write { db in
                if try Self.liveNamespaceRow(db, flagSet.namespace) != nil {
                    throw NamespaceStep.alreadyExists(flagSet.namespace)
                }
                let (state, record) = try NamespaceStep.creating(
                    flagSet, reasonPolicy: reasonPolicy, request: request, epoch: epoch, at: time)
                try db.execute(
                    sql: """
                        INSERT INTO namespace (epoch, name, version, reason_policy, created_ms, updated_ms)
                        VALUES (?, ?, 1, ?, ?, ?)
                        """,
                    arguments: [epoch, flagSet.namespace, reasonPolicy.rawValue, time.milliseconds, time.milliseconds])
                for object in state.flagSet.storedObjects { try Self.insert(object, epoch: epoch, into: db) }
                try Self.append(record, action: .namespaceCreate, to: db)
                return CommittedChange(state: state, record: record)
            }
        }.remembered(by: self)
    }

    public func setReasonPolicy(_ policy: ReasonPolicy, of namespace: String, by author: ChangeAuthor) async throws -> (
        record: NamespaceRecord, changed: Bool
    ) {
        let time = currentTime()
        return try await access {
            try await self.pool.write { db in
                guard let row = try Self.liveNamespaceRow(db, namespace) else {
                    throw StorageError.namespaceNotFound(namespace)
                }
                let old = try Self.namespaceRecord(row)
                guard old.reasonPolicy != policy else { return (old, false) }
                try db.execute(
                    sql: "UPDATE namespace SET reason_policy = ?, updated_ms = ? WHERE epoch = ?",
                    arguments: [policy.rawValue, time.milliseconds, old.epoch])
                let note = NamespaceStep.settingReasonPolicy(of: old, to: policy)
                try Self.appendAudit(
                    time: time, author: author, action: .namespaceUpdate, namespace: namespace, version: nil,
                    summary: note.summary, changes: note.changes, targets: [], to: db)
                return (try Self.namespaceRecord(Self.liveNamespaceRow(db, namespace)!), true)
            }
        }
    }

    public func deleteNamespace(_ name: String, by author: ChangeAuthor) async throws {
        let time = currentTime()
        try await access {
            try await self.pool.write { db in
                guard let row = try Self.liveNamespaceRow(db, name) else { throw StorageError.namespaceNotFound(name) }
                let state = try self.state(row, db)
                try db.execute(
                    sql: "UPDATE namespace SET deleted_ms = ? WHERE epoch = ?",
                    arguments: [time.milliseconds, state.record.epoch])
                let note = NamespaceStep.deleting(state)
                try Self.appendAudit(
                    time: time, author: author, action: .namespaceDelete, namespace: name,
                    version: state.record.version, summary: note.summary, changes: note.changes, targets: [], to: db)
            }
        }
    }

    // MARK: Changes

    public func change(
        _ namespace: String, _ request: ChangeRequest, mutation: @escaping @Sendable (FlagSet) throws -> FlagSet
    ) async throws -> CommittedChange {
        let time = currentTime()
        return try await access {
            try await self.pool.write { db in
                guard let row = try Self.liveNamespaceRow(db, namespace) else {
                    throw StorageError.namespaceNotFound(namespace)
                }
                let state = try self.state(row, db)
                switch try ChangeStep.decide(state, request, at: time, mutation: mutation) {
                case .conflict(let basedOn):
                    throw try Self.conflict(db, current: state.record, basedOn: basedOn)
                case .unchanged:
                    return CommittedChange(state: state, record: nil)
                case .commit(let next, let record):
                    try db.execute(
                        sql: "UPDATE namespace SET version = ?, updated_ms = ? WHERE epoch = ?",
                        arguments: [record.version, time.milliseconds, record.epoch])
                    try Self.write(record.storedWrites(after: next.flagSet), epoch: record.epoch, to: db)
                    try Self.append(record, action: .change, to: db)
                    return CommittedChange(state: next, record: record)
                }
            }
        }.remembered(by: self)
    }

    /// A namespace state from its row, reusing the flag set read for the same epoch and version (otherwise reading
    /// its objects' rows).
    func state(_ row: Row, _ db: Database) throws -> NamespaceState {
        let record = try Self.namespaceRecord(row)
        if let cached = parsed.withLock({ $0[record.epoch] }), cached.version == record.version {
            return NamespaceState(record: record, flagSet: cached.flagSet)
        }
        let objects = try Row.fetchAll(
            db, sql: "SELECT kind, key, position, body FROM namespace_object WHERE epoch = ?",
            arguments: [record.epoch]
        ).map { row in
            StoredObject(kind: row["kind"], key: row["key"], position: row["position"], body: row["body"])
        }
        let state = NamespaceState(record: record, flagSet: try FlagSet(storedObjects: objects, namespace: record.name))
        remember(state)
        return state
    }

    /// Writes what a change touched: its objects' rows, and nothing else.
    static func write(_ writes: StoredObjectWrites, epoch: String, to db: Database) throws {
        for kind in writes.replacedKinds {
            try db.execute(sql: "DELETE FROM namespace_object WHERE epoch = ? AND kind = ?", arguments: [epoch, kind])
        }
        for (kind, key) in writes.deletions {
            try db.execute(
                sql: "DELETE FROM namespace_object WHERE epoch = ? AND kind = ? AND key = ?",
                arguments: [epoch, kind, key])
        }
        for object in writes.upserts { try insert(object, epoch: epoch, into: db) }
    }

    /// Keeps a committed state's flag set, so the next change need not parse the stored text again. Keyed by
    /// epoch and checked against the stored version, so a stale entry is never used.
    func remember(_ state: NamespaceState) {
        parsed.withLock { $0[state.record.epoch] = (state.record.version, state.flagSet) }
    }

    public func changes(in namespace: String, after version: Int64, limit: Int) async throws -> [ChangeRecord] {
        try await access {
            try await self.pool.read { db in
                guard let row = try Self.liveNamespaceRow(db, namespace) else {
                    throw StorageError.namespaceNotFound(namespace)
                }
                let epoch: String = row["epoch"]
                return try Row.fetchAll(
                    db,
                    sql: """
                        SELECT * FROM change WHERE epoch = ? AND version > ? ORDER BY version LIMIT ?
                        """, arguments: [epoch, version, max(0, limit)]
                ).map { try Self.changeRecord($0, namespace: namespace) }
            }
        }
    }

    public func audit(_ query: AuditQuery) async throws -> AuditPage {
        try await access {
            try await self.pool.read { db in
                var arguments: StatementArguments = []
                let sql = query.pageSQL { value in
                    switch value {
                    case .text(let text): arguments += [text]
                    case .integer(let integer): arguments += [integer]
                    case .texts(let texts):
                        arguments += [JSONValue.array(texts.map(JSONValue.string)).serializedString()]
                        return "(SELECT value FROM json_each(?))"
                    }
                    return "?"
                }
                let entries = try Row.fetchAll(db, sql: sql, arguments: arguments).map(Self.auditEntry)
                return AuditPage(fetched: entries, pageSize: query.pageSize)
            }
        }
    }

    // MARK: Tokens

    public func recordAudit(_ note: AuditNote) async throws -> AuditEntry {
        let time = currentTime()
        return try await access {
            try await self.pool.write { db in
                guard try Self.liveNamespaceRow(db, note.namespace) != nil else {
                    throw StorageError.namespaceNotFound(note.namespace)
                }
                let id = try Self.appendAudit(
                    time: time, author: note.author, action: note.action, namespace: note.namespace, version: nil,
                    summary: note.summary, changes: [], targets: note.targets,
                    evidence: note.evidence.map { $0.serializedString(.canonical) }, to: db)
                guard let row = try Row.fetchOne(db, sql: "SELECT * FROM audit WHERE id = ?", arguments: [id]) else {
                    throw StorageError(.corrupt, "the audit entry just written is missing")
                }
                return try Self.auditEntry(row)
            }
        }
    }

    public func tokens() async throws -> [StoredToken] {
        try await access {
            try await self.pool.read { db in
                try Row.fetchAll(db, sql: "SELECT * FROM token ORDER BY created_ms, id").map(Self.storedToken)
            }
        }
    }

    public func createToken(_ token: StoredToken, by author: ChangeAuthor) async throws {
        let time = currentTime()
        try await access {
            try await self.pool.write { db in
                let record = token.record
                if try Row.fetchOne(
                    db, sql: "SELECT 1 FROM token WHERE name = ? AND revoked_ms IS NULL", arguments: [record.name])
                    != nil
                {
                    throw StorageError(
                        .alreadyExists,
                        "a live token is named '\(record.name)' already (choose another name, or revoke that one first)"
                    )
                }
                let namespaces = record.namespaces.map { JSONValue.array($0.map(JSONValue.string)).serializedString() }
                try db.execute(
                    sql: """
                        INSERT INTO token (id, name, role, namespaces, rate_per_minute, secret_hash, created_ms, created_by)
                        VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                        """,
                    arguments: [
                        record.id, record.name, record.role.rawValue, namespaces, record.ratePerMinute,
                        Data(token.secretHash), record.createdAt.milliseconds, record.createdBy,
                    ])
                let scope = record.namespaces.map { " for namespaces \($0.joined(separator: ", "))" } ?? ""
                try Self.appendAudit(
                    time: time, author: author, action: .tokenCreate, namespace: nil, version: nil,
                    summary: "created \(record.role) token \(record.name) (\(record.id))\(scope)",
                    changes: [ObjectChange(kind: .namespace, key: "token", before: nil, after: record.tree)],
                    targets: [record.name, record.id], to: db)
            }
        }
    }

    public func revokeToken(_ idOrName: String, by author: ChangeAuthor) async throws -> TokenRecord {
        let time = currentTime()
        return try await access {
            try await self.pool.write { db in
                let row =
                    try Row.fetchOne(db, sql: "SELECT * FROM token WHERE id = ?", arguments: [idOrName])
                    ?? Row.fetchOne(
                        db, sql: "SELECT * FROM token WHERE name = ? AND revoked_ms IS NULL", arguments: [idOrName])
                guard let row else {
                    throw StorageError(
                        .notFound, "no token has the id or live name '\(idOrName)' (list tokens with GET /v1/tokens)")
                }
                var record = try Self.storedToken(row).record
                guard record.revokedAt == nil else { return record }
                if record.role == .admin, record.namespaces == nil {
                    let others =
                        try Int.fetchOne(
                            db,
                            sql: """
                                SELECT COUNT(*) FROM token WHERE role = 'admin' AND namespaces IS NULL AND revoked_ms IS NULL AND id <> ?
                                """, arguments: [record.id]) ?? 0
                    guard others > 0 else { throw StorageError.lastAdminToken(named: record.name) }
                }
                try db.execute(
                    sql: "UPDATE token SET revoked_ms = ? WHERE id = ?", arguments: [time.milliseconds, record.id])
                let before = record.tree
                record.revokedAt = Date(milliseconds: time.milliseconds)
                try Self.appendAudit(
                    time: time, author: author, action: .tokenRevoke, namespace: nil, version: nil,
                    summary: "revoked token \(record.name) (\(record.id))",
                    changes: [ObjectChange(kind: .namespace, key: "token", before: before, after: record.tree)],
                    targets: [record.name, record.id], to: db)
                return record
            }
        }
    }

    public func checkHealth() async throws {
        try await access {
            _ = try await self.pool.read { db in try Int.fetchOne(db, sql: "SELECT 1") }
        }
    }

    // MARK: Rows

    /// Runs a database operation, turning GRDB errors into `StorageError` and passing others through.
    func access<T: Sendable>(_ operation: () async throws -> T) async throws -> T {
        do {
            return try await operation()
        } catch let error as StorageError {
            throw error
        } catch let error as DatabaseError {
            logger.error("database error", metadata: ["error": "\(error)"])
            throw StorageError(
                .unavailable, "the database refused the operation; flagsd's log has the details",
                diagnostic: error.message ?? "\(error.resultCode)")
        }
    }

    static func liveNamespaceRow(_ db: Database, _ name: String) throws -> Row? {
        try Row.fetchOne(db, sql: "SELECT * FROM namespace WHERE name = ? AND deleted_ms IS NULL", arguments: [name])
    }

    static func namespaceRecord(_ row: Row) throws -> NamespaceRecord {
        let name: String = row["name"]
        let policyText: String = row["reason_policy"]
        guard let policy = ReasonPolicy(rawValue: policyText) else {
            throw StorageError(.corrupt, "namespace '\(name)' has an unknown reason policy '\(policyText)'")
        }
        return NamespaceRecord(
            name: name, epoch: row["epoch"], version: row["version"], reasonPolicy: policy,
            createdAt: Date(milliseconds: row["created_ms"]), updatedAt: Date(milliseconds: row["updated_ms"]))
    }

    static func changeRecord(_ row: Row, namespace: String) throws -> ChangeRecord {
        ChangeRecord(
            namespace: namespace, epoch: row["epoch"], version: row["version"],
            time: Date(milliseconds: row["time_ms"]), actor: row["actor"],
            source: ChangeSource(rawValue: row["source"]), reason: row["reason"], summary: row["summary"],
            changes: try ObjectChange.decodeList(row["changes"]), evidence: try decodeEvidence(row["evidence"]))
    }

    /// Reads stored evidence text; nil when there is none.
    static func decodeEvidence(_ text: String?) throws(StorageError) -> JSONValue? {
        guard let text else { return nil }
        guard let value = try? JSONValue.parse(text) else {
            throw StorageError(.corrupt, "stored evidence is not JSON")
        }
        return value
    }

    static func auditEntry(_ row: Row) throws -> AuditEntry {
        AuditEntry(
            id: row["id"], time: Date(milliseconds: row["time_ms"]), actor: row["actor"],
            source: ChangeSource(rawValue: row["source"]), action: AuditAction(rawValue: row["action"]),
            namespace: row["namespace"], version: row["version"], reason: row["reason"], summary: row["summary"],
            changes: try ObjectChange.decodeList(row["changes"]), evidence: try decodeEvidence(row["evidence"]))
    }

    static func storedToken(_ row: Row) throws -> StoredToken {
        let roleText: String = row["role"]
        guard let role = Role(rawValue: roleText) else {
            throw StorageError(.corrupt, "token \(row["id"] as String) has an unknown role '\(roleText)'")
        }
        var namespaces: [String]?
        if let text: String = row["namespaces"] {
            namespaces = (try? JSONValue.parse(text))?.arrayValue?.compactMap(\.stringValue)
        }
        let revoked: Int64? = row["revoked_ms"]
        let record = TokenRecord(
            id: row["id"], name: row["name"], role: role, namespaces: namespaces,
            ratePerMinute: row["rate_per_minute"], createdAt: Date(milliseconds: row["created_ms"]),
            createdBy: row["created_by"],
            revokedAt: revoked.map(Date.init(milliseconds:)))
        let hash: Data = row["secret_hash"]
        return StoredToken(record: record, secretHash: Array(hash))
    }

    static func conflict(_ db: Database, current: NamespaceRecord, basedOn: SnapshotVersion) throws -> StorageError {
        let last = try Row.fetchOne(
            db, sql: "SELECT actor, time_ms FROM change WHERE epoch = ? AND version = ?",
            arguments: [current.epoch, current.version])
        let lastChange = last.map { (actor: $0["actor"] as String, time: Date(milliseconds: $0["time_ms"])) }
        return ChangeStep.conflict(current: current, basedOn: basedOn, lastChange: lastChange)
    }

    static func append(_ record: ChangeRecord, action: AuditAction, to db: Database) throws {
        let changes = ObjectChange.encodeList(record.changes)
        let evidence = record.evidence.map { $0.serializedString(.canonical) }
        try db.execute(
            sql: """
                INSERT INTO change (epoch, version, time_ms, actor, source, reason, summary, changes, evidence)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
                """,
            arguments: [
                record.epoch, record.version, record.time.milliseconds, record.actor, record.source.rawValue,
                record.reason, record.summary, changes, evidence,
            ])
        try appendAudit(
            time: record.time, author: ChangeAuthor(actor: record.actor, source: record.source, reason: record.reason),
            action: action, namespace: record.namespace, version: record.version, summary: record.summary,
            changes: record.changes, targets: record.auditTargets, evidence: evidence, to: db)
    }

    @discardableResult
    static func appendAudit(
        time: Date, author: ChangeAuthor, action: AuditAction, namespace: String?, version: Int64?, summary: String,
        changes: [ObjectChange], targets: [String], evidence: String? = nil, to db: Database
    ) throws -> Int64 {
        let reason = author.reason?.trimmingCharacters(in: .whitespacesAndNewlines)
        try db.execute(
            sql: """
                INSERT INTO audit (time_ms, actor, source, action, namespace, version, reason, summary, changes, evidence)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """,
            arguments: [
                time.milliseconds, author.actor, author.source.rawValue, action.rawValue, namespace, version,
                reason?.isEmpty == false ? reason : nil, summary, ObjectChange.encodeList(changes), evidence,
            ])
        let id = db.lastInsertedRowID
        for target in Set(targets) {
            try db.execute(sql: "INSERT INTO audit_target (target, audit_id) VALUES (?, ?)", arguments: [target, id])
        }
        return id
    }
}

extension CommittedChange {
    /// Hands a committed state to the store's cache once the transaction has committed.
    fileprivate func remembered(by store: SQLiteFlagStore) -> CommittedChange {
        if changed { store.remember(state) }
        return self
    }
}
