extension FlagSet {
    /// Checks what a document's shape cannot: references between plugin points, kill switches and flags,
    /// variants and weights, key uniqueness and naming rules, and how each metric's fields fit its kind.
    ///
    /// - Returns: every problem, with the field path it concerns (empty when the flag set is valid).
    public func validate() -> [ValidationProblem] {
        var problems: [ValidationProblem] = []
        func report(_ path: FieldPath, _ message: String) {
            problems.append(ValidationProblem(path: path, message: message))
        }

        if let problem = NameRule.namespace.problem(with: namespace) { report("namespace", problem) }
        // As the reader checks it: a description set by an edit (a namespace's, from an API body) is read back.
        if let description, let problem = NameRule.text.problem(with: description) { report("description", problem) }

        // Positions, not copies of the flags: a copy would retain everything each flag holds.
        var flagsByKey: [String: Int] = [:]
        flagsByKey.reserveCapacity(flags.count)
        for (position, flag) in flags.enumerated() {
            if flagsByKey.updateValue(position, forKey: flag.key) != nil {
                report(FieldPath("flags") / flag.key, "'\(flag.key)' is declared twice")
            }
            problems += Self.problems(of: flag)
        }

        var killKeys = Set<String>()
        for kill in killSwitches {
            var path: FieldPath { FieldPath("kill_switches") / kill.key }
            if !killKeys.insert(kill.key).inserted { report(path, "'\(kill.key)' is declared twice") }
            if kill.isMaster && !kill.members.isEmpty {
                report(path / "members", "the master kill switch covers every flag; it takes no member list")
            }
            if flagsByKey[kill.key] != nil {
                report(path, "'\(kill.key)' is also a flag key; kill switches need their own keys")
            }
            for (index, member) in kill.members.enumerated() where flagsByKey[member] == nil {
                report(path / "members" / index, "'\(member)' is not a flag of this namespace")
            }
        }

        var pointNames = Set<String>()
        var pointOfSwitch: [String: String] = [:]
        for (index, point) in pluginPoints.enumerated() {
            var path: FieldPath { FieldPath("plugin_points") / index }
            if !pointNames.insert(point.name).inserted {
                report(path / "name", "plugin point '\(point.name)' is declared twice")
            }
            if let kill = point.killSwitch {
                if kill == KillSwitch.masterKey {
                    report(
                        path / "kill_switch", "name a group kill switch; the master already covers every plugin point")
                } else if !killKeys.contains(kill) {
                    report(
                        path / "kill_switch",
                        "'\(kill)' is not a kill switch of this namespace (declare it under kill_switches)")
                }
            }
            for (position, key) in point.switches.enumerated() {
                var switchPath: FieldPath { path / "switches" / position }
                guard let flag = flagsByKey[key].map({ flags[$0] }) else {
                    report(switchPath, "'\(key)' is not a flag of this namespace")
                    continue
                }
                guard flag.pluginSwitch != nil else {
                    report(switchPath, "'\(key)' is an experiment flag; plugin points list plugin switches")
                    continue
                }
                if let other = pointOfSwitch[key] {
                    report(
                        switchPath,
                        "'\(key)' already belongs to plugin point '\(other)'; a plugin switch gates one plugin at one point"
                    )
                }
                pointOfSwitch[key] = point.name
            }
        }
        if !metrics.isEmpty { problems += MetricDefinition.problems(of: metrics) }
        for flag in flags {
            guard let guardrails = flag.pluginSwitch?.release?.guardrails, !guardrails.isEmpty else { continue }
            let declared = metrics.map(\.name)
            for guardrail in guardrails {
                if let problem = guardrail.problem(with: metric(guardrail.metric), declared: declared) {
                    report(FieldPath("flags") / flag.key / "release" / "guardrails" / guardrail.metric, problem)
                }
            }
        }
        return problems
    }

    /// The problems of this flag set, which a change made from `before` (a valid flag set): exactly what
    /// ``validate()`` returns, found in time proportional to the change when it is small.
    ///
    /// A change of a few flags' definitions (same kind of flag, same keys) or of a few kill switches' entries and
    /// members can only be at fault in those objects: they alone are checked. Anything else (a flag added, removed or
    /// changing kind, a kill switch added or removed, plugin points, metrics), or a problem found, is validated whole,
    /// so what is reported never depends on the path taken.
    ///
    /// - Parameters:
    ///   - changes: the objects that differ from `before` (``ChangedObjects/init(from:to:aligned:)``).
    ///   - aligned: where the changed flags and kill switches are, when the change left every key in place (from
    ///     ``ChangedObjects/init(from:to:aligned:)``); the shortcut needs them.
    package func validate(changedFrom before: FlagSet, changes: ChangedObjects, aligned: AlignedChanges)
        -> [ValidationProblem]
    {
        isPlainlyValid(changedFrom: before, changes: changes, aligned: aligned) ? [] : validate()
    }

