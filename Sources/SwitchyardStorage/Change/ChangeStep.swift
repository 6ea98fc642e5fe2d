public import Foundation
public import SwitchyardCore

/// What a change does to a namespace, decided the same way on every backend inside its write transaction, once the
/// backend has read (and on PostgreSQL locked) the namespace's current state: refused as based on another version,
/// nothing to commit, or this new state with its change log entry. The backend then only writes what it is told.
public enum ChangeStep: Sendable {
    /// The change was based on another version (`If-Match`): refuse it with ``ChangeStep/conflict(current:basedOn:lastChange:)``.
    case conflict(basedOn: SnapshotVersion)
    /// The change alters nothing: commit nothing, answer with the current state.
    case unchanged
    /// Write the state's flag set at the new version and append the record (change log and audit).
    case commit(NamespaceState, ChangeRecord)

    /// Decides a change.
    ///
    /// - Parameters:
    ///   - state: the namespace as the transaction read it.
    ///   - request: author, reason, summary, evidence and the version it is based on.
    ///   - time: the change's time.
    ///   - mutation: the edit, applied to the current flag set.
    /// - Throws: what the mutation throws; `StorageError` from ``ChangePlan`` (invalid result, reason required).
    public static func decide(
        _ state: NamespaceState, _ request: ChangeRequest, at time: Date, mutation: (FlagSet) throws -> FlagSet
    ) throws -> ChangeStep {
        let current = state.record
        if let basedOn = request.basedOn, basedOn != current.snapshotVersion { return .conflict(basedOn: basedOn) }
        let plan = try ChangePlan(
            before: state.flagSet, after: try mutation(state.flagSet), request: request, policy: current.reasonPolicy)
        guard !plan.changes.isEmpty else { return .unchanged }
        var next = current
        next.version = current.version + 1
        next.updatedAt = time
        let record = ChangeRecord(
            namespace: current.name, epoch: current.epoch, version: next.version, time: time,
            actor: request.author.actor, source: request.author.source, reason: plan.reason,
            summary: plan.summary, changes: plan.changes, evidence: request.evidence)
        // The next change starts from this flag set: its switches' plugin points stay indexed (see `indexingSwitches`).
        return .commit(NamespaceState(record: next, flagSet: plan.after.indexingSwitches()), record)
    }

    /// The refusal of a change based on another version than the current one, naming who changed the namespace last
    /// and when (the backend reads its last change log entry).
    public static func conflict(
        current: NamespaceRecord, basedOn: SnapshotVersion, lastChange: (actor: String, time: Date)?
    ) -> StorageError {
        let conflict = StorageError.Conflict(
            currentEpoch: current.epoch, currentVersion: current.version,
            changedBy: lastChange?.actor, changedAt: lastChange?.time)
        let message: String
        if basedOn.epoch != current.epoch {
            message =
                "namespace '\(current.name)' was deleted and created again since your view (epoch \(basedOn.epoch), now \(current.epoch)); reload it and retry"
        } else {
            let who = lastChange.map { " by \($0.actor)" } ?? ""
            let when = lastChange.map { " at \($0.time.iso8601)" } ?? ""
            message =
                "namespace '\(current.name)' is at version \(current.version), changed\(who)\(when); your change was based on version \(basedOn.version). Reload, check the change, and retry"
        }
        return StorageError(.conflict, message, conflict: conflict)
    }
}

extension ChangeRecord {
    /// The keys an audit entry of this change is found by (every object but the namespace's own settings).
    public var auditTargets: [String] {
        changes.filter { $0.kind != .namespace }.map(\.key)
    }
}

/// The other namespace writes, decided the same way on every backend: what a new namespace's first version and change
/// record are, and what the audit says of a reason policy set or a namespace deleted.
public enum NamespaceStep {
    /// A new namespace at version 1 as stored (flags and kill switches in key order, as every later read has them),
    /// with the change record that creates it (its `namespace` object, then every object of the flag set).
    /// - Throws: `StorageError` `invalid` when the flag set is not valid.
    public static func creating(
        _ flagSet: FlagSet, reasonPolicy: ReasonPolicy, request: ChangeRequest, epoch: String,
        at time: Date
    ) throws -> (NamespaceState, ChangeRecord) {
        var request = request
        request.summary = request.summary ?? "created namespace \(flagSet.namespace)"
        let plan = try ChangePlan(
            before: FlagSet(namespace: flagSet.namespace), after: flagSet, request: request, policy: .never)
        let changes =
            [ObjectChange(kind: .namespace, key: "namespace", before: nil, after: .string(flagSet.namespace))]
            + plan.changes
        let record = ChangeRecord(
            namespace: flagSet.namespace, epoch: epoch, version: 1, time: time,
            actor: request.author.actor, source: request.author.source,
            reason: plan.reason, summary: plan.summary, changes: changes)
        let namespace = NamespaceRecord(
            name: flagSet.namespace, epoch: epoch, version: 1, reasonPolicy: reasonPolicy,
            createdAt: time, updatedAt: time)
        return (
            NamespaceState(
                record: namespace,
                flagSet: try FlagSet(storedObjects: flagSet.storedObjects, namespace: flagSet.namespace)), record
        )
    }

    /// The refusal of a namespace that exists already.
    public static func alreadyExists(_ name: String) -> StorageError {
        StorageError(.alreadyExists, "namespace '\(name)' exists already (delete it first, or choose another name)")
    }

    /// The audit's summary and change of a reason policy set.
    public static func settingReasonPolicy(of record: NamespaceRecord, to policy: ReasonPolicy) -> (
        summary: String, changes: [ObjectChange]
    ) {
        (
            "set the reason policy of \(record.name) to \(policy)",
            [
                ObjectChange(
                    kind: .namespace, key: "reason_policy", before: .string(record.reasonPolicy.rawValue),
                    after: .string(policy.rawValue))
            ]
        )
    }

    /// The audit's summary and change of a namespace deleted: the whole flag set before.
    public static func deleting(_ state: NamespaceState) -> (summary: String, changes: [ObjectChange]) {
        (
            "deleted namespace \(state.record.name) at version \(state.record.version)",
            [
                ObjectChange(
                    kind: .namespace, key: "namespace", before: .object(state.flagSet.tree(unit: .basisPoints)),
                    after: nil)
            ]
        )
    }
}
