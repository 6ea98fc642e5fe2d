/// How rollouts are written in a document.
public enum RolloutUnit: Sendable, Hashable {
    /// A percentage with at most two decimals, as in flag files: `12.34`.
    case percent
    /// Integer basis points 0...10000, as in snapshots and the API.
    case basisPoints
}

extension FlagSet {
    /// The top-level fields of a flag set document.
    static let fieldNames = [
        "namespace", "description", "crash_guard", "plugin_points", "kill_switches", "flags", "metrics",
    ]

    /// Reads a flag set from a JSON tree and validates it, reporting every problem.
    ///
    /// - Parameters:
    ///   - tree: the document (from YAML, a snapshot or an API body).
    ///   - unit: how rollouts are written in it.
    ///   - file: the file name to put in problems.
    ///   - extraFields: top-level fields the caller reads itself (a snapshot's `version`).
    /// - Throws: `DefinitionError` with every problem found.
    public init(tree: JSONValue, unit: RolloutUnit, file: String? = nil, extraFields: [String] = [])
        throws(DefinitionError)
    {
        let reader = TreeReader(file: file)
        let flagSet = FlagSet.read(tree, unit: unit, reader: reader, extraFields: extraFields)
        var problems = reader.problems
        if let flagSet {
            // The reader already reports some rules validate() checks too (a plugin switch key's prefix): once each.
            // A metric the reader found at fault is kept with what could be read; validate() says no more of it.
            let faultyMetrics = Set(problems.compactMap(\.path.metricName))
            for problem in flagSet.validate().map({ ValidationProblem(file: file, path: $0.path, message: $0.message) })
            where !problems.contains(problem) && !(problem.path.metricName.map(faultyMetrics.contains) ?? false) {
                problems.append(problem)
            }
        }
        guard let flagSet, problems.isEmpty else {
            throw DefinitionError(
                problems: problems.isEmpty
                    ? [ValidationProblem(file: file, path: .root, message: "is not a flag set")] : problems)
        }
        self = flagSet
    }

    static func read(_ tree: JSONValue, unit: RolloutUnit, reader: TreeReader, extraFields: [String]) -> FlagSet? {
        guard var root = reader.object(tree, at: .root) else { return nil }
        let namespace = root.string("namespace", required: true, rule: .namespace)
        let description = root.string("description", rule: .text)
        let crashGuard = root.value("crash_guard").flatMap {
            CrashGuardPolicy.read($0, at: "crash_guard", unit: unit, reader: reader)
        }

        let pluginPoints = PluginPointDefinition.readList(&root, reader: reader)
        let killSwitches = reader.keyedMembers(&root, "kill_switches") { element, key, path in
            KillSwitch.read(element, key: key, at: path, reader: reader)
        }
        let flags = reader.keyedMembers(&root, "flags") { element, key, path in
            FlagDefinition.read(element, key: key, at: path, unit: unit, reader: reader)
        }
        let metrics = root.value("metrics").map { MetricDefinition.readAll($0, reader: reader) } ?? []
        root.finish(known: extraFields)
        guard let namespace else { return nil }
        return FlagSet(
            namespace: namespace, description: description, pluginPoints: pluginPoints,
            killSwitches: killSwitches, flags: flags, crashGuard: crashGuard, metrics: metrics)
    }

    /// The flag set as a JSON tree, leaving out empty and default fields.
    ///
    /// - Parameters:
    ///   - unit: how rollouts (and other percentages) are written.
    ///   - includingServerPolicies: whether crash guard policies, release plans and metrics are written; snapshots
    ///     leave them out (clients do not need them, and a client that does not know a field refuses the snapshot).
    public func tree(unit: RolloutUnit, includingServerPolicies: Bool = true) -> JSONObject {
        var root = JSONObject()
        root["namespace"] = .string(namespace)
        if let description { root["description"] = .string(description) }
        if includingServerPolicies, let crashGuard { root["crash_guard"] = .object(crashGuard.tree(unit: unit)) }
        if !pluginPoints.isEmpty { root["plugin_points"] = .array(pluginPoints.map { .object($0.tree) }) }
        // Built in one pass: setting members one by one looks each key up, quadratic for thousands of flags.
        root["kill_switches"] = .object(JSONObject(killSwitches.map { ($0.key, .object($0.tree)) }))
        root["flags"] = .object(
            JSONObject(
                flags.map { ($0.key, .object($0.tree(unit: unit, includingServerPolicies: includingServerPolicies))) }))
        if includingServerPolicies, !metrics.isEmpty {
            root["metrics"] = .object(JSONObject(metrics.map { ($0.name, .object($0.tree)) }))
        }
        return root
    }
}

