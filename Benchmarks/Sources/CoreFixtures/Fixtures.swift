public import SwitchyardCore

/// Generated snapshots for the benchmarks: deterministic, valid, shaped like a large app's namespace.
///
/// Every tenth flag is an experiment with three variants; the rest are plugin switches in groups of 25 per
/// plugin point, each point with its group kill switch. Per ten flags: four plain switches (no rules, fixed
/// 0 % or 100 %), three targeted switches (an allowlist rule, a city-and-cohort rule with a partial rollout, a
/// scoped disable) and two partial rollouts without rules. Some group kill switches hold scoped kill entries.
public enum Fixtures {
    /// The plain switch measured: no rules, 100 %, covered by kill switches without entries.
    public static let plainKey = "plugin_switch_plain_0031"
    /// The targeted switch measured: its allowlist rule does not hold, its city-and-cohort rule holds at 25 %,
    /// so a bucket is hashed; its group kill switch has a scoped entry that does not match.
    public static let targetedKey = "plugin_switch_targeted_0025"

    /// The experiment measured: its rule for the beta cohort holds and splits three ways, so a bucket is hashed.
    public static let experimentKey = "experiment_0010"

    /// The context measured: a UUID unit id, a city and two cohorts, an app version and a platform.
    public static let context = EvaluationContext(
        unitId: "5f0c6a2e-9b1d-4c8e-a7f3-2d4b6e8a0c1f", city: "lagos", cohorts: ["beta", "riders"],
        appVersion: "5.12.0", platform: "ios"
    )

    public static let cities = ["lagos", "paris", "nairobi", "accra", "london", "berlin", "madrid", "lisbon",
                                "cairo", "dubai", "mumbai", "delhi", "tokyo", "seoul", "sydney", "toronto",
                                "chicago", "denver", "austin", "lima", "bogota", "santiago", "rome", "oslo"]
    public static let cohorts = ["beta", "staff", "dogfood", "riders", "drivers", "premium", "students",
                                 "new-users", "churn-risk", "early-access", "android-beta", "ios-beta"]

    /// A snapshot with `flagCount` flags.
    public static func snapshot(flagCount: Int, version: Int64 = 42) -> Snapshot {
        var flags: [FlagDefinition] = []
        var points: [PluginPointDefinition] = []
        var kills: [KillSwitch] = [KillSwitch(key: KillSwitch.masterKey)]
        var pointSwitches: [String] = []

        func closePoint() {
            guard !pointSwitches.isEmpty else { return }
            let number = points.count
            let killKey = "kill_point_\(pad(number))"
            // Every third group holds a scoped kill entry (a crashing build in one cohort, a city).
            let entries: [Scope] = number % 3 == 0
                ? [Scope(cohorts: ["crash-loop-\(number)"]), Scope(cities: ["atlantis"])] : []
            kills.append(KillSwitch(key: killKey, entries: entries))
            points.append(PluginPointDefinition(name: "point_\(pad(number))", killSwitch: killKey, switches: pointSwitches))
            pointSwitches = []
        }

        for index in 0..<flagCount {
            let flag = definition(index)
            flags.append(flag)
            if flag.pluginSwitch != nil {
                pointSwitches.append(flag.key)
                if pointSwitches.count == 25 { closePoint() }
            }
        }
        closePoint()
        let flagSet = FlagSet(namespace: "bench", description: "Generated for benchmarks",
                              pluginPoints: points, killSwitches: kills, flags: flags)
        return Snapshot(epoch: "01JD3B8Q7ZK2M4N6P8R0T2V4X6", version: version, flagSet: flagSet)
    }

    static func pad(_ number: Int) -> String {
        let text = String(number)
        return String(repeating: "0", count: max(0, 4 - text.count)) + text
    }

    static func unique(_ values: [String]) -> [String] {
        var seen = Set<String>()
        return values.filter { seen.insert($0).inserted }
    }

