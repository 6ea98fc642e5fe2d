/// `flagctl`'s exit statuses.
public enum ExitStatus {
    /// The command did what was asked.
    public static let success: Int32 = 0
    /// The command ran and found a problem (lint problems, invalid flag files).
    public static let failure: Int32 = 1
    /// A flag or namespace does not exist.
    public static let notFound: Int32 = 4
    /// The arguments are wrong (sysexits' EX_USAGE, as swift-argument-parser reports).
    public static let usage: Int32 = 64
}

/// A command outcome with an exit status and a message that says what to do next.
public struct CommandFailure: Error, Sendable, CustomStringConvertible {
    /// Printed to standard error after `error: `; empty when the command already printed everything.
    public var message: String
    public var exitStatus: Int32

    public init(_ message: String, exitStatus: Int32 = ExitStatus.failure) {
        self.message = message
        self.exitStatus = exitStatus
    }

    /// Exit status 4: a flag or namespace that does not exist.
    public static func notFound(_ message: String) -> CommandFailure {
        CommandFailure(message, exitStatus: ExitStatus.notFound)
    }

    public var description: String { message }
}
