import Foundation
import SwitchyardCore
@testable import SwitchyardSQLite
@testable import SwitchyardStorage
import Testing

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

    /// Event batches leave the copying of the write-ahead log to the checkpointer's connection: the log stays
    /// small (each batch's frames are copied and the log starts over), and a change committing on the writer seldom
    /// has to copy it itself (its automatic checkpoint is 16,000 pages away).
    @Test func eventBatchesKeepTheWriteAheadLogSmallWithoutTheWriter() async throws {
        defer { try? FileManager.default.removeItem(at: folder) }
        let store = try await SQLiteFlagStore(path: path)
        _ = try await store.createNamespace(Fixtures.rider(), reasonPolicy: .never, request: Fixtures.request())
        #expect(try await store.writerAutocheckpointPages() == SQLiteFlagStore.writerCheckpointPages)
        let promos = "plugin_switch_feed_promos", weather = "plugin_switch_feed_weather"
        let start = Date()
        var largest = 0
        for batch in 0..<60 {
            // 200 sessions over 200 minutes: about 1,600 counters written per batch.
            let events = (0..<200).map { index in
                StoredEvent(id: "b\(batch)-\(index)", time: start - Double(index * 60), city: "lagos", cohorts: ["beta"],
                            payload: .session(crashed: false, switches: [promos, weather], variants: [:]))
            }
            _ = try await store.ingestEvents(events, in: "rider", receivedAt: start)
            let size = (try FileManager.default.attributesOfItem(atPath: path + "-wal")[.size] as? Int) ?? 0
            largest = max(largest, size)
        }
        // Without the checkpointer the log grows with every batch (to about 20 MB here) until the writer copies it.
        #expect(largest < 8 << 20, "the write-ahead log reached \(largest) bytes")
        try store.close()
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
        _ = try await store.change("rider", Fixtures.request(), mutation: Fixtures.rollout("plugin_switch_feed_weather", 5))
        try store.close()

        store = try await SQLiteFlagStore(path: path)
        let reopened = try #require(try await store.namespace("rider"))
        #expect(reopened.record.version == 2)
        #expect(reopened.flagSet.flag("plugin_switch_feed_weather")?.pluginSwitch?.rollout.basisPoints == 5)
        let next = try await store.change("rider", Fixtures.request(), mutation: Fixtures.rollout("plugin_switch_feed_weather", 6))
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
