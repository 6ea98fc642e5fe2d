import ClientTestSupport
import Foundation
import SwitchyardCore
import Testing

@testable import SwitchyardClient

struct SnapshotCacheTests {
    func withCache(_ body: (SnapshotCache, TemporaryDirectory) throws -> Void) throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        try body(SnapshotCache(directory: directory.url, namespace: "rider", maximumSnapshotSize: 1 << 20), directory)
    }

    @Test func aStoredSnapshotReadsBackWithItsFetchTime() throws {
        try withCache { cache, _ in
            let snapshot = Fixtures.snapshot(version: 12, on: ["plugin_switch_feed_promos"])
            let fetched = Date(timeIntervalSince1970: 1_795_000_123.456)
            try cache.store(snapshot, fetchedAt: fetched)
            let entry = try #require(try cache.load())
            #expect(SnapshotDocument.encode(entry.snapshot) == SnapshotDocument.encode(snapshot))
            #expect(entry.fetchedAt == Date(timeIntervalSince1970: 1_795_000_123.456))
            #expect(entry.verifiedAt == entry.fetchedAt)
        }
    }

    @Test func noFileMeansNoCache() throws {
        try withCache { cache, _ in
            let entry = try cache.load()
            #expect(entry == nil)
        }
    }

    @Test func replacingTheCacheLeavesNoTemporaryFiles() throws {
        try withCache { cache, directory in
            for version in 1...5 { try cache.store(Fixtures.snapshot(version: Int64(version)), fetchedAt: Date()) }
            let files = try FileManager.default.contentsOfDirectory(atPath: directory.url.path)
            #expect(files == [SnapshotCache.fileName])
            let entry = try cache.load()
            #expect(entry?.snapshot.version == 5)
        }
    }

    @Test func anEmptyFileIsRefusedAsCorrupt() throws {
        try withCache { cache, _ in
            try Data().write(to: cache.fileURL)
            let error = #expect(throws: ClientError.self) { try cache.load() }
            #expect(error?.kind == .corruptFile)
            #expect(error?.message.contains("empty") == true)
        }
    }

    @Test func aTruncatedFileIsRefusedAsCorrupt() throws {
        try withCache { cache, _ in
            try cache.store(Fixtures.snapshot(version: 3), fetchedAt: Date())
            let bytes = try Data(contentsOf: cache.fileURL)
            try bytes.prefix(bytes.count - 40).write(to: cache.fileURL)
            let error = #expect(throws: ClientError.self) { try cache.load() }
            #expect(error?.kind == .corruptFile)
            #expect(error?.message.contains("truncated") == true)
        }
    }

    @Test func aFileTruncatedInsideItsHeaderIsRefusedAsCorrupt() throws {
        try withCache { cache, _ in
            try Data((SnapshotCache.magic + "\n{\"body_si").utf8).write(to: cache.fileURL)
            let error = #expect(throws: ClientError.self) { try cache.load() }
            #expect(error?.kind == .corruptFile)
        }
    }

    @Test func aFileAlteredOnDiskFailsItsChecksum() throws {
        try withCache { cache, _ in
            try cache.store(Fixtures.snapshot(version: 3, on: ["plugin_switch_feed_promos"]), fetchedAt: Date())
            var bytes = [UInt8](try Data(contentsOf: cache.fileURL))
            let range = try #require(bytes.firstRange(of: Array("10000".utf8)))
            bytes.replaceSubrange(range, with: Array("09999".utf8))
            try Data(bytes).write(to: cache.fileURL)
            let error = #expect(throws: ClientError.self) { try cache.load() }
            #expect(error?.kind == .corruptFile)
            #expect(error?.message.contains("checksum") == true)
        }
    }

    @Test func aFileThatIsNotACacheIsRefused() throws {
        try withCache { cache, _ in
            try Data(SnapshotDocument.encode(Fixtures.snapshot(version: 3))).write(to: cache.fileURL)
            let error = #expect(throws: ClientError.self) { try cache.load() }
            #expect(error?.kind == .corruptFile)
            #expect(error?.message.contains("not a Switchyard snapshot cache") == true)
        }
    }

    @Test func theCacheOfAnotherNamespaceIsRefused() throws {
        try withCache { cache, directory in
            let driverCache = SnapshotCache(directory: directory.url, namespace: "driver", maximumSnapshotSize: 1 << 20)
            try driverCache.store(Fixtures.snapshot(version: 3, namespace: "driver"), fetchedAt: Date())
            let error = #expect(throws: ClientError.self) { try cache.load() }
            #expect(error?.kind == .wrongNamespace)
            #expect(error?.message.contains("driver") == true)
        }
    }

    @Test func aServerConfirmationMovesTheVerifiedTimeForThatVersionOnly() throws {
        try withCache { cache, _ in
            let fetched = Date(timeIntervalSince1970: 1_795_000_000)
            try cache.store(Fixtures.snapshot(version: 3), fetchedAt: fetched)
            try cache.storeVerified(epoch: Fixtures.epoch, version: 3, at: fetched.addingTimeInterval(600))
            let confirmed = try cache.load()
            #expect(confirmed?.verifiedAt == fetched.addingTimeInterval(600))
            try cache.storeVerified(epoch: Fixtures.epoch, version: 2, at: fetched.addingTimeInterval(900))
            let otherVersion = try cache.load()
            #expect(otherVersion?.verifiedAt == fetched)
        }
    }
}
