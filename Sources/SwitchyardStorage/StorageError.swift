public import Foundation
public import SwitchyardCore

/// Why a storage operation failed.
///
/// A struct over a private set of kinds, so new kinds never break callers. `flagsd` maps each kind to one HTTP
/// status (`notFound` 404, `alreadyExists`, `conflict` and `lastAdminToken` 409, `invalid` and `reasonRequired`
/// 400, `unavailable` 503).
///
/// `message` is what a client may read: it never names the database (user, host, port, database name, file path)
/// and never quotes the database's own text. Those go in `diagnostic`, for logs only; `description` joins both.
public struct StorageError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The kind of problem; new kinds may be added.
    public typealias Kind = ErrorKind<StorageError>

    /// Who changed a namespace since the version a change was based on.
    public struct Conflict: Sendable, Hashable {
        public var currentEpoch: String
        public var currentVersion: Int64
        public var changedBy: String?
        public var changedAt: Date?

        public init(currentEpoch: String, currentVersion: Int64, changedBy: String?, changedAt: Date?) {
            self.currentEpoch = currentEpoch
            self.currentVersion = currentVersion
            self.changedBy = changedBy
            self.changedAt = changedAt
        }
    }

    public let kind: Kind
    /// What failed, with which input, and what to do next: safe to show to any client.
    public let message: String
    /// Where and what exactly, for logs only: the database's identity (`postgres://USER@HOST:PORT/DATABASE`, a file
    /// path) and the database's own error text. Never sent to clients.
    public let diagnostic: String?
    /// For `invalid`: every problem, with its field path.
    public let problems: [ValidationProblem]
    /// For `conflict`: the current version and who made it.
    public let conflict: Conflict?

    public init(
        _ kind: Kind, _ message: String, diagnostic: String? = nil, problems: [ValidationProblem] = [],
        conflict: Conflict? = nil
    ) {
        self.kind = kind
        self.message = message
        self.diagnostic = diagnostic
        self.problems = problems
        self.conflict = conflict
    }

    /// The message, the diagnostic and the problems: for logs and the command line, not for clients.
    public var description: String {
        var text = message
        if let diagnostic { text += " [\(diagnostic)]" }
        return problems.isEmpty ? text : text + "\n" + problems.map(\.description).joined(separator: "\n")
    }

    /// Refuses to revoke the last live admin token valid in every namespace (every backend says the same).
    package static func lastAdminToken(named name: String) -> StorageError {
        StorageError(
            .lastAdminToken,
            "token '\(name)' is the last live admin token valid in every namespace: revoking it would leave nobody able to manage tokens. Create another admin token first (flagctl tokens create NAME --role admin), then revoke this one"
        )
    }

    package static func namespaceNotFound(_ name: String) -> StorageError {
        StorageError(.notFound, "namespace '\(name)' does not exist (list namespaces with GET /v1/namespaces)")
    }
}

extension ErrorKind where Owner == StorageError {
    /// The namespace, flag, kill switch, change or token does not exist.
    public static var notFound: Self { Self("notFound") }
    /// A namespace or live token of that name exists already.
    public static var alreadyExists: Self { Self("alreadyExists") }
    /// The change was based on a version that is no longer current.
    public static var conflict: Self { Self("conflict") }
    /// The change would leave an invalid flag set, or its input is invalid.
    public static var invalid: Self { Self("invalid") }
    /// The namespace's reason policy requires a reason for this change.
    public static var reasonRequired: Self { Self("reasonRequired") }
    /// The database cannot be reached or refused the operation.
    public static var unavailable: Self { Self("unavailable") }
    /// Stored data could not be read back.
    public static var corrupt: Self { Self("corrupt") }
    /// Revoking the token would leave no live admin token valid in every namespace: nobody could manage tokens
    /// any more.
    public static var lastAdminToken: Self { Self("lastAdminToken") }
}
