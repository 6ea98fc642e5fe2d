import Foundation
import Synchronization
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Files of the repository, found from this source file's location.
enum Repository {
    static let root: URL = {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<4 { url.deleteLastPathComponent() }
        return url
    }()

    static func url(_ path: String) -> URL {
        root.appendingPathComponent(path)
    }

    static func text(_ path: String) throws -> String {
        try String(contentsOf: url(path), encoding: .utf8)
    }

    static func exists(_ path: String) -> Bool {
        FileManager.default.fileExists(atPath: url(path).path)
    }
}

/// What a program printed and returned.
/// Runs a program to its end (``runToEnd(_:deadline:separateError:)``), its standard error apart.
/// - Parameter deadline: a liveness deadline; past it the program is terminated.
func runProgram(
    _ executable: String, _ arguments: [String], in directory: URL? = nil,
    environment: [String: String] = [:], deadline: Duration = .seconds(120)
) async throws -> ProcessOutcome {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    if let directory { process.currentDirectoryURL = directory }
    process.environment = ProcessInfo.processInfo.environment.merging(environment) { _, new in new }
    process.standardInput = FileHandle.nullDevice
    return try await runToEnd(process, deadline: deadline, separateError: true)
}

/// The path of a program on PATH (or in the sbin folders, where Debian puts some tools).
func programPath(_ name: String) -> String? {
    let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
    for folder in path.split(separator: ":").map(String.init) + ["/usr/sbin", "/sbin", "/usr/bin"] {
        let candidate = folder + "/" + name
        if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
    }
    return nil
}

/// A tool the tests need, or a failure saying how to install it (./scripts/test installs them).
func requireProgram(_ name: String, package: String) throws -> String {
    try #require(programPath(name), "\(name) is not installed; apt-get install \(package) (./scripts/test installs it)")
}

/// The built binaries next to the test bundle (`swift build --build-tests` builds them).
enum Built {
    static func binary(_ name: String) throws -> URL {
        let testBinary = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        var folder = testBinary.deletingLastPathComponent()
        for _ in 0..<4 {
            let candidate = folder.appendingPathComponent(name)
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
            folder = folder.deletingLastPathComponent()
        }
        let fallback = Repository.url(".build/debug/\(name)")
        try #require(
            FileManager.default.isExecutableFile(atPath: fallback.path),
            "\(name) is not built next to the tests; run 'swift build --build-tests' first")
        return fallback
    }
}

/// flagsd's options and environment variables, read from `flagsd --help` (not a copied list).
struct FlagsdOptions: Sendable {
    /// `--host`, `--port`, ..., `--no-console`.
    let options: Set<String>
    /// `SWITCHYARD_HOST`, ..., `SWITCHYARD_ADMIN_TOKEN`.
    let variables: Set<String>
    /// The help text.
    let help: String

    static func read() async throws -> FlagsdOptions {
        let outcome = try await runProgram(try Built.binary("flagsd").path, ["--help"])
        try #require(outcome.status == 0, "flagsd --help: \(outcome.error)")
        let help = outcome.output
        return FlagsdOptions(
            options: Set(matches(#"--[a-z][a-z-]*"#, in: help)),
            variables: Set(matches(#"SWITCHYARD_[A-Z_]+"#, in: help)), help: help)
    }

    /// The help of one option, up to the next option.
    func helpOf(_ option: String) -> String {
        guard let start = help.range(of: "  \(option) ") else { return "" }
        let rest = help[start.upperBound...]
        let end = rest.range(of: #"\n  --"#, options: .regularExpression)?.lowerBound ?? rest.endIndex
        return String(rest[..<end])
    }
}

func matches(_ pattern: String, in text: String, group: Int = 0) -> [String] {
    let expression = try! NSRegularExpression(pattern: pattern)
    return expression.matches(in: text, range: NSRange(text.startIndex..., in: text)).compactMap { match in
        Range(match.range(at: group), in: text).map { String(text[$0]) }
    }
}

/// flagsd as a child process on a free loopback port, seeded from Flags/, with a known admin token.
final class LiveFlagsd: Sendable {
    static let adminToken = "deploy-tests-admin-token-0123456789"
    let process: Process
    let folder: URL
    let base: URL
    /// What flagsd printed up to its `listening on` line.
    let banner: String

    private init(process: Process, folder: URL, base: URL, banner: String) {
        self.process = process
        self.folder = folder
        self.base = base
        self.banner = banner
    }

    /// - Parameter arguments: more flagsd options, e.g. `["--max-wait", "600"]`.
    static func start(arguments: [String] = [], environment: [String: String] = [:]) async throws -> LiveFlagsd {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
            "deploy-tests-flagsd-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let process = Process()
        process.executableURL = try Built.binary("flagsd")
        process.arguments =
            [
                "--port", "0", "--database", folder.appendingPathComponent("flags.sqlite").path,
                "--flags", Repository.url("Flags").path, "--log-format", "json", "--log-level", "error",
            ] + arguments
        process.environment = ProcessInfo.processInfo.environment.merging(["SWITCHYARD_ADMIN_TOKEN": adminToken]) {
            _, new in new
        }
        .merging(environment) { _, new in new }
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        // The lines each read completes: flagsd prints its banner (the listening line and the console's) in one
        // write, so the read that holds the one holds the other.
        let (reads, continuation) = AsyncStream<[String]>.makeStream()
        let splitter = Mutex(LineSplitter())
        readPipe(output.fileHandleForReading) { chunk in
            continuation.yield(splitter.withLock { $0.lines(completedBy: chunk) })
        } ended: {
            continuation.finish()
        }
        try process.run()
        var lines: [String] = []
        for await read in reads {
            lines += read
            let text = lines.joined(separator: "\n")
            if let port = matches(#"listening on http://127\.0\.0\.1:(\d+)"#, in: text, group: 1).first {
                return LiveFlagsd(
                    process: process, folder: folder, base: URL(string: "http://127.0.0.1:\(port)")!, banner: text)
            }
        }
        // Its output ended: it is exiting (Foundation traps when the status of a running process is read).
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
        throw ProgramFailure(
            message: "flagsd stopped before it listened (status \(process.terminationStatus)): \(lines)")
    }

    func stop() {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
        try? FileManager.default.removeItem(at: folder)
    }

    /// Sends a request; `token` nil sends none.
    func send(
        _ method: String = "GET", _ path: String, token: String? = LiveFlagsd.adminToken, body: String? = nil,
        headers: [String: String] = [:], timeout: TimeInterval = 60
    ) async throws -> (status: Int, body: String) {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = timeout
        configuration.urlCache = nil
        let session = URLSession(configuration: configuration)
        var request = URLRequest(url: URL(string: path, relativeTo: base)!)
        request.httpMethod = method
        if let token { request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization") }
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        if let body { request.httpBody = Data(body.utf8) }
        let (data, response) = try await session.data(for: request)
        guard let http = response as? HTTPURLResponse else {
            throw ProgramFailure(message: "\(method) \(path): not an HTTP response: \(response)")
        }
        return (http.statusCode, String(decoding: data, as: UTF8.self))
    }
}

struct ProgramFailure: Error, CustomStringConvertible {
    let message: String
    var description: String { message }
}