extension TreeReader {
    /// Reads an object of keyed members (`flags`, `kill_switches` of a document), if present: each key must be a
    /// valid key, each member what `read` makes of it.
    func keyedMembers<Member>(
        _ root: inout ObjectReader, _ field: String, read: (JSONValue, String, FieldPath) -> Member?
    ) -> [Member] {
        guard let value = root.value(field), let members = object(value, at: FieldPath(stringLiteral: field)) else {
            return []
        }
        var result: [Member] = []
        for (key, element) in members.object {
            let path = FieldPath(stringLiteral: field) / key
            if let problem = NameRule.key.problem(with: key) {
                report(path, problem)
                continue
            }
            if let member = read(element, key, path) { result.append(member) }
        }
        return result
    }
}

extension PluginPointDefinition {
    /// Reads a document's `plugin_points` list, if present.
    static func readList(_ root: inout ObjectReader, reader: TreeReader) -> [PluginPointDefinition] {
        guard let value = root.value("plugin_points"), let elements = reader.list(value, at: "plugin_points") else {
            return []
        }
        return elements.enumerated().compactMap { index, element in
            PluginPointDefinition.read(element, at: FieldPath("plugin_points") / index, reader: reader)
        }
    }

    static func read(_ value: JSONValue, at path: FieldPath, reader: TreeReader) -> PluginPointDefinition? {
        guard var object = reader.object(value, at: path) else { return nil }
        let name = object.string("name", required: true, rule: .key)
        let description = object.string("description", rule: .text)
        let killSwitch = object.string("kill_switch", rule: .key)
        let switches = object.stringList("switches", rule: .key, allowEmpty: true)
        if object.value("switches") == nil { reader.report(path / "switches", "is required") }
        object.finish()
        guard let name else { return nil }
        return PluginPointDefinition(name: name, description: description, killSwitch: killSwitch, switches: switches)
    }

    var tree: JSONObject {
        var object = JSONObject()
        object["name"] = .string(name)
        if let description { object["description"] = .string(description) }
        if let killSwitch { object["kill_switch"] = .string(killSwitch) }
        object["switches"] = .array(switches.map(JSONValue.string))
        return object
    }
}

extension Scope {
    static func read(_ value: JSONValue, at path: FieldPath, reader: TreeReader) -> Scope? {
        guard var object = reader.object(value, at: path) else { return nil }
        let scope = Scope(
            cities: object.stringList("cities", rule: .attribute),
            cohorts: object.stringList("cohorts", rule: .attribute))
        object.finish()
        return scope
    }

    /// The scope as a JSON object: `{"cities": [...], "cohorts": [...]}`, empty lists left out.
    public var tree: JSONObject {
        var object = JSONObject()
        if !cities.isEmpty { object["cities"] = .array(cities.map(JSONValue.string)) }
        if !cohorts.isEmpty { object["cohorts"] = .array(cohorts.map(JSONValue.string)) }
        return object
    }
}

extension KillSwitch {
    /// Reads one kill switch from its JSON object (as under `kill_switches.<key>` of a flag set document).
    ///
    /// - Throws: `DefinitionError` with every problem found, paths from the kill switch's object.
    public init(key: String, tree: JSONValue) throws(DefinitionError) {
        let reader = TreeReader(file: nil)
        let kill = KillSwitch.read(tree, key: key, at: .root, reader: reader)
        guard let kill, reader.problems.isEmpty else { throw DefinitionError(problems: reader.problems) }
        self = kill
    }

    static func read(_ value: JSONValue, key: String, at path: FieldPath, reader: TreeReader) -> KillSwitch? {
        guard var object = reader.object(value, at: path) else { return nil }
        let description = object.string("description", rule: .text)
        let members = object.stringList("members", rule: .key, allowEmpty: true)
        var entries: [Scope] = []
        if let value = object.value("entries"), let elements = reader.list(value, at: path / "entries") {
            for (index, element) in elements.enumerated() {
                if let scope = Scope.read(element, at: path / "entries" / index, reader: reader) {
                    entries.append(scope)
                }
            }
        }
        object.finish()
        return KillSwitch(key: key, description: description, members: members, entries: entries)
    }

