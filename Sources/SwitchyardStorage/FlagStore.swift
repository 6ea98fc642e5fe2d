public import Foundation
public import SwitchyardCore
public import SwitchyardWire

/// Where flagsd keeps namespaces, their flag sets, the change log, the audit log and tokens.
///
/// Backends: `SQLiteFlagStore` (embedded, the default) and `PostgresFlagStore` (module `SwitchyardPostgres`,
/// shared by several flagsd processes). One conformance suite runs against every backend.
///
/// Implementation requirements:
/// - `change(_:_:mutation:)` runs in one transaction: read the current flag set, apply the mutation, plan the
///   change with `ChangePlan` (validation, diff, reason policy), take the next version from a stored counter
///   (never reused, also across restarts and after a namespace is deleted), append the change log row and the
///   audit row, and commit. The change is durable when the call returns.
/// - A change that alters nothing takes no version and writes no rows (`CommittedChange.record` is nil).
/// - `basedOn` refuses a change unless the namespace is at that epoch and version, with `StorageError`
///   `conflict` naming who made the current version and when.
/// - The change log row and the audit row of a change keep `ChangeRequest.evidence` (the crash guard's), and
///   give it back in `ChangeRecord.evidence` and `AuditEntry.evidence`.
/// - Every error is a `StorageError`; errors thrown by a mutation pass through unchanged.
/// - Token secrets are never stored, only their SHA-256.
/// - A store that several processes share returns `notifications()`, and sends one after every commit of a
///   namespace or token write, to every process (see `StoreNotification`). `change(_:_:mutation:)` runs the
///   mutation under a lock on the namespace that the other processes respect, so versions stay strictly
///   increasing and a mutation that refuses a change when it finds its work done (the crash guard's "disable
///   unless disabled") decides on the latest state.
///
/// Every store is also an `EventStore` (client events: ids and counters), with its own requirements.
public protocol FlagStore: EventStore {
    /// Every live namespace, by name.
    func namespaces() async throws -> [NamespaceRecord]

    /// A live namespace and its current flag set; nil when it does not exist.
    func namespace(_ name: String) async throws -> NamespaceState?

    /// Creates a namespace with a fresh epoch at version 1, recording the creation as its first change.
    ///
    /// - Throws: `alreadyExists` when a live namespace has the name; `invalid` for an invalid flag set.
    func createNamespace(_ flagSet: FlagSet, reasonPolicy: ReasonPolicy, request: ChangeRequest) async throws
        -> CommittedChange

    /// Sets a namespace's reason policy (audited; takes no version, as the flag set does not change).
    ///
    /// - Returns: the namespace after it, and whether the policy changed. Setting the policy in force writes
    ///   nothing: no audit entry, the same `updatedAt`.
    func setReasonPolicy(_ policy: ReasonPolicy, of namespace: String, by author: ChangeAuthor) async throws -> (
        record: NamespaceRecord, changed: Bool
    )

    /// Deletes a namespace. Its change log and audit entries stay; a namespace created later under the same
    /// name gets a new epoch.
    func deleteNamespace(_ name: String, by author: ChangeAuthor) async throws

    /// Changes a namespace's flag set in one transaction (see the implementation requirements).
    ///
    /// - Parameters:
    ///   - namespace: the namespace name.
    ///   - request: author, reason, the version it is based on, and a summary.
    ///   - mutation: returns the new flag set from the current one; runs inside the transaction, so it must
    ///     be quick and do no I/O. It may throw to refuse the change.
    /// - Returns: the namespace after the change, and its change log entry.
    func change(
        _ namespace: String, _ request: ChangeRequest, mutation: @escaping @Sendable (FlagSet) throws -> FlagSet
    ) async throws -> CommittedChange

    /// Change log entries of a namespace with a version above `after`, oldest first.
    func changes(in namespace: String, after version: Int64, limit: Int) async throws -> [ChangeRecord]

    /// Audit entries matching a query, newest first.
    func audit(_ query: AuditQuery) async throws -> AuditPage

    /// Records an audited action that changes no flag (a crash guard proposal, a dismissal), durable when it
    /// returns.
    ///
    /// - Returns: the entry as stored.
    /// - Throws: `notFound` when the namespace does not exist.
    func recordAudit(_ note: AuditNote) async throws -> AuditEntry

    /// Every token, live and revoked, with the hashes needed to verify secrets.
    func tokens() async throws -> [StoredToken]

    /// Stores a new token.
    ///
    /// - Throws: `alreadyExists` when a live token has the name.
    func createToken(_ token: StoredToken, by author: ChangeAuthor) async throws

    /// Revokes a token by id or by the name of a live token.
    ///
    /// Refuses to revoke the last live admin token valid in every namespace, deciding on the latest tokens of
    /// every process sharing the store (two admins revoking each other at once leave one of them live).
    ///
    /// - Returns: the revoked token.
    /// - Throws: `notFound` when no token has that id or live name; `lastAdminToken` for the last unrestricted
    ///   admin token.
    func revokeToken(_ idOrName: String, by author: ChangeAuthor) async throws -> TokenRecord

    /// Checks that the database answers (for `/readyz`).
    func checkHealth() async throws

    /// The store's clock: the time it records for each change, token and event. flagsd reads it for every other
    /// time a change records (a release plan's step, a plan a change interrupts), so tests set one clock.
    var now: @Sendable () -> Date { get }

