/// `flagctl`'s exit statuses.
public enum ExitStatus {
    /// The command did what was asked.
    public static let success: Int32 = 0
    /// The command ran and found a problem (lint problems, invalid flag files), the server refused a change as
    /// invalid, the server could not be reached, or a prompt was answered no.
    public static let failure: Int32 = 1
    /// The namespace changed since the view a change was based on (HTTP 409), or the object exists already.
    public static let conflict: Int32 = 3
    /// A flag, kill switch, namespace, change or token does not exist.
    public static let notFound: Int32 = 4
    /// The token is missing, invalid or revoked (HTTP 401), or lacks the role or namespace (HTTP 403).
    public static let unauthorized: Int32 = 5
    /// The arguments are wrong (sysexits' EX_USAGE, as swift-argument-parser reports), including a missing
    /// `--reason` the namespace requires and a missing `--yes` when not on a terminal.
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

    /// Exit status 3: a change based on a stale view, or an object that exists already.
    public static func conflict(_ message: String) -> CommandFailure {
        CommandFailure(message, exitStatus: ExitStatus.conflict)
    }

    /// Exit status 5: no valid token, or not allowed.
    public static func unauthorized(_ message: String) -> CommandFailure {
        CommandFailure(message, exitStatus: ExitStatus.unauthorized)
    }

    /// Exit status 64: a missing or wrong argument found while running.
    public static func usage(_ message: String) -> CommandFailure {
        CommandFailure(message, exitStatus: ExitStatus.usage)
    }

    public var description: String { message }
}
