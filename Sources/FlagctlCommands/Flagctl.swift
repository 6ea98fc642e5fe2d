public import ArgumentParser
import SwitchyardWire

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
/// Exit statuses: 0 success, 1 failure (for example lint problems, an unreachable server), 3 conflict (the
/// namespace changed since the view a change was based on), 4 not found (an unknown flag or namespace),
/// 5 unauthorised or forbidden, 64 usage (a bad or missing argument).
public struct Flagctl: AsyncParsableCommand {
    public static let configuration = CommandConfiguration(
        commandName: "flagctl",
        abstract:
            "Switch Switchyard flags: kill optional code, roll plugins out, read the audit log, apply flag files.",
        discussion: """
            Point flagctl at the flags service once (or use --server/--token/--namespace, or FLAGCTL_SERVER, \
            FLAGCTL_TOKEN and FLAGCTL_NAMESPACE):

              flagctl login --server https://flags.internal --namespace rider

            Then, for example:

              flagctl get
              flagctl kill --city lagos --reason "INC-4411: crash loop in Lagos"
              flagctl rollout plugin_switch_prefs_ride_pass 10 --city nairobi
              flagctl audit --since 24h
              flagctl guard status
              flagctl apply Flags --dry-run

            lint, and explain with --flags, work on flag files without the service.

            Exit status: 0 success, 1 failure, 3 conflict (changed since you read it), 4 not found, \
            5 unauthorised or forbidden, 64 usage. Run 'flagctl help <command>' for a command's options and \
            examples; 'flagctl --generate-completion-script bash|zsh|fish' prints shell completions.
            """,
        version: FlagctlVersion.current,
        subcommands: subcommands
    )

    /// Every subcommand, in the order help lists them. Add new commands here.
    static let subcommands: [any ParsableCommand.Type] = [
        Get.self, Enable.self, Disable.self, Kill.self, Revive.self, RolloutCommand.self, Target.self, Explain.self,
        Audit.self, Revert.self, Watch.self, Guard.self, ExperimentCommand.self, Diff.self, Apply.self, Lint.self,
        Release.self, MatrixCommands.self, Namespaces.self,
        Tokens.self, Login.self, Version.self,
    ]

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
        } catch let failure as APIFailure {
            let failure = failure.commandFailure
            console.writeError("error: \(failure.message)\n")
            return failure.exitStatus
        } catch let error as WireError {
            console.writeError(
                "error: flagsd sent an answer this flagctl cannot read (\(error.message)); is it a flagsd of this flagctl's version (\(FlagctlVersion.current))?\n"
            )
            return ExitStatus.failure
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
