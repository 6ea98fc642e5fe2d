public import SwitchyardCore

/// The bodies of the admin API that flagsd writes and flagctl reads, typed once for both (snake_case members, times
/// as RFC 3339 text, rollouts in basis points), so a member renamed or retyped on one side cannot go unnoticed on the
/// other. docs/openapi.yaml describes the same shapes; a test checks these encodings against its schemas.
///
/// Each body reads itself from a parsed JSON tree (`init(json:)`, throwing ``WireError`` naming the member at fault)
/// and writes itself as one (`json`). Members a newer flagsd may add are ignored by an older reader.

/// A body that is not what this version of the API sends.
public struct WireError: Error, Sendable, Hashable, CustomStringConvertible {
    public var message: String

    public init(_ message: String) {
        self.message = message
    }

    public var description: String { message }
}

/// `GET /v1/namespaces/{namespace}` (and each item of `GET /v1/namespaces`): a namespace's identity and settings.
public struct NamespaceBody: Sendable, Hashable {
    /// How many objects the flag set holds (on a single namespace's answer).
    public struct Counts: Sendable, Hashable {
        public var flags: Int
        public var pluginPoints: Int
        public var killSwitches: Int

        public init(flags: Int, pluginPoints: Int, killSwitches: Int) {
            self.flags = flags
            self.pluginPoints = pluginPoints
            self.killSwitches = killSwitches
        }
    }

    public var name: String
    public var epoch: String
    public var version: Int64
    public var reasonPolicy: ReasonPolicy
    /// The flag set's description and counts.
    public struct Summary: Sendable, Hashable {
        public var description: String?
        public var counts: Counts

        public init(description: String?, counts: Counts) {
            self.description = description
            self.counts = counts
        }
    }

    public var createdAt: String
    public var updatedAt: String
    /// The flag set's description and counts, when the answer carries them (a single namespace's answer).
    public var summary: Summary?

    public init(
        name: String, epoch: String, version: Int64, reasonPolicy: ReasonPolicy, createdAt: String, updatedAt: String,
        summary: Summary? = nil
    ) {
        self.name = name
        self.epoch = epoch
        self.version = version
        self.reasonPolicy = reasonPolicy
        self.createdAt = createdAt
        self.updatedAt = updatedAt
        self.summary = summary
    }

    public var snapshotVersion: SnapshotVersion { SnapshotVersion(epoch: epoch, version: version) }

    public var json: JSONValue {
        var object = JSONObject([
            ("name", .string(name)), ("epoch", .string(epoch)), ("version", .int64(version)),
            ("etag", .string(snapshotVersion.entityTag)), ("reason_policy", .string(reasonPolicy.rawValue)),
            ("created_at", .string(createdAt)), ("updated_at", .string(updatedAt)),
        ])
        if let summary {
            object["description"] = summary.description.map(JSONValue.string) ?? .null
            object["counts"] = .object(
                JSONObject([
                    ("flags", .int(summary.counts.flags)), ("plugin_points", .int(summary.counts.pluginPoints)),
                    ("kill_switches", .int(summary.counts.killSwitches)),
                ]))
        }
        return .object(object)
    }

    public init(json: JSONValue) throws(WireError) {
        var reader = try WireReader(json, "namespace")
        name = try reader.string("name")
        epoch = try reader.string("epoch")
        version = try reader.int64("version")
        // A policy this reader does not know is read as the default, `kills`.
        reasonPolicy = (try? reader.string("reason_policy")).flatMap(ReasonPolicy.init(rawValue:)) ?? .kills
        createdAt = try reader.string("created_at")
        updatedAt = try reader.string("updated_at")
        if let counts = json["counts"] {
            var countsReader = try WireReader(counts, "namespace.counts")
            summary = Summary(
                description: json["description"]?.stringValue,
                counts: Counts(
                    flags: Int(try countsReader.int64("flags")),
                    pluginPoints: Int(try countsReader.int64("plugin_points")),
                    killSwitches: Int(try countsReader.int64("kill_switches"))))
        } else {
            summary = nil
        }
    }
}

