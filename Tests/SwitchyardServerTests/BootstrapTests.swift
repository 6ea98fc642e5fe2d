import Foundation
import HTTPTypes
import Logging
import SwitchyardCore
import SwitchyardSQLite
import SwitchyardServer
import SwitchyardStorage
import SwitchyardWire
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

    @Test func anEmptyStoreIsSeededOnceAndGetsAGeneratedAdminTokenWrittenToAPrivateFile() async throws {
        defer { try? FileManager.default.removeItem(at: folder) }
        let store = try await SQLiteFlagStore(path: folder.appendingPathComponent("flags.sqlite").path)
        defer { try? store.close() }
        let directory = try flags(Self.riderYAML)
        let file = folder.appendingPathComponent("secrets/admin-token").path
        let first = try await bootstrap(
            store: store, flagsDirectory: directory, adminToken: nil, adminTokenFile: file, logger: logger)
        #expect(first.seededNamespaces == ["rider"])
        let token = try #require(first.generatedAdminToken)
        #expect(token.hasPrefix("sy_admin_"))
        #expect(first.adminTokenFile == file)
        #expect(try String(contentsOfFile: file, encoding: .utf8) == token + "\n")
        #expect(try FileManager.default.attributesOfItem(atPath: file)[.posixPermissions] as? Int == 0o600)
        #expect(
            try FileManager.default.attributesOfItem(atPath: folder.appendingPathComponent("secrets").path)[
                .posixPermissions] as? Int == 0o700)
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: folder.appendingPathComponent("secrets").path) == [
                "admin-token"
            ])
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
        let report = try await bootstrap(
            store: store, flagsDirectory: nil, adminToken: "a-long-enough-admin-secret", logger: logger)
        #expect(report.adminTokenFromEnvironment)
        #expect(report.generatedAdminToken == nil)
        let stored = try #require(try await store.tokens().first)
        #expect(stored.record.role == .admin)
        #expect(stored.secretHash == TokenSecret.hash("a-long-enough-admin-secret"))
        #expect(try await store.namespaces().isEmpty)
    }

    /// The token is written before it is stored: when it cannot be written, none is stored, and the next start
    /// (with a writable folder, or SWITCHYARD_ADMIN_TOKEN) creates it.
    @Test func aGeneratedAdminTokenThatCannotBeWrittenIsNotStored() async throws {
        defer { try? FileManager.default.removeItem(at: folder) }
        let store = try await SQLiteFlagStore(path: folder.appendingPathComponent("flags.sqlite").path)
        defer { try? store.close() }
        let blocker = folder.appendingPathComponent("not-a-folder")
        try "x".write(to: blocker, atomically: true, encoding: .utf8)
        do {
            _ = try await bootstrap(
                store: store, flagsDirectory: nil, adminToken: nil,
                adminTokenFile: blocker.appendingPathComponent("admin-token").path, logger: logger)
            Issue.record("expected a BootstrapError")
        } catch let error as BootstrapError {
            #expect(error.description.contains("cannot write the first admin token"), "\(error)")
            #expect(error.description.contains("SWITCHYARD_ADMIN_TOKEN"), "\(error)")
        }
        #expect(try await store.tokens().isEmpty)
        let file = folder.appendingPathComponent("admin-token").path
        let report = try await bootstrap(
            store: store, flagsDirectory: nil, adminToken: nil, adminTokenFile: file, logger: logger)
        #expect(
            try await store.tokens().first?.secretHash == TokenSecret.hash(try #require(report.generatedAdminToken)))
    }

    /// Standard output and the log end up in container and journal logs: off a terminal, flagsd says where the
    /// generated token is, never what it is.
    @Test func flagsdOffATerminalWritesTheGeneratedTokenToAFileAndNeverToItsOutput() async throws {
        defer { try? FileManager.default.removeItem(at: folder) }
        let database = folder.appendingPathComponent("data/flags.sqlite").path
        let child = try ChildFlagsd(database: database, folder: folder, adminToken: nil, logLevel: "info")
        defer { child.kill() }
        let port = try await child.port()
        let file = folder.appendingPathComponent("data/admin-token").path
        let secret = try String(contentsOfFile: file, encoding: .utf8).trimmingCharacters(in: .newlines)
        #expect(secret.hasPrefix("sy_admin_"))
        #expect(try FileManager.default.attributesOfItem(atPath: file)[.posixPermissions] as? Int == 0o600)
        let admin = LiveClient(base: URL(string: "http://127.0.0.1:\(port)")!, token: secret)
        #expect(try await admin.send("GET", "/v1/tokens").status == .ok)
        let output = child.output.joined(separator: "\n")
        #expect(output.contains("created the first admin token") && output.contains(file), "\(output)")
        #expect(!output.contains(secret))
        #expect(!output.contains("sy_admin_"))
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
        let report = try await bootstrap(
            store: store, flagsDirectory: folder.appendingPathComponent("none").path, adminToken: nil, logger: logger)
        #expect(report.seededNamespaces.isEmpty)
    }
}