    var tree: JSONObject {
        var object = JSONObject()
        if let description { object["description"] = .string(description) }
        if !members.isEmpty { object["members"] = .array(members.map(JSONValue.string)) }
        if !entries.isEmpty { object["entries"] = .array(entries.map { .object($0.tree) }) }
        return object
    }
}

extension Conditions {
    static func read(_ object: inout ObjectReader, reader: TreeReader) -> Conditions {
        var conditions = Conditions()
        for list in TargetingList.allCases {
            conditions[list: list] = object.stringList(list.field, rule: .attribute)
        }
        for attribute in VersionAttribute.allCases {
            var range = VersionRange()
            for (field, keyPath) in [(attribute.atLeastField, \VersionRange.atLeast), (attribute.belowField, \.below)] {
                guard let text = object.string(field, rule: .attribute) else { continue }
                guard let version = SemanticVersion(text) else {
                    reader.report(object.path / field, "'\(text)' is not a semantic version (e.g. 5.12.0)")
                    continue
                }
                range[keyPath: keyPath] = version
            }
            if let lower = range.atLeast, let upper = range.below, !(lower < upper) {
                reader.report(
                    object.path / attribute.belowField,
                    "\(upper) must be above \(attribute.atLeastField) \(lower), or no version can match")
            }
            conditions[version: attribute] = range
        }
        return conditions
    }

    func write(into object: inout JSONObject) {
        for list in TargetingList.allCases where !self[list: list].isEmpty {
            object[list.field] = .array(self[list: list].map(JSONValue.string))
        }
        for attribute in VersionAttribute.allCases {
            let range = self[version: attribute]
            if let atLeast = range.atLeast { object[attribute.atLeastField] = .string(atLeast.description) }
            if let below = range.below { object[attribute.belowField] = .string(below.description) }
        }
    }
}

extension Rollout {
    static func read(_ value: JSONValue, at path: FieldPath, unit: RolloutUnit, reader: TreeReader) -> Rollout? {
        guard case .number(let number) = value else {
            reader.report(path, "must be a number, not \(value.typeDescription)")
            return nil
        }
        switch unit {
        case .percent:
            if number.literal.contains(where: { $0 == "e" || $0 == "E" }) {
                reader.report(path, "\(number.literal) is not a plain decimal percentage (write e.g. 12.5)")
                return nil
            }
            switch Rollout.parsePercent(number.literal) {
            case .success(let rollout): return rollout
            case .failure(let error):
                reader.report(path, error.description)
                return nil
            }
        case .basisPoints:
            guard let integer = number.int64Value else {
                reader.report(path, "\(number.literal) must be an integer number of basis points")
                return nil
            }
            guard let rollout = Rollout(basisPoints: Int(clamping: integer)) else {
                reader.report(path, "\(integer) is not between 0 and 10000 basis points")
                return nil
            }
            return rollout
        }
    }

    func jsonValue(unit: RolloutUnit) -> JSONValue {
        switch unit {
        case .percent: .number(JSONNumber(uncheckedLiteral: percentText))
        case .basisPoints: .int(Int(basisPoints))
        }
    }
}

extension FlagDefinition {
    /// Reads one flag from its JSON object (as under `flags.<key>` of a flag set document): the fields and their
    /// values, not what only a whole flag set can check (plugin points, kill switch members).
    ///
    /// - Throws: `DefinitionError` with every problem found, paths from the flag's object.
    public init(key: String, tree: JSONValue, unit: RolloutUnit) throws(DefinitionError) {
        let reader = TreeReader(file: nil)
        let flag = FlagDefinition.read(tree, key: key, at: .root, unit: unit, reader: reader)
        guard let flag, reader.problems.isEmpty else { throw DefinitionError(problems: reader.problems) }
        self = flag
    }

