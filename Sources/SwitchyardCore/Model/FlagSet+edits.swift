/// Edits of a flag set, as the admin API, the web console (through it), flagctl's planning and the crash guard
/// make them. Each returns the changed flag set or throws a ``FlagEditError`` saying what is wrong and which field
/// of the request is at fault; the store then validates the result as a whole (`ChangePlan`).
///
/// ```swift
/// let after = try flagSet.disabling("plugin_switch_feed_promos", scope: Scope(cities: ["lagos"]))
/// ```
extension FlagSet {
    /// The index of a flag in `flags`; not found when there is none.
    public func flagIndex(_ key: String) throws(FlagEditError) -> Int {
        guard let index = flagPosition(key) else {
            throw FlagEditError.notFound(
                "namespace '\(namespace)' has no flag '\(key)' (list flags with GET /v1/namespaces/\(namespace)/flags)")
        }
        return index
    }

    /// The index of a plugin switch in `flags`, with its definition; not found when there is no such flag, invalid
    /// when it is an experiment (`operation` names what needed a plugin switch).
    public func switchIndex(_ key: String, for operation: String) throws(FlagEditError) -> (Int, PluginSwitchDefinition)
    {
        let index = try flagIndex(key)
        guard let gate = flags[index].pluginSwitch else {
            throw FlagEditError.invalid(
                "'\(key)' is an experiment flag; \(operation) applies to plugin switches (experiments are killed with a kill switch and shaped by weights)"
            )
        }
        return (index, gate)
    }

    /// The index of a kill switch in `killSwitches`; not found when there is none.
    public func killSwitchIndex(_ key: String) throws(FlagEditError) -> Int {
        guard let index = killSwitchPosition(key) else {
            let known = killSwitches.map(\.key).joined(separator: ", ")
            throw FlagEditError.notFound("namespace '\(namespace)' has no kill switch '\(key)' (it has \(known))")
        }
        return index
    }

    /// Clears a global disable, or removes the scoped disable equal to `scope`.
    public func enabling(_ key: String, scope: Scope?) throws(FlagEditError) -> FlagSet {
        var result = self
        var (index, gate) = try switchIndex(key, for: "enable")
        if let scope, !scope.isEverywhere {
            guard gate.disabledScopes.contains(where: { $0.sameScope(as: scope) }) else {
                let current = gate.disabledScopes.map(\.description).joined(separator: "; ")
                throw FlagEditError.invalid(
                    "'\(key)' has no scoped disable for \(scope) (its scoped disables: \(current.isEmpty ? "none" : current))",
                    path: "scope")
            }
            gate.disabledScopes.removeAll { $0.sameScope(as: scope) }
        } else {
            gate.disabled = false
        }
        result.flags[index].pluginSwitch = gate
        return result
    }

    /// Disables a switch everywhere, or adds a scoped disable.
    public func disabling(_ key: String, scope: Scope?) throws(FlagEditError) -> FlagSet {
        var result = self
        var (index, gate) = try switchIndex(key, for: "disable")
        if let scope, !scope.isEverywhere {
            if !gate.disabledScopes.contains(where: { $0.sameScope(as: scope) }) { gate.disabledScopes.append(scope) }
        } else {
            gate.disabled = true
        }
        result.flags[index].pluginSwitch = gate
        return result
    }

    /// Adds a kill entry (no scope: everywhere).
    public func killing(_ key: String, scope: Scope) throws(FlagEditError) -> FlagSet {
        var result = self
        let index = try killSwitchIndex(key)
        if !killSwitches[index].entries.contains(where: { $0.sameScope(as: scope) }) {
            result.killSwitches[index].entries.append(scope)
        }
        return result
    }

