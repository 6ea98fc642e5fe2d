public import Foundation

/// How a process run by ``runToEnd(_:deadline:separateError:)`` ended, and what it wrote.
public struct ProcessOutcome: Sendable {
    /// Its exit status (or the signal's number when a signal ended it).
    public var status: Int32
    /// What it wrote to standard output, and to standard error too unless the streams were kept apart.
    public var output: String
    /// What it wrote to standard error when the streams were kept apart; empty otherwise.
    public var error: String
    /// Whether it was still running at the deadline (it was then terminated).
    public var timedOut: Bool
}

/// Runs a process to its end without blocking a thread of the cooperative pool (a blocked one starves every other
/// test of the process on a 2-core machine): the streams go to files, not pipes (a server the process starts
/// inherits its open descriptors and would hold a pipe open), and the end is awaited through `terminationHandler`
/// (`waitUntilExit` can miss it on a concurrency thread). The one helper for running a program to its end in the
/// tests.
///
/// - Parameters:
///   - deadline: a liveness deadline, not a speed claim; past it the process is terminated (`timedOut`).
///   - separateError: keep standard error apart from standard output (`error`).
public func runToEnd(_ process: Process, deadline: Duration? = nil, separateError: Bool = false) async throws
    -> ProcessOutcome
{
    let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("process-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: scratch) }
    let outputURL = scratch.appendingPathComponent("stdout")
    let errorURL = scratch.appendingPathComponent("stderr")
    _ = FileManager.default.createFile(atPath: outputURL.path, contents: nil)
    _ = FileManager.default.createFile(atPath: errorURL.path, contents: nil)
    let output = try FileHandle(forWritingTo: outputURL)
    let error = try FileHandle(forWritingTo: errorURL)
    defer {
        try? output.close()
        try? error.close()
    }
    process.standardOutput = output
    process.standardError = separateError ? error : output
    let (ended, continuation) = AsyncStream<Int32>.makeStream(bufferingPolicy: .bufferingNewest(1))
    process.terminationHandler = { continuation.yield($0.terminationStatus) }
    try process.run()
    let timer = deadline.map { deadline in
        Task {
            guard (try? await Task.sleep(for: deadline)) != nil else { return false }
            process.terminate()
            return true
        }
    }
    let status = await ended.first { _ in true } ?? -1
    timer?.cancel()
    let timedOut = await timer?.value ?? false
    return ProcessOutcome(
        status: status, output: (try? String(contentsOf: outputURL, encoding: .utf8)) ?? "",
        error: separateError ? (try? String(contentsOf: errorURL, encoding: .utf8)) ?? "" : "",
        timedOut: timedOut)
}