    static func read(_ value: JSONValue, key: String, at path: FieldPath, unit: RolloutUnit, reader: TreeReader)
        -> FlagDefinition?
    {
        guard var object = reader.object(value, at: path) else { return nil }
        let description = object.string("description", rule: .text)
        let owner = object.string("owner", rule: .text)
        let isSwitchKey = key.hasPrefix(FlagDefinition.pluginSwitchPrefix)
        let type = object.string("type") ?? (isSwitchKey ? "plugin_switch" : nil)
        let kind: Kind?
        switch type {
        case "plugin_switch":
            if !isSwitchKey {
                reader.report(path, "a plugin switch key must start with '\(FlagDefinition.pluginSwitchPrefix)'")
            }
            kind = PluginSwitchDefinition.read(&object, unit: unit, reader: reader).map(Kind.pluginSwitch)
        case "experiment":
            if isSwitchKey {
                reader.report(path / "type", "'\(key)' is named like a plugin switch; an experiment needs another key")
            }
            kind = Experiment.read(&object, reader: reader).map(Kind.experiment)
        case nil:
            reader.report(
                path / "type",
                "is required for '\(key)' (plugin_switch or experiment); plugin switch keys start with '\(FlagDefinition.pluginSwitchPrefix)'"
            )
            kind = nil
        case let other?:
            reader.report(path / "type", "'\(other)' is not a flag type (plugin_switch or experiment)")
            kind = nil
        }
        // Report unknown fields whenever the type was known, even if the flag could not be read.
        if type == "plugin_switch" || type == "experiment" { object.finish() }
        guard let kind else { return nil }
        return FlagDefinition(key: key, description: description, owner: owner, kind: kind)
    }

    /// The members of a flag's object that only the server reads (a plugin switch's crash guard policy and release
    /// plan): snapshots, and what client tokens read of the change log, leave them out.
    public static let serverPolicyFields = ["crash_guard", "release"]

    /// The flag as a JSON object (without its key, which is the member name).
    ///
    /// - Parameter includingServerPolicies: whether a plugin switch's crash guard policy and release plan are written (not in snapshots).
    public func tree(unit: RolloutUnit, includingServerPolicies: Bool = true) -> JSONObject {
        var object = JSONObject()
        object["type"] = .string(typeName)
        if let description { object["description"] = .string(description) }
        if let owner { object["owner"] = .string(owner) }
        switch kind {
        case .pluginSwitch(let gate):
            gate.write(into: &object, unit: unit, includingServerPolicies: includingServerPolicies)
        case .experiment(let experiment): experiment.write(into: &object)
        }
        return object
    }
}

extension PluginSwitchDefinition {
    static func read(_ object: inout ObjectReader, unit: RolloutUnit, reader: TreeReader) -> PluginSwitchDefinition? {
        var gate = PluginSwitchDefinition()
        gate.disabled = object.bool("disabled") ?? false
        if let value = object.value("disabled_scopes"),
            let elements = reader.list(value, at: object.path / "disabled_scopes")
        {
            for (index, element) in elements.enumerated() {
                let path = object.path / "disabled_scopes" / index
                guard let scope = Scope.read(element, at: path, reader: reader) else { continue }
                if scope.isEverywhere {
                    reader.report(
                        path, "a scoped disable must name cities or cohorts (use disabled: true to disable everywhere)")
                    continue
                }
                gate.disabledScopes.append(scope)
            }
        }
        if let value = object.value("rules"), let elements = reader.list(value, at: object.path / "rules") {
            for (index, element) in elements.enumerated() {
                let path = object.path / "rules" / index
                guard var rule = reader.object(element, at: path) else { continue }
                let name = rule.string("name", rule: .text)
                let conditions = Conditions.read(&rule, reader: reader)
                let rollout = rule.value("rollout", required: true).flatMap {
                    Rollout.read($0, at: path / "rollout", unit: unit, reader: reader)
                }
                rule.finish()
                if let rollout { gate.rules.append(SwitchRule(name: name, conditions: conditions, rollout: rollout)) }
            }
        }
        if let value = object.value("rollout") {
            gate.rollout = Rollout.read(value, at: object.path / "rollout", unit: unit, reader: reader) ?? .off
        }
        if let value = object.value("crash_guard") {
            gate.crashGuard = CrashGuardPolicy.read(
                value, at: object.path / "crash_guard", unit: unit, reader: reader,
                namespaceLevel: false)
        }
        if let value = object.value("release") {
            gate.release = ReleasePlan.read(value, at: object.path / "release", unit: unit, reader: reader)
        }
        return gate
    }

    func write(into object: inout JSONObject, unit: RolloutUnit, includingServerPolicies: Bool = true) {
        if disabled { object["disabled"] = .bool(true) }
        if !disabledScopes.isEmpty { object["disabled_scopes"] = .array(disabledScopes.map { .object($0.tree) }) }
        if !rules.isEmpty {
            object["rules"] = .array(
                rules.map { rule in
                    var tree = JSONObject()
                    if let name = rule.name { tree["name"] = .string(name) }
                    rule.conditions.write(into: &tree)
                    tree["rollout"] = rule.rollout.jsonValue(unit: unit)
                    return .object(tree)
                })
        }
        object["rollout"] = rollout.jsonValue(unit: unit)
        if includingServerPolicies, let crashGuard { object["crash_guard"] = .object(crashGuard.tree(unit: unit)) }
        if includingServerPolicies, let release { object["release"] = .object(release.tree(unit: unit)) }
    }
}