    /// Whether a small change left the flag set valid, checking only what it touched; false when it cannot tell.
    func isPlainlyValid(changedFrom before: FlagSet, changes: ChangedObjects, aligned: AlignedChanges) -> Bool {
        guard namespace == before.namespace, metrics == before.metrics, changes.pluginPoints.isEmpty,
            !changes.pluginPointOrder,
            changes.flags.count + changes.killSwitches.count <= 16
        else { return false }
        // The same keys in the same places (`aligned` is set only then): no key added, removed or listed twice, and
        // the changed objects are where `aligned` says, in both lists.
        guard let newFlags = aligned.flags, let newKills = aligned.killSwitches else { return false }
        for index in newFlags {
            let flag = flags[index]
            // The same kind: plugin points and kill switches refer to it as before.
            guard (before.flags[index].pluginSwitch != nil) == (flag.pluginSwitch != nil),
                Self.problems(of: flag).isEmpty
            else {
                return false
            }
            for guardrail in flag.pluginSwitch?.release?.guardrails ?? []
            where guardrail.problem(with: metric(guardrail.metric), declared: metrics.map(\.name)) != nil {
                return false
            }
        }
        // A changed kill switch: its members must be flags, the master has none (its key is a kill switch's already).
        var flagKeys: Set<String>?
        for index in newKills {
            let kill = killSwitches[index]
            if kill.isMaster && !kill.members.isEmpty { return false }
            if !kill.members.isEmpty {
                if flagKeys == nil { flagKeys = Set(flags.map(\.key)) }
                if !kill.members.allSatisfy({ flagKeys!.contains($0) }) { return false }
            }
        }
        return true
    }

    /// The problems of one flag on its own: its key, its kind's naming rule, an experiment's variants and weights.
    static func problems(of flag: FlagDefinition) -> [ValidationProblem] {
        // Paths are built only for a problem: this runs for every flag of every snapshot decoded.
        var path: FieldPath { FieldPath("flags") / flag.key }
        var problems: [ValidationProblem] = []
        if let problem = NameRule.key.problem(with: flag.key) {
            problems.append(ValidationProblem(path: path, message: problem))
        }
        switch flag.kind {
        case .pluginSwitch:
            if !flag.key.hasPrefix(FlagDefinition.pluginSwitchPrefix) {
                problems.append(
                    ValidationProblem(
                        path: path,
                        message: "a plugin switch key must start with '\(FlagDefinition.pluginSwitchPrefix)'"))
            }
        case .experiment(let experiment):
            if !experiment.isPlainlyValid { problems += experiment.problems(at: path) }
        }
        return problems
    }
}

extension Experiment {
    /// Whether the experiment passes every check of `problems(at:)` (tested without building paths or messages).
    var isPlainlyValid: Bool {
        guard !variants.isEmpty, variants.count <= 16 else { return false }
        for (index, variant) in variants.enumerated() {
            guard variant.value.type == valueType, !variants[..<index].contains(where: { $0.key == variant.key }) else {
                return false
            }
        }
        func isVariant(_ key: String) -> Bool { variants.contains { $0.key == key } }
        guard isVariant(defaultVariant) else { return false }
        func valid(_ weights: VariantWeights) -> Bool {
            weights.keys.allSatisfy(isVariant) && weights.values.contains { $0 > 0 }
        }
        return valid(weights) && rules.allSatisfy { valid($0.weights) }
    }

    func problems(at path: FieldPath) -> [ValidationProblem] {
        var problems: [ValidationProblem] = []
        func report(_ path: FieldPath, _ message: String) {
            problems.append(ValidationProblem(path: path, message: message))
        }
        let keys = variants.map(\.key)
        if Set(keys).count != keys.count { report(path / "variants", "variant keys must be unique") }
        for (index, variant) in variants.enumerated() where variant.value.type != valueType {
            report(
                path / "variants" / index / "value",
                "is a \(variant.value.type) value; this flag's value_type is \(valueType)")
        }
        if !variants.isEmpty, !keys.contains(defaultVariant) {
            report(
                path / "default_variant",
                "'\(defaultVariant)' is not one of the variants (\(keys.joined(separator: ", ")))")
        }
        func checkWeights(_ weights: VariantWeights, at weightsPath: FieldPath) {
            for key in weights.keys.sorted() where !keys.contains(key) {
                report(weightsPath / key, "'\(key)' is not one of the variants (\(keys.joined(separator: ", ")))")
            }
            let total = weights.values.reduce(UInt64(0)) { $0 + UInt64($1) }
            if total == 0 && !variants.isEmpty {
                report(weightsPath, "the weights must add up to more than 0")
            }
        }
        checkWeights(weights, at: path / "weights")
        for (index, rule) in rules.enumerated() {
            checkWeights(rule.weights, at: path / "rules" / index / "weights")
        }
        return problems
    }
}

