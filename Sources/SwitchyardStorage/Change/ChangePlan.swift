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
            throw StorageError(.invalid, "a change cannot rename namespace '\(before.namespace)' to '\(after.namespace)'",
                               problems: [ValidationProblem(path: "namespace", message: "must stay '\(before.namespace)'")])
        }
        let problems = after.validate()
        guard problems.isEmpty else {
            throw StorageError(.invalid, "the change would leave namespace '\(before.namespace)' invalid", problems: problems)
        }
        self.after = after
        self.changes = ChangePlan.diff(before: before, after: after)
        let trimmed = request.author.reason?.trimmingCharacters(in: .whitespacesAndNewlines)
        self.reason = (trimmed?.isEmpty ?? true) ? nil : trimmed
        self.summary = request.summary ?? ChangePlan.describe(changes)
        if reason == nil, !changes.isEmpty, policy.requiresReason(addsKillEntry: after.addsKillEntry(comparedTo: before)) {
            let what = policy == .always ? "on every change" : "to kill"
            throw StorageError(.reasonRequired, "namespace '\(before.namespace)' requires a reason \(what); pass one (flagctl --reason, API field 'reason')")
        }
    }

    /// The objects that differ between two flag sets, as trees with rollouts in basis points.
    public static func diff(before: FlagSet, after: FlagSet) -> [ObjectChange] {
        var changes: [ObjectChange] = []
        if before.description != after.description {
            changes.append(ObjectChange(kind: .namespace, key: "description",
                                        before: before.description.map(JSONValue.string),
                                        after: after.description.map(JSONValue.string)))
        }
        if before.crashGuard != after.crashGuard {
            changes.append(ObjectChange(kind: .namespace, key: "crash_guard",
                                        before: before.crashGuard.map { .object($0.tree(unit: .basisPoints)) },
                                        after: after.crashGuard.map { .object($0.tree(unit: .basisPoints)) }))
        }
        // Compare the model first and build JSON trees only for the objects that differ.
        func compare<Object: Equatable>(_ kind: ObjectKind, _ old: [(String, Object)], _ new: [(String, Object)],
                                        tree: (Object) -> JSONValue) {
            let oldByKey = Dictionary(old, uniquingKeysWith: { first, _ in first })
            let newByKey = Dictionary(new, uniquingKeysWith: { first, _ in first })
            var keys = old.map(\.0)
            for (key, _) in new where oldByKey[key] == nil { keys.append(key) }
            for key in keys where oldByKey[key] != newByKey[key] {
                let before = oldByKey[key].map(tree), after = newByKey[key].map(tree)
                if before != after { changes.append(ObjectChange(kind: kind, key: key, before: before, after: after)) }
            }
        }
        compare(.pluginPoint, before.pluginPoints.map { ($0.name, $0) }, after.pluginPoints.map { ($0.name, $0) }) { $0.jsonTree }
        compare(.killSwitch, before.killSwitches.map { ($0.key, $0) }, after.killSwitches.map { ($0.key, $0) }) { $0.jsonTree }
        compare(.flag, before.flags.map { ($0.key, $0) }, after.flags.map { ($0.key, $0) }) { .object($0.tree(unit: .basisPoints)) }
        compare(.metric, before.metrics.map { ($0.name, $0) }, after.metrics.map { ($0.name, $0) }) { .object($0.tree) }
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
