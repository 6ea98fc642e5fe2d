import Foundation
import LiveFlagsdSupport
import SwitchyardCore
import SwitchyardSQLite
import SwitchyardServer
import SwitchyardStorage
import SwitchyardWire

/// A live flagsd on a free loopback port over a fresh SQLite file that holds the fleet's namespace
/// (`CrashGuardFleetTests.flagSet()`), with a client token for it.
struct FleetServer: Sendable {
    let store: SQLiteFlagStore
    let server: FlagsServer
    let url: URL
    /// The fleet's client token.
    let token: String
    /// A fresh folder, removed afterwards: the database's, and the devices'.
    let folder: URL

    /// Runs `body` against a new live flagsd, then shuts it down gracefully and removes its folder.
    static func run(
        configuration: ServerConfiguration = ServerConfiguration(port: 0), _ body: (FleetServer) async throws -> Void
    ) async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("guard-fleet-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let store = try await SQLiteFlagStore(path: folder.appendingPathComponent("flags.sqlite").path)
        defer { try? store.close() }
        let setup = ChangeAuthor(actor: "setup", source: .api)
        _ = try await store.createNamespace(
            CrashGuardFleetTests.flagSet(), reasonPolicy: .kills, request: ChangeRequest(author: setup))
        let token = try await store.issueToken(name: "fleet-app", role: .client, namespaces: ["fleet"], by: setup)
            .secret
        try await withLiveFlagsd(store: store, configuration: configuration) { server, port in
            try await body(
                FleetServer(
                    store: store, server: server, url: URL(string: "http://127.0.0.1:\(port)")!, token: token,
                    folder: folder))
        }
    }
}