extension MetricDefinition {
    /// The problems of a namespace's declared metrics: names (flag-key characters, at most 64, no built-in's), each
    /// kind's fields (a value metric's cap, a ratio's numerator and denominator), references, and how many.
    static func problems(of metrics: [MetricDefinition]) -> [ValidationProblem] {
        var problems: [ValidationProblem] = []
        let root = FieldPath("metrics")
        func report(_ path: FieldPath, _ message: String) {
            problems.append(ValidationProblem(path: path, message: message))
        }
        if metrics.count > maximumDeclared {
            report(
                root,
                "declares \(metrics.count) metrics; a namespace may declare at most \(maximumDeclared) (the built-in ones apart)"
            )
        }
        var seen = Set<String>()
        for metric in metrics {
            let path = root / metric.name
            if let problem = NameRule.metric.problem(with: metric.name) {
                report(path, problem)
                continue
            }
            if !seen.insert(metric.name).inserted { report(path, "'\(metric.name)' is declared twice") }
            if isBuiltIn(metric.name) {
                report(
                    path,
                    "'\(metric.name)' is a built-in metric (\(builtIn.map(\.name).joined(separator: ", "))); every namespace has it, so it may not be declared"
                )
            }
            switch metric.kind {
            case .value where metric.cap?.isFinite == false, .count where metric.cap?.isFinite == false:
                report(path / "cap", "\(capText(metric.cap!)) is not a finite number")
            case .value:
                if let cap = metric.cap {
                    if cap <= 0 {
                        report(path / "cap", "\(capText(cap)) must be above 0 (the most one unit's sum counts for)")
                    }
                } else {
                    report(path / "cap", "is required for a value metric (the most one unit's sum counts for)")
                }
            case .count:
                if let cap = metric.cap, !(cap >= 1 && cap.rounded() == cap) {
                    report(
                        path / "cap",
                        "\(capText(cap)) must be a whole number of at least 1 (the most occurrences one unit counts for)"
                    )
                }
            case .conversion, .ratio:
                if metric.cap != nil {
                    report(
                        path / "cap",
                        metric.kind == .conversion
                            ? "a conversion metric takes no cap (a unit converts or not: 0 or 1)"
                            : "a ratio metric takes no cap (cap its numerator and denominator)")
                }
            }
            guard metric.kind == .ratio else {
                for (field, name) in [("numerator", metric.numerator), ("denominator", metric.denominator)]
                where name != nil {
                    report(
                        path / field,
                        "only a ratio metric has a \(field) (this one is a \(metric.kind.rawValue) metric)")
                }
                continue
            }
            for (field, name) in [("numerator", metric.numerator), ("denominator", metric.denominator)] {
                guard let name else {
                    report(
                        path / field,
                        "is required for a ratio metric (name a declared or built-in metric that is not a ratio)")
                    continue
                }
                if name == metric.name {
                    report(path / field, "'\(name)' is this metric; name another metric")
                } else if let other = builtIn.first(where: { $0.name == name })
                    ?? metrics.first(where: { $0.name == name })
                {
                    if other.kind == .ratio {
                        report(
                            path / field,
                            "'\(name)' is a ratio metric; a ratio's parts must be conversion, count or value metrics")
                    }
                } else {
                    var known: [String] = []
                    for other in builtIn + metrics where other.kind != .ratio && !known.contains(other.name) {
                        known.append(other.name)
                    }
                    report(
                        path / field,
                        "'\(name)' is not a metric of this namespace (declared or built in: \(known.joined(separator: ", ")))"
                    )
                }
            }
            if let numerator = metric.numerator, numerator == metric.denominator, numerator != metric.name {
                report(path / "denominator", "'\(numerator)' is the numerator too; a metric per itself is always 1")
            }
        }
        return problems
    }

    /// A cap as a problem shows it: `200`, `0.5`.
    private static func capText(_ cap: Double) -> String {
        cap.isFinite && cap.rounded() == cap && abs(cap) < 1e15 ? String(Int64(cap)) : String(cap)
    }
}
