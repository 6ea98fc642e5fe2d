import Foundation
import SwitchyardCore
import Synchronization
import TestSupport
import Testing

/// The built `rider-sample` binary as a child process: its standard output as JSON lines (`-o json`), its
/// standard error collected, and its exit status.
final class SampleProcess: Sendable {
    static let binary = TestPaths.products.appendingPathComponent("rider-sample")

    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    private let process: Process
    private let cursor = Mutex(0)
    private let collected = Collected()
    private let exit: AsyncStream<Int32>

    /// Starts `rider-sample` with arguments and `SWITCHYARD_TOKEN` (when given) in its environment.
    init(_ arguments: [String], token: String?) throws {
        let process = Process()
        process.executableURL = Self.binary
        process.arguments = arguments
        var environment = ProcessInfo.processInfo.environment
        environment["SWITCHYARD_TOKEN"] = token
        environment["SWITCHYARD_SERVER"] = nil
        process.environment = environment
        let output = Pipe()
        let error = Pipe()
        process.standardOutput = output
        process.standardError = error
        let collected = self.collected
        // Every byte is read before `closed` counts the pipe.
        let splitter = Mutex(LineSplitter())
        readPipe(output.fileHandleForReading) { chunk in
            let found = splitter.withLock { $0.lines(completedBy: chunk) }
            collected.lines.withLock { $0 += found }
        } ended: {
            collected.closed.withLock { $0 += 1 }
        }
        readPipe(error.fileHandleForReading) { chunk in
            collected.errors.withLock { $0 += chunk }
        } ended: {
            collected.closed.withLock { $0 += 1 }
        }
        let (exit, exitContinuation) = AsyncStream<Int32>.makeStream(bufferingPolicy: .bufferingNewest(1))
        process.terminationHandler = { exitContinuation.yield($0.terminationStatus) }
        try process.run()
        self.process = process
        self.exit = exit
    }

    /// What the sample wrote to standard error so far.
    var errorOutput: String { collected.errors.withLock { String(decoding: $0, as: UTF8.self) } }

    /// Every line printed so far.
    var output: [String] { collected.lines.withLock { $0 } }

    /// The next printed JSON object (after the last one a wait returned) that satisfies a predicate, within a
    /// generous deadline.
    ///
    /// - Throws: when the deadline passes first (naming what the sample printed).
    func next(within deadline: Duration = .seconds(300), where predicate: (JSONValue) -> Bool) async throws -> JSONValue
    {
        let clock = ContinuousClock()
        let end = clock.now + deadline
        while true {
            let (lines, start) = (output, cursor.withLock { $0 })
            for index in start..<max(start, lines.count) {
                if let json = try? JSONValue.parse(Array(lines[index].utf8)), predicate(json) {
                    cursor.withLock { $0 = index + 1 }
                    return json
                }
            }
            cursor.withLock { $0 = max($0, lines.count) }
            guard clock.now < end else {
                throw Failure(
                    description:
                        "rider-sample printed nothing matching within \(deadline); it printed:\n\(output.joined(separator: "\n"))\nand on standard error:\n\(errorOutput)"
                )
            }
            try await Task.sleep(for: .milliseconds(5))
        }
    }

    /// Sends a signal and waits for the exit status.
    func stop(signal: Int32 = SIGTERM) async -> Int32 {
        kill(process.processIdentifier, signal)
        return await status()
    }

    /// Waits for the sample to exit and for everything it printed to be read.
    ///
    /// - Parameter deadline: a liveness deadline; past it the sample is killed and the test fails (naming what it
    ///   printed) instead of hanging.
    func status(within deadline: Duration = .seconds(300)) async -> Int32 {
        let pid = process.processIdentifier
        let killer = Task {
            guard (try? await Task.sleep(for: deadline)) != nil else { return false }
            kill(pid, SIGKILL)
            return true
        }
        var status: Int32 = -1
        for await exited in exit {
            status = exited
            break
        }
        killer.cancel()
        if await killer.value {
            Issue.record(
                "rider-sample was still running after \(deadline); killed it. On standard error:\n\(errorOutput)")
        }
        // Both pipes reach their end once the process is gone; read what is left before answering.
        let deadline = ContinuousClock.now + .seconds(60)
        while collected.closed.withLock({ $0 }) < 2, ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(5))
        }
        return status
    }
}

/// What a child process printed, shared with its pipe readers.
private final class Collected: Sendable {
    let lines = Mutex<[String]>([])
    /// Standard error's bytes (decoded when asked, so no character is split between reads).
    let errors = Mutex(Data())
    /// Pipes that reached their end (2: both).
    let closed = Mutex(0)
}