/// `GET /v1/namespaces/{namespace}/flag-set`: the whole flag set at one version, with its entity tag.
///
/// Storage's `NamespaceState` holds the same flag set with the namespace's whole record; this body carries only the
/// version a client needs for `If-Match` (flagsd's `View.flagSet` makes it from the state).
public struct FlagSetBody: Sendable, Hashable {
    public var version: SnapshotVersion
    public var flagSet: FlagSet

    public init(version: SnapshotVersion, flagSet: FlagSet) {
        self.version = version
        self.flagSet = flagSet
    }

    public var json: JSONValue {
        .object(
            JSONObject([
                ("version", .int64(version.version)), ("etag", .string(version.entityTag)),
                ("flag_set", .object(flagSet.tree(unit: .basisPoints))),
            ]))
    }

    public init(json: JSONValue) throws(WireError) {
        var reader = try WireReader(json, "flag set document")
        let etag = try reader.string("etag")
        guard let version = SnapshotVersion(entityTag: etag) else {
            throw WireError(
                "flag set document: etag '\(etag)' is not an entity tag of this API (\"<epoch>.<version>\")")
        }
        guard version.version == (try reader.int64("version")) else {
            throw WireError("flag set document: version and etag disagree")
        }
        self.version = version
        guard let tree = json["flag_set"] else { throw WireError("flag set document: flag_set is missing") }
        do {
            flagSet = try FlagSet(tree: tree, unit: .basisPoints)
        } catch {
            throw WireError("flag set document: \(error.problems.first?.description ?? "the flag set is not valid")")
        }
    }
}

/// A flag as the API shows it on its own: its definition with its key, the kill switches covering it and its plugin
/// point (`GET /v1/namespaces/{namespace}/flags/{key}`, `flagctl get KEY -o json`).
public struct FlagBody: Sendable, Hashable {
    public var flag: FlagDefinition
    public var killSwitches: [String]
    public var pluginPoint: String?

    /// - Parameter coverage: the flag set's, when a listing asks every flag (one flag: leave it out).
    public init(_ flag: FlagDefinition, in flagSet: FlagSet, coverage: KillSwitchCoverage? = nil) {
        self.flag = flag
        killSwitches = coverage?.killSwitchKeys(covering: flag.key) ?? flagSet.killSwitchKeys(covering: flag.key)
        pluginPoint = flagSet.pluginPoint(listing: flag.key)?.name
    }

    /// The members beside the flag's definition.
    static let ownMembers = ["key", "kill_switches", "plugin_point"]

    public var json: JSONValue {
        var object = JSONObject([("key", .string(flag.key))])
        for (name, value) in flag.tree(unit: .basisPoints) { object[name] = value }
        object["kill_switches"] = .array(killSwitches.map(JSONValue.string))
        object["plugin_point"] = pluginPoint.map(JSONValue.string) ?? .null
        return .object(object)
    }

    public init(json: JSONValue) throws(WireError) {
        var reader = try WireReader(json, "flag")
        let key = try reader.string("key")
        killSwitches = try reader.strings("kill_switches")
        pluginPoint = json["plugin_point"]?.stringValue
        var definition = reader.object
        for member in Self.ownMembers { definition[member] = nil }
        do {
            flag = try FlagDefinition(key: key, tree: .object(definition), unit: .basisPoints)
        } catch {
            throw WireError("flag \(key): \(error)")
        }
    }
}

/// A kill switch as the API shows it on its own: the flags it covers and its entries
/// (`GET /v1/namespaces/{namespace}/kill-switches/{key}`, `flagctl get --kill-switch KEY -o json`).
public struct KillSwitchBody: Sendable, Hashable {
    /// Its key, description and entries (read from an answer: without its declared members, which the answer leaves
    /// out).
    public var killSwitch: KillSwitch
    /// Every flag it covers: its declared members and the switches of the plugin points that name it.
    public var members: [String]

    /// - Parameter coverage: the flag set's, when a listing asks every kill switch (one: leave it out).
    public init(_ killSwitch: KillSwitch, in flagSet: FlagSet, coverage: KillSwitchCoverage? = nil) {
        self.killSwitch = killSwitch
        members = coverage?.members(of: killSwitch.key) ?? flagSet.members(of: killSwitch.key)
    }

