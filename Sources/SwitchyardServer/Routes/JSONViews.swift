import Foundation
import SwitchyardCore
import SwitchyardStorage

/// The JSON forms of records in API responses (snake_case, RFC 3339 times, rollouts in basis points).
enum View {
    static func namespace(_ record: NamespaceRecord, flagSet: FlagSet? = nil) -> JSONValue {
        var object = JSONObject([
            ("name", .string(record.name)), ("epoch", .string(record.epoch)), ("version", .int64(record.version)),
            ("etag", .string(record.entityTag)), ("reason_policy", .string(record.reasonPolicy.rawValue)),
            ("created_at", .string(record.createdAt.iso8601)), ("updated_at", .string(record.updatedAt.iso8601)),
        ])
        if let flagSet {
            object["description"] = flagSet.description.map(JSONValue.string) ?? .null
            object["counts"] = .object(JSONObject([
                ("flags", .int(flagSet.flags.count)), ("plugin_points", .int(flagSet.pluginPoints.count)),
                ("kill_switches", .int(flagSet.killSwitches.count)),
            ]))
        }
        return .object(object)
    }

    /// A change log entry; `evidence` only on automatic changes (the crash guard's).
    static func change(_ record: ChangeRecord) -> JSONValue {
        var object = JSONObject([
            ("version", .int64(record.version)), ("time", .string(record.time.iso8601)), ("actor", .string(record.actor)),
            ("source", .string(record.source.rawValue)), ("reason", record.reason.map(JSONValue.string) ?? .null),
            ("summary", .string(record.summary)), ("changes", .array(record.changes.map(\.tree))),
        ])
        if let evidence = record.evidence { object["evidence"] = evidence }
        return .object(object)
    }

    /// An audit entry; `evidence` only on automatic changes (the crash guard's).
    static func audit(_ entry: AuditEntry) -> JSONValue {
        var object = JSONObject([
            ("id", .int64(entry.id)), ("time", .string(entry.time.iso8601)), ("actor", .string(entry.actor)),
            ("source", .string(entry.source.rawValue)), ("action", .string(entry.action.rawValue)),
            ("namespace", entry.namespace.map(JSONValue.string) ?? .null),
            ("version", entry.version.map(JSONValue.int64) ?? .null),
            ("reason", entry.reason.map(JSONValue.string) ?? .null), ("summary", .string(entry.summary)),
            ("changes", .array(entry.changes.map(\.tree))),
        ])
        if let evidence = entry.evidence { object["evidence"] = evidence }
        return .object(object)
    }

    /// A flag with its key and the kill switches covering it.
    static func flag(_ flag: FlagDefinition, in flagSet: FlagSet) -> JSONValue {
        var object = JSONObject([("key", .string(flag.key))])
        for (key, value) in flag.tree(unit: .basisPoints) { object[key] = value }
        object["kill_switches"] = .array(flagSet.killSwitchKeys(covering: flag.key).map(JSONValue.string))
        object["plugin_point"] = flagSet.pluginPoints.first { $0.switches.contains(flag.key) }.map { .string($0.name) } ?? .null
        return .object(object)
    }

    static func killSwitch(_ kill: KillSwitch, in flagSet: FlagSet) -> JSONValue {
        var object = JSONObject([("key", .string(kill.key))])
        object["description"] = kill.description.map(JSONValue.string) ?? .null
        object["members"] = .array(flagSet.members(of: kill.key).map(JSONValue.string))
        object["entries"] = .array(kill.entries.map { .object($0.tree) })
        object["killed_everywhere"] = .bool(kill.isKilledEverywhere)
        return .object(object)
    }

    /// The envelope of a change response: the namespace version after it, and its change log entry.
    static func committed(_ result: CommittedChange, _ extra: [(String, JSONValue)] = []) -> JSONValue {
        var object = JSONObject([
            ("namespace", .string(result.state.record.name)), ("version", .int64(result.state.record.version)),
            ("etag", .string(result.state.record.entityTag)), ("changed", .bool(result.changed)),
            ("change", result.record.map(change) ?? .null),
        ])
        for (key, value) in extra { object[key] = value }
        return .object(object)
    }
}
