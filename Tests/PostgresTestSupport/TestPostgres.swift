public import Foundation
public import Logging
public import PostgresNIO
import SwitchyardPostgres
import TestSupport

/// The PostgreSQL server of the tests, started by `scripts/test` (or `scripts/postgres-server`), and fresh
/// databases on it.
public enum TestPostgres {
    /// How to get a server, for the error of a test run without one.
    public static let howToRun = """
        the PostgreSQL tests need a server: run them through the project's script, which installs PostgreSQL when \
        missing, starts a throwaway server and stops it afterwards:
            ./scripts/test --filter Postgres
        or start a server for this shell and run swift test as usual:
            eval "$(scripts/postgres-server start)" && swift test --filter Postgres
        """

    /// The server's URL (`SWITCHYARD_TEST_POSTGRES_URL`).
    ///
    /// - Throws: `TestPostgresError` saying how to get a server when none is configured.
    public static func serverURL() throws -> String {
        guard let url = ProcessInfo.processInfo.environment["SWITCHYARD_TEST_POSTGRES_URL"], !url.isEmpty else {
            throw TestPostgresError(description: "SWITCHYARD_TEST_POSTGRES_URL is not set; " + howToRun)
        }
        return url
    }

    /// Where tests start servers of their own (`SWITCHYARD_TEST_POSTGRES_ROOT`); `scripts/test` stops every
    /// server under it when it ends, also when a test crashed.
    public static func root() throws -> URL {
        guard let root = ProcessInfo.processInfo.environment["SWITCHYARD_TEST_POSTGRES_ROOT"], !root.isEmpty else {
            throw TestPostgresError(description: "SWITCHYARD_TEST_POSTGRES_ROOT is not set; " + howToRun)
        }
        return URL(fileURLWithPath: root)
    }

    /// Creates an empty database on the test server.
    ///
    /// - Parameter timeout: the `timeout` parameter of the URL returned: the seconds a store operation may take.
    ///   Tests that are not about timeouts raise it, as the suite runs in parallel on shared, loaded cores.
    /// - Returns: its URL, and a closure that drops it (ending its connections).
    public static func createDatabase(on serverURL: String? = nil, timeout: Int? = nil) async throws -> (
        url: String, drop: @Sendable () async -> Void
    ) {
        let server = try serverURL ?? Self.serverURL()
        let name = "sy_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
        try await administer(server) { connection, logger in
            _ = try await connection.query(PostgresQuery(unsafeSQL: "CREATE DATABASE \(name)"), logger: logger)
                .collect()
        }
        var url = try databaseURL(server, name: name)
        if let timeout { url += (url.contains("?") ? "&" : "?") + "timeout=\(timeout)" }
        return (
            url,
            {
                try? await administer(server) { connection, logger in
                    _ = try await connection.query(
                        PostgresQuery(unsafeSQL: "DROP DATABASE IF EXISTS \(name) WITH (FORCE)"), logger: logger
                    ).collect()
                }
            }
        )
    }

    /// The URL of another database on the same server.
    public static func databaseURL(_ serverURL: String, name: String) throws -> String {
        guard var components = URLComponents(string: serverURL) else {
            throw TestPostgresError(description: "'\(serverURL)' is not a URL")
        }
        components.path = "/" + name
        return components.string!
    }

    /// Runs statements on a fresh connection to a server's database.
    public static func administer(_ url: String, _ body: (PostgresConnection, Logger) async throws -> Void) async throws
    {
        let configuration = try PostgresStoreConfiguration(url: url)
        let logger = Logger(label: "test-postgres", factory: { _ in SwiftLogNoOpLogHandler() })
        let connection = try await PostgresConnection.connect(
            configuration: .init(
                host: configuration.host, port: configuration.port, username: configuration.username,
                password: configuration.password, database: configuration.database, tls: .disable),
            id: 1, logger: logger)
        do {
            try await body(connection, logger)
            try await connection.close()
        } catch {
            try? await connection.close()
            throw error
        }
    }
}

/// A PostgreSQL server of one test's own, which it may stop and start again (degraded mode), through
/// `scripts/postgres-server`, under `SWITCHYARD_TEST_POSTGRES_ROOT`.
public final class PrivateServer: Sendable {
    public let folder: URL
    public let port: Int
    /// The server's `postgres` database.
    public let url: String

    private init(folder: URL, port: Int, url: String) {
        self.folder = folder
        self.port = port
        self.url = url
    }