    public var json: JSONValue {
        .object(
            JSONObject([
                ("key", .string(killSwitch.key)),
                ("description", killSwitch.description.map(JSONValue.string) ?? .null),
                ("members", .array(members.map(JSONValue.string))),
                ("entries", .array(killSwitch.entries.map { .object($0.tree) })),
                ("killed_everywhere", .bool(killSwitch.isKilledEverywhere)),
            ]))
    }

    public init(json: JSONValue) throws(WireError) {
        var reader = try WireReader(json, "kill switch")
        let key = try reader.string("key")
        members = try reader.strings("members")
        var definition = JSONObject()
        for member in ["description", "entries"] where reader.object[member] != nil && reader.object[member] != .null {
            definition[member] = reader.object[member]
        }
        do {
            killSwitch = try KillSwitch(key: key, tree: .object(definition))
        } catch {
            throw WireError("kill switch \(key): \(error)")
        }
    }
}

/// One entry of a namespace's change log (`GET /v1/namespaces/{namespace}/changes`, and the `change` of a change's
/// answer): `evidence` only on automatic changes (the crash guard's).
public struct ChangeEntryBody: Sendable, Hashable {
    public var version: Int64
    public var time: String
    public var actor: String
    public var source: String
    public var reason: String?
    public var summary: String
    /// Each object touched: `kind`, `key`, `before`, `after`.
    public var changes: [JSONValue]
    public var evidence: JSONValue?

    public init(
        version: Int64, time: String, actor: String, source: String, reason: String?, summary: String,
        changes: [JSONValue], evidence: JSONValue?
    ) {
        self.version = version
        self.time = time
        self.actor = actor
        self.source = source
        self.reason = reason
        self.summary = summary
        self.changes = changes
        self.evidence = evidence
    }

    /// Each object touched, read from `changes` (an entry of another shape is left out).
    public var objects: [ChangedObject] {
        changes.compactMap(ChangedObject.init(json:))
    }

    public var json: JSONValue {
        var object = JSONObject([
            ("version", .int64(version)), ("time", .string(time)), ("actor", .string(actor)),
            ("source", .string(source)),
            ("reason", reason.map(JSONValue.string) ?? .null), ("summary", .string(summary)),
            ("changes", .array(changes)),
        ])
        if let evidence { object["evidence"] = evidence }
        return .object(object)
    }

    public init(json: JSONValue) throws(WireError) {
        var reader = try WireReader(json, "change")
        version = try reader.int64("version")
        time = try reader.string("time")
        actor = try reader.string("actor")
        source = try reader.string("source")
        reason = json["reason"]?.stringValue
        summary = try reader.string("summary")
        changes = json["changes"]?.arrayValue ?? []
        evidence = json["evidence"]
    }
}

/// A change log entry as a client or reporter token reads it: the version, the time and what changed in the objects
/// snapshots show (no actor, source, reason, summary or evidence).
public struct ClientChangeEntryBody: Sendable, Hashable {
    public var version: Int64
    public var time: String
    /// Each object touched, as snapshots show it: `kind`, `key`, `before`, `after`.
    public var changes: [JSONValue]

    public init(version: Int64, time: String, changes: [JSONValue]) {
        self.version = version
        self.time = time
        self.changes = changes
    }

    public var json: JSONValue {
        .object(JSONObject([("version", .int64(version)), ("time", .string(time)), ("changes", .array(changes))]))
    }

    public init(json: JSONValue) throws(WireError) {
        var reader = try WireReader(json, "change")
        version = try reader.int64("version")
        time = try reader.string("time")
        changes = json["changes"]?.arrayValue ?? []
    }
}

/// A page of a namespace's change log (`GET /v1/namespaces/{namespace}/changes`): the entries after a version, the
/// namespace's epoch and current version, and where the next page starts.
public struct ChangePageBody: Sendable, Hashable {
    /// The entries, whole (an editor's read) or as a client token reads them.
    public enum Changes: Sendable, Hashable {
        case full([ChangeEntryBody])
        case client([ClientChangeEntryBody])
    }

    public var namespace: String
    public var epoch: String
    /// The namespace's version when the page was read.
    public var version: Int64
    public var changes: Changes
    /// The version to ask for entries after, for the next page.
    public var nextAfter: Int64

    public init(namespace: String, epoch: String, version: Int64, changes: Changes, nextAfter: Int64) {
        self.namespace = namespace
        self.epoch = epoch
        self.version = version
        self.changes = changes
        self.nextAfter = nextAfter
    }

