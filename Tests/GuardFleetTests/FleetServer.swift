import Foundation
import Logging
import ServiceLifecycle
import SwitchyardCore
import SwitchyardServer
import SwitchyardSQLite
import SwitchyardStorage

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
    static func run(configuration: ServerConfiguration = ServerConfiguration(port: 0), _ body: (FleetServer) async throws -> Void) async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("guard-fleet-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let store = try await SQLiteFlagStore(path: folder.appendingPathComponent("flags.sqlite").path)
        defer { try? store.close() }
        let setup = ChangeAuthor(actor: "setup", source: .api)
        _ = try await store.createNamespace(CrashGuardFleetTests.flagSet(), reasonPolicy: .kills, request: ChangeRequest(author: setup))
        let token = try await store.issueToken(name: "fleet-app", role: .client, namespaces: ["fleet"], by: setup).secret
        var logger = Logger(label: "guard-fleet")
        logger.logLevel = .critical
        let (ports, portContinuation) = AsyncStream<Int>.makeStream()
        let server = try await buildApplication(configuration: configuration, store: store, logger: logger) {
            portContinuation.yield($0)
        }
        let group = ServiceGroup(configuration: .init(services: [server], logger: logger))
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            defer { tasks.cancelAll() }
            guard let port = await ports.first(where: { _ in true }) else { throw CancellationError() }
            try await body(FleetServer(store: store, server: server, url: URL(string: "http://127.0.0.1:\(port)")!, token: token, folder: folder))
            await group.triggerGracefulShutdown()
        }
    }
}