    static func definition(_ index: Int) -> FlagDefinition {
        let city = cities[index % cities.count]
        let otherCity = cities[(index * 7 + 3) % cities.count]
        let cohort = cohorts[index % cohorts.count]
        switch index % 10 {
        case 0:
            let variants = [Variant(key: "control", value: .string("classic")),
                            Variant(key: "compact", value: .string("compact")),
                            Variant(key: "cards", value: .string("cards"))]
            return FlagDefinition(
                key: "experiment_\(pad(index))", owner: "growth",
                kind: .experiment(Experiment(
                    valueType: .string, variants: variants, defaultVariant: "control",
                    weights: ["control": 50, "compact": 25, "cards": 25],
                    rules: [ExperimentRule(name: "beta", conditions: Conditions(cohorts: ["beta"]),
                                           weights: ["control": 1, "compact": 1, "cards": 1])]
                ))
            )
        case 1...4:
            return FlagDefinition(
                key: "plugin_switch_plain_\(pad(index))", owner: "team-\(index % 17)",
                kind: .pluginSwitch(PluginSwitchDefinition(rollout: index % 10 == 4 ? .off : .full))
            )
        case 5...7:
            let rules = [
                SwitchRule(name: "qa", conditions: Conditions(units: ["qa-\(index)-a", "qa-\(index)-b"]), rollout: .full),
                SwitchRule(name: "launch", conditions: Conditions(cities: unique(["lagos", "nairobi", "accra", city]),
                                                                  cohorts: unique(["beta", cohort])),
                           rollout: Rollout(basisPoints: 2_500)!),
                SwitchRule(name: "legacy", conditions: Conditions(versions: [.app: VersionRange(below: SemanticVersion("5.0.0"))]), rollout: .off),
            ]
            return FlagDefinition(
                key: "plugin_switch_targeted_\(pad(index))", owner: "team-\(index % 17)",
                kind: .pluginSwitch(PluginSwitchDefinition(disabledScopes: [Scope(cities: [otherCity == "lagos" ? "paris" : otherCity])],
                                                 rules: rules, rollout: .off))
            )
        default:
            return FlagDefinition(
                key: "plugin_switch_rollout_\(pad(index))", owner: "team-\(index % 17)",
                kind: .pluginSwitch(PluginSwitchDefinition(rollout: Rollout(basisPoints: (index * 37) % 10_001)!))
            )
        }
    }
}

/// What a naive client does: the flag's value looked up by key in a dictionary built from the snapshot.
public struct DictionaryClient: Sendable {
    public let values: [String: Bool]

    /// Evaluates every plugin switch once for a context (with the compiled evaluator) and keeps the results.
    public init(_ compiled: CompiledSnapshot, context: EvaluationContext) {
        let evaluator = compiled.evaluator(for: context)
        var values: [String: Bool] = [:]
        for flag in compiled.snapshot.flagSet.flags {
            values[flag.key] = evaluator.isEnabled(compiled.handle(for: flag.key)!)
        }
        self.values = values
    }

    @inline(never)
    public func isEnabled(_ key: String) -> Bool {
        values[key] ?? false
    }
}

/// A straightforward uncompiled evaluator: finds the flag by key and walks the model's kill entries, scopes
/// and conditions with string comparisons, hashing the flag key and unit id for each bucket.
public struct ModelEvaluator: Sendable {
    let flags: [String: FlagDefinition]
    let killEntries: [String: [Scope]]

    public init(_ flagSet: FlagSet) {
        var flags: [String: FlagDefinition] = [:]
        var killEntries: [String: [Scope]] = [:]
        for flag in flagSet.flags {
            flags[flag.key] = flag
            killEntries[flag.key] = flagSet.killSwitchKeys(covering: flag.key).flatMap {
                flagSet.killSwitch($0)?.entries ?? []
            }
        }
        self.flags = flags
        self.killEntries = killEntries
    }

    /// Whether a plugin switch is on, by the evaluation table.
    @inline(never)
    public func isEnabled(_ key: String, context: EvaluationContext) -> Bool {
        guard let gate = flags[key]?.pluginSwitch else { return false }
        for entry in killEntries[key] ?? [] where entry.matches(context) { return false }
        if gate.disabled { return false }
        for scope in gate.disabledScopes where scope.matches(context) { return false }
        var rollout = gate.rollout
        for rule in gate.rules where rule.conditions.hold(for: context) {
            rollout = rule.rollout
            break
        }
        if rollout == .off { return false }
        if rollout == .full { return true }
        guard let unitId = context.unitId else { return false }
        return Bucketing.bucket(flagKey: key, unitId: unitId) < Int(rollout.basisPoints)
    }
}
