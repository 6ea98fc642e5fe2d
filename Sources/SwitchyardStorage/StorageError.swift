public import Foundation
public import SwitchyardCore

/// Why a storage operation failed.
///
/// A struct over a private set of kinds, so new kinds never break callers. `flagsd` maps each kind to one HTTP
/// status (`notFound` 404, `alreadyExists` and `conflict` 409, `invalid` and `reasonRequired` 400,
/// `unavailable` 503).
public struct StorageError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The kind of failure; new kinds may be added.
    public struct Kind: Sendable, Hashable, CustomStringConvertible {
        fileprivate enum Base: String, Sendable {
            case notFound, alreadyExists, conflict, invalid, reasonRequired, unavailable, corrupt
        }

        fileprivate let base: Base

        /// The namespace, flag, kill switch, change or token does not exist.
        public static let notFound = Kind(base: .notFound)
        /// A namespace or live token of that name exists already.
        public static let alreadyExists = Kind(base: .alreadyExists)
        /// The change was based on a version that is no longer current.
        public static let conflict = Kind(base: .conflict)
        /// The change would leave an invalid flag set, or its input is invalid.
        public static let invalid = Kind(base: .invalid)
        /// The namespace's reason policy requires a reason for this change.
        public static let reasonRequired = Kind(base: .reasonRequired)
        /// The database cannot be reached or refused the operation.
        public static let unavailable = Kind(base: .unavailable)
        /// Stored data could not be read back.
        public static let corrupt = Kind(base: .corrupt)

        public var description: String { base.rawValue }
    }

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
    /// What failed, with which input, and what to do next.
    public let message: String
    /// For `invalid`: every problem, with its field path.
    public let problems: [ValidationProblem]
    /// For `conflict`: the current version and who made it.
    public let conflict: Conflict?

    public init(_ kind: Kind, _ message: String, problems: [ValidationProblem] = [], conflict: Conflict? = nil) {
        self.kind = kind
        self.message = message
        self.problems = problems
        self.conflict = conflict
    }

    public var description: String {
        problems.isEmpty ? message : message + "\n" + problems.map(\.description).joined(separator: "\n")
    }

    static func namespaceNotFound(_ name: String) -> StorageError {
        StorageError(.notFound, "namespace '\(name)' does not exist (list namespaces with GET /v1/namespaces)")
    }
}