    /// Removes the kill entry equal to `scope` (no scope: the everywhere entry; `all`: every entry).
    public func reviving(_ key: String, scope: Scope?, all: Bool) throws(FlagEditError) -> FlagSet {
        var result = self
        let index = try killSwitchIndex(key)
        if all {
            result.killSwitches[index].entries = []
        } else if let scope, !scope.isEverywhere {
            guard killSwitches[index].entries.contains(where: { $0.sameScope(as: scope) }) else {
                let current = killSwitches[index].entries.map(\.description).joined(separator: "; ")
                throw FlagEditError.invalid(
                    "kill switch '\(key)' has no entry for \(scope) (its entries: \(current.isEmpty ? "none" : current))",
                    path: "scope")
            }
            result.killSwitches[index].entries.removeAll { $0.sameScope(as: scope) }
        } else {
            result.killSwitches[index].entries.removeAll(where: \.isEverywhere)
        }
        return result
    }

    /// Sets the default rollout, a rule's rollout by index, or the rollout of the first rule whose conditions
    /// equal `conditions` (appending such a rule when none has them).
    /// - Returns: the flag set and the index of the rule set (nil for the default rollout).
    public func settingRollout(_ key: String, _ rollout: Rollout, rule: Int?, conditions: Conditions?)
        throws(FlagEditError) -> (FlagSet, Int?)
    {
        var result = self
        var (index, gate) = try switchIndex(key, for: "a rollout")
        var ruleIndex: Int?
        if let rule {
            guard gate.rules.indices.contains(rule) else {
                throw FlagEditError.invalid(
                    "'\(key)' has \(gate.rules.count) rules; rule \(rule) does not exist (rules are numbered from 0)",
                    path: "rule")
            }
            gate.rules[rule].rollout = rollout
            ruleIndex = rule
        } else if let conditions {
            if let existing = gate.rules.firstIndex(where: { $0.conditions == conditions }) {
                gate.rules[existing].rollout = rollout
                ruleIndex = existing
            } else {
                gate.rules.append(SwitchRule(conditions: conditions, rollout: rollout))
                ruleIndex = gate.rules.count - 1
            }
        } else {
            gate.rollout = rollout
        }
        result.flags[index].pluginSwitch = gate
        return (result, ruleIndex)
    }

    /// Adds and removes cities, cohorts, platforms and allowlisted units in a rule's conditions.
    /// - Returns: the flag set and the index of the rule edited.
    public func targeting(_ key: String, rule: Int?, add: Conditions, remove: Conditions, rollout: Rollout?)
        throws(FlagEditError) -> (FlagSet, Int)
    {
        var result = self
        let index = try flagIndex(key)
        var flag = flags[index]
        var conditions: [Conditions]
        switch flag.kind {
        case .pluginSwitch(let gate): conditions = gate.rules.map(\.conditions)
        case .experiment(let experiment): conditions = experiment.rules.map(\.conditions)
        }
        let ruleIndex: Int
        if let rule {
            guard conditions.indices.contains(rule) else {
                throw FlagEditError.invalid(
                    "'\(key)' has \(conditions.count) rules; rule \(rule) does not exist (rules are numbered from 0)",
                    path: "rule")
            }
            ruleIndex = rule
        } else if conditions.count == 1 {
            ruleIndex = 0
        } else if conditions.isEmpty {
            guard case .pluginSwitch(var gate) = flag.kind else {
                throw FlagEditError.invalid(
                    "experiment '\(key)' has no rules; add rules with their weights through PUT /v1/namespaces/\(namespace)/flags/\(key)",
                    path: "rule")
            }
            guard let rollout else {
                throw FlagEditError.invalid(
                    "'\(key)' has no rules yet; pass 'rollout' (basis points) for the new rule", path: "rollout")
            }
            gate.rules.append(SwitchRule(conditions: Conditions(), rollout: rollout))
            flag.kind = .pluginSwitch(gate)
            conditions = [Conditions()]
            ruleIndex = 0
        } else {
            throw FlagEditError.invalid(
                "'\(key)' has \(conditions.count) rules; pass 'rule' to say which one to edit (numbered from 0)",
                path: "rule")
        }
        var edited = conditions[ruleIndex]
        var problems: [ValidationProblem] = []
        for list in TargetingList.allCases {
            let field = list.field
            var values = edited[list: list]
            for value in add[list: list] where !values.contains(value) { values.append(value) }
            for (position, value) in remove[list: list].enumerated() {
                guard values.contains(value) else {
                    problems.append(
                        ValidationProblem(
                            path: FieldPath("remove") / field / position,
                            message: "'\(value)' is not in rules[\(ruleIndex)].\(field)"))
                    continue
                }
                values.removeAll { $0 == value }
            }
            edited[list: list] = values
        }
        if !problems.isEmpty { throw FlagEditError(problems: problems) }
        switch flag.kind {
        case .pluginSwitch(var gate):
            gate.rules[ruleIndex].conditions = edited
            if let rollout { gate.rules[ruleIndex].rollout = rollout }
            flag.kind = .pluginSwitch(gate)
        case .experiment(var experiment):
            if rollout != nil {
                throw FlagEditError.invalid(
                    "'\(key)' is an experiment flag; its rules have weights, not a rollout", path: "rollout")
            }
            experiment.rules[ruleIndex].conditions = edited
            flag.kind = .experiment(experiment)
        }
        result.flags[index] = flag
        return (result, ruleIndex)
    }

