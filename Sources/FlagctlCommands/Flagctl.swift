public import ArgumentParser

/// `flagctl`, the release manager's command line: the root command and its subcommands.
///
/// Subcommands conform to `FlagctlCommand`, so they write through a `Console` and tests run them in-process:
///
/// ```swift
/// let console = Console.capturing()
/// let status = await Flagctl.execute(["lint", "Flags"], console: console)
/// // status == 0, console.output == "Flags: 1 file, namespace rider: no problems\n"
/// ```
///
/// Exit statuses: 0 success, 1 failure (for example lint problems), 4 not found (an unknown flag or
/// namespace), 64 usage (a bad or missing argument).
public struct Flagctl: AsyncParsableCommand {
    public static let configuration = CommandConfiguration(
        commandName: "flagctl",
        abstract: "Check, explain and (with the flags service) change Switchyard flags.",
        discussion: """
            Offline commands work on flag files (Flags/<namespace>.yaml):

              flagctl lint Flags
              flagctl explain plugin_switch_feed_promos --flags Flags --unit rider-42

            Exit status: 0 success, 1 failure (problems found), 4 not found (unknown flag or namespace), \
            64 usage (bad or missing argument). Run 'flagctl help <command>' for a command's options and examples.
            """,
        subcommands: subcommands
    )

    /// Every subcommand, in the order help lists them. Add new commands here.
    static let subcommands: [any ParsableCommand.Type] = [Lint.self, Explain.self]

    public init() {}

    /// Parses arguments and runs the command they name, writing through a console.
    ///
    /// Unlike `main()`, it returns the exit status instead of exiting, so tests can drive the real commands.
    /// - Parameters:
    ///   - arguments: the arguments after the program name.
    ///   - console: where output and errors go.
    /// - Returns: the exit status (`ExitStatus`).
    public static func execute(_ arguments: [String], console: Console = .standard) async -> Int32 {
        do {
            var command = try await asyncParseAsRoot(arguments)
            switch command {
            case let flagctlCommand as any FlagctlCommand:
                try await flagctlCommand.run(console: console)
            case is Flagctl:
                console.write(helpMessage() + "\n")
            case var asyncCommand as any AsyncParsableCommand:
                try await asyncCommand.run()
            default:
                try command.run()
            }
            return ExitStatus.success
        } catch let failure as CommandFailure {
            if !failure.message.isEmpty { console.writeError("error: \(failure.message)\n") }
            return failure.exitStatus
        } catch {
            let message = fullMessage(for: error)
            let status = exitCode(for: error).rawValue
            if !message.isEmpty {
                if status == ExitStatus.success {
                    console.write(message + "\n")
                } else {
                    console.writeError(message + "\n")
                }
            }
            return status
        }
    }
}

/// A `flagctl` subcommand that writes through a console, so it runs the same in a terminal and in tests.
public protocol FlagctlCommand: AsyncParsableCommand {
    /// Runs the command.
    /// - Throws: `CommandFailure` for an outcome with its own exit status; `ValidationError` for usage errors.
    func run(console: Console) async throws
}

extension FlagctlCommand {
    public func run() async throws {
        try await run(console: .standard)
    }
}