    /// Runs a body with a new server on a free port, and removes the server afterwards (also when it throws).
    public static func with<T>(_ body: (PrivateServer) async throws -> T) async throws -> T {
        let folder = try TestPostgres.root().appendingPathComponent("private-\(UUID().uuidString.prefix(8))")
        let output = try await script(["start", "--dir", folder.path])
        guard let line = output.split(separator: "\n").last(where: { $0.hasPrefix("postgres://") }),
            let configuration = try? PostgresStoreConfiguration(url: String(line))
        else { throw TestPostgresError(description: "scripts/postgres-server start printed no URL: \(output)") }
        let server = PrivateServer(folder: folder, port: configuration.port, url: String(line))
        do {
            let result = try await body(server)
            await server.remove()
            return result
        } catch {
            await server.remove()
            throw error
        }
    }

    /// Stops the server (fast shutdown: connections are closed).
    public func stop() async throws {
        _ = try await Self.script(["stop", "--dir", folder.path])
    }

    /// Starts the stopped server again, on the same port with the same data.
    public func start() async throws {
        _ = try await Self.script(["start", "--dir", folder.path, "--port", String(port)])
    }

    /// Freezes the server and every backend process (SIGSTOP) without closing a connection: to its clients it is
    /// a database that stops answering, as behind a network partition or a hung host.
    public func pause() throws {
        try signalEveryProcess(SIGSTOP)
    }

    /// Lets a paused server run again (SIGCONT).
    public func resume() throws {
        try signalEveryProcess(SIGCONT)
    }

    /// Sends a signal to the postmaster (from `postmaster.pid`) and to each of its child processes.
    private func signalEveryProcess(_ signal: Int32) throws {
        let pidFile = folder.appendingPathComponent("postmaster.pid").path
        guard let text = try? String(contentsOfFile: pidFile, encoding: .utf8),
            let first = text.split(separator: "\n").first, let postmaster = Int32(first)
        else { throw TestPostgresError(description: "no running server in \(folder.path) (\(pidFile) unreadable)") }
        var processes = [postmaster]
        for entry in (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? [] {
            guard let pid = Int32(entry),
                let stat = try? String(contentsOfFile: "/proc/\(entry)/stat", encoding: .utf8),
                let close = stat.lastIndex(of: ")")
            else { continue }
            // Fields after the command's closing parenthesis: state, then the parent's pid.
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            if fields.count > 1, Int32(fields[1]) == postmaster { processes.append(pid) }
        }
        for pid in processes where kill(pid, signal) != 0 && errno != ESRCH {
            throw TestPostgresError(description: "cannot signal PostgreSQL process \(pid): errno \(errno)")
        }
    }

    /// Stops the server and removes its folder.
    func remove() async {
        try? resume()  // a paused server would not hear the stop
        _ = try? await Self.script(["stop", "--dir", folder.path, "--immediate"])
        try? FileManager.default.removeItem(at: folder)
        try? FileManager.default.removeItem(at: URL(fileURLWithPath: folder.path + ".initdb.log"))
    }

    /// Runs `scripts/postgres-server` and returns what it printed.
    ///
    /// Through `runToEnd`: output in a file, not a pipe (the server it starts would hold a pipe open).
    static func script(_ arguments: [String]) async throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("scripts/postgres-server")
        process.arguments = arguments
        let result = try await runToEnd(process)
        guard result.status == 0 else {
            throw TestPostgresError(
                description:
                    "scripts/postgres-server \(arguments.joined(separator: " ")) failed (\(result.status)): \(result.output)"
            )
        }
        return result.output
    }
}

public struct TestPostgresError: Error, CustomStringConvertible {
    public let description: String
}

/// Progress marks of the PostgreSQL tests, appended to the file `SWITCHYARD_TEST_TRACE` names (when set), to
/// find where a test waits when it hangs.
public enum TestTrace {
    private static let path = ProcessInfo.processInfo.environment["SWITCHYARD_TEST_TRACE"]

    public static func mark(_ text: String) {
        guard let path else { return }
        let line = "\(Date().timeIntervalSince1970) \(text)\n"
        if let handle = FileHandle(forWritingAtPath: path) {
            handle.seekToEndOfFile()
            handle.write(Data(line.utf8))
            try? handle.close()
        } else {
            _ = FileManager.default.createFile(atPath: path, contents: Data(line.utf8))
        }
    }
}
