import Foundation
import GRDB
import InMemoryLogging
import Logging
import SwitchyardCore
import Testing

@testable import SwitchyardSQLite
@testable import SwitchyardStorage

/// What only the SQLite backend promises: durable commits in WAL mode, and state that survives reopening.
struct SQLiteFlagStoreTests {
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("switchyard-sqlite-\(UUID().uuidString)")
    var path: String { folder.appendingPathComponent("nested/flags.sqlite").path }

    @Test func writerSyncsEveryCommitInWALMode() async throws {
        defer { try? FileManager.default.removeItem(at: folder) }
        let store = try await SQLiteFlagStore(path: path)
        #expect(try await store.writerSynchronousMode() == 2)
        #expect(try await store.journalMode() == "wal")
        try store.close()
    }

    /// Client events have a file of their own beside the database: counting them never holds the flags' writer, its
    /// write-ahead log or its checkpoints.
    @Test func eventsAreCountedInAFileOfTheirOwn() async throws {
        defer { try? FileManager.default.removeItem(at: folder) }
        let store = try await SQLiteFlagStore(path: path)
        _ = try await store.createNamespace(Fixtures.rider(), reasonPolicy: .never, request: Fixtures.request())
        _ = try await store.ingestEvents(Self.sessions(3), in: "rider", receivedAt: Date())
        #expect(try await store.eventsWriterSetting("synchronous") == 2)
        try store.close()

        let eventsPath = SQLiteFlagStore.eventsPath(for: path)
        #expect(eventsPath == folder.appendingPathComponent("nested/flags-events.sqlite").path)
        let flags = try DatabaseQueue(path: path)
        #expect(try await flags.read { db in try SQLiteFlagStore.eventTables.filter { try db.tableExists($0) } } == [])
        try flags.close()
        let events = try DatabaseQueue(path: eventsPath)
        #expect(try await events.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM event_id") } == 3)
        try events.close()
    }

