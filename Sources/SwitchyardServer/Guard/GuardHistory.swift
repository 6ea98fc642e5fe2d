import Foundation
import SwitchyardCore
import SwitchyardStorage

/// The crash guard's trips of one namespace and whether a person has turned each back on, read from the
/// change log (so every flagsd sharing a store agrees, and a restart forgets nothing).
///
/// A trip is a change with source `crash-guard` and evidence. It is re-enabled by the first later change that
/// leaves its switch on in its scope (or deletes the switch). The latest re-enable of a switch anchors the
/// guard: only sessions counted after it count, and nothing trips before the cool-down has passed.
struct GuardHistory: Sendable {
    /// A trip and, once a person turned the switch back on, when and by whom.
    struct Trip: Sendable, Hashable {
        var key: String
        var scope: Scope
        var version: Int64
        var time: Date
        var reason: String?
        var evidence: JSONValue
        var reenabled: Reenable?
    }

    struct Reenable: Sendable, Hashable {
        var version: Int64
        var time: Date
        var actor: String
        /// The switch was deleted rather than enabled.
        var deleted: Bool
    }

    /// The namespace epoch the history belongs to; a new epoch starts a new history.
    var epoch: String?
    /// Change log entries up to this version have been read.
    var seenVersion: Int64 = 0
    /// Trips by the version they took.
    var trips: [Int64: Trip] = [:]

    /// Takes one change log entry into account (entries may come twice or out of order; each counts once).
    mutating func apply(_ change: ChangeRecord) {
        defer { seenVersion = max(seenVersion, change.version) }
        if change.source == .crashGuard, let trip = Self.trip(change.version, change.time, change.reason, change.evidence) {
            if trips[trip.version] == nil { trips[trip.version] = trip }
            return
        }
        for object in change.changes where object.kind == .flag {
            for (version, trip) in trips where trip.key == object.key && trip.reenabled == nil && version < change.version {
                guard let after = object.after else {
                    trips[version]?.reenabled = Reenable(version: change.version, time: change.time, actor: change.actor, deleted: true)
                    continue
                }
                if !Self.gate(after).isDisabled(in: trip.scope) {
                    trips[version]?.reenabled = Reenable(version: change.version, time: change.time, actor: change.actor, deleted: false)
                }
            }
        }
    }

    /// Adds a trip this process just committed, without marking the change log read up to it (changes before it
    /// may still be unread).
    mutating func add(committed change: ChangeRecord) {
        guard change.source == .crashGuard, let trip = Self.trip(change.version, change.time, change.reason, change.evidence) else { return }
        if trips[trip.version] == nil { trips[trip.version] = trip }
    }

    /// Adds a trip read from the audit log.
    mutating func add(_ entry: AuditEntry) {
        guard let version = entry.version, let trip = Self.trip(version, entry.time, entry.reason, entry.evidence) else { return }
        if trips[version] == nil { trips[version] = trip }
    }

    /// The oldest trip not known to be re-enabled, whose later changes still need reading.
    var oldestOpenVersion: Int64? {
        trips.values.filter { $0.reenabled == nil }.map(\.version).min()
    }

    /// The latest trip of a switch.
    func latestTrip(of key: String) -> Trip? {
        trips.values.filter { $0.key == key }.max { $0.version < $1.version }
    }

    /// Trips of a switch still in force (not re-enabled), newest first.
    func openTrips(of key: String) -> [Trip] {
        trips.values.filter { $0.key == key && $0.reenabled == nil }.sorted { $0.version > $1.version }
    }

    /// The latest time a person turned a tripped switch back on.
    func lastReenable(of key: String) -> Reenable? {
        trips.values.filter { $0.key == key }.compactMap(\.reenabled).filter { !$0.deleted }.max { $0.time < $1.time }
    }

    static func trip(_ version: Int64, _ time: Date, _ reason: String?, _ evidence: JSONValue?) -> Trip? {
        guard let evidence, let key = evidence["switch"]?.stringValue else { return nil }
        let scopeTree = evidence["scope"]?.objectValue ?? JSONObject()
        let scope = Scope(cities: scopeTree["cities"]?.arrayValue?.compactMap(\.stringValue) ?? [],
                          cohorts: scopeTree["cohorts"]?.arrayValue?.compactMap(\.stringValue) ?? [])
        return Trip(key: key, scope: scope, version: version, time: time, reason: reason, evidence: evidence)
    }

    /// The disables of a flag from its change log tree.
    static func gate(_ tree: JSONValue) -> PluginSwitchDefinition {
        let scopes = (tree["disabled_scopes"]?.arrayValue ?? []).map { scope in
            Scope(cities: scope["cities"]?.arrayValue?.compactMap(\.stringValue) ?? [],
                  cohorts: scope["cohorts"]?.arrayValue?.compactMap(\.stringValue) ?? [])
        }
        return PluginSwitchDefinition(disabled: tree["disabled"]?.boolValue ?? false, disabledScopes: scopes)
    }
}

extension GuardHistory.Trip {
    /// The trip as JSON for the API: when, where, why, and whether a person has turned the switch back on.
    var tree: JSONValue {
        var object = JSONObject([
            ("switch", .string(key)), ("scope", .object(scope.tree)), ("version", .int64(version)), ("time", .string(time.iso8601)),
            ("reason", reason.map(JSONValue.string) ?? .null), ("evidence", evidence),
        ])
        if let reenabled {
            object["reenabled"] = .object(JSONObject([
                ("version", .int64(reenabled.version)), ("time", .string(reenabled.time.iso8601)), ("actor", .string(reenabled.actor)),
                ("deleted", .bool(reenabled.deleted)),
            ]))
        } else {
            object["reenabled"] = .null
        }
        return .object(object)
    }
}
