import Foundation
public import SwitchyardCore

/// What a change does to a namespace, worked out before any backend writes it: the validated flag set after,
/// the objects it touched, its summary, and the reason policy's verdict.
///
/// Every backend builds one inside its write transaction, so they all refuse and describe changes alike.
public struct ChangePlan: Sendable, Hashable {
    public let after: FlagSet
    /// The touched objects, before and after; empty when the change alters nothing.
    public let changes: [ObjectChange]
    public let summary: String
    /// The reason, trimmed; nil when none was given.
    public let reason: String?

    /// Plans a change.
    ///
    /// - Parameters:
    ///   - before: the current flag set.
    ///   - after: the flag set the mutation produced.
    ///   - request: the author, reason and summary.
    ///   - policy: the namespace's reason policy.
    /// - Throws: `StorageError` `invalid` when the result is not a valid flag set or renames the namespace,
    ///   `reasonRequired` when the policy needs a reason that is missing.
    public init(before: FlagSet, after: FlagSet, request: ChangeRequest, policy: ReasonPolicy) throws(StorageError) {
        guard after.namespace == before.namespace else {
            throw StorageError(
                .invalid, "a change cannot rename namespace '\(before.namespace)' to '\(after.namespace)'",
                problems: [ValidationProblem(path: "namespace", message: "must stay '\(before.namespace)'")])
        }
        var aligned = AlignedChanges()
        let changed = ChangedObjects(from: before, to: after, aligned: &aligned)
        let problems = after.validate(changedFrom: before, changes: changed, aligned: aligned)
        guard problems.isEmpty else {
            throw StorageError(
                .invalid, "the change would leave namespace '\(before.namespace)' invalid", problems: problems)
        }
        self.after = after
        self.changes = ChangePlan.diff(before: before, after: after, changed: changed, aligned: aligned)
        let trimmed = request.author.reason?.trimmingCharacters(in: .whitespacesAndNewlines)
        self.reason = (trimmed?.isEmpty ?? true) ? nil : trimmed
        self.summary = request.summary ?? ChangePlan.describe(changes)
        if reason == nil, !changes.isEmpty,
            policy.requiresReason(addsKillEntry: after.addsKillEntry(comparedTo: before))
        {
            let what = policy == .always ? "on every change" : "to kill"
            throw StorageError(
                .reasonRequired,
                "namespace '\(before.namespace)' requires a reason \(what); pass one (flagctl --reason, API field 'reason')"
            )
        }
    }

    /// The objects that differ between two flag sets, as trees with rollouts in basis points.
    public static func diff(before: FlagSet, after: FlagSet) -> [ObjectChange] {
        var aligned = AlignedChanges()
        let changed = ChangedObjects(from: before, to: after, aligned: &aligned)
        return diff(before: before, after: after, changed: changed, aligned: aligned)
    }

