package import SwitchyardCore
package import SwitchyardStorage

/// What an automatic writer (the crash guard, the release plan runner) decided on one version of a namespace: a
/// change to commit on that version, or nothing to commit (see ``FlagService/decideAndCommit(_:attempts:decide:)``).
package enum VersionedDecision<Value> {
    /// Commit this change on the version it was decided on (its `basedOn` is set to that version); `Value` says what
    /// the change is, for the caller to act on once it committed.
    case commit(Value, ChangeRequest, mutation: @Sendable (FlagSet) throws -> FlagSet)
    /// Commit nothing: `Value` is the whole decision (a hold, a proposal to record).
    case settle(Value)
}

/// What ``FlagService/decideAndCommit(_:attempts:decide:)`` did.
package enum VersionedOutcome<Value> {
    /// The change committed (its `record` is nil when it altered nothing: done already).
    case committed(Value, CommittedChange)
    /// The decision committed nothing.
    case settled(Value)
}

/// A decision was made on a view older than the namespace (thrown by a decision or its mutation): decide again.
package struct StaleDecision: Error, Sendable {
    package init() {}
}

extension FlagService {
    /// Decides a change on a namespace's latest state and commits it on that version; when the namespace moved on
    /// between the decision and the commit, decides again on what it is now.
    ///
    /// Automatic writers decide on counts and history read at one version, so several flagsd processes sharing a
    /// store must never commit a decision on another: the commit is refused (`StorageError` `conflict`) when the
    /// version moved, and the next attempt reads the new state (where, say, another process's trip or step is
    /// already made). A decision or its mutation throws ``StaleDecision`` for the same reason when it sees that what
    /// it read is older than the namespace.
    ///
    /// ```swift
    /// let outcome = try await service.decideAndCommit("rider") { state in
    ///     guard let edit = plan(state) else { return nil }      // nothing to do
    ///     return .commit(edit.step, edit.request, mutation: edit.mutation)
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - namespace: the namespace to read and change.
    ///   - attempts: how many decisions at most (3: a busy namespace does not keep a writer looping).
    ///   - decide: the decision on the namespace's state as read now; nil when there is nothing to do. It may read
    ///     more (counts, history) and may throw ``StaleDecision``.
    /// - Returns: what committed, or the decision that committed nothing; nil when the namespace does not exist,
    ///   `decide` found nothing to do, or the namespace moved on before each of the `attempts` commits.
    /// - Throws: any other error of `decide`, of the store or of the mutation.
    package func decideAndCommit<Value>(
        _ namespace: String, attempts: Int = 3, decide: (NamespaceState) async throws -> VersionedDecision<Value>?
    ) async throws -> VersionedOutcome<Value>? {
        for _ in 0..<max(1, attempts) {
            do {
                guard let state = try await store.namespace(namespace), let decision = try await decide(state) else {
                    return nil
                }
                switch decision {
                case .settle(let value):
                    return .settled(value)
                case .commit(let value, var request, let mutation):
                    request.basedOn = state.record.snapshotVersion
                    return .committed(value, try await change(namespace, request, mutation: mutation))
                }
            } catch let error as StorageError where error.kind == .conflict {
                continue
            } catch is StaleDecision {
                continue
            }
        }
        return nil
    }
}
