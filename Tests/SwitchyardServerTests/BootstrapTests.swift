import Foundation
import Logging
import SwitchyardCore
import SwitchyardServer
import SwitchyardStorage
import Testing

/// First start: seeding from flag files and the first admin token.
struct BootstrapTests {
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("flagsd-bootstrap-\(UUID().uuidString)")
    var logger: Logger {
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        return logger
    }

    func flags(_ yaml: String) throws -> String {
        let directory = folder.appendingPathComponent("Flags")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try yaml.write(to: directory.appendingPathComponent("rider.yaml"), atomically: true, encoding: .utf8)
        return directory.path
    }

    static let riderYAML = """
        namespace: rider
        kill_switches:
          kill_feed: {}
        plugin_points:
          - name: feed
            kill_switch: kill_feed
            switches: [plugin_switch_feed_promos]
        flags:
          plugin_switch_feed_promos:
            rollout: 12.34
        """

    @Test func anEmptyStoreIsSeededOnceAndGetsAGeneratedAdminToken() async throws {
        defer { try? FileManager.default.removeItem(at: folder) }
        let store = try await SQLiteFlagStore(path: folder.appendingPathComponent("flags.sqlite").path)
        defer { try? store.close() }
        let directory = try flags(Self.riderYAML)
        let first = try await bootstrap(store: store, flagsDirectory: directory, adminToken: nil, logger: logger)
        #expect(first.seededNamespaces == ["rider"])
        let token = try #require(first.generatedAdminToken)
        #expect(token.hasPrefix("sy_admin_"))
        let rider = try #require(try await store.namespace("rider"))
        #expect(rider.flagSet.flag("plugin_switch_feed_promos")?.pluginSwitch?.rollout.basisPoints == 1234)
        #expect(try await store.changes(in: "rider", after: 0, limit: 5).first?.source == .apply)
        #expect(try await store.tokens().first?.secretHash == TokenSecret.hash(token))

        let second = try await bootstrap(store: store, flagsDirectory: directory, adminToken: nil, logger: logger)
        #expect(second.seededNamespaces.isEmpty)
        #expect(second.generatedAdminToken == nil)
        #expect(try await store.namespace("rider")?.record.version == 1)
    }

    @Test func theAdminTokenComesFromTheEnvironmentWhenGiven() async throws {
        defer { try? FileManager.default.removeItem(at: folder) }
        let store = try await SQLiteFlagStore(path: folder.appendingPathComponent("flags.sqlite").path)
        defer { try? store.close() }
        let report = try await bootstrap(store: store, flagsDirectory: nil, adminToken: "a-long-enough-admin-secret", logger: logger)
        #expect(report.adminTokenFromEnvironment)
        #expect(report.generatedAdminToken == nil)
        let stored = try #require(try await store.tokens().first)
        #expect(stored.record.role == .admin)
        #expect(stored.secretHash == TokenSecret.hash("a-long-enough-admin-secret"))
        #expect(try await store.namespaces().isEmpty)
    }

    @Test func aShortAdminTokenIsRefused() async throws {
        defer { try? FileManager.default.removeItem(at: folder) }
        let store = try await SQLiteFlagStore(path: folder.appendingPathComponent("flags.sqlite").path)
        defer { try? store.close() }
        await #expect(throws: BootstrapError.self) {
            try await bootstrap(store: store, flagsDirectory: nil, adminToken: "short", logger: logger)
        }
    }

    @Test func invalidFlagFilesStopTheStartNamingEveryProblem() async throws {
        defer { try? FileManager.default.removeItem(at: folder) }
        let store = try await SQLiteFlagStore(path: folder.appendingPathComponent("flags.sqlite").path)
        defer { try? store.close() }
        let directory = try flags("namespace: rider\nflags:\n  plugin_switch_x:\n    rollot: 5\n")
        do {
            _ = try await bootstrap(store: store, flagsDirectory: directory, adminToken: nil, logger: logger)
            Issue.record("expected a BootstrapError")
        } catch let error as BootstrapError {
            #expect(error.description.contains("flags.plugin_switch_x.rollot"))
        }
        #expect(try await store.namespaces().isEmpty)
    }

    @Test func aMissingFlagFolderSeedsNothing() async throws {
        defer { try? FileManager.default.removeItem(at: folder) }
        let store = try await SQLiteFlagStore(path: folder.appendingPathComponent("flags.sqlite").path)
        defer { try? store.close() }
        let report = try await bootstrap(store: store, flagsDirectory: folder.appendingPathComponent("none").path, adminToken: nil, logger: logger)
        #expect(report.seededNamespaces.isEmpty)
    }
}
