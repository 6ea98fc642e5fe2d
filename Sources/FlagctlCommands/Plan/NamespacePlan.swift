import Foundation
import SwitchyardCore

/// What `flagctl apply` would do to one namespace: the flag set it sends, and every object it changes, with the
/// share of units each change affects.
///
/// Definitions (plugin points, kill switches and their members, flags' rules, rollouts, variants, weights,
/// descriptions, metrics) come from the file. Operational state (kill entries, and a plugin switch's `disabled` and
/// `disabled_scopes`, which release managers and the crash guard set) stays as it is on the server unless
/// `includeState`; objects only on the server stay unless `prune`.
struct NamespacePlan: Sendable {
    enum Action: String, Sendable {
        case create
        case update
        case remove
    }

    /// One object the plan changes.
    struct ObjectPlan: Sendable {
        /// `flag`, `kill_switch`, `plugin_point`, `metric` or `namespace`.
        var kind: String
        var key: String
        var action: Action
        /// The fields that differ (for updates).
        var fields: [ObjectDiff.Field]
        /// Who is affected and roughly how many, for plugin switches and experiments.
        var impact: [Impact]
    }

    /// A group of units whose value changes: the units matching a rule, the units no rule matches, every unit.
    struct Impact: Sendable {
        /// `units matching rule 1 (cities nairobi)`.
        var scope: String
        /// The cities and cohorts named by the scope; nil when it is not limited to some.
        var cities: [String]?
        var cohorts: [String]?
        /// The share of those units that got the plugin before and after (plugin switches).
        var from: Rollout?
        var to: Rollout?
        /// For experiments: weights before → after.
        var note: String?

        /// `units matching rule 1 (cities nairobi): 1% → 10%, about 9% of them turn on`.
        var text: String {
            if let note { return "\(scope): \(note)" }
            guard let from, let to else { return scope }
            let difference = Rollout(basisPoints: abs(Int(to.basisPoints) - Int(from.basisPoints)))!
            let direction = to > from ? "turn on" : "turn off"
            return "\(scope): \(from) → \(to), about \(difference) of them \(direction)"
        }

        var tree: JSONValue {
            .object(
                JSONObject([
                    ("scope", .string(scope)),
                    ("cities", cities.map { .array($0.map(JSONValue.string)) } ?? .null),
                    ("cohorts", cohorts.map { .array($0.map(JSONValue.string)) } ?? .null),
                    ("from", from.map { .int(Int($0.basisPoints)) } ?? .null),
                    ("to", to.map { .int(Int($0.basisPoints)) } ?? .null),
                    (
                        "share",
                        from.flatMap { from in to.map { .int(abs(Int($0.basisPoints) - Int(from.basisPoints))) } }
                            ?? .null
                    ),
                    ("note", note.map(JSONValue.string) ?? .null),
                ]))
        }
    }

    /// Operational state on the server that differs from the file and is left alone.
    struct KeptState: Sendable {
        var kind: String
        var key: String
        var field: String
        var server: JSONValue?
        var file: JSONValue?
    }

    var namespace: String
    var file: String
    /// The server's version the plan was made against; nil when the namespace does not exist yet.
    var baseVersion: Int64?
    var etag: String?
    var reasonPolicy: ReasonPolicy?
    /// The flag set `apply` sends.
    var desired: FlagSet
    var objects: [ObjectPlan]
    /// Objects only on the server, kept because `--prune` was not given.
    var kept: [(kind: String, key: String)]
    var keptState: [KeptState]
    /// Whether the plan adds a kill entry (the `kills` reason policy needs a reason then).
    var addsKillEntry: Bool

    var exists: Bool { baseVersion != nil }
    var isEmpty: Bool { exists && objects.isEmpty }

