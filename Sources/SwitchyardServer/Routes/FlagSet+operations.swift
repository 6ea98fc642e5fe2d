import SwitchyardCore
import SwitchyardStorage

/// The operations of the admin API on a flag set. Each returns the changed flag set or throws an `APIError`
/// naming what is wrong; the store then validates the result as a whole.
extension FlagSet {
    func requireFlag(_ key: String) throws(APIError) -> Int {
        guard let index = flags.firstIndex(where: { $0.key == key }) else {
            throw APIError.notFound("namespace '\(namespace)' has no flag '\(key)' (list flags with GET /v1/namespaces/\(namespace)/flags)")
        }
        return index
    }

    func requireSwitch(_ key: String, for operation: String) throws(APIError) -> (Int, PluginSwitchDefinition) {
        let index = try requireFlag(key)
        guard let gate = flags[index].pluginSwitch else {
            throw APIError.badRequest("'\(key)' is an experiment flag; \(operation) applies to plugin switches (experiments are killed with a kill switch and shaped by weights)")
        }
        return (index, gate)
    }

    func requireKillSwitch(_ key: String) throws(APIError) -> Int {
        guard let index = killSwitches.firstIndex(where: { $0.key == key }) else {
            let known = killSwitches.map(\.key).joined(separator: ", ")
            throw APIError.notFound("namespace '\(namespace)' has no kill switch '\(key)' (it has \(known))")
        }
        return index
    }

    /// Clears a global disable, or removes the scoped disable equal to `scope`.
    func enabling(_ key: String, scope: Scope?) throws(APIError) -> FlagSet {
        var result = self
        var (index, gate) = try requireSwitch(key, for: "enable")
        if let scope, !scope.isEverywhere {
            guard gate.disabledScopes.contains(where: { $0.sameScope(as: scope) }) else {
                let current = gate.disabledScopes.map(\.description).joined(separator: "; ")
                throw APIError.badRequest("'\(key)' has no scoped disable for \(scope) (its scoped disables: \(current.isEmpty ? "none" : current))", path: "scope")
            }
            gate.disabledScopes.removeAll { $0.sameScope(as: scope) }
        } else {
            gate.disabled = false
        }
        result.flags[index].pluginSwitch = gate
        return result
    }

    /// Disables a switch everywhere, or adds a scoped disable.
    func disabling(_ key: String, scope: Scope?) throws(APIError) -> FlagSet {
        var result = self
        var (index, gate) = try requireSwitch(key, for: "disable")
        if let scope, !scope.isEverywhere {
            if !gate.disabledScopes.contains(where: { $0.sameScope(as: scope) }) { gate.disabledScopes.append(scope) }
        } else {
            gate.disabled = true
        }
        result.flags[index].pluginSwitch = gate
        return result
    }

    /// Adds a kill entry (no scope: everywhere).
    func killing(_ key: String, scope: Scope) throws(APIError) -> FlagSet {
        var result = self
        let index = try requireKillSwitch(key)
        if !killSwitches[index].entries.contains(where: { $0.sameScope(as: scope) }) {
            result.killSwitches[index].entries.append(scope)
        }
        return result
    }

