import Foundation
import SwitchyardCore
import SwitchyardStorage
import SwitchyardWire

/// Records as the API's bodies (`SwitchyardWire`, which flagctl reads too): the one place storage records become
/// wire bodies.
enum View {
    static func namespace(_ record: NamespaceRecord, flagSet: FlagSet? = nil) -> JSONValue {
        NamespaceBody(
            name: record.name, epoch: record.epoch, version: record.version, reasonPolicy: record.reasonPolicy,
            createdAt: record.createdAt.iso8601, updatedAt: record.updatedAt.iso8601,
            summary: flagSet.map { flagSet in
                NamespaceBody.Summary(description: flagSet.description, counts: NamespaceBody.Counts(
                    flags: flagSet.flags.count, pluginPoints: flagSet.pluginPoints.count, killSwitches: flagSet.killSwitches.count))
            }
        ).json
    }

    /// A change log entry; `evidence` only on automatic changes (the crash guard's).
    static func change(_ record: ChangeRecord) -> JSONValue {
        changeBody(record).json
    }

    static func changeBody(_ record: ChangeRecord) -> ChangeEntryBody {
        ChangeEntryBody(version: record.version, time: record.time.iso8601, actor: record.actor, source: record.source.rawValue,
                        reason: record.reason, summary: record.summary, changes: record.changes.map(\.tree), evidence: record.evidence)
    }

    /// An audit entry; `evidence` only on automatic changes (the crash guard's).
    static func audit(_ entry: AuditEntry) -> JSONValue {
        AuditEntryBody(id: entry.id, time: entry.time.iso8601, actor: entry.actor, source: entry.source.rawValue,
                       action: entry.action.rawValue, namespace: entry.namespace, version: entry.version, reason: entry.reason,
                       summary: entry.summary, changes: entry.changes.map(\.tree), evidence: entry.evidence).json
    }

    /// A flag with its key and the kill switches covering it.
    static func flag(_ flag: FlagDefinition, in flagSet: FlagSet) -> JSONValue {
        FlagBody(flag, in: flagSet).json
    }

    static func killSwitch(_ kill: KillSwitch, in flagSet: FlagSet) -> JSONValue {
        KillSwitchBody(kill, in: flagSet).json
    }

    /// The flag set document at a namespace's version.
    static func flagSet(_ state: NamespaceState) -> JSONValue {
        FlagSetBody(version: state.record.snapshotVersion, flagSet: state.flagSet).json
    }

    /// The envelope of a change response: the namespace version after it, and its change log entry.
    static func committed(_ result: CommittedChange, _ extra: [(String, JSONValue)] = []) -> JSONValue {
        CommittedBody(namespace: result.state.record.name, version: result.state.record.snapshotVersion, changed: result.changed,
                      change: result.record.map(changeBody), extra: Dictionary(extra, uniquingKeysWith: { _, last in last })).json
    }
}
