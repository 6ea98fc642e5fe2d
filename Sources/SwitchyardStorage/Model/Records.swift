public import Foundation
public import SwitchyardCore

/// Who made a change, through what, and why.
public struct ChangeAuthor: Sendable, Hashable {
    /// The token's name (or `flagsd`, `crash-guard`, `release-plan` for the service's own changes).
    public var actor: String
    public var source: ChangeSource
    /// Why; required by the namespace's reason policy for some changes.
    public var reason: String?

    public init(actor: String, source: ChangeSource, reason: String? = nil) {
        self.actor = actor
        self.source = source
        self.reason = reason
    }
}

/// Where a change came from: the API directly, `flagctl`, the web console, `flagctl apply`, the crash guard.
public struct ChangeSource: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    public let rawValue: String

    public init(rawValue: String) {
        self.rawValue = rawValue
    }

    public static let api = ChangeSource(rawValue: "api")
    public static let cli = ChangeSource(rawValue: "cli")
    public static let console = ChangeSource(rawValue: "console")
    public static let apply = ChangeSource(rawValue: "apply")
    public static let crashGuard = ChangeSource(rawValue: "crash-guard")
    /// flagsd's runner of release plans, stepping a plan on evidence.
    public static let releasePlan = ChangeSource(rawValue: "release-plan")

    /// The sources a request may name; `crash-guard` and `release-plan` are the service's own.
    public static let requestable: [ChangeSource] = [.api, .cli, .console, .apply]
    /// Every source an audit entry may carry.
    public static let all: [ChangeSource] = [.api, .cli, .console, .apply, .crashGuard, .releasePlan]

    public var description: String { rawValue }
}

/// A namespace's identity, version and settings.
public struct NamespaceRecord: Sendable, Hashable {
    public var name: String
    /// The random id fixed at creation; a namespace deleted and created again gets a new epoch.
    public var epoch: String
    /// The version of the latest change; every change takes the next one.
    public var version: Int64
    public var reasonPolicy: ReasonPolicy
    public var createdAt: Date
    public var updatedAt: Date

    public init(
        name: String, epoch: String, version: Int64, reasonPolicy: ReasonPolicy, createdAt: Date, updatedAt: Date
    ) {
        self.name = name
        self.epoch = epoch
        self.version = version
        self.reasonPolicy = reasonPolicy
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }

    /// A new epoch: 32 random hex digits (what every backend gives a namespace it creates).
    public static let randomEpoch: @Sendable () -> String = {
        var generator = SystemRandomNumberGenerator()
        return (0..<2).map { _ in
            let hex = String(generator.next() as UInt64, radix: 16)
            return String(repeating: "0", count: 16 - hex.count) + hex
        }.joined()
    }

    /// Which snapshot the namespace is at.
    public var snapshotVersion: SnapshotVersion { SnapshotVersion(epoch: epoch, version: version) }

    /// The strong entity tag of the namespace at this version: `"<epoch>.<version>"`.
    public var entityTag: String { snapshotVersion.entityTag }
}

/// A namespace with its current flag set.
public struct NamespaceState: Sendable, Hashable {
    public var record: NamespaceRecord
    public var flagSet: FlagSet

    public init(record: NamespaceRecord, flagSet: FlagSet) {
        self.record = record
        self.flagSet = flagSet
    }

    /// The snapshot clients download for this state.
    public var snapshot: Snapshot {
        Snapshot(epoch: record.epoch, version: record.version, flagSet: flagSet)
    }
}

/// What a change asks for besides its mutation.
public struct ChangeRequest: Sendable, Hashable {
    public var author: ChangeAuthor
    /// When set, the change is refused unless the namespace is still at this version.
    public var basedOn: SnapshotVersion?
    /// A one-line description of the operation (`disable plugin_switch_feed_promos in cities lagos`); derived
    /// from what changed when nil.
    public var summary: String?
    /// Why an automatic change was made, as data: the crash guard's counts, rate, bound, window and scope.
    /// Stored with the change log entry and the audit entry.
    public var evidence: JSONValue?

    public init(
        author: ChangeAuthor, basedOn: SnapshotVersion? = nil, summary: String? = nil, evidence: JSONValue? = nil
    ) {
        self.author = author
        self.basedOn = basedOn
        self.summary = summary
        self.evidence = evidence
    }
}