    /// Removes the kill entry equal to `scope` (no scope: the everywhere entry; `all`: every entry).
    func reviving(_ key: String, scope: Scope?, all: Bool) throws(APIError) -> FlagSet {
        var result = self
        let index = try requireKillSwitch(key)
        if all {
            result.killSwitches[index].entries = []
        } else if let scope, !scope.isEverywhere {
            guard killSwitches[index].entries.contains(where: { $0.sameScope(as: scope) }) else {
                let current = killSwitches[index].entries.map(\.description).joined(separator: "; ")
                throw APIError.badRequest("kill switch '\(key)' has no entry for \(scope) (its entries: \(current.isEmpty ? "none" : current))", path: "scope")
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
    func settingRollout(_ key: String, _ rollout: Rollout, rule: Int?, conditions: Conditions?) throws(APIError) -> (FlagSet, Int?) {
        var result = self
        var (index, gate) = try requireSwitch(key, for: "a rollout")
        var ruleIndex: Int?
        if let rule {
            guard gate.rules.indices.contains(rule) else {
                throw APIError.badRequest("'\(key)' has \(gate.rules.count) rules; rule \(rule) does not exist (rules are numbered from 0)", path: "rule")
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
    func targeting(_ key: String, rule: Int?, add: Conditions, remove: Conditions, rollout: Rollout?) throws(APIError) -> (FlagSet, Int) {
        var result = self
        let index = try requireFlag(key)
        var flag = flags[index]
        var conditions: [Conditions]
        switch flag.kind {
        case .pluginSwitch(let gate): conditions = gate.rules.map(\.conditions)
        case .experiment(let experiment): conditions = experiment.rules.map(\.conditions)
        }
        let ruleIndex: Int
        if let rule {
            guard conditions.indices.contains(rule) else {
                throw APIError.badRequest("'\(key)' has \(conditions.count) rules; rule \(rule) does not exist (rules are numbered from 0)", path: "rule")
            }
            ruleIndex = rule
        } else if conditions.count == 1 {
            ruleIndex = 0
        } else if conditions.isEmpty {
            guard case .pluginSwitch(var gate) = flag.kind else {
                throw APIError.badRequest("experiment '\(key)' has no rules; add rules with their weights through PUT /v1/namespaces/\(namespace)/flags/\(key)", path: "rule")
            }
            guard let rollout else {
                throw APIError.badRequest("'\(key)' has no rules yet; pass 'rollout' (basis points) for the new rule", path: "rollout")
            }
            gate.rules.append(SwitchRule(conditions: Conditions(), rollout: rollout))
            flag.kind = .pluginSwitch(gate)
            conditions = [Conditions()]
            ruleIndex = 0
        } else {
            throw APIError.badRequest("'\(key)' has \(conditions.count) rules; pass 'rule' to say which one to edit (numbered from 0)", path: "rule")
        }
        var edited = conditions[ruleIndex]
        let problems = BodyProblems()
        for (field, keyPath) in TargetingLists.fields {
            var values = edited[keyPath: keyPath]
            for value in add[keyPath: keyPath] where !values.contains(value) { values.append(value) }
            for (position, value) in remove[keyPath: keyPath].enumerated() {
                guard values.contains(value) else {
                    problems.report(FieldPath("remove") / field / position, "'\(value)' is not in rules[\(ruleIndex)].\(field)")
                    continue
                }
                values.removeAll { $0 == value }
            }
            edited[keyPath: keyPath] = values
        }
        try problems.check()
        switch flag.kind {
        case .pluginSwitch(var gate):
            gate.rules[ruleIndex].conditions = edited
            if let rollout { gate.rules[ruleIndex].rollout = rollout }
            flag.kind = .pluginSwitch(gate)
        case .experiment(var experiment):
            if rollout != nil {
                throw APIError.badRequest("'\(key)' is an experiment flag; its rules have weights, not a rollout", path: "rollout")
            }
            experiment.rules[ruleIndex].conditions = edited
            flag.kind = .experiment(experiment)
        }
        result.flags[index] = flag
        return (result, ruleIndex)
    }

    /// Removes a flag and every reference to it (plugin point switch lists, kill switch member lists).
    func deletingFlag(_ key: String) throws(APIError) -> FlagSet {
        var result = self
        let index = try requireFlag(key)
        result.flags.remove(at: index)
        for point in result.pluginPoints.indices { result.pluginPoints[point].switches.removeAll { $0 == key } }
        for kill in result.killSwitches.indices { result.killSwitches[kill].members.removeAll { $0 == key } }
        return result
    }

    /// Creates or replaces a flag from its JSON definition (as under `flags.<key>` in a flag set document).
    /// Problems about it are reported under `flag`.
    func replacingFlag(_ key: String, with definition: JSONValue) throws(APIError) -> FlagSet {
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
            throw APIError.invalid("flag '\(key)' is not valid: \(problems.first?.description ?? "")", problems: problems)
        }
    }
}

/// The condition lists `targeting` adds to and removes from.
enum TargetingLists {
    static var fields: [(String, WritableKeyPath<Conditions, [String]>)] {
        [("cities", \.cities), ("not_cities", \.notCities), ("cohorts", \.cohorts), ("not_cohorts", \.notCohorts),
         ("units", \.units), ("platforms", \.platforms)]
    }

    /// Reads `{"cities": [...], "cohorts": [...], ...}` into the lists of a `Conditions`.
    static func read(_ object: inout BodyObject) -> Conditions {
        var conditions = Conditions()
        for (field, keyPath) in fields { conditions[keyPath: keyPath] = object.stringList(field) ?? [] }
        object.finish()
        return conditions
    }
}