    public var json: JSONValue {
        let entries: [JSONValue] =
            switch changes {
            case .full(let entries): entries.map(\.json)
            case .client(let entries): entries.map(\.json)
            }
        return .object(
            JSONObject([
                ("namespace", .string(namespace)), ("epoch", .string(epoch)), ("version", .int64(version)),
                ("changes", .array(entries)), ("next_after", .int64(nextAfter)),
            ]))
    }

    /// Reads a page; its entries are whole when they name their actor.
    public init(json: JSONValue) throws(WireError) {
        var reader = try WireReader(json, "change page")
        namespace = try reader.string("namespace")
        epoch = try reader.string("epoch")
        version = try reader.int64("version")
        nextAfter = try reader.int64("next_after")
        guard let entries = json["changes"]?.arrayValue else {
            throw WireError("change page: changes is missing or not a list")
        }
        if entries.contains(where: { $0["actor"] == nil }) {
            changes = .client(try entries.map { tree throws(WireError) in try ClientChangeEntryBody(json: tree) })
        } else {
            changes = .full(try entries.map { tree throws(WireError) in try ChangeEntryBody(json: tree) })
        }
    }
}

/// The answer to a change: the namespace's version after it, whether it changed anything, its change log entry, and
/// what the route changed, after it (the flag, the kill switch, the rule edited, the release plan, the proposal).
public struct CommittedBody: Sendable, Hashable {
    /// The rule a rollout or targeting edit set.
    public enum EditedRule: Sendable, Hashable {
        /// The default rollout (`"rule": null`).
        case defaultRollout
        /// The rule at this index.
        case rule(Int)
    }

    public var namespace: String
    public var version: SnapshotVersion
    public var changed: Bool
    public var change: ChangeEntryBody?
    /// The flag after the change (the flag routes).
    public var flag: FlagBody?
    /// The kill switch after the change (kill and revive).
    public var killSwitch: KillSwitchBody?
    /// The rule a rollout or targeting edit set.
    public var rule: EditedRule?
    /// The switch's release plan after a release action.
    public var release: ReleaseStatusBody?
    /// The crash guard proposal a change applied.
    public var proposal: GuardProposalBody?

    public init(
        namespace: String, version: SnapshotVersion, changed: Bool, change: ChangeEntryBody?, flag: FlagBody? = nil,
        killSwitch: KillSwitchBody? = nil, rule: EditedRule? = nil, release: ReleaseStatusBody? = nil,
        proposal: GuardProposalBody? = nil
    ) {
        self.namespace = namespace
        self.version = version
        self.changed = changed
        self.change = change
        self.flag = flag
        self.killSwitch = killSwitch
        self.rule = rule
        self.release = release
        self.proposal = proposal
    }

    public var json: JSONValue {
        var object = JSONObject([
            ("namespace", .string(namespace)), ("version", .int64(version.version)),
            ("etag", .string(version.entityTag)),
            ("changed", .bool(changed)), ("change", change?.json ?? .null),
        ])
        if let flag { object["flag"] = flag.json }
        if let killSwitch { object["kill_switch"] = killSwitch.json }
        switch rule {
        case nil: break
        case .defaultRollout: object["rule"] = .null
        case .rule(let index): object["rule"] = .int(index)
        }
        if let release { object["release"] = release.json }
        if let proposal { object["proposal"] = proposal.json }
        return .object(object)
    }

    public init(json: JSONValue) throws(WireError) {
        try self.init(json: json, readingObjects: true)
    }

