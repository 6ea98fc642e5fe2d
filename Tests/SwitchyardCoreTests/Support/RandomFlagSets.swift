import SwitchyardCore

/// Seeded random flag sets and contexts, drawn from small pools so that conditions often hold.
struct RandomFlagSets {
    var generator: SeededGenerator

    init(seed: UInt64) {
        generator = SeededGenerator(seed: seed)
    }

    static let cities = ["lagos", "paris", "nairobi", "rome", "berlin", "北京"]
    static let cohorts = ["beta", "staff", "new_rider", "churned", "qa"]
    static let platforms = ["ios", "android", "web"]
    static let versions = ["4.9.9", "5.0.0", "5.12", "5.12.0-rc.1", "6.0.0-beta.2", "6.0.0", "10.1.0", "banana", ""]
    static let bounds = ["5.0.0", "5.12.0", "6.0.0-beta.1", "6.0.0"]

    mutating func chance(_ probability: Double) -> Bool {
        Double.random(in: 0..<1, using: &generator) < probability
    }

    mutating func some<T>(of pool: [T], upTo count: Int) -> [T] {
        var picked: [T] = []
        for element in pool.shuffled(using: &generator).prefix(Int.random(in: 1...count, using: &generator)) {
            picked.append(element)
        }
        return picked
    }

    mutating func scope() -> Scope {
        Scope(
            cities: chance(0.6) ? some(of: Self.cities, upTo: 2) : [],
            cohorts: chance(0.5) ? some(of: Self.cohorts, upTo: 2) : [])
    }

    /// A scope naming at least one attribute (scoped disables must).
    mutating func namedScope() -> Scope {
        let scope = scope()
        return scope.isEverywhere ? Scope(cities: [Self.cities.randomElement(using: &generator)!]) : scope
    }

    mutating func conditions() -> Conditions {
        var conditions = Conditions()
        if chance(0.4) { conditions.cities = some(of: Self.cities, upTo: 3) }
        if chance(0.2) { conditions.notCities = some(of: Self.cities, upTo: 2) }
        if chance(0.3) { conditions.cohorts = some(of: Self.cohorts, upTo: 2) }
        if chance(0.2) { conditions.notCohorts = some(of: Self.cohorts, upTo: 2) }
        if chance(0.1) { conditions.units = some(of: (0..<40).map { "u-\($0)" }, upTo: 3) }
        if chance(0.2) { conditions.platforms = some(of: Self.platforms, upTo: 2) }
        for attribute in VersionAttribute.allCases {
            var range = VersionRange()
            if chance(0.2) { range.atLeast = SemanticVersion(Self.bounds.randomElement(using: &generator)!) }
            if chance(0.15) { range.below = SemanticVersion("7.0.0") }
            conditions[version: attribute] = range
        }
        return conditions
    }

    mutating func rollout() -> Rollout {
        switch Int.random(in: 0..<4, using: &generator) {
        case 0: .off
        case 1: .full
        default: Rollout(basisPoints: Int.random(in: 1...9_999, using: &generator))!
        }
    }

    mutating func pluginSwitch() -> PluginSwitchDefinition {
        PluginSwitchDefinition(
            disabled: chance(0.1),
            disabledScopes: chance(0.3) ? (0..<Int.random(in: 1...2, using: &generator)).map { _ in namedScope() } : [],
            rules: (0..<Int.random(in: 0...3, using: &generator)).map { index in
                SwitchRule(name: chance(0.5) ? "rule \(index)" : nil, conditions: conditions(), rollout: rollout())
            },
            rollout: rollout())
    }

    mutating func weights(for variants: [Variant]) -> VariantWeights {
        var weights: VariantWeights = [:]
        for variant in variants where chance(0.8) {
            weights[variant.key] = UInt32.random(in: 0...100, using: &generator)
        }
        if weights.values.allSatisfy({ $0 == 0 }) { weights[variants.randomElement(using: &generator)!.key] = 1 }
        return weights
    }

    mutating func experiment() -> Experiment {
        let variants = (0..<Int.random(in: 1...4, using: &generator)).map {
            Variant(key: "v\($0)", value: .integer(Int64($0)))
        }
        return Experiment(
            valueType: .integer, variants: variants, defaultVariant: variants.randomElement(using: &generator)!.key,
            weights: weights(for: variants),
            rules: (0..<Int.random(in: 0...2, using: &generator)).map { _ in
                ExperimentRule(conditions: conditions(), weights: weights(for: variants))
            })
    }

    /// A flag set with plugin points, group kill switches and a master with scoped entries (or none).
    mutating func flagSet(switches: Int = 12, experiments: Int = 3) -> FlagSet {
        let switchKeys = (0..<switches).map { "plugin_switch_s\($0)" }
        let experimentKeys = (0..<experiments).map { "experiment_e\($0)" }
        let points = stride(from: 0, to: switchKeys.count, by: 4).map { start in
            PluginPointDefinition(
                name: "point\(start / 4)", killSwitch: "kill_point\(start / 4)",
                switches: Array(switchKeys[start..<min(start + 4, switchKeys.count)]))
        }
        var kills = [KillSwitch(key: KillSwitch.masterKey, entries: chance(0.5) ? [scope()] : [])]
        for point in points {
            kills.append(KillSwitch(key: point.killSwitch!, entries: chance(0.5) ? [scope(), scope()] : []))
        }
        kills.append(
            KillSwitch(
                key: "kill_team", members: some(of: switchKeys + experimentKeys, upTo: 5),
                entries: [scope()]))
        let flags =
            switchKeys.map { FlagDefinition(key: $0, kind: .pluginSwitch(pluginSwitch())) }
            + experimentKeys.map { FlagDefinition(key: $0, kind: .experiment(experiment())) }
        return FlagSet(namespace: "random", pluginPoints: points, killSwitches: kills, flags: flags)
    }

    mutating func unitId() -> String {
        "u-\(Int.random(in: 0..<40, using: &generator))-\(String(generator.next(), radix: 36))"
    }

    mutating func context() -> EvaluationContext {
        var context = EvaluationContext(
            unitId: chance(0.1)
                ? nil
                : (chance(0.05) ? "" : (chance(0.1) ? "u-\(Int.random(in: 0..<40, using: &generator))" : unitId())),
            city: chance(0.2) ? nil : Self.cities.randomElement(using: &generator),
            cohorts: chance(0.3) ? [] : some(of: Self.cohorts, upTo: 3),
            platform: chance(0.2) ? nil : Self.platforms.randomElement(using: &generator))
        for attribute in VersionAttribute.allCases {
            context[keyPath: attribute.contextValue] =
                chance(0.2) ? nil : Self.versions.randomElement(using: &generator)
        }
        return context
    }
}