/// The kind of object a change touched.
public enum ObjectKind: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    case flag
    case killSwitch = "kill_switch"
    case pluginPoint = "plugin_point"
    /// The namespace's own fields (its description, its crash guard policy).
    case namespace
    /// An outcome metric the namespace declares (key: its name). Server policy, as the crash guard's: not in
    /// snapshots, nor in what client tokens read of the change log.
    case metric

    public var description: String { rawValue }
}

/// One object a change touched, as JSON trees before and after (nil when it did not exist).
public struct ObjectChange: Sendable, Hashable {
    public var kind: ObjectKind
    /// The flag or kill switch key, the plugin point name, the metric name, or the namespace field.
    public var key: String
    public var before: JSONValue?
    public var after: JSONValue?

    public init(kind: ObjectKind, key: String, before: JSONValue?, after: JSONValue?) {
        self.kind = kind
        self.key = key
        self.before = before
        self.after = after
    }
}

/// An entry of a namespace's change log.
public struct ChangeRecord: Sendable, Hashable {
    public var namespace: String
    public var epoch: String
    public var version: Int64
    public var time: Date
    public var actor: String
    public var source: ChangeSource
    public var reason: String?
    public var summary: String
    public var changes: [ObjectChange]
    /// The evidence an automatic change carried (see `ChangeRequest.evidence`).
    public var evidence: JSONValue?

    public init(
        namespace: String, epoch: String, version: Int64, time: Date, actor: String, source: ChangeSource,
        reason: String?, summary: String, changes: [ObjectChange], evidence: JSONValue? = nil
    ) {
        self.namespace = namespace
        self.epoch = epoch
        self.version = version
        self.time = time
        self.actor = actor
        self.source = source
        self.reason = reason
        self.summary = summary
        self.changes = changes
        self.evidence = evidence
    }
}

/// The outcome of a change: the namespace after it, and the change log entry (nil when nothing changed, so no
/// version was taken).
public struct CommittedChange: Sendable, Hashable {
    public var state: NamespaceState
    public var record: ChangeRecord?

    public init(state: NamespaceState, record: ChangeRecord?) {
        self.state = state
        self.record = record
    }

    /// Whether the change altered the flag set (and so took a new version).
    public var changed: Bool { record != nil }
}

/// What an audit entry records.
public struct AuditAction: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    public let rawValue: String

    public init(rawValue: String) {
        self.rawValue = rawValue
    }

    /// A change to a namespace's flags (it has a version).
    public static let change = AuditAction(rawValue: "change")
    public static let namespaceCreate = AuditAction(rawValue: "namespace.create")
    public static let namespaceUpdate = AuditAction(rawValue: "namespace.update")
    public static let namespaceDelete = AuditAction(rawValue: "namespace.delete")
    public static let tokenCreate = AuditAction(rawValue: "token.create")
    public static let tokenRevoke = AuditAction(rawValue: "token.revoke")
    /// The crash guard proposed disabling a switch instead of disabling it (past its trip budget).
    public static let guardPropose = AuditAction(rawValue: "guard.propose")
    /// A person dismissed a crash guard proposal.
    public static let guardDismiss = AuditAction(rawValue: "guard.dismiss")
    /// A release plan's runner proposed rolling a plan back to off on clients' evidence alone (a person confirms).
    public static let releasePropose = AuditAction(rawValue: "release.propose")
    /// A person dismissed a release plan's proposal.
    public static let releaseDismiss = AuditAction(rawValue: "release.dismiss")

    public var description: String { rawValue }
}

/// An entry of the audit log: every write, who made it, when, why, and the objects before and after.
public struct AuditEntry: Sendable, Hashable {
    /// Increasing; never reused.
    public var id: Int64
    public var time: Date
    public var actor: String
    public var source: ChangeSource
    public var action: AuditAction
    public var namespace: String?
    /// The namespace version a change took.
    public var version: Int64?
    public var reason: String?
    public var summary: String
    public var changes: [ObjectChange]
    /// The evidence of an automatic change (the crash guard's counts, rate, bound, window and scope).
    public var evidence: JSONValue?

    public init(
        id: Int64, time: Date, actor: String, source: ChangeSource, action: AuditAction, namespace: String?,
        version: Int64?, reason: String?, summary: String, changes: [ObjectChange], evidence: JSONValue? = nil
    ) {
        self.evidence = evidence
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
    }
}

/// An audited action that changes no flag and takes no version: the crash guard's proposals, and a person's
/// dismissal of one.
public struct AuditNote: Sendable, Hashable {
    public var author: ChangeAuthor
    public var action: AuditAction
    public var namespace: String
    public var summary: String
    /// The flags it concerns, so `AuditQuery.target` finds it.
    public var targets: [String]
    /// What it rests on, as data.
    public var evidence: JSONValue?