    /// The writes of every process sharing the store, as they commit; nil when only this process writes to it.
    ///
    /// Each call returns a new stream; it starts with `resync` once the store listens, and ends when the task
    /// consuming it is cancelled.
    func notifications() -> AsyncStream<StoreNotification>?
}

extension FlagStore {
    /// A store only this process writes to has nothing to tell it.
    public func notifications() -> AsyncStream<StoreNotification>? { nil }
}

extension FlagStore {
    /// One change log entry; nil when the namespace has no change of that version.
    public func change(in namespace: String, version: Int64) async throws -> ChangeRecord? {
        guard version >= 1 else { return nil }
        return try await changes(in: namespace, after: version - 1, limit: 1).first { $0.version == version }
    }

    /// Issues a new token: generates its secret, stores its hash, and returns the secret (shown once).
    ///
    /// - Parameter ratePerMinute: the most OFREP evaluation requests per minute the token may send (nil: the
    ///   server's default).
    /// - Returns: the record and the secret, which the store does not keep.
    public func issueToken(
        name: String, role: Role, namespaces: [String]?, ratePerMinute: Int? = nil, by author: ChangeAuthor,
        now: Date = Date()
    ) async throws -> (record: TokenRecord, secret: String) {
        let secret = TokenSecret.generate(role: role)
        let record = TokenRecord(
            id: TokenSecret.newID(), name: name, role: role, namespaces: namespaces,
            ratePerMinute: ratePerMinute, createdAt: Date(milliseconds: now.milliseconds),
            createdBy: author.actor)
        try await createToken(StoredToken(record: record, secretHash: TokenSecret.hash(secret)), by: author)
        return (record, secret)
    }

    /// Restores what a change touched to its state before that change, as a new change.
    ///
    /// The change is ``reverting(_:version:request:)`` committed with ``change(_:_:mutation:)``; flagsd commits
    /// that through its one change path instead, which also stops the release plans the revert interrupts.
    /// - Throws: `notFound` when the namespace has no such change; `invalid` when the restored flag set is
    ///   invalid (for example, a restored plugin point names a flag deleted since).
    public func revert(
        _ namespace: String, version: Int64, request: ChangeRequest
    ) async throws -> CommittedChange {
        let revert = try await reverting(namespace, version: version, request: request)
        return try await change(namespace, revert.request, mutation: revert.mutation)
    }

    /// The change that reverts a recorded one: its request (summary `revert version N (…)` unless given) and its
    /// mutation.
    ///
    /// Objects the change created are deleted; objects it deleted or updated get their earlier definition
    /// back, whatever happened to them since. A release plan's progress is never restored: a restored plan keeps
    /// the state of the plan the switch has now when it is declared the same, and is not started otherwise.
    /// - Throws: `notFound` when the namespace has no such change.
    public func reverting(
        _ namespace: String, version: Int64, request: ChangeRequest
    ) async throws -> (request: ChangeRequest, mutation: @Sendable (FlagSet) throws -> FlagSet) {
        guard let target = try await change(in: namespace, version: version) else {
            if try await self.namespace(namespace) == nil { throw StorageError.namespaceNotFound(namespace) }
            throw StorageError(
                .notFound,
                "namespace '\(namespace)' has no change with version \(version) (list changes with GET /v1/namespaces/\(namespace)/changes)"
            )
        }
        var request = request
        if request.summary == nil { request.summary = "revert version \(version) (\(target.summary))" }
        let objects = target.changes
        return (request, { current in try current.restoring(objects, from: version).keepingReleaseStates(of: current) })
    }
}

extension FlagSet {
    /// This flag set with some objects set back to their `before` trees.
    func restoring(_ objects: [ObjectChange], from version: Int64) throws(StorageError) -> FlagSet {
        var tree = self.tree(unit: .basisPoints)
        var flags = tree["flags"]?.objectValue ?? JSONObject()
        var kills = tree["kill_switches"]?.objectValue ?? JSONObject()
        var points = tree["plugin_points"]?.arrayValue ?? []
        var metrics = tree["metrics"]?.objectValue ?? JSONObject()
        for object in objects {
            switch object.kind {
            case .namespace:
                if object.key == "description" || object.key == "crash_guard" { tree[object.key] = object.before }
            case .flag:
                flags[object.key] = object.before
            case .killSwitch:
                kills[object.key] = object.before
            case .metric:
                metrics[object.key] = object.before
            case .pluginPoint:
                let index = points.firstIndex { $0["name"]?.stringValue == object.key }
                switch (index, object.before) {
                case (let index?, let before?): points[index] = before
                case (let index?, nil): points.remove(at: index)
                case (nil, let before?): points.append(before)
                case (nil, nil): break
                }
            }
        }
        tree["flags"] = .object(flags)
        tree["kill_switches"] = .object(kills)
        tree["plugin_points"] = points.isEmpty ? nil : .array(points)
        tree["metrics"] = metrics.isEmpty ? nil : .object(metrics)
        do {
            return try FlagSet(tree: .object(tree), unit: .basisPoints)
        } catch {
            throw StorageError(
                .invalid,
                "reverting version \(version) would leave namespace '\(namespace)' invalid; change the objects it names first",
                problems: error.problems)
        }
    }
}