    /// Removes a flag and every reference to it (plugin point switch lists, kill switch member lists).
    public func deletingFlag(_ key: String) throws(FlagEditError) -> FlagSet {
        var result = self
        let index = try flagIndex(key)
        result.flags.remove(at: index)
        for point in result.pluginPoints.indices { result.pluginPoints[point].switches.removeAll { $0 == key } }
        for kill in result.killSwitches.indices { result.killSwitches[kill].members.removeAll { $0 == key } }
        return result
    }

    /// Creates or replaces a flag from its JSON definition (as under `flags.<key>` in a flag set document).
    /// Problems about it are reported under `flag`.
    public func replacingFlag(_ key: String, with definition: JSONValue) throws(FlagEditError) -> FlagSet {
        var tree = self.tree(unit: .basisPoints)
        var flagTrees = tree["flags"]?.objectValue ?? JSONObject()
        flagTrees[key] = definition
        tree["flags"] = .object(flagTrees)
        do {
            return try FlagSet(tree: .object(tree), unit: .basisPoints)
        } catch {
            let problems = error.problems.map { problem in
                var problem = problem
                let components = problem.path.components
                if components.count >= 2, components[0] == .key("flags"), components[1] == .key(key) {
                    problem.path = FieldPath([.key("flag")] + components.dropFirst(2))
                }
                return problem
            }
            throw FlagEditError.invalid(
                "flag '\(key)' is not valid: \(problems.first?.description ?? "")", problems: problems)
        }
    }
}

/// Why an edit of a flag set cannot be made as asked.
public struct FlagEditError: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Kind: Sendable, Hashable {
        /// The flag or kill switch named does not exist.
        case notFound
        /// The edit does not apply as asked (an experiment where a plugin switch is needed, a rule or a scoped
        /// entry that is not there, a definition that is not valid).
        case invalid
        /// The edit does not apply to the object's current state (a release plan that is not running paused).
        case conflict
    }

    public var kind: Kind
    public var message: String
    /// The fields of the request at fault, with what is wrong with each (empty when no field is: a flag not found).
    public var problems: [ValidationProblem]

    public init(_ kind: Kind, _ message: String, problems: [ValidationProblem] = []) {
        self.kind = kind
        self.message = message
        self.problems = problems
    }

    /// Several problems: the message names the first and counts the rest.
    public init(problems: [ValidationProblem]) {
        let first = problems.first?.description ?? "the edit is not valid"
        self.init(
            .invalid, problems.count <= 1 ? first : "\(first) (and \(problems.count - 1) more problems)",
            problems: problems)
    }

    static func notFound(_ message: String) -> FlagEditError {
        FlagEditError(.notFound, message)
    }

    /// The edit does not apply; `path` names the request's field at fault.
    static func invalid(_ message: String, path: FieldPath? = nil) -> FlagEditError {
        FlagEditError(.invalid, message, problems: path.map { [ValidationProblem(path: $0, message: message)] } ?? [])
    }

    /// The edit leads to an invalid definition, with every problem found.
    static func invalid(_ message: String, problems: [ValidationProblem]) -> FlagEditError {
        FlagEditError(.invalid, message, problems: problems)
    }

    public var description: String { message }
}