    /// Reads the answer; with `readingObjects` false, only its envelope (namespace, version, change), leaving the
    /// objects changed nil: for a reader that must not fail on a newer flagsd's object with a field it does not know.
    public init(json: JSONValue, readingObjects: Bool) throws(WireError) {
        var reader = try WireReader(json, "change answer")
        namespace = try reader.string("namespace")
        let etag = try reader.string("etag")
        guard let version = SnapshotVersion(entityTag: etag), version.version == (try reader.int64("version")) else {
            throw WireError("change answer: etag '\(etag)' does not name its version")
        }
        self.version = version
        changed = json["changed"]?.boolValue ?? false
        change = try json["change"].flatMap { tree throws(WireError) -> ChangeEntryBody? in
            tree == .null ? nil : try ChangeEntryBody(json: tree)
        }
        guard readingObjects else {
            (flag, killSwitch, rule, release, proposal) = (nil, nil, nil, nil, nil)
            return
        }
        flag = try json["flag"].map { tree throws(WireError) in try FlagBody(json: tree) }
        killSwitch = try json["kill_switch"].map { tree throws(WireError) in try KillSwitchBody(json: tree) }
        switch json["rule"] {
        case nil: rule = nil
        case .null?: rule = .defaultRollout
        case let tree?:
            guard let index = tree.int64Value, let rule = Int(exactly: index) else {
                throw WireError("change answer: rule is not a rule's index")
            }
            self.rule = .rule(rule)
        }
        release = try json["release"].map { tree throws(WireError) in try ReleaseStatusBody(json: tree) }
        proposal = try json["proposal"].map { tree throws(WireError) in try GuardProposalBody(json: tree) }
    }
}

/// Reads required members of an object, failing with the member's name.
struct WireReader {
    let object: JSONObject
    let what: String

    init(_ json: JSONValue, _ what: String) throws(WireError) {
        guard let object = json.objectValue else { throw WireError("\(what): expected a JSON object") }
        self.object = object
        self.what = what
    }

    mutating func string(_ key: String) throws(WireError) -> String {
        guard let value = object[key]?.stringValue else {
            throw WireError("\(what): \(key) is missing or not a string")
        }
        return value
    }

    mutating func int64(_ key: String) throws(WireError) -> Int64 {
        guard let value = object[key]?.int64Value else {
            throw WireError("\(what): \(key) is missing or not an integer")
        }
        return value
    }
}

/// One entry of the audit log (`GET /v1/audit`): every write, by whom, from where, why; `evidence` only on automatic
/// changes (the crash guard's).
public struct AuditEntryBody: Sendable, Hashable {
    /// Every `source` an entry may carry: how a change was made (`api`, `cli`, `console`, `apply`) or which part of
    /// flagsd made it (`crash-guard`, `release-plan`). The same list as the store's `ChangeSource.all` (a test says so).
    public static let sources = ["api", "cli", "console", "apply", "crash-guard", "release-plan"]

    public var id: Int64
    public var time: String
    public var actor: String
    public var source: String
    public var action: String
    public var namespace: String?
    public var version: Int64?
    public var reason: String?
    public var summary: String
    public var changes: [JSONValue]
    public var evidence: JSONValue?

    public init(
        id: Int64, time: String, actor: String, source: String, action: String, namespace: String?, version: Int64?,
        reason: String?, summary: String, changes: [JSONValue], evidence: JSONValue?
    ) {
        self.id = id
        self.time = time
        self.actor = actor
        self.source = source
        self.action = action
        self.namespace = namespace
        self.version = version
        self.reason = reason
        self.summary = summary
        self.changes = changes
        self.evidence = evidence
    }

    public var json: JSONValue {
        var object = JSONObject([
            ("id", .int64(id)), ("time", .string(time)), ("actor", .string(actor)), ("source", .string(source)),
            ("action", .string(action)), ("namespace", namespace.map(JSONValue.string) ?? .null),
            ("version", version.map(JSONValue.int64) ?? .null), ("reason", reason.map(JSONValue.string) ?? .null),
            ("summary", .string(summary)), ("changes", .array(changes)),
        ])
        if let evidence { object["evidence"] = evidence }
        return .object(object)
    }

    public init(json: JSONValue) throws(WireError) {
        var reader = try WireReader(json, "audit entry")
        id = try reader.int64("id")
        time = try reader.string("time")
        actor = try reader.string("actor")
        source = try reader.string("source")
        action = try reader.string("action")
        namespace = json["namespace"]?.stringValue
        version = json["version"]?.int64Value
        reason = json["reason"]?.stringValue
        summary = try reader.string("summary")
        changes = json["changes"]?.arrayValue ?? []
        evidence = json["evidence"]
    }
}