    @Test func theEventsFileIsNamedAfterTheDatabase() {
        #expect(
            SQLiteFlagStore.eventsPath(for: "/var/lib/switchyard/flags.sqlite")
                == "/var/lib/switchyard/flags-events.sqlite")
        #expect(
            SQLiteFlagStore.eventsPath(for: "data/flags.db")
                == "\(FileManager.default.currentDirectoryPath)/data/flags-events.db")
        #expect(SQLiteFlagStore.eventsPath(for: "/srv/flags") == "/srv/flags-events")
    }

    /// A database from before the events file kept its event tables; the first opening moves them (ids, counters,
    /// crash records) into the events file, once.
    @Test func aDatabaseFromBeforeMovesItsEventsIntoTheEventsFileOnce() async throws {
        defer { try? FileManager.default.removeItem(at: folder) }
        var store = try await SQLiteFlagStore(path: path)
        let created = try await store.createNamespace(
            Fixtures.rider(), reasonPolicy: .never, request: Fixtures.request())
        let counted = try await store.ingestEvents(Self.sessions(4, crashed: 1), in: "rider", receivedAt: Date())
        #expect(counted.counted.count == 4)
        let countsBefore = try await Self.counts(store)
        let crashesBefore = try await store.crashRecords(in: "rider", from: .distantPast, until: .distantFuture)
        #expect(crashesBefore.count == 1)
        try store.close()

        // Put the file back as it was before: the event tables in it, its last migration v5, no events file.
        let eventsPath = SQLiteFlagStore.eventsPath(for: path)
        let flags = try DatabaseQueue(path: path)
        try flags.inDatabase { db in
            try db.execute(sql: "ATTACH DATABASE ? AS moved", arguments: [eventsPath])
            for table in SQLiteFlagStore.eventTables {
                // The columns the tables had then (the events file's v1): later migrations of the file added more.
                let columns = table == "event_window" ? "namespace, window_ms, kind, value, events" : "*"
                try db.execute(sql: "CREATE TABLE main.\(table) AS SELECT \(columns) FROM moved.\(table)")
            }
            try db.execute(sql: "DETACH DATABASE moved")
            try db.execute(sql: "DELETE FROM grdb_migrations WHERE identifier LIKE 'v6:%'")
            try Self.undoObjectRows(db, flagSet: created.state.flagSet)
        }
        try flags.close()
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: eventsPath + suffix) }

        store = try await SQLiteFlagStore(path: path)
        #expect(try await Self.counts(store) == countsBefore)
        #expect(try await store.crashRecords(in: "rider", from: .distantPast, until: .distantFuture) == crashesBefore)
        // The ids came along: the same events again are duplicates.
        let again = try await store.ingestEvents(Self.sessions(4, crashed: 1), in: "rider", receivedAt: Date())
        #expect(again.duplicates.count == 4)
        try store.close()
        let moved = try DatabaseQueue(path: path)
        #expect(try await moved.read { db in try SQLiteFlagStore.eventTables.filter { try db.tableExists($0) } } == [])
        try moved.close()

        // Opening again copies nothing twice.
        store = try await SQLiteFlagStore(path: path)
        #expect(try await Self.counts(store) == countsBefore)
        try store.close()
    }

    /// The events file has 1 KiB pages and is checkpointed every 64 MiB of log (``SQLiteFlagStore/EventsFile``); a
    /// file from before, with SQLite's 4 KiB pages, is rewritten with 1 KiB ones on opening, its events kept.
    @Test func theEventsFileHasSmallPagesAndAFileFromBeforeIsRewritten() async throws {
        defer { try? FileManager.default.removeItem(at: folder) }
        var store = try await SQLiteFlagStore(path: path)
        _ = try await store.createNamespace(Fixtures.rider(), reasonPolicy: .never, request: Fixtures.request())
        _ = try await store.ingestEvents(Self.sessions(4, crashed: 1), in: "rider", receivedAt: Date())
        #expect(try await store.eventsWriterSetting("page_size") == 1024)
        #expect(try await store.eventsWriterSetting("wal_autocheckpoint") == 65_536)
        let countsBefore = try await Self.counts(store)
        #expect(!countsBefore.isEmpty)
        try store.close()

        let eventsPath = SQLiteFlagStore.eventsPath(for: path)
        try await Self.rewritePages(of: eventsPath, size: 4096)
        store = try await SQLiteFlagStore(path: path)
        #expect(try await store.eventsWriterSetting("page_size") == 1024)
        #expect(try await store.events.read { db in try String.fetchOne(db, sql: "PRAGMA journal_mode") } == "wal")
        #expect(try await Self.counts(store) == countsBefore)
        // The ids were kept: the same events again are duplicates.
        let again = try await store.ingestEvents(Self.sessions(4, crashed: 1), in: "rider", receivedAt: Date())
        #expect(again.duplicates.count == 4)
        try store.close()
    }

    /// An events file that another connection holds open cannot be rewritten: it keeps its pages, and the store
    /// opens and counts as before.
    @Test func anEventsFileHeldOpenElsewhereKeepsItsPages() async throws {
        defer { try? FileManager.default.removeItem(at: folder) }
        let eventsPath = try await storeFromBefore()
        let other = try DatabasePool(path: eventsPath)
        _ = try await other.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM event_id") }
        let logs = InMemoryLogHandler()
        let store = try await SQLiteFlagStore(path: path, logger: Logger(label: "test") { _ in logs })
        #expect(try await store.eventsWriterSetting("page_size") == 4096)
        #expect(try await store.eventsWriterSetting("wal_autocheckpoint") == 16_384, "64 MiB of 4 KiB pages")
        #expect(
            logs.entries.map(\.message.description).contains(
                "the events file keeps its pages: another process has it open"))
        let counted = try await store.ingestEvents(Self.sessions(3), in: "rider", receivedAt: Date())
        #expect(counted.counted.count == 3)
        try store.close()
        try other.close()
    }

    /// An events file too large to rewrite at start keeps its pages, and the log says how to rewrite it offline.
    @Test func anEventsFileTooLargeToRewriteAtStartKeepsItsPages() async throws {
        defer { try? FileManager.default.removeItem(at: folder) }
        let eventsPath = try await storeFromBefore()
        let logs = InMemoryLogHandler()
        SQLiteFlagStore.convertEventsPages(eventsPath, largest: 4096, logger: Logger(label: "test") { _ in logs })
        #expect(try await Self.pageSize(of: eventsPath) == 4096)
        let notice = try #require(logs.entries.first { $0.level == .notice }?.message.description)
        #expect(notice.contains("too large to rewrite at start"))
        #expect(notice.contains("PRAGMA page_size = 1024; VACUUM"))

        SQLiteFlagStore.convertEventsPages(eventsPath, logger: Logger(label: "test") { _ in logs })
        #expect(try await Self.pageSize(of: eventsPath) == 1024)
    }

    /// A store with the rider namespace whose events file has SQLite's 4 KiB pages, as before 1 KiB ones.
    /// - Returns: the events file's path.
    func storeFromBefore() async throws -> String {
        let store = try await SQLiteFlagStore(path: path)
        _ = try await store.createNamespace(Fixtures.rider(), reasonPolicy: .never, request: Fixtures.request())
        try store.close()
        let eventsPath = SQLiteFlagStore.eventsPath(for: path)
        try await Self.rewritePages(of: eventsPath, size: 4096)
        return eventsPath
    }

    /// Gives a SQLite file in WAL mode pages of `size` bytes, as SQLite's defaults made them before.
    static func rewritePages(of path: String, size: Int) async throws {
        let file = try DatabaseQueue(path: path)
        try await file.writeWithoutTransaction { db in
            _ = try String.fetchOne(db, sql: "PRAGMA journal_mode = DELETE")
            try db.execute(sql: "PRAGMA page_size = \(size)")
            try db.execute(sql: "VACUUM")
            _ = try String.fetchOne(db, sql: "PRAGMA journal_mode = WAL")
        }
        try file.close()
        #expect(try await pageSize(of: path) == size)
    }

    /// The page size of a SQLite file, read through a connection of its own.
    static func pageSize(of path: String) async throws -> Int? {
        let file = try DatabaseQueue(path: path)
        defer { try? file.close() }
        return try await file.read { db in try Int.fetchOne(db, sql: "PRAGMA page_size") }
    }

    /// A database from before objects had rows kept each version's flag set as one text; the first opening splits
    /// it into rows (plugin points in their order), and changes go on from there.
    @Test func aDatabaseFromBeforeObjectRowsSplitsItsFlagSetsOnce() async throws {
        defer { try? FileManager.default.removeItem(at: folder) }
        var store = try await SQLiteFlagStore(path: path)
        let created = try await store.createNamespace(
            Fixtures.everyField(), reasonPolicy: .never, request: Fixtures.request())
        let changed = try await store.change("kitchen", Fixtures.request()) { flagSet in
            var flagSet = flagSet
            flagSet.pluginPoints.insert(PluginPointDefinition(name: "a_first", switches: []), at: 0)
            flagSet.crashGuard = CrashGuardPolicy(minimumSessions: 77)
            return flagSet
        }
        try store.close()

        // Put the file back as it was: the flag set as one canonical text in the namespace's row.
        let text = JSONValue.object(changed.state.flagSet.tree(unit: .basisPoints)).serializedString(.canonical)
        let flags = try DatabaseQueue(path: path)
        try flags.inDatabase { db in try Self.undoObjectRows(db, flagSet: changed.state.flagSet) }
        try flags.close()

        store = try await SQLiteFlagStore(path: path)
        let read = try #require(try await store.namespace("kitchen"))
        #expect(read.record == changed.state.record)
        #expect(read.record.epoch == created.state.record.epoch)
        #expect(read.flagSet.pluginPoints.map(\.name) == ["a_first", "home_feed"])
        #expect(JSONValue.object(read.flagSet.tree(unit: .basisPoints)).serializedString(.canonical) == text)
        let next = try await store.change(
            "kitchen", Fixtures.request(), mutation: Fixtures.rollout("plugin_switch_feed_promos", 99))
        #expect(next.state.record.version == 3)
        try store.close()
        let columns = try DatabaseQueue(path: path)
        #expect(
            try await columns.read { db in try db.columns(in: "namespace").map(\.name) }.contains("flag_set") == false)
        try columns.close()

        store = try await SQLiteFlagStore(path: path)
        #expect(
            try await store.namespace("kitchen")?.flagSet.flag("plugin_switch_feed_promos")?.pluginSwitch?.rollout
                .basisPoints == 99)
        try store.close()
    }

    /// Puts a database with one namespace back as it was before migration v7: the flag set as one canonical text in
    /// the namespace's row, no object rows.
    static func undoObjectRows(_ db: Database, flagSet: FlagSet) throws {
        try db.execute(sql: "DROP TABLE namespace_object")
        try db.execute(sql: "ALTER TABLE namespace ADD COLUMN flag_set TEXT NOT NULL DEFAULT ''")
        try db.execute(
            sql: "UPDATE namespace SET flag_set = ?",
            arguments: [JSONValue.object(flagSet.tree(unit: .basisPoints)).serializedString(.canonical)])
        try db.execute(sql: "DELETE FROM grdb_migrations WHERE identifier LIKE 'v7:%'")
    }

    /// Sessions of the rider fixture, in Lagos, the first `crashed` of them crashed.
    static func sessions(_ count: Int, crashed: Int = 0) -> [StoredEvent] {
        let start = Date(timeIntervalSince1970: (Date().timeIntervalSince1970 / 60).rounded(.down) * 60)
        return (0..<count).map { index in
            StoredEvent(
                id: "session-\(index)", time: start, city: "lagos", cohorts: ["beta"],
                payload: .session(crashed: index < crashed, switches: ["plugin_switch_feed_promos"], variants: [:]),
                unit: "unit-\(index)")
        }
    }

    static func counts(_ store: SQLiteFlagStore) async throws -> [EventCount] {
        try await store.eventCounts(
            EventCountQuery(namespace: "rider", from: Date(timeIntervalSince1970: 0), until: Date() + 3600))
    }

    /// The database holds the audit log and token hashes: only flagsd's user may read it, its WAL and its folder.
    @Test func theFileItsJournalsAndTheFolderAreCreatedForThisUserOnly() async throws {
        defer { try? FileManager.default.removeItem(at: folder) }
        let store = try await SQLiteFlagStore(path: path)
        _ = try await store.createNamespace(Fixtures.rider(), reasonPolicy: .never, request: Fixtures.request())
        func mode(_ path: String) throws -> Int {
            try #require(try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int)
        }
        #expect(try mode(path) == 0o600)
        #expect(try mode(path + "-wal") == 0o600)
        #expect(try mode(path + "-shm") == 0o600)
        #expect(try mode(SQLiteFlagStore.eventsPath(for: path)) == 0o600)
        #expect(try mode(SQLiteFlagStore.eventsPath(for: path) + "-wal") == 0o600)
        #expect(try mode(URL(fileURLWithPath: path).deletingLastPathComponent().path) == 0o700)
        try store.close()
        // An existing file keeps the mode its operator gave it.
        try FileManager.default.setAttributes([.posixPermissions: 0o640], ofItemAtPath: path)
        let reopened = try await SQLiteFlagStore(path: path)
        #expect(try mode(path) == 0o640)
        #expect(try await reopened.namespace("rider") != nil)
        try reopened.close()
    }

    @Test func versionsContinueAfterReopeningTheFile() async throws {
        defer { try? FileManager.default.removeItem(at: folder) }
        var store = try await SQLiteFlagStore(path: path)
        _ = try await store.createNamespace(Fixtures.rider(), reasonPolicy: .never, request: Fixtures.request())
        _ = try await store.change(
            "rider", Fixtures.request(), mutation: Fixtures.rollout("plugin_switch_feed_weather", 5))
        try store.close()

        store = try await SQLiteFlagStore(path: path)
        let reopened = try #require(try await store.namespace("rider"))
        #expect(reopened.record.version == 2)
        #expect(reopened.flagSet.flag("plugin_switch_feed_weather")?.pluginSwitch?.rollout.basisPoints == 5)
        let next = try await store.change(
            "rider", Fixtures.request(), mutation: Fixtures.rollout("plugin_switch_feed_weather", 6))
        #expect(next.state.record.version == 3)
        try store.close()
    }

    @Test func aDeletedNamespaceKeepsItsHistoryBesideItsSuccessor() async throws {
        defer { try? FileManager.default.removeItem(at: folder) }
        let store = try await SQLiteFlagStore(path: path)
        let first = try await store.createNamespace(Fixtures.rider(), reasonPolicy: .never, request: Fixtures.request())
        try await store.deleteNamespace("rider", by: Fixtures.editor)
        _ = try await store.createNamespace(Fixtures.rider(), reasonPolicy: .never, request: Fixtures.request())
        // The old epoch's history is kept beside the new one's.
        let actions = try await store.audit(AuditQuery(namespace: "rider", limit: 10)).entries.map(\.action)
        #expect(actions == [.namespaceCreate, .namespaceDelete, .namespaceCreate])
        #expect(first.state.record.epoch != (try await store.namespace("rider")?.record.epoch))
        try store.close()
    }

    @Test func anUnopenableFileFailsWithAClearError() async throws {
        defer { try? FileManager.default.removeItem(at: folder) }
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let notADatabase = folder.appendingPathComponent("garbage.sqlite")
        try Data(repeating: 0x41, count: 4096).write(to: notADatabase)
        await #expect {
            try await SQLiteFlagStore(path: notADatabase.path)
        } throws: { error in
            let error = error as? StorageError
            // flagsd prints the whole description when it cannot start; the message alone never names the file.
            return error?.kind == .unavailable && error?.description.contains(notADatabase.path) == true
                && error?.message.contains(notADatabase.path) == false
        }
    }
}
