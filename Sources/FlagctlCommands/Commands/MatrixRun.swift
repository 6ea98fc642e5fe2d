public import ArgumentParser
import Foundation
import SwitchyardMatrixPlan

/// `flagctl matrix run`: runs a matrix test in shards, a few at a time, with one progress bar.
public struct MatrixRunCommand: FlagctlCommand {
    public static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "Run a combination matrix test in shards locally, with one progress bar.",
        discussion: """
            Builds the tests once (swift build --build-tests), then runs 'swift test --skip-build --filter TEST' \
            once per shard with SWITCHYARD_MATRIX_SHARD=i/n, --jobs at a time. Each shard's output goes to \
            LOGS/shard-i-of-n.log; its progress (SWITCHYARD_MATRIX_PROGRESS) feeds one bar. A failing shard's \
            summary is printed at the end.

            Examples:

              flagctl matrix run --filter RiderMatrixTests --shards 4
              flagctl matrix run --filter RiderMatrixTests --shards 8 --jobs 4 --package-path ../rider-ios
              flagctl matrix run --shards 4 -- .build/debug/RiderPackageTests.xctest --testing-library swift-testing --filter RiderMatrixTests
              flagctl matrix run --filter RiderMatrixTests --shards 4 --print      # the commands, without running them

            After '--', the command runs as given for every shard (no build step); only the variables change.

            Exit status: 0 when every shard passes, 1 when one fails (its summary names the smallest failing \
            combination and the command that reproduces it), 64 usage.
            """
    )

    @Option(help: ArgumentHelp("The test to run (swift test --filter), e.g. RiderMatrixTests.", valueName: "test"))
    public var filter: String?

    @Option(help: ArgumentHelp("Split the matrix into this many shards.", valueName: "n"))
    public var shards: Int = 4

    @Option(help: ArgumentHelp("Run this many shards at a time.", valueName: "n"))
    public var jobs: Int = 2

    @Option(name: .customLong("package-path"), help: ArgumentHelp("The package holding the test.", valueName: "dir"))
    public var packagePath: String?

    @Option(
        help: ArgumentHelp("Where each shard's output goes (default: PACKAGE/.build/matrix-logs).", valueName: "dir"))
    public var logs: String?

    @Flag(name: .customLong("print"), help: "Print each shard's command and variables instead of running them.")
    public var printOnly = false

    @Argument(
        parsing: .postTerminator,
        help: ArgumentHelp("A command to run per shard instead of swift test.", valueName: "command"))
    public var command: [String] = []

    public init() {}

    public func validate() throws {
        if command.isEmpty && filter == nil {
            throw ValidationError(
                "Pass --filter with the matrix test, e.g. 'flagctl matrix run --filter RiderMatrixTests', "
                    + "or a command after '--'.")
        }
        guard shards >= 1 else { throw ValidationError("--shards must be at least 1, not \(shards).") }
        guard jobs >= 1 else { throw ValidationError("--jobs must be at least 1, not \(jobs).") }
    }

    /// One shard's command and what it came to.
    struct ShardRun {
        let shard: Shard
        let arguments: [String]
        let logPath: String
        let progressPath: String
        var process: Process?
        var started: ContinuousClock.Instant?
        var finished: (status: Int32, elapsed: Duration)?
    }

    public func run(console: Console) async throws {
        for variable in [Shard.environmentVariable, "SWITCHYARD_MATRIX_CHILD"]
        where console.environment[variable] != nil {
            throw CommandFailure(
                "\(variable) is set: this is already a matrix shard. Unset it to run the matrix in shards.",
                exitStatus: ExitStatus.usage)
        }
        let package = packagePath ?? "."
        let logDirectory = logs ?? (package as NSString).appendingPathComponent(".build/matrix-logs")
        let split = try Shard.split(into: shards)
        var testArguments = command
        if testArguments.isEmpty, let filter {
            testArguments = ["swift", "test", "--skip-build", "--filter", filter]
            if let packagePath { testArguments += ["--package-path", packagePath] }
        }
        var runs = split.map { shard in
            let name = "shard-\(shard.index)-of-\(shard.count)"
            return ShardRun(
                shard: shard, arguments: testArguments,
                logPath: (logDirectory as NSString).appendingPathComponent(name + ".log"),
                progressPath: (logDirectory as NSString).appendingPathComponent(name + ".progress"))
        }

        if printOnly {
            if command.isEmpty { console.write(Self.shellLine(buildArguments) + "\n") }
            for run in runs {
                console.write("\(Shard.environmentVariable)=\(run.shard) \(Self.shellLine(run.arguments))\n")
            }
            return
        }

        try FileManager.default.createDirectory(atPath: logDirectory, withIntermediateDirectories: true)
        if command.isEmpty {
            console.writeError("building: \(Self.shellLine(buildArguments))\n")
            let buildLog = (logDirectory as NSString).appendingPathComponent("build.log")
            let status = try await Self.runToEnd(buildArguments, logPath: buildLog, environment: console.environment)
            guard status == 0 else {
                console.writeError(Self.tail(of: buildLog, lines: 30))
                throw CommandFailure("the build failed (exit status \(status)); its output is in \(buildLog)")
            }
        }

        let interrupted = InterruptFlag()
        let subscription = console.onInterrupt { interrupted.set() }
        defer { subscription.cancel() }
        let started = ContinuousClock.now
        let drawsBar =
            console.isOutputTerminal && console.environment["CI"] == nil && console.environment["TERM"] != "dumb"
        var next = 0
        var lastDraw = ContinuousClock.now - .seconds(1)
        console.writeError(
            "running \(shards) shard\(shards == 1 ? "" : "s"), \(min(jobs, shards)) at a time; logs in \(logDirectory)\n"
        )
        while runs.contains(where: { $0.finished == nil }) {
            if interrupted.isSet {
                for run in runs where run.finished == nil { run.process?.terminate() }
            }
            // Start shards while there is room.
            while !interrupted.isSet, next < runs.count,
                runs.filter({ $0.process != nil && $0.finished == nil }).count < jobs
            {
                try? FileManager.default.removeItem(atPath: runs[next].progressPath)
                runs[next].process = try Self.start(runs[next], environment: console.environment)
                runs[next].started = .now
                next += 1
            }
            if interrupted.isSet && next < runs.count {
                for index in next..<runs.count { runs[index].finished = (status: 130, elapsed: .zero) }
                next = runs.count
            }
            // Collect finished ones.
            for index in runs.indices where runs[index].finished == nil {
                guard let process = runs[index].process, !process.isRunning else { continue }
                runs[index].finished = (
                    process.terminationStatus, ContinuousClock.now - (runs[index].started ?? started)
                )
                if drawsBar { console.writeError("\r\u{1B}[2K") }
                console.write(Self.resultLine(runs[index]) + "\n")
            }
            if drawsBar, ContinuousClock.now - lastDraw >= .milliseconds(200) {
                lastDraw = .now
                console.writeError("\r\u{1B}[2K" + Self.bar(runs, elapsed: ContinuousClock.now - started))
            }
            try? await Task.sleep(for: .milliseconds(100))
        }
        if drawsBar { console.writeError("\r\u{1B}[2K") }

        let failed = runs.filter { $0.finished?.status != 0 }
        let checked = runs.reduce(UInt64(0)) { $0 + (Self.progress(of: $1)?.done ?? 0) }
        let elapsed = ContinuousClock.now - started
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        if failed.isEmpty {
            console.write(
                "\(shards) shard\(shards == 1 ? "" : "s") passed: \(checked) combinations in "
                    + String(format: "%.1f s", seconds) + "\n")
            return
        }
        for run in failed {
            console.write("\n--- shard \(run.shard) (\(run.logPath)):\n" + Self.summary(of: run.logPath))
        }
        if interrupted.isSet { throw CommandFailure("interrupted; \(failed.count) of \(shards) shards did not finish") }
        throw CommandFailure(
            "\(failed.count) of \(shards) shard\(shards == 1 ? "" : "s") failed; each log holds the test's "
                + "full output, and the summary above names the smallest failing combination and how to reproduce it")
    }

    var buildArguments: [String] {
        ["swift", "build", "--build-tests"] + (packagePath.map { ["--package-path", $0] } ?? [])
    }

    /// Starts a shard with its variables, output to its log.
    static func start(_ run: ShardRun, environment: [String: String]) throws -> Process {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = run.arguments
        var environment = environment
        environment[Shard.environmentVariable] = run.shard.description
        environment["SWITCHYARD_MATRIX_PROGRESS"] = run.progressPath
        process.environment = environment
        process.standardInput = FileHandle.nullDevice
        guard FileManager.default.createFile(atPath: run.logPath, contents: nil),
            let log = FileHandle(forWritingAtPath: run.logPath)
        else {
            throw CommandFailure("cannot write \(run.logPath)")
        }
        process.standardOutput = log
        process.standardError = log
        try process.run()
        try? log.close()
        return process
    }

    /// Runs a command to its end, output to a log.
    static func runToEnd(_ arguments: [String], logPath: String, environment: [String: String]) async throws -> Int32 {
        let process = try start(
            ShardRun(shard: .all, arguments: arguments, logPath: logPath, progressPath: ""),
            environment: environment.filter { !$0.key.hasPrefix("SWITCHYARD_MATRIX_") })
        while process.isRunning { try? await Task.sleep(for: .milliseconds(100)) }
        return process.terminationStatus
    }

    /// `done total` from a shard's progress file.
    static func progress(of run: ShardRun) -> (done: UInt64, total: UInt64)? {
        guard let text = try? String(contentsOfFile: run.progressPath, encoding: .utf8) else { return nil }
        let parts = text.split(whereSeparator: \.isWhitespace).compactMap { UInt64($0) }
        return parts.count == 2 ? (parts[0], parts[1]) : nil
    }

    /// `shard 2/4  passed  32768 combinations  12.1 s`.
    static func resultLine(_ run: ShardRun) -> String {
        let (status, elapsed) = run.finished ?? (0, .zero)
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        let combinations = progress(of: run).map { "\($0.done) combinations" } ?? "no combinations reported"
        let verdict = status == 0 ? "passed" : status == 130 ? "not run" : "FAILED (exit status \(status))"
        return "shard \(run.shard)  \(verdict)  \(combinations)  " + String(format: "%.1f s", seconds)
    }

    /// One bar over every shard's progress.
    static func bar(_ runs: [ShardRun], elapsed: Duration) -> String {
        var done: UInt64 = 0
        var total: UInt64 = 0
        for run in runs {
            if let progress = progress(of: run) {
                done += progress.done
                total += progress.total
            }
        }
        let running = runs.filter { $0.process != nil && $0.finished == nil }.count
        let finished = runs.filter { $0.finished != nil }.count
        let width = 24
        let fraction = total == 0 ? 0 : min(1, Double(done) / Double(total))
        let filled = Int(fraction * Double(width))
        return "matrix [" + String(repeating: "#", count: filled) + String(repeating: "-", count: width - filled) + "] "
            + "\(done)/\(total > 0 ? "\(total)" : "?") combinations  shards: \(finished) done, \(running) running, "
            + "\(runs.count - finished - running) waiting  \(elapsed.components.seconds) s"
    }

    /// The matrix summary in a shard's log (from `matrix ` to the end of the test's output), or its last lines.
    static func summary(of logPath: String) -> String {
        guard let text = try? String(contentsOfFile: logPath, encoding: .utf8) else { return "(no output)\n" }
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        if let start = lines.lastIndex(where: { $0.hasPrefix("matrix ") }) {
            let summary = lines[start...].prefix { !$0.hasPrefix("✘") && !$0.hasPrefix("✔") && !$0.hasPrefix("◇") }
            return summary.joined(separator: "\n").trimmingCharacters(in: .newlines) + "\n"
        }
        return tail(of: logPath, lines: 30)
    }

    static func tail(of path: String, lines count: Int) -> String {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return "" }
        return text.split(separator: "\n", omittingEmptySubsequences: false).suffix(count).joined(separator: "\n")
            + "\n"
    }

    /// Words quoted for a shell where needed.
    static func shellLine(_ words: [String]) -> String {
        words.map { word in
            word.allSatisfy { $0.isLetter || $0.isNumber || "-_./=:,@%+".contains($0) } && !word.isEmpty
                ? word : "'" + word.replacingOccurrences(of: "'", with: "'\\''") + "'"
        }.joined(separator: " ")
    }
}

/// Set from the Ctrl-C handler, read by the loop.
private final class InterruptFlag: @unchecked Sendable {
    private let lock = NSLock()
    private var value = false

    func set() { lock.withLock { value = true } }
    var isSet: Bool { lock.withLock { value } }
}