    /// Plans one namespace.
    ///
    /// - Parameters:
    ///   - file: the flag file's flag set and path.
    ///   - server: the namespace on the server; nil when it does not exist.
    /// - Throws: `CommandFailure` listing the problems when the result would be an invalid flag set.
    static func make(file: FlagSet, path: String, server: NamespaceView?, includeState: Bool, prune: Bool) throws
        -> NamespacePlan
    {
        guard let server else {
            var objects = [ObjectPlan(kind: "namespace", key: file.namespace, action: .create, fields: [], impact: [])]
            objects += diff(before: FlagSet(namespace: file.namespace), after: file)
            return NamespacePlan(
                namespace: file.namespace, file: path, baseVersion: nil, etag: nil, reasonPolicy: nil,
                desired: file, objects: objects, kept: [], keptState: [], addsKillEntry: false)
        }
        let current = server.flagSet
        // A release plan declared as it runs keeps its progress and the targeting it set, as flagsd keeps them.
        var desired = file.keepingReleaseProgress(of: current)
        var keptState: [KeptState] = []
        if !includeState {
            for index in desired.killSwitches.indices {
                guard let live = current.killSwitch(desired.killSwitches[index].key) else { continue }
                let wanted = desired.killSwitches[index].entries
                if wanted != live.entries {
                    keptState.append(
                        KeptState(
                            kind: "kill_switch", key: live.key, field: "entries",
                            server: .array(live.entries.map { .object($0.tree) }),
                            file: .array(wanted.map { .object($0.tree) })))
                }
                desired.killSwitches[index].entries = live.entries
            }
            for index in desired.flags.indices {
                guard var gate = desired.flags[index].pluginSwitch,
                    let live = current.flag(desired.flags[index].key)?.pluginSwitch
                else { continue }
                let key = desired.flags[index].key
                if gate.disabled != live.disabled {
                    keptState.append(
                        KeptState(
                            kind: "flag", key: key, field: "disabled", server: .bool(live.disabled),
                            file: .bool(gate.disabled)))
                }
                if gate.disabledScopes != live.disabledScopes {
                    keptState.append(
                        KeptState(
                            kind: "flag", key: key, field: "disabled_scopes",
                            server: .array(live.disabledScopes.map { .object($0.tree) }),
                            file: .array(gate.disabledScopes.map { .object($0.tree) })))
                }
                gate.disabled = live.disabled
                gate.disabledScopes = live.disabledScopes
                desired.flags[index].pluginSwitch = gate
            }
        }
        var kept: [(kind: String, key: String)] = []
        if !prune {
            for flag in current.flags where desired.flag(flag.key) == nil {
                desired.flags.append(flag)
                kept.append(("flag", flag.key))
            }
            for kill in current.killSwitches where desired.killSwitch(kill.key) == nil {
                desired.killSwitches.append(kill)
                kept.append(("kill_switch", kill.key))
            }
            for point in current.pluginPoints where !desired.pluginPoints.contains(where: { $0.name == point.name }) {
                desired.pluginPoints.append(point)
                kept.append(("plugin_point", point.name))
            }
            for metric in current.metrics where !desired.metrics.contains(where: { $0.name == metric.name }) {
                desired.metrics.append(metric)
                kept.append(("metric", metric.name))
            }
        }
        let problems = desired.validate()
        guard problems.isEmpty else {
            var message = "the flag set for namespace '\(file.namespace)' would not be valid:"
            for problem in problems { message += "\n  \(problem.path): \(problem.message)" }
            message +=
                prune
                ? ""
                : "\n(objects only on the server are kept without --prune; if they clash with the file, pass --prune to remove them)"
            throw CommandFailure(message)
        }
        let addsKillEntry = desired.addsKillEntry(comparedTo: current)
        return NamespacePlan(
            namespace: file.namespace, file: path, baseVersion: server.version, etag: server.etag,
            reasonPolicy: server.reasonPolicy, desired: desired, objects: diff(before: current, after: desired),
            kept: kept, keptState: keptState, addsKillEntry: addsKillEntry)
    }