    public init(
        author: ChangeAuthor, action: AuditAction, namespace: String, summary: String, targets: [String],
        evidence: JSONValue?
    ) {
        self.author = author
        self.action = action
        self.namespace = namespace
        self.summary = summary
        self.targets = targets
        self.evidence = evidence
    }
}

/// A filter over the audit log, newest first.
public struct AuditQuery: Sendable, Hashable {
    public var namespace: String?
    /// When set, only entries of these namespaces (a token limited to some namespaces).
    public var visibleNamespaces: [String]?
    /// Entries that touched this flag, kill switch or plugin point (or token name).
    public var target: String?
    public var actor: String?
    public var source: ChangeSource?
    /// When set, only entries with one of these actions.
    public var actions: [AuditAction]?
    /// Inclusive lower bound.
    public var since: Date?
    /// Exclusive upper bound.
    public var until: Date?
    /// Entries with an id below this (the previous page's `nextCursor`).
    public var before: Int64?
    public var limit: Int

    public init(
        namespace: String? = nil, visibleNamespaces: [String]? = nil, target: String? = nil, actor: String? = nil,
        source: ChangeSource? = nil, actions: [AuditAction]? = nil, since: Date? = nil, until: Date? = nil,
        before: Int64? = nil,
        limit: Int = 50
    ) {
        self.namespace = namespace
        self.visibleNamespaces = visibleNamespaces
        self.target = target
        self.actor = actor
        self.source = source
        self.actions = actions
        self.since = since
        self.until = until
        self.before = before
        self.limit = limit
    }
}

/// One page of audit entries.
/// A value an audit query compares with, for a backend to bind.
public enum AuditQueryValue: Sendable {
    case text(String)
    case integer(Int64)
    /// A list, for `IN`: the backend's expression must be a subquery or list of the values.
    case texts([String])
}

extension AuditQuery {
    /// The query's conditions on the `audit` table, ANDed: one definition for every backend, which binds each value
    /// and returns the SQL expression standing for it (its placeholder, or for a list a subquery).
    public func conditions(binding bind: (AuditQueryValue) -> String) -> [String] {
        var conditions: [String] = []
        if let namespace { conditions.append("namespace = \(bind(.text(namespace)))") }
        if let visibleNamespaces { conditions.append("namespace IN \(bind(.texts(visibleNamespaces)))") }
        if let target {
            conditions.append("id IN (SELECT audit_id FROM audit_target WHERE target = \(bind(.text(target))))")
        }
        if let actor { conditions.append("actor = \(bind(.text(actor)))") }
        if let source { conditions.append("source = \(bind(.text(source.rawValue)))") }
        if let actions { conditions.append("action IN \(bind(.texts(actions.map(\.rawValue))))") }
        if let since { conditions.append("time_ms >= \(bind(.integer(since.milliseconds)))") }
        if let until { conditions.append("time_ms < \(bind(.integer(until.milliseconds)))") }
        if let before { conditions.append("id < \(bind(.integer(before)))") }
        return conditions
    }

    /// The SQL selecting one page plus one entry (which tells whether there is a next page), newest first.
    public func pageSQL(binding bind: (AuditQueryValue) -> String) -> String {
        let conditions = conditions(binding: bind)
        let filter = conditions.isEmpty ? "" : "WHERE " + conditions.joined(separator: " AND ")
        return "SELECT * FROM audit \(filter) ORDER BY id DESC LIMIT \(bind(.integer(Int64(pageSize + 1))))"
    }

    /// The page size asked for, within 1...1000.
    public var pageSize: Int { min(max(limit, 1), 1000) }
}

public struct AuditPage: Sendable, Hashable {
    public var entries: [AuditEntry]
    /// Pass as `before` for the next (older) page; nil on the last page.
    public var nextCursor: Int64?

    public init(entries: [AuditEntry], nextCursor: Int64?) {
        self.entries = entries
        self.nextCursor = nextCursor
    }

    /// The page from what `AuditQuery.pageSQL` selected: up to `pageSize` entries, and a cursor when there were more.
    public init(fetched: [AuditEntry], pageSize: Int) {
        let more = fetched.count > pageSize
        self.init(entries: Array(fetched.prefix(pageSize)), nextCursor: more ? fetched[pageSize - 1].id : nil)
    }
}
