import Foundation
import SwitchyardMatrixPlan

/// Runs matrix work in a child process: the test binary again, filtered to the calling test, with
/// `SWITCHYARD_MATRIX_CHILD` naming a directory that holds the work, the shared state and the findings file.
///
/// The calling test runs again in the child up to its `Matrix.run`/`check`, which sees the variable, runs the
/// work and ends the process. A plugin that traps ends only the child; the shared state says where.
struct ChildLauncher: Sendable {
    /// The variable naming the child's directory.
    static let childVariable = "SWITCHYARD_MATRIX_CHILD"
    /// The child's scheduling niceness (batch priority).
    static let niceness: Int32 = 10

    let executable: String
    let arguments: [String]
    let environment: [String: String]

    /// The launcher for a test, or nil when this process cannot be started again that way.
    ///
    /// - Parameters:
    ///   - testFilter: the `--filter` regular expression that selects the calling test alone.
    ///   - environment: the variables the child inherits (the matrix's own are left out: the work says it all).
    init?(testFilter: String, environment: [String: String] = ProcessInfo.processInfo.environment) {
        // A child never starts children: it runs the work it was given and ends.
        guard ProcessInfo.processInfo.environment[Self.childVariable] == nil,
            let executable = Self.currentExecutable()
        else { return nil }
        var arguments: [String] = []
        let parent = CommandLine.arguments
        // A helper that loads a test bundle (swiftpm-testing-helper on macOS) needs the bundle's path again.
        if let bundle = parent.firstIndex(of: "--test-bundle-path"), bundle + 1 < parent.count {
            arguments += ["--test-bundle-path", parent[bundle + 1]]
        }
        arguments += ["--testing-library", "swift-testing", "--filter", testFilter]
        self.executable = executable
        self.arguments = arguments
        self.environment = environment.filter { !$0.key.hasPrefix("SWITCHYARD_MATRIX_") }
    }

    /// The running executable's absolute path.
    static func currentExecutable() -> String? {
        #if os(Linux)
            if let path = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") { return path }
        #endif
        if let path = Bundle.main.executablePath { return path }
        guard let first = CommandLine.arguments.first else { return nil }
        return first.hasPrefix("/") ? first : FileManager.default.currentDirectoryPath + "/" + first
    }

    /// What a child left behind.
    struct Outcome {
        /// It ran all its work.
        var finished: Bool
        /// It started the work (a child that never does ran no matching matrix).
        var started: Bool
        /// The signal that ended it, if one did.
        var signal: Int32?
        var status: Int32
        var position: UInt64
        var phase: UInt64
        var phaseIndex: UInt64
        var input: UInt64
        var local: UInt64
        var done: UInt64
        var flowsSkipped: UInt64
        var counters: [UInt64]
        var served: [UInt64]
        var lines: [ChildLine]
        /// The end of its standard error: a trap's `Fatal error: ...` line is there.
        var errorOutput: String
    }

    /// Runs one piece of work to the end of the child.
    ///
    /// - Parameters:
    ///   - work: what to check.
    ///   - kindCount: failure kinds counted in the shared state.
    ///   - pointCount: points with a served mask in the shared state.
    ///   - progress: called about every 50 ms with the positions the child finished.
    /// - Throws: when the child cannot be started.
    func run(_ work: ChildWork, kindCount: Int, pointCount: Int, progress: (UInt64) -> Void) async throws -> Outcome {
        await ChildSlots.shared.acquire()
        let outcome: Result<Outcome, any Error>
        do {
            outcome = .success(try await launch(work, kindCount: kindCount, pointCount: pointCount, progress: progress))
        } catch {
            outcome = .failure(error)
        }
        await ChildSlots.shared.release()
        return try outcome.get()
    }

    private func launch(_ work: ChildWork, kindCount: Int, pointCount: Int, progress: (UInt64) -> Void) async throws
        -> Outcome
    {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("switchyard-matrix-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        try JSONEncoder().encode(work).write(to: directory.appendingPathComponent("work.json"))
        guard
            let shared = SharedState(
                path: directory.appendingPathComponent("state").path, kindCount: kindCount,
                pointCount: pointCount, create: true)
        else {
            throw ChildError("cannot map the shared state file in \(directory.path)")
        }
        let findingsPath = directory.appendingPathComponent("findings.jsonl").path
        let errorPath = directory.appendingPathComponent("stderr.txt").path
        _ = FileManager.default.createFile(atPath: findingsPath, contents: nil)
        _ = FileManager.default.createFile(atPath: errorPath, contents: nil)

        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        var environment = environment
        environment[Self.childVariable] = directory.path
        // A trap's own message is enough; the backtracer would take seconds to symbolicate each one.
        environment["SWIFT_BACKTRACE"] = "enable=no"
        process.environment = environment
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        guard let errorHandle = FileHandle(forWritingAtPath: errorPath) else {
            throw ChildError("cannot open \(errorPath)")
        }
        process.standardError = errorHandle
        try process.run()
        try? errorHandle.close()
        // Batch work: the child yields the cores to latency-sensitive work (a server answering, other tests).
        #if os(Linux)
            _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), id_t(process.processIdentifier), Self.niceness)
        #else
            _ = setpriority(PRIO_PROCESS, id_t(process.processIdentifier), Self.niceness)
        #endif
        while process.isRunning {
            if Task.isCancelled { process.terminate() }
            progress(shared[SharedState.Slot.done])
            try? await Task.sleep(for: .milliseconds(50))
        }
        process.waitUntilExit()
        progress(shared[SharedState.Slot.done])