    /// Every object that differs between two flag sets, with field differences and impact.
    static func diff(before: FlagSet, after: FlagSet) -> [ObjectPlan] {
        var objects: [ObjectPlan] = []
        if before.description != after.description {
            objects.append(
                ObjectPlan(
                    kind: "namespace", key: "description", action: .update,
                    fields: [
                        ObjectDiff.Field(
                            path: "description", before: before.description.map(JSONValue.string),
                            after: after.description.map(JSONValue.string))
                    ], impact: []))
        }
        if before.crashGuard != after.crashGuard {
            let old = before.crashGuard.map { JSONValue.object($0.tree(unit: .basisPoints)) }
            let new = after.crashGuard.map { JSONValue.object($0.tree(unit: .basisPoints)) }
            let action: Action = old == nil ? .create : new == nil ? .remove : .update
            objects.append(
                ObjectPlan(
                    kind: "namespace", key: "crash_guard", action: action,
                    fields: action == .update ? ObjectDiff.fields(old, new) : [], impact: []))
        }
        let oldTree = before.tree(unit: .basisPoints)
        let newTree = after.tree(unit: .basisPoints)
        func pointTrees(_ tree: JSONObject) -> [(String, JSONValue)] {
            (tree["plugin_points"]?.arrayValue ?? []).map { ($0["name"]?.stringValue ?? "", $0) }
        }
        func members(_ tree: JSONObject, _ section: String) -> [(String, JSONValue)] {
            (tree[section]?.objectValue ?? JSONObject()).map { ($0.key, $0.value) }
        }
        func compare(_ kind: String, _ old: [(String, JSONValue)], _ new: [(String, JSONValue)]) {
            let oldByKey = Dictionary(old, uniquingKeysWith: { first, _ in first })
            let newByKey = Dictionary(new, uniquingKeysWith: { first, _ in first })
            var keys = old.map(\.0)
            for (key, _) in new where oldByKey[key] == nil { keys.append(key) }
            for key in keys where oldByKey[key] != newByKey[key] {
                let action: Action = oldByKey[key] == nil ? .create : newByKey[key] == nil ? .remove : .update
                let fields = action == .update ? ObjectDiff.fields(oldByKey[key], newByKey[key]) : []
                let impact = kind == "flag" ? Self.impact(before.flag(key), after.flag(key)) : []
                objects.append(ObjectPlan(kind: kind, key: key, action: action, fields: fields, impact: impact))
            }
        }
        compare("plugin_point", pointTrees(oldTree), pointTrees(newTree))
        compare("kill_switch", members(oldTree, "kill_switches"), members(newTree, "kill_switches"))
        compare("flag", members(oldTree, "flags"), members(newTree, "flags"))
        compare("metric", members(oldTree, "metrics"), members(newTree, "metrics"))
        return objects
    }

