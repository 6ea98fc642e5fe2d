import Foundation
import SwitchyardCore
import SwitchyardStorage

/// The crash guard's trips and proposals in one namespace, whether a person has turned each tripped switch back
/// on, and what became of each proposal, read from the change log and the audit log (so every flagsd sharing a
/// store agrees, and a restart forgets nothing).
///
/// A trip is a change with source `crash-guard` and evidence: made by the guard itself (actor `crash-guard`), or by
/// a person applying one of its proposals. It is re-enabled by the first later change that leaves its switch on in
/// its scope (or deletes the switch). The latest re-enable of a switch anchors the guard: only sessions counted
/// after it count, and nothing trips before the cool-down has passed.
///
/// A proposal is an audit entry `guard.propose`; a person applies it (a trip whose evidence names it) or
/// dismisses it (an audit entry `guard.dismiss`). Applying or dismissing settles every open proposal of the same
/// switch and scope.
struct GuardHistory: Sendable {
    /// A trip and, once a person turned the switch back on, when and by whom.
    struct Trip: Sendable, Hashable {
        var key: String
        var scope: Scope
        var version: Int64
        var time: Date
        var actor: String = CrashGuard.actor
        var reason: String?
        var evidence: JSONValue
        var reenabled: Reenable?

        /// Made by the guard itself (not a person applying a proposal): what the trip budget counts.
        var isAutomatic: Bool { actor == CrashGuard.actor }

        /// The proposal a person applied with this change, if any.
        var proposal: Int64? { evidence["proposal"]?.int64Value }
    }

    /// A disable the guard proposed instead of making.
    struct Proposal: Sendable, Hashable {
        /// The id of its audit entry.
        var id: Int64
        var key: String
        var scope: Scope
        var time: Date
        /// Why it proposes (`budget`, `scoped_disables`).
        var why: String
        /// The sentence saying so.
        var reason: String?
        var evidence: JSONValue
        var dismissed: Dismissal?
    }

    struct Dismissal: Sendable, Hashable {
        var id: Int64
        var time: Date
        var actor: String
        var reason: String?
    }

    /// What became of a proposal.
    enum ProposalState: String, Sendable {
        /// Waiting for a person.
        case open
        /// A person applied it (or another proposal of the same switch and scope).
        case applied
        /// A person dismissed it.
        case dismissed
        /// The switch is off in that scope some other way, or was deleted.
        case superseded
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
    /// Proposals by id, read from the audit log.
    var proposals: [Int64: Proposal] = [:]

    /// Takes one change log entry into account (entries may come twice or out of order; each counts once).
    mutating func apply(_ change: ChangeRecord) {
        defer { seenVersion = max(seenVersion, change.version) }
        if change.source == .crashGuard,
            let trip = Self.trip(change.version, change.time, change.actor, change.reason, change.evidence)
        {
            if trips[trip.version] == nil { trips[trip.version] = trip }
            return
        }
        for object in change.changes where object.kind == .flag {
            for (version, trip) in trips
            where trip.key == object.key && trip.reenabled == nil && version < change.version {
                guard let after = object.after else {
                    trips[version]?.reenabled = Reenable(
                        version: change.version, time: change.time, actor: change.actor, deleted: true)
                    continue
                }
                if !Self.gate(after).isDisabled(in: trip.scope) {
                    trips[version]?.reenabled = Reenable(
                        version: change.version, time: change.time, actor: change.actor, deleted: false)
                }
            }
        }
    }

    /// Adds a trip this process just committed, without marking the change log read up to it (changes before it
    /// may still be unread).
    mutating func add(committed change: ChangeRecord) {
        guard change.source == .crashGuard,
            let trip = Self.trip(change.version, change.time, change.actor, change.reason, change.evidence)
        else { return }
        if trips[trip.version] == nil { trips[trip.version] = trip }
    }

    /// Adds a trip read from the audit log.
    mutating func add(_ entry: AuditEntry) {
        guard let version = entry.version,
            let trip = Self.trip(version, entry.time, entry.actor, entry.reason, entry.evidence)
        else { return }
        if trips[version] == nil { trips[version] = trip }
    }

    /// Takes in a history read from the store while this one went on being told of this process's trips and
    /// proposals: what was read wins, but a re-enable known here is not forgotten, the log counts as read up to the
    /// further of the two, and a proposal made here that the read missed is kept. A history of another epoch (the
    /// namespace was deleted and created again) replaces this one.
    mutating func merge(_ read: GuardHistory) {
        guard epoch == read.epoch else {
            self = read
            return
        }
        for (version, trip) in read.trips {
            if let known = trips[version], known.reenabled != nil, trip.reenabled == nil { continue }
            trips[version] = trip
        }
        seenVersion = max(seenVersion, read.seenVersion)
        var proposals = read.proposals
        for (id, proposal) in self.proposals where proposals[id] == nil { proposals[id] = proposal }
        self.proposals = proposals
    }

