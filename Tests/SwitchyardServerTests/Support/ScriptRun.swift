import Foundation

/// Runs a test script (a file under Tests/) from the repository's root, its output (both streams) in a file in
/// `folder`, without blocking a thread while it runs.
///
/// - Parameter deadline: a liveness deadline, not a speed claim (a first run may install tools from PyPI);
///   past it the script is terminated.
func runTestScript(_ script: String, environment: [String: String], folder: URL,
                   deadline: Duration = .seconds(600)) async throws -> (status: Int32, output: String) {
    let outputURL = folder.appendingPathComponent(URL(fileURLWithPath: script).deletingLastPathComponent().lastPathComponent + ".log")
    _ = FileManager.default.createFile(atPath: outputURL.path, contents: nil)
    let output = try FileHandle(forWritingTo: outputURL)
    defer { try? output.close() }
    let process = Process()
    process.executableURL = URL(fileURLWithPath: script)
    process.currentDirectoryURL = URL(fileURLWithPath: OFREPFixtures.repository)
    process.environment = ProcessInfo.processInfo.environment.merging(environment) { _, new in new }
    process.standardOutput = output
    process.standardError = output
    let (ended, continuation) = AsyncStream<Int32>.makeStream()
    process.terminationHandler = { continuation.yield($0.terminationStatus) }
    try process.run()
    let timer = Task {
        try await Task.sleep(for: deadline)
        process.terminate()
    }
    defer { timer.cancel() }
    let status = await ended.first { _ in true } ?? -1
    let text = (try? String(contentsOf: outputURL, encoding: .utf8)) ?? ""
    return (status, text)
}