extension Experiment {
    static func read(_ object: inout ObjectReader, reader: TreeReader) -> Experiment? {
        let path = object.path
        let typeName = object.string("value_type", required: true)
        let valueType = typeName.flatMap(FlagValueType.init(rawValue:))
        if let typeName, valueType == nil {
            reader.report(
                path / "value_type", "'\(typeName)' is not a value type (boolean, string, integer, float or object)")
        }
        var variants: [Variant] = []
        if let value = object.value("variants", required: true),
            let elements = reader.list(value, at: path / "variants")
        {
            if elements.isEmpty { reader.report(path / "variants", "must list at least one variant") }
            for (index, element) in elements.enumerated() {
                let elementPath = path / "variants" / index
                guard var variant = reader.object(element, at: elementPath) else { continue }
                let key = variant.string("key", required: true, rule: .key)
                let raw = variant.value("value", required: true)
                variant.finish()
                guard let key, let raw, let valueType else { continue }
                if variants.contains(where: { $0.key == key }) {
                    reader.report(elementPath / "key", "variant '\(key)' is declared twice")
                    continue
                }
                guard let value = FlagValue(raw, as: valueType) else {
                    reader.report(elementPath / "value", "\(raw.serializedString()) is not a valid \(valueType) value")
                    continue
                }
                variants.append(Variant(key: key, value: value))
            }
        }
        let defaultVariant = object.string("default_variant", required: true, rule: .key)
        let weights =
            object.value("weights", required: true).map {
                readWeights($0, at: path / "weights", reader: reader)
            } ?? [:]
        var rules: [ExperimentRule] = []
        if let value = object.value("rules"), let elements = reader.list(value, at: path / "rules") {
            for (index, element) in elements.enumerated() {
                let rulePath = path / "rules" / index
                guard var rule = reader.object(element, at: rulePath) else { continue }
                let name = rule.string("name", rule: .text)
                let conditions = Conditions.read(&rule, reader: reader)
                let ruleWeights = rule.value("weights", required: true).map {
                    readWeights($0, at: rulePath / "weights", reader: reader)
                }
                rule.finish()
                if let ruleWeights {
                    rules.append(ExperimentRule(name: name, conditions: conditions, weights: ruleWeights))
                }
            }
        }
        guard let valueType, let defaultVariant else { return nil }
        return Experiment(
            valueType: valueType, variants: variants, defaultVariant: defaultVariant,
            weights: weights, rules: rules)
    }

    static func readWeights(_ value: JSONValue, at path: FieldPath, reader: TreeReader) -> VariantWeights {
        guard let object = reader.object(value, at: path) else { return [:] }
        var weights: VariantWeights = [:]
        for (key, weight) in object.object {
            guard case .number(let number) = weight, let integer = number.int64Value else {
                reader.report(path / key, "must be a whole number, not \(weight.serializedString())")
                continue
            }
            guard (0...1_000_000).contains(integer) else {
                reader.report(path / key, "\(integer) is not between 0 and 1000000")
                continue
            }
            weights[key] = UInt32(integer)
        }
        return weights
    }

    func write(into object: inout JSONObject) {
        object["value_type"] = .string(valueType.rawValue)
        object["variants"] = .array(
            variants.map { .object(JSONObject([("key", .string($0.key)), ("value", $0.value.jsonValue)])) })
        object["default_variant"] = .string(defaultVariant)
        object["weights"] = .object(Self.weightsTree(weights, order: variants))
        if !rules.isEmpty {
            object["rules"] = .array(
                rules.map { rule in
                    var tree = JSONObject()
                    if let name = rule.name { tree["name"] = .string(name) }
                    rule.conditions.write(into: &tree)
                    tree["weights"] = .object(Self.weightsTree(rule.weights, order: variants))
                    return .object(tree)
                })
        }
    }

    static func weightsTree(_ weights: VariantWeights, order: [Variant]) -> JSONObject {
        var tree = JSONObject()
        for variant in order { if let weight = weights[variant.key] { tree[variant.key] = .int(Int(weight)) } }
        for (key, weight) in weights.sorted(by: { $0.key < $1.key }) where tree[key] == nil {
            tree[key] = .int(Int(weight))
        }
        return tree
    }
}