    /// The objects that differ, knowing which plugin points, kill switches and flags do (and where, when the change
    /// left every key in place).
    static func diff(before: FlagSet, after: FlagSet, changed: ChangedObjects, aligned: AlignedChanges)
        -> [ObjectChange]
    {
        var changes: [ObjectChange] = []
        if before.description != after.description {
            changes.append(
                ObjectChange(
                    kind: .namespace, key: "description",
                    before: before.description.map(JSONValue.string),
                    after: after.description.map(JSONValue.string)))
        }
        if before.crashGuard != after.crashGuard {
            changes.append(
                ObjectChange(
                    kind: .namespace, key: "crash_guard",
                    before: before.crashGuard.map { .object($0.tree(unit: .basisPoints)) },
                    after: after.crashGuard.map { .object($0.tree(unit: .basisPoints)) }))
        }
        // Find the objects that differ on the model (position by position while the lists agree), then build JSON
        // trees for those only, in the order the lists have them.
        func record<Object>(
            _ kind: ObjectKind, _ keys: Set<String>, _ old: [Object], _ new: [Object], at positions: [Int]? = nil,
            key: (Object) -> String, tree: (Object) -> JSONValue
        ) {
            guard !keys.isEmpty else { return }
            if let positions {
                for index in positions {
                    let before = tree(old[index])
                    let after = tree(new[index])
                    if before != after {
                        changes.append(ObjectChange(kind: kind, key: key(new[index]), before: before, after: after))
                    }
                }
                return
            }
            // A change touches a few objects of thousands: comparing a key with a few is cheaper than hashing it.
            let few = keys.count <= 8 ? Array(keys) : nil
            func isChanged(_ object: Object) -> Bool { few?.contains(key(object)) ?? keys.contains(key(object)) }
            var oldByKey: [String: Object] = [:]
            var order: [String] = []
            for object in old where isChanged(object) && oldByKey[key(object)] == nil {
                oldByKey[key(object)] = object
                order.append(key(object))
            }
            var newByKey: [String: Object] = [:]
            for object in new where isChanged(object) && newByKey[key(object)] == nil {
                newByKey[key(object)] = object
                if oldByKey[key(object)] == nil { order.append(key(object)) }
            }
            for name in order {
                let before = oldByKey[name].map(tree)
                let after = newByKey[name].map(tree)
                if before != after { changes.append(ObjectChange(kind: kind, key: name, before: before, after: after)) }
            }
        }
        // Closures, not key paths: these run for every object of the namespace.
        record(.pluginPoint, changed.pluginPoints, before.pluginPoints, after.pluginPoints, key: { $0.name }) {
            $0.jsonTree
        }
        record(
            .killSwitch, changed.killSwitches, before.killSwitches, after.killSwitches, at: aligned.killSwitches,
            key: { $0.key }
        ) { $0.jsonTree }
        record(.flag, changed.flags, before.flags, after.flags, at: aligned.flags, key: { $0.key }) {
            .object($0.tree(unit: .basisPoints))
        }
        if before.metrics != after.metrics {
            var positions: [Int]?
            let metrics = ChangedObjects.changedKeys(
                before.metrics, after.metrics, key: { $0.name }, positions: &positions)
            record(.metric, metrics, before.metrics, after.metrics, at: positions, key: { $0.name }) {
                .object($0.tree)
            }
        }
        return changes
    }

    /// `updated flag plugin_switch_a; created kill switch b` (at most three names per verb).
    static func describe(_ changes: [ObjectChange]) -> String {
        guard !changes.isEmpty else { return "no change" }
        var groups: [(verb: String, names: [String])] = []
        for change in changes {
            let verb = change.before == nil ? "created" : change.after == nil ? "deleted" : "updated"
            let name = change.kind == .namespace ? "namespace \(change.key)" : "\(change.kind.label) \(change.key)"
            if let index = groups.firstIndex(where: { $0.verb == verb }) {
                groups[index].names.append(name)
            } else {
                groups.append((verb, [name]))
            }
        }
        return groups.map { group in
            let shown = group.names.prefix(3).joined(separator: ", ")
            let more = group.names.count > 3 ? " and \(group.names.count - 3) more" : ""
            return "\(group.verb) \(shown)\(more)"
        }.joined(separator: "; ")
    }
}

extension ObjectKind {
    var label: String {
        switch self {
        case .flag: "flag"
        case .killSwitch: "kill switch"
        case .pluginPoint: "plugin point"
        case .namespace: "namespace"
        case .metric: "metric"
        }
    }
}

extension PluginPointDefinition {
    /// The plugin point as it appears in a flag set document.
    var jsonTree: JSONValue {
        let tree = FlagSet(namespace: "x", pluginPoints: [self]).tree(unit: .basisPoints)
        return tree["plugin_points"]?.arrayValue?.first ?? .null
    }
}

extension KillSwitch {
    /// The kill switch as it appears under `kill_switches` in a flag set document.
    var jsonTree: JSONValue {
        let tree = FlagSet(namespace: "x", killSwitches: [self]).tree(unit: .basisPoints)
        return tree["kill_switches"]?[key] ?? .object(JSONObject())
    }
}
