import Foundation
import SwitchyardCore
import SwitchyardStorage
import SwitchyardWire

/// Records as the API's bodies (`SwitchyardWire`, which flagctl reads too): the one place storage records become
/// wire bodies.
enum View {
    static func namespace(_ record: NamespaceRecord, flagSet: FlagSet? = nil) -> JSONValue {
        namespaceBody(record, flagSet: flagSet).json
    }

    static func namespaceBody(_ record: NamespaceRecord, flagSet: FlagSet? = nil) -> NamespaceBody {
        NamespaceBody(
            name: record.name, epoch: record.epoch, version: record.version, reasonPolicy: record.reasonPolicy,
            createdAt: record.createdAt.iso8601, updatedAt: record.updatedAt.iso8601,
            summary: flagSet.map { flagSet in
                NamespaceBody.Summary(
                    description: flagSet.description,
                    counts: NamespaceBody.Counts(
                        flags: flagSet.flags.count, pluginPoints: flagSet.pluginPoints.count,
                        killSwitches: flagSet.killSwitches.count))
            })
    }

    /// A change log entry; `evidence` only on automatic changes (the crash guard's).
    static func change(_ record: ChangeRecord) -> JSONValue {
        changeBody(record).json
    }

    static func changeBody(_ record: ChangeRecord) -> ChangeEntryBody {
        ChangeEntryBody(
            version: record.version, time: record.time.iso8601, actor: record.actor, source: record.source.rawValue,
            reason: record.reason, summary: record.summary, changes: record.changes.map(\.tree),
            evidence: record.evidence)
    }

    /// A change log entry as a client token reads it: what snapshots show, and no more. A client token ships in every
    /// app, so anyone may read with it: it gets the version, the time and what changed in the objects clients
    /// evaluate, without who made the change, why, its evidence, the crash guard's policies, the release plans
    /// (whose stages, margins and evidence are the release manager's) and the metrics. An object whose change was
    /// only in those is left out; the entry stays, so the versions still follow each other.
    static func clientChange(_ record: ChangeRecord) -> ClientChangeEntryBody {
        var changes: [JSONValue] = []
        for change in record.changes {
            // The namespace's own fields: only its description is in snapshots.
            if change.kind == .namespace, change.key != "description" { continue }
            // Metrics are the server's, as the crash guard's policy is: not in snapshots.
            if change.kind == .metric { continue }
            let before = change.before.map(clientObject)
            let after = change.after.map(clientObject)
            if change.kind != .namespace, before == after { continue }
            changes.append(ObjectChange(kind: change.kind, key: change.key, before: before, after: after).tree)
        }
        return ClientChangeEntryBody(version: record.version, time: record.time.iso8601, changes: changes)
    }

    /// An object of a change as snapshots show it: a plugin switch without its crash guard policy and release plan.
    private static func clientObject(_ tree: JSONValue) -> JSONValue {
        guard var object = tree.objectValue else { return tree }
        for field in FlagDefinition.serverPolicyFields { object[field] = nil }
        return .object(object)
    }

    /// An audit entry; `evidence` only on automatic changes (the crash guard's).
    static func auditBody(_ entry: AuditEntry) -> AuditEntryBody {
        AuditEntryBody(
            id: entry.id, time: entry.time.iso8601, actor: entry.actor, source: entry.source.rawValue,
            action: entry.action.rawValue, namespace: entry.namespace, version: entry.version, reason: entry.reason,
            summary: entry.summary, changes: entry.changes.map(\.tree), evidence: entry.evidence)
    }

    /// A flag with its key and the kill switches covering it.
    static func flag(_ flag: FlagDefinition, in flagSet: FlagSet) -> JSONValue {
        FlagBody(flag, in: flagSet).json
    }

    /// The flag set document at a namespace's version.
    static func flagSet(_ state: NamespaceState) -> JSONValue {
        FlagSetBody(version: state.record.snapshotVersion, flagSet: state.flagSet).json
    }

    /// The answer to a change: the namespace version after it and its change log entry; the route adds what it
    /// changed.
    static func committed(_ result: CommittedChange) -> CommittedBody {
        CommittedBody(
            namespace: result.state.record.name, version: result.state.record.snapshotVersion, changed: result.changed,
            change: result.record.map(changeBody))
    }
}
