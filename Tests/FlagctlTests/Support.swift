import FlagctlCommands
import Foundation
import TestSupport
import Testing

/// Paths of the repository's files, found from this source file's location.
enum TestPaths {
    static let repository: String = {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<3 { url.deleteLastPathComponent() }
        return url.path
    }()

    static let flags = repository + "/Flags"
    static let broken = repository + "/Tests/SwitchyardFlagFilesTests/Fixtures/broken"

    /// The directory the build put the test bundle in; `flagctl` is built next to it.
    static let products: URL = {
        #if os(macOS)
            for bundle in Bundle.allBundles where bundle.bundlePath.hasSuffix(".xctest") {
                return bundle.bundleURL.deletingLastPathComponent()
            }
        #endif
        return Bundle.main.bundleURL
    }()

    static let flagctl = products.appendingPathComponent("flagctl")

    static func temporaryDirectory() throws -> String {
        let path = NSTemporaryDirectory() + "switchyard-flagctl-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }
}

/// What a command printed and returned.
struct Outcome: Sendable {
    var status: Int32
    var output: String
    var error: String
    /// Output, errors and answers typed at prompts, in order, as a terminal shows them.
    var transcript: String = ""
}

/// Runs flagctl in-process, through the same entry point the binary uses.
func flagctl(_ arguments: String...) async -> Outcome {
    await flagctl(arguments)
}

func flagctl(_ arguments: [String]) async -> Outcome {
    let console = Console.capturing()
    let status = await Flagctl.execute(arguments, console: console)
    return Outcome(status: status, output: console.output, error: console.errorOutput)
}

/// Runs the built `flagctl` binary as a child process in a directory, its output going to temporary files, without
/// blocking a thread of the cooperative pool while it runs (a test that blocks one starves every other test of
/// the process on a 2-core machine).
///
/// - Parameter deadline: a liveness deadline, not a speed claim; past it the child is stopped and the test fails.
func runBinary(
    _ arguments: [String], in directory: String = TestPaths.repository,
    environment: [String: String]? = nil, deadline: Duration = .seconds(600)
) async throws -> Outcome {
    let process = Process()
    process.executableURL = TestPaths.flagctl
    process.arguments = arguments
    process.currentDirectoryURL = URL(fileURLWithPath: directory)
    if let environment { process.environment = environment }
    let ended = try await runToEnd(process, deadline: deadline, separateError: true)
    let outcome = Outcome(status: ended.status, output: ended.output, error: ended.error)
    if ended.timedOut {
        Issue.record(
            "flagctl \(arguments.joined(separator: " ")) was still running after \(deadline); stopped it. It printed:\n\(outcome.output)\nand on standard error:\n\(outcome.error)"
        )
    }
    return outcome
}

/// How a child process ended, awaited without blocking a thread: create it before `run()` (it sets the process's
/// `terminationHandler`); Foundation traps when `terminationReason` or `terminationStatus` of a running process
/// is read, so the test only ever reads them here, once the process has ended.
final class ChildExit: Sendable {
    struct Ended: Sendable, Equatable {
        var reason: Process.TerminationReason
        var status: Int32
    }

    private let process: Process
    private let ended: AsyncStream<Ended>

    init(_ process: Process) {
        let (ended, continuation) = AsyncStream<Ended>.makeStream(bufferingPolicy: .bufferingNewest(1))
        process.terminationHandler = { process in
            continuation.yield(Ended(reason: process.terminationReason, status: process.terminationStatus))
            continuation.finish()
        }
        self.process = process
        self.ended = ended
    }

    /// Waits for the end of the process, up to a generous deadline.
    ///
    /// - Returns: how it ended, or nil when it was still running at the deadline (it is then killed).
    func wait(within deadline: Duration) async -> Ended? {
        let process = self.process
        let killer = Task {
            guard (try? await Task.sleep(for: deadline)) != nil else { return false }
            kill(process.processIdentifier, SIGKILL)
            return true
        }
        let ended = await self.ended.first { _ in true }
        killer.cancel()
        return await killer.value ? nil : ended
    }
}