        let lines = ((try? String(contentsOfFile: findingsPath, encoding: .utf8)) ?? "")
            .split(separator: "\n")
            .compactMap { try? JSONDecoder().decode(ChildLine.self, from: Data($0.utf8)) }
        let errorText = (try? String(contentsOfFile: errorPath, encoding: .utf8)) ?? ""
        return Outcome(
            finished: shared[SharedState.Slot.finished] == 1,
            started: shared[SharedState.Slot.started] == 1,
            signal: process.terminationReason == .uncaughtSignal ? process.terminationStatus : nil,
            status: process.terminationStatus,
            position: shared[SharedState.Slot.position],
            phase: shared[SharedState.Slot.phase],
            phaseIndex: shared[SharedState.Slot.phaseIndex],
            input: shared[SharedState.Slot.input],
            local: shared[SharedState.Slot.local],
            done: shared[SharedState.Slot.done],
            flowsSkipped: shared[SharedState.Slot.flowsSkipped],
            counters: (0..<kindCount).map { shared.counter($0) },
            served: (0..<pointCount).map { shared.served($0) },
            lines: lines,
            errorOutput: String(errorText.suffix(4000)))
    }
}

/// At most two matrix children per process at a time, however many matrix tests run in parallel.
///
/// Process-wide on purpose: the limit protects the machine, so it must hold across every matrix of the process.
actor ChildSlots {
    static let shared = ChildSlots(limit: 2)

    private let limit: Int
    private var running = 0
    private var waiting: [CheckedContinuation<Void, Never>] = []

    init(limit: Int) {
        self.limit = limit
    }

    func acquire() async {
        if running < limit {
            running += 1
            return
        }
        await withCheckedContinuation { waiting.append($0) }
    }

    func release() {
        if waiting.isEmpty {
            running -= 1
        } else {
            waiting.removeFirst().resume()
        }
    }
}

/// A child process could not be started or read.
struct ChildError: Error, CustomStringConvertible {
    let description: String

    init(_ description: String) {
        self.description = description
    }
}

extension ChildLauncher.Outcome {
    /// The trap's message: the runtime's `Fatal error: ...` line, else the last non-empty line of standard error.
    var trapMessage: String {
        let lines = errorOutput.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }.filter {
            !$0.isEmpty
        }
        if let fatal = lines.last(where: {
            $0.contains("Fatal error") || $0.contains("Precondition failed")
                || $0.contains("Assertion failed")
        }) {
            return fatal
        }
        if let last = lines.last { return last }
        if let signal { return "signal \(signal)" }
        return "exit status \(status)"
    }
}

extension Matrix {
    /// The child's side: runs the work in `directory` when it is for this matrix.
    ///
    /// - Returns: whether it ran (the caller then ends the process); false when the work is another matrix's.
    func runChild(directory: String, context: MatrixContext, plan: MatrixPlan) -> Bool {
        guard let data = FileManager.default.contents(atPath: directory + "/work.json"),
            let work = try? JSONDecoder().decode(ChildWork.self, from: data),
            work.fingerprint == fingerprint(plan: plan),
            let shared = SharedState(
                path: directory + "/state", kindCount: kindCount, pointCount: points.count, create: false)
        else { return false }
        shared.findingsDescriptor = open(directory + "/findings.jsonl", O_WRONLY | O_APPEND)
        shared[SharedState.Slot.started] = 1
        let runner = Runner(matrix: self, context: context, skips: work.skips)
        runner.shared = shared
        if let candidates = work.candidates {
            for (position, words) in candidates.enumerated() {
                let kinds = runner.check(GateSet(words: words), index: UInt64(position), collectKinds: true).sorted()
                let line = ChildLine(
                    candidate: position, kinds: kinds, messages: kinds.map { runner.lastMessages[$0] ?? "" })
                if let encoded = line.encoded { shared.appendLine(encoded) }
            }
        } else {
            runner.run(range: work.start..<work.end)
        }
        shared[SharedState.Slot.finished] = 1
        return true
    }
}
