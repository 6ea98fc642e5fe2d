import Foundation

/// The repository's files, found from this source file's location, and its scripts run from its root.
public enum Repository {
    /// The repository's root folder.
    public static let root: String = {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<3 { url.deleteLastPathComponent() }
        return url.path
    }()

    /// Runs one of the repository's scripts (`scripts/check-openapi`, or an absolute path) from the root, to its end
    /// (``runToEnd(_:deadline:separateError:)``), with more environment variables.
    /// - Returns: its exit status and everything it wrote to standard output and standard error.
    public static func runScript(
        _ path: String, _ arguments: [String] = [], environment: [String: String] = [:],
        deadline: Duration? = nil
    ) async throws -> ProcessOutcome {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path.hasPrefix("/") ? path : root + "/" + path)
        process.arguments = arguments
        process.currentDirectoryURL = URL(fileURLWithPath: root)
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { _, new in new }
        return try await runToEnd(process, deadline: deadline)
    }

    /// Whether `python3` is on the `PATH` (the scripts' checkers need it; `./scripts/test` installs it).
    public static var pythonIsAvailable: Bool {
        ProcessInfo.processInfo.environment["PATH"]?.split(separator: ":").contains {
            FileManager.default.isExecutableFile(atPath: "\($0)/python3")
        } ?? false
    }
}