/// A token as the API shows it (`GET /v1/tokens`, and the answers to creating and revoking one): never its secret,
/// except once in the answer that creates it.
///
/// The wire form of Storage's `TokenRecord`, member for member but as every body has them (times as RFC 3339 text,
/// the role by name) plus the secret; the record becomes this body in one place, `TokenRecord.body(secret:)`.
public struct TokenBody: Sendable, Hashable {
    public var id: String
    public var name: String
    public var role: String
    /// The namespaces it is valid in; nil for every namespace.
    public var namespaces: [String]?
    public var ratePerMinute: Int?
    public var createdAt: String
    public var createdBy: String
    public var revokedAt: String?
    /// The secret: only in the answer that creates the token.
    public var secret: String?

    public init(
        id: String, name: String, role: String, namespaces: [String]?, ratePerMinute: Int?, createdAt: String,
        createdBy: String, revokedAt: String?, secret: String? = nil
    ) {
        self.id = id
        self.name = name
        self.role = role
        self.namespaces = namespaces
        self.ratePerMinute = ratePerMinute
        self.createdAt = createdAt
        self.createdBy = createdBy
        self.revokedAt = revokedAt
        self.secret = secret
    }

    public var json: JSONValue {
        var object = JSONObject([
            ("id", .string(id)), ("name", .string(name)), ("role", .string(role)),
            ("created_at", .string(createdAt)), ("created_by", .string(createdBy)),
        ])
        object["namespaces"] = namespaces.map { .array($0.map(JSONValue.string)) } ?? .null
        object["rate_per_minute"] = ratePerMinute.map { .int($0) } ?? .null
        object["revoked_at"] = revokedAt.map(JSONValue.string) ?? .null
        if let secret { object["token"] = .string(secret) }
        return .object(object)
    }

    public init(json: JSONValue) throws(WireError) {
        var reader = try WireReader(json, "token")
        id = try reader.string("id")
        name = try reader.string("name")
        role = try reader.string("role")
        namespaces = json["namespaces"]?.arrayValue?.compactMap(\.stringValue)
        ratePerMinute = json["rate_per_minute"]?.int64Value.map { Int($0) }
        createdAt = try reader.string("created_at")
        createdBy = try reader.string("created_by")
        revokedAt = json["revoked_at"]?.stringValue
        secret = json["token"]?.stringValue
    }
}

/// `GET /healthz` (`ok`: the process answers) and `GET /readyz` (`ready`, or `degraded` with the database
/// `unavailable`, the namespaces still served and why).
public struct HealthBody: WireBody {
    public var status: String
    public var database: String?
    public var namespaces: Int?
    public var detail: String?

    public init(status: String, database: String? = nil, namespaces: Int? = nil, detail: String? = nil) {
        self.status = status
        self.database = database
        self.namespaces = namespaces
        self.detail = detail
    }

    public var json: JSONValue {
        var object = JSONObject([("status", .string(status))])
        if let database { object["database"] = .string(database) }
        if let namespaces { object["namespaces"] = .int(namespaces) }
        if let detail { object["detail"] = .string(detail) }
        return .object(object)
    }

    public init(json: JSONValue) throws(WireError) {
        var reader = try WireReader(json, "health")
        status = try reader.string("status")
        database = json["database"]?.stringValue
        namespaces = json["namespaces"]?.int64Value.map(Int.init)
        detail = json["detail"]?.stringValue
    }
}

/// One object a change touched, as a change entry lists it: `{"kind", "key", "before", "after"}`, the object's
/// tree before and after (absent or `null`: it did not exist). The trees are the API's objects (a flag, a kill
/// switch, a plugin point, the namespace's settings), compared field by field by whoever shows them.
public struct ChangedObject: Sendable, Hashable {
    /// `flag`, `kill_switch`, `plugin_point`, `namespace`, ...
    public var kind: String
    public var key: String
    public var before: JSONValue?
    public var after: JSONValue?

    public init(kind: String, key: String, before: JSONValue?, after: JSONValue?) {
        self.kind = kind
        self.key = key
        self.before = before
        self.after = after
    }

    /// Reads one entry of `changes`; nil when it has no `kind` or `key`.
    public init?(json: JSONValue) {
        guard let kind = json["kind"]?.stringValue, let key = json["key"]?.stringValue else { return nil }
        self.init(
            kind: kind, key: key, before: json["before"].flatMap { $0 == .null ? nil : $0 },
            after: json["after"].flatMap { $0 == .null ? nil : $0 })
    }
}
