public import Foundation

/// Runs a process to its end without blocking a thread of the cooperative pool (a blocked one starves every other
/// test of the process on a 2-core machine): both streams go to a file, not a pipe (a server the process starts
/// inherits its open descriptors and would hold a pipe open), and the end is awaited through `terminationHandler`
/// (`waitUntilExit` can miss it on a concurrency thread).
public func runToEnd(_ process: Process) async throws -> (status: Int32, output: String) {
    let log = FileManager.default.temporaryDirectory.appendingPathComponent("process-\(UUID().uuidString).log")
    _ = FileManager.default.createFile(atPath: log.path, contents: nil)
    defer { try? FileManager.default.removeItem(at: log) }
    let output = try FileHandle(forWritingTo: log)
    defer { try? output.close() }
    process.standardOutput = output
    process.standardError = output
    let (ended, continuation) = AsyncStream<Int32>.makeStream(bufferingPolicy: .bufferingNewest(1))
    process.terminationHandler = { continuation.yield($0.terminationStatus) }
    try process.run()
    let status = await ended.first { _ in true } ?? -1
    return (status, (try? String(contentsOf: log, encoding: .utf8)) ?? "")
}