    /// Replaces the proposals with those of audit entries (`guard.propose` and `guard.dismiss`, any order).
    mutating func setProposals(from entries: [AuditEntry]) {
        var proposals: [Int64: Proposal] = [:]
        let ordered = entries.sorted { $0.id < $1.id }
        for entry in ordered where entry.action == .guardPropose {
            guard let evidence = entry.evidence, let key = evidence["switch"]?.stringValue else { continue }
            proposals[entry.id] = Proposal(
                id: entry.id, key: key, scope: Self.scope(evidence["scope"]), time: entry.time,
                why: evidence["proposed_because"]?.stringValue ?? "budget", reason: entry.reason,
                evidence: evidence)
        }
        for entry in ordered where entry.action == .guardDismiss {
            guard let evidence = entry.evidence, let key = evidence["switch"]?.stringValue else { continue }
            let scope = Self.scope(evidence["scope"])
            let dismissal = Dismissal(id: entry.id, time: entry.time, actor: entry.actor, reason: entry.reason)
            for (id, proposal) in proposals
            where proposal.key == key && proposal.scope == scope && id < entry.id && proposal.dismissed == nil {
                proposals[id]?.dismissed = dismissal
            }
        }
        self.proposals = proposals
    }

    /// What became of a proposal, given its switch's current definition (nil: deleted).
    func state(of proposal: Proposal, gate: PluginSwitchDefinition?) -> ProposalState {
        if proposal.dismissed != nil { return .dismissed }
        let applied = trips.values.contains { trip in
            trip.key == proposal.key && trip.scope == proposal.scope && !trip.isAutomatic && trip.time >= proposal.time
        }
        if applied { return .applied }
        guard let gate else { return .superseded }
        return gate.isDisabled(in: proposal.scope) ? .superseded : .open
    }

    /// Open proposals of a namespace (of one switch, when named), oldest first.
    func openProposals(of key: String? = nil, in flagSet: FlagSet) -> [Proposal] {
        proposals.values.filter { proposal in
            (key == nil || proposal.key == key)
                && state(of: proposal, gate: flagSet.flag(proposal.key)?.pluginSwitch) == .open
        }.sorted { $0.id < $1.id }
    }

    /// Whether the guard must leave a switch's scope to a person: a proposal for it is open, or was dismissed
    /// less than `cooldown` ago.
    func awaitsPerson(_ key: String, in scope: Scope, flagSet: FlagSet, now: Date, cooldown: TimeInterval) -> Bool {
        let gate = flagSet.flag(key)?.pluginSwitch
        return proposals.values.contains { proposal in
            guard proposal.key == key, proposal.scope == scope else { return false }
            if let dismissed = proposal.dismissed { return now.timeIntervalSince(dismissed.time) < cooldown }
            return state(of: proposal, gate: gate) == .open
        }
    }

    /// The guard's own disables since a time of one kind: everywhere, or scoped (each has a budget of its own).
    func automaticTrips(since: Date, scoped: Bool) -> Int {
        trips.values.count { $0.isAutomatic && $0.time >= since && $0.scope.isEverywhere != scoped }
    }

    /// The scoped disables the guard (or a person applying its proposal) made on a switch that are still in force.
    func openScopedTrips(of key: String) -> Int {
        openTrips(of: key).count { !$0.scope.isEverywhere }
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

    static func trip(_ version: Int64, _ time: Date, _ actor: String, _ reason: String?, _ evidence: JSONValue?)
        -> Trip?
    {
        guard let evidence, let key = evidence["switch"]?.stringValue else { return nil }
        return Trip(
            key: key, scope: scope(evidence["scope"]), version: version, time: time, actor: actor, reason: reason,
            evidence: evidence)
    }

    /// A scope from its tree.
    static func scope(_ tree: JSONValue?) -> Scope {
        let object = tree?.objectValue ?? JSONObject()
        return Scope(
            cities: object["cities"]?.arrayValue?.compactMap(\.stringValue) ?? [],
            cohorts: object["cohorts"]?.arrayValue?.compactMap(\.stringValue) ?? [])
    }

    /// The disables of a flag from its change log tree.
    static func gate(_ tree: JSONValue) -> PluginSwitchDefinition {
        let scopes = (tree["disabled_scopes"]?.arrayValue ?? []).map { scope in
            Scope(
                cities: scope["cities"]?.arrayValue?.compactMap(\.stringValue) ?? [],
                cohorts: scope["cohorts"]?.arrayValue?.compactMap(\.stringValue) ?? [])
        }
        return PluginSwitchDefinition(disabled: tree["disabled"]?.boolValue ?? false, disabledScopes: scopes)
    }
}
