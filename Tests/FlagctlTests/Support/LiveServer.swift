import FlagctlCommands
import Foundation
import LiveFlagsdSupport
import SwitchyardCore
import SwitchyardFlagFiles
import SwitchyardSQLite
import SwitchyardServer
import SwitchyardStorage
import SwitchyardWire
import Testing

/// A live flagsd: the real application (`buildApplication`) on a random loopback port over a fresh SQLite file,
/// seeded with namespace `rider` from Flags/rider.yaml, with a token per role.
///
/// ```swift
/// try await LiveServer.run { server in
///     let result = await server.flagctl("get", "plugin_switch_feed_promos")
/// }
/// ```
struct LiveServer: Sendable {
    /// The server's base URL: `http://127.0.0.1:PORT`.
    let url: String
    /// Secrets by token name: `admin` (admin), `amara` and `bob` (editors, release managers), `app` (client),
    /// `staging-only` (an editor limited to namespace rider-staging).
    let tokens: [String: String]
    /// A scratch folder of this test: the config file lives here.
    let folder: String
    let store: SQLiteFlagStore

    /// The config file flagctl uses in these tests (never the user's).
    var configPath: String { folder + "/config/flagctl.json" }

    /// Starts a server, runs `body`, and shuts the server down gracefully.
    ///
    /// - Parameters:
    ///   - namespaces: namespaces to create from Flags/rider.yaml (by the actor `setup`).
    ///   - bootstrapped: seed instead as flagsd does on its first start (`bootstrap`), so the first change is
    ///     `flagsd`'s, as a real deployment's is.
    static func run<T: Sendable>(
        namespaces: [String] = ["rider"], bootstrapped: Bool = false,
        _ body: @Sendable (LiveServer) async throws -> T
    ) async throws -> T {
        let folder = NSTemporaryDirectory() + "flagctl-live-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let store = try await SQLiteFlagStore(path: folder + "/flags.sqlite")
        defer { try? store.close() }
        let setup = ChangeAuthor(actor: "setup", source: .apply, reason: "test setup")
        let rider = try #require(FlagDirectory(reading: TestPaths.flags).file(namespace: "rider")).flagSet
        var tokens: [String: String] = [:]
        for (name, role, limit) in [
            ("admin", Role.admin, nil), ("amara", .editor, nil), ("bob", .editor, nil),
            ("app", .client, nil), ("pipeline", .reporter, ["rider"]),
            ("staging-only", .editor, ["rider-staging"]),
        ] as [(String, Role, [String]?)] {
            tokens[name] = try await store.issueToken(name: name, role: role, namespaces: limit, by: setup).secret
        }
        if bootstrapped {
            // As flagsd's `bootstrap` seeds on a first start from `--flags Flags` (run from the repository).
            let author = ChangeAuthor(actor: "flagsd", source: .apply, reason: "first start: seeded from flag files")
            _ = try await store.createNamespace(
                rider, reasonPolicy: .kills,
                request: ChangeRequest(author: author, summary: "seeded namespace rider from Flags/rider.yaml"))
        }
        for name in namespaces where !bootstrapped {
            var flagSet = rider
            flagSet.namespace = name
            _ = try await store.createNamespace(
                flagSet, reasonPolicy: .kills,
                request: ChangeRequest(author: setup, summary: "seeded namespace \(name) from Flags/rider.yaml"))
        }
        return try await withLiveFlagsd(store: store, configuration: ServerConfiguration(port: 0, maximumWait: 30)) {
            _, port in
            try await body(LiveServer(url: "http://127.0.0.1:\(port)", tokens: tokens, folder: folder, store: store))
        }
    }

    /// The environment flagctl sees: this server, a token, namespace rider, a private config file, no colour.
    func environment(token: String? = "amara", namespace: String? = "rider") -> [String: String] {
        var environment = ["FLAGCTL_SERVER": url, "FLAGCTL_CONFIG": configPath, "HOME": folder]
        if let token { environment["FLAGCTL_TOKEN"] = tokens[token] ?? token }
        if let namespace { environment["FLAGCTL_NAMESPACE"] = namespace }
        return environment
    }

    /// Runs flagctl in-process as `token`, not on a terminal.
    func flagctl(_ arguments: String..., as token: String? = "amara") async -> Outcome {
        await flagctl(arguments, environment: environment(token: token))
    }

    /// Runs flagctl in-process with an environment; `terminal` makes the console answer prompts with `answer`.
    func flagctl(
        _ arguments: [String], environment: [String: String], terminal: Bool = false,
        answer: (@Sendable (String) async -> String?)? = nil
    ) async -> Outcome {
        let console = Console.capturing(environment: environment, terminal: terminal, answer: answer)
        let watchdog = Watchdog(console)
        defer { watchdog.cancel() }
        let status = await Flagctl.execute(arguments, console: console)
        return Outcome(
            status: status, output: console.output, error: console.errorOutput, transcript: console.transcript)
    }

    /// Runs flagctl on a pretend terminal that answers every prompt with `answer`.
    func flagctlOnTerminal(_ arguments: String..., as token: String = "amara", answering answer: String = "y") async
        -> Outcome
    {
        await flagctl(arguments, environment: environment(token: token), terminal: true, answer: { _ in answer })
    }

    /// The namespace as stored now (the test fails at once when it cannot be read).
    func state(_ namespace: String = "rider") async -> NamespaceState {
        try! await store.namespace(namespace)!
    }

    /// A change log entry as stored.
    func change(_ version: Int64, in namespace: String = "rider") async -> ChangeRecord? {
        try! await store.change(in: namespace, version: version)
    }
}