    /// Who a flag change affects, roughly: the units of each rule or rollout that changed, and the share of
    /// them whose value flips (rollouts only add or remove units at the edge, as bucketing is stable).
    static func impact(_ before: FlagDefinition?, _ after: FlagDefinition?) -> [Impact] {
        func scope(_ conditions: Conditions) -> (cities: [String]?, cohorts: [String]?) {
            (conditions.cities.isEmpty ? nil : conditions.cities, conditions.cohorts.isEmpty ? nil : conditions.cohorts)
        }
        switch (before?.kind, after?.kind) {
        case (let old, .pluginSwitch(let new)?):
            guard let oldGate = old.flatMap({ if case .pluginSwitch(let gate) = $0 { gate } else { nil } }) else {
                // A new switch: clients had no such flag, so it was off for everyone.
                var impacts = new.rules.enumerated().map { index, rule in
                    let (cities, cohorts) = scope(rule.conditions)
                    return Impact(
                        scope: "units matching rule \(index) (\(rule.conditions.summary))", cities: cities,
                        cohorts: cohorts,
                        from: .off, to: rule.rollout)
                }.filter { $0.to != $0.from }
                if new.rollout != .off {
                    impacts.append(
                        Impact(
                            scope: new.rules.isEmpty ? "every unit" : "units no rule matches", from: .off,
                            to: new.rollout))
                }
                return impacts
            }
            var impacts: [Impact] = []
            if oldGate.disabled != new.disabled {
                impacts.append(
                    Impact(
                        scope: "every unit", note: new.disabled ? "disabled: off for everyone" : "no longer disabled"))
            }
            for index in 0..<max(oldGate.rules.count, new.rules.count) {
                let oldRule = index < oldGate.rules.count ? oldGate.rules[index] : nil
                let newRule = index < new.rules.count ? new.rules[index] : nil
                switch (oldRule, newRule) {
                case (let oldRule?, let newRule?) where oldRule.conditions == newRule.conditions:
                    if oldRule.rollout != newRule.rollout {
                        let (cities, cohorts) = scope(newRule.conditions)
                        impacts.append(
                            Impact(
                                scope: "units matching rule \(index) (\(newRule.conditions.summary))", cities: cities,
                                cohorts: cohorts, from: oldRule.rollout, to: newRule.rollout))
                    }
                case (let oldRule?, let newRule?):
                    // Units entering the rule get its rollout; units leaving it fall to later rules or the default.
                    let cities =
                        oldRule.conditions.cities.isEmpty || newRule.conditions.cities.isEmpty
                        ? nil : Array(Set(oldRule.conditions.cities + newRule.conditions.cities)).sorted()
                    let cohorts =
                        oldRule.conditions.cohorts.isEmpty || newRule.conditions.cohorts.isEmpty
                        ? nil : Array(Set(oldRule.conditions.cohorts + newRule.conditions.cohorts)).sorted()
                    let scope =
                        "units of rule \(index) (was \(oldRule.conditions.summary); now \(newRule.conditions.summary))"
                    if oldRule.rollout == newRule.rollout {
                        impacts.append(
                            Impact(
                                scope: scope, cities: cities, cohorts: cohorts,
                                note:
                                    "units entering it get \(newRule.rollout), units leaving it get later rules or the default \(new.rollout)"
                            ))
                    } else {
                        impacts.append(
                            Impact(
                                scope: scope, cities: cities, cohorts: cohorts, from: oldRule.rollout,
                                to: newRule.rollout))
                    }
                case (nil, let newRule?):
                    let (cities, cohorts) = scope(newRule.conditions)
                    impacts.append(
                        Impact(
                            scope: "units matching new rule \(index) (\(newRule.conditions.summary))",
                            cities: cities, cohorts: cohorts, from: oldGate.rollout, to: newRule.rollout))
                case (let oldRule?, nil):
                    let (cities, cohorts) = scope(oldRule.conditions)
                    impacts.append(
                        Impact(
                            scope: "units that matched removed rule \(index) (\(oldRule.conditions.summary))",
                            cities: cities, cohorts: cohorts, from: oldRule.rollout, to: new.rollout))
                case (nil, nil):
                    break
                }
            }
            if oldGate.rollout != new.rollout {
                impacts.append(
                    Impact(
                        scope: new.rules.isEmpty ? "every unit" : "units no rule matches", from: oldGate.rollout,
                        to: new.rollout))
            }
            return impacts.filter { $0.note != nil || $0.from != $0.to }
        case (.pluginSwitch(let oldGate)?, nil):
            return [
                Impact(
                    scope: "every unit",
                    note: "the flag is removed: apps use their code default (off) for it"
                        + (oldGate.rollout != .off || oldGate.rules.contains { $0.rollout != .off }
                            ? "; units that had it lose it" : ""))
            ]
        case (let old, .experiment(let new)?):
            let oldExperiment = old.flatMap { if case .experiment(let experiment) = $0 { experiment } else { nil } }
            var impacts: [Impact] = []
            if oldExperiment?.weights != new.weights {
                let from = oldExperiment.map { $0.weightsText($0.weights) } ?? "no flag"
                impacts.append(
                    Impact(
                        scope: new.rules.isEmpty ? "every unit" : "units no rule matches",
                        note: "weights \(from) → \(new.weightsText(new.weights))"))
            }
            for (index, rule) in new.rules.enumerated()
            where oldExperiment.map({ !$0.rules.indices.contains(index) || $0.rules[index] != rule }) ?? true {
                let (cities, cohorts) = scope(rule.conditions)
                impacts.append(
                    Impact(
                        scope: "units matching rule \(index) (\(rule.conditions.summary))", cities: cities,
                        cohorts: cohorts,
                        note: "weights \(new.weightsText(rule.weights))"))
            }
            return impacts
        case (.experiment?, nil):
            return [Impact(scope: "every unit", note: "the experiment is removed: apps use their code default for it")]
        default:
            return []
        }
    }

    /// The cities and cohorts a plan's impacts name, or nil (every city / cohort) when some impact is not limited.
    var affectedCities: [String]? { Self.union(objects.flatMap(\.impact).map(\.cities)) }
    var affectedCohorts: [String]? { Self.union(objects.flatMap(\.impact).map(\.cohorts)) }

    private static func union(_ lists: [[String]?]) -> [String]? {
        var result: [String] = []
        for list in lists {
            guard let list else { return nil }
            for value in list where !result.contains(value) { result.append(value) }
        }
        return result
    }
}
