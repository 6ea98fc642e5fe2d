import SwitchyardCore
import TestSupport
import Testing

/// The compiled evaluator against the evaluation table written plainly over the model, on random flag sets and
/// random contexts: every field of every result must agree.
struct CompiledEvaluationDifferentialTests {
    @Test(arguments: 0..<40)
    func compiledEvaluationAgreesWithTheModelOnRandomFlagSetsAndContexts(seed: UInt64) async {
        await onOwnThread {
            var random = SplitMix64(seed: seed &* 0x9E37_79B9 &+ 17)
            let flagSet = RandomFlagSet.make(&random)
            let compiled = CompiledSnapshot(Snapshot(epoch: "e", version: 1, flagSet: flagSet))
            let reference = PlainEvaluator(flagSet: flagSet)
            var mismatches: [String] = []
            for _ in 0..<60 {
                let context = RandomFlagSet.context(&random)
                let evaluator = compiled.evaluator(for: context)
                for flag in flagSet.flags {
                    let handle = compiled.handle(for: flag.key)!
                    let actual = evaluator.evaluate(handle)
                    let expected = reference.evaluate(flag, context)
                    if DifferentialOutcome(actual) != expected {
                        mismatches.append(
                            "\(flag.key) for \(context): compiled \(DifferentialOutcome(actual)), model \(expected)")
                    }
                    let asSwitch = evaluator.evaluateSwitch(handle)
                    if flag.experiment != nil {
                        if asSwitch.decision != .typeMismatch {
                            mismatches.append("\(flag.key) as a switch: \(asSwitch)")
                        }
                    } else if DifferentialOutcome(asSwitch) != expected {
                        mismatches.append(
                            "\(flag.key) as a switch for \(context): \(DifferentialOutcome(asSwitch)), model \(expected)"
                        )
                    }
                    if evaluator.isEnabled(handle) != (flag.pluginSwitch != nil && expected.isOn) {
                        mismatches.append("\(flag.key) isEnabled for \(context)")
                    }
                }
            }
            #expect(mismatches.count == 0, "first mismatches: \(mismatches.prefix(3))")
        }
    }

    @Test func incrementalMurmur3MatchesOneShotHashingForEverySplitOfTheInput() {
        var random = SplitMix64(seed: 7)
        for length in 0..<40 {
            let bytes = (0..<length).map { _ in UInt8(truncatingIfNeeded: random.next()) }
            let expected = Murmur3Hasher.hash(bytes)
            for split in 0...length {
                var hasher = Murmur3Hasher()
                bytes[..<split].withUnsafeBufferPointer { hasher.combine(contiguous: $0) }
                bytes[split...].withUnsafeBufferPointer { hasher.combine(contiguous: $0) }
                #expect(hasher.finalize() == expected, "length \(length), split at \(split)")
            }
        }
    }
}

/// The fields of an evaluation that the model decides.
private struct DifferentialOutcome: Equatable, CustomStringConvertible {
    var isOn: Bool
    var variantIndex: Int32
    var reason: EvaluationReason
    var errorCode: EvaluationErrorCode?
    var decision: Decision
    var bucket: Int?

    init(
        isOn: Bool, variantIndex: Int32, reason: EvaluationReason, errorCode: EvaluationErrorCode? = nil,
        decision: Decision, bucket: Int? = nil
    ) {
        self.isOn = isOn
        self.variantIndex = variantIndex
        self.reason = reason
        self.errorCode = errorCode
        self.decision = decision
        self.bucket = bucket
    }

    init(_ evaluation: Evaluation) {
        self.init(
            isOn: evaluation.isOn, variantIndex: evaluation.variantIndex, reason: evaluation.reason,
            errorCode: evaluation.errorCode, decision: evaluation.decision, bucket: evaluation.bucket)
    }

    var description: String {
        "\(isOn ? "on" : "off") variant \(variantIndex) \(reason)\(errorCode.map { " \($0)" } ?? "") \(decision) bucket \(bucket.map(String.init) ?? "-")"
    }
}

/// The evaluation table of PRODUCT.md over the model, with string comparisons and one-shot hashing.
private struct PlainEvaluator {
    let flagSet: FlagSet

    func killed(_ key: String, _ context: EvaluationContext) -> Decision? {
        let covering = Set(flagSet.killSwitchKeys(covering: key))
        // The master's entries first, then each group's in the order of the flag set.
        let ordered =
            flagSet.killSwitches.enumerated().filter { $0.element.isMaster }
            + flagSet.killSwitches.enumerated().filter { !$0.element.isMaster }
        for (index, kill) in ordered where covering.contains(kill.key) {
            if let entry = kill.entries.firstIndex(where: { $0.matches(context) }) {
                return .killed(killSwitch: Int32(index), entry: Int32(entry))
            }
        }
        return nil
    }

    func hash(_ key: String, _ unit: String) -> UInt32 {
        Murmur3Hasher.hash(Array(key.utf8) + Array(unit.utf8))
    }

    func evaluate(_ flag: FlagDefinition, _ context: EvaluationContext) -> DifferentialOutcome {
        let unit = context.unitId.flatMap { $0.isEmpty ? nil : $0 }
        switch flag.kind {
        case .pluginSwitch(let gate):
            if let decision = killed(flag.key, context) {
                return DifferentialOutcome(isOn: false, variantIndex: 0, reason: .disabled, decision: decision)
            }
            if gate.disabled {
                return DifferentialOutcome(isOn: false, variantIndex: 0, reason: .disabled, decision: .disabled)
            }
            if let scope = gate.disabledScopes.firstIndex(where: { $0.matches(context) }) {
                return DifferentialOutcome(
                    isOn: false, variantIndex: 0, reason: .disabled, decision: .disabledInScope(Int32(scope)))
            }
            var rollout = gate.rollout.basisPoints
            var decision = Decision.fallback
            var reason: EvaluationReason = gate.rules.isEmpty ? .static : .default
            if let index = gate.rules.firstIndex(where: { $0.conditions.hold(for: context) }) {
                rollout = gate.rules[index].rollout.basisPoints
                decision = .rule(Int32(index))
                reason = .targetingMatch
            }
            if rollout == 0 || rollout == 10_000 {
                return DifferentialOutcome(
                    isOn: rollout != 0, variantIndex: rollout != 0 ? 1 : 0, reason: reason, decision: decision)
            }
            guard let unit else {
                return DifferentialOutcome(
                    isOn: false, variantIndex: 0, reason: .error, errorCode: .targetingKeyMissing, decision: decision)
            }
            let bucket = Bucketing.bucket(hash: hash(flag.key, unit))
            let isOn = bucket < Int(rollout)
            return DifferentialOutcome(
                isOn: isOn, variantIndex: isOn ? 1 : 0, reason: .split, decision: decision, bucket: bucket)
        case .experiment(let experiment):
            let defaultIndex = Int32(experiment.variants.firstIndex { $0.key == experiment.defaultVariant } ?? 0)
            if let decision = killed(flag.key, context) {
                return DifferentialOutcome(
                    isOn: false, variantIndex: defaultIndex, reason: .disabled, decision: decision)
            }
            var weights = experiment.weights
            var decision = Decision.fallback
            if let index = experiment.rules.firstIndex(where: { $0.conditions.hold(for: context) }) {
                weights = experiment.rules[index].weights
                decision = .rule(Int32(index))
            }
            let ordered = experiment.variants.map { UInt64(weights[$0.key] ?? 0) }
            let holders = ordered.indices.filter { ordered[$0] > 0 }
            if holders.count == 1 {
                return DifferentialOutcome(
                    isOn: false, variantIndex: Int32(holders[0]), reason: .targetingMatch, decision: decision)
            }
            guard let unit else {
                return DifferentialOutcome(
                    isOn: false, variantIndex: defaultIndex, reason: .error, errorCode: .targetingKeyMissing,
                    decision: decision)
            }
            let h = hash(flag.key, unit)
            let point = (UInt64(h) * ordered.reduce(0, +)) >> 32
            var cumulative: UInt64 = 0
            var chosen = ordered.count - 1
            for (index, weight) in ordered.enumerated() {
                cumulative += weight
                if cumulative > point {
                    chosen = index
                    break
                }
            }
            return DifferentialOutcome(
                isOn: false, variantIndex: Int32(chosen), reason: .split, decision: decision,
                bucket: Bucketing.bucket(hash: h))
        }
    }
}

/// Small random flag sets over small vocabularies, so that conditions, scopes and kill entries often match.
private enum RandomFlagSet {
    static let cities = ["lagos", "paris", "nairobi", "köln", "são-paulo"]
    static let cohorts = ["beta", "staff", "dogfood", "riders", "ios-beta"]
    static let units = [
        "u1", "u2", "abc", "abcd", "rider", "rider-42", "", "5f0c6a2e-9b1d-4c8e-a7f3-2d4b6e8a0c1f", "ünït-ß",
    ]
    static let platforms = ["ios", "android", "linux"]

    static let versions = ["4.9.9", "5.0.0", "5.12.0", "6.0.0-beta.2", "6.0.0", "not-a-version", "7"]
    static let vocabularies: [ListAttribute: [String]] = [
        .city: cities, .cohort: cohorts, .unit: units, .platform: platforms,
    ]

    /// The values drawn for a list attribute; one added later gets a small vocabulary of its own.
    static func vocabulary(_ attribute: ListAttribute) -> [String] {
        vocabularies[attribute] ?? ["\(attribute.name)-a", "\(attribute.name)-b", "\(attribute.name)-c"]
    }

    static func pick<T>(_ values: [T], _ random: inout SplitMix64) -> T {
        values[Int(random.next() % UInt64(values.count))]
    }

    static func some(_ values: [String], _ random: inout SplitMix64, upTo limit: Int = 3) -> [String] {
        let wanted = Int(random.next() % UInt64(limit + 1))
        var chosen: [String] = []
        for _ in 0..<wanted {
            let value = pick(values, &random)
            if !chosen.contains(value) { chosen.append(value) }
        }
        return chosen
    }

    static func chance(_ random: inout SplitMix64, _ percent: UInt64) -> Bool {
        random.next() % 100 < percent
    }

    static func rollout(_ random: inout SplitMix64) -> Rollout {
        switch random.next() % 4 {
        case 0: .off
        case 1: .full
        default: Rollout(basisPoints: Int(random.next() % 10_001))!
        }
    }

    static func conditions(_ random: inout SplitMix64) -> Conditions {
        var conditions = Conditions()
        // Every list a rule can have (`TargetingList.allCases`), so an attribute added later is drawn too.
        for list in TargetingList.allCases where chance(&random, list.excludes ? 15 : 30) {
            conditions[list: list] = some(vocabulary(list.attribute).filter { !$0.isEmpty }, &random)
        }
        for attribute in VersionAttribute.allCases {
            var range = VersionRange()
            if chance(&random, 20) {
                range.atLeast = SemanticVersion(pick(["5.0.0", "5.12.0", "6.0.0-beta.1"], &random))
            }
            if chance(&random, 20) { range.below = SemanticVersion(pick(["6.0.0", "6.0.0-beta.3", "8.0.0"], &random)) }
            conditions[version: attribute] = range
        }
        return conditions
    }

    static func scope(_ random: inout SplitMix64) -> Scope {
        Scope(
            cities: chance(&random, 60) ? some(cities, &random, upTo: 2) : [],
            cohorts: chance(&random, 50) ? some(cohorts, &random, upTo: 2) : [])
    }

    static func make(_ random: inout SplitMix64) -> FlagSet {
        var flags: [FlagDefinition] = []
        for number in 0..<Int(8 + random.next() % 16) {
            // Keys of every length modulo 4, so unit ids are hashed after each possible partial block.
            let index = "\(number)" + String("xyz".prefix(Int(random.next() % 4)))
            if chance(&random, 25) {
                let variants = (0..<Int(1 + random.next() % 4)).map {
                    Variant(key: "v\($0)", value: .integer(Int64($0)))
                }
                func weights(_ random: inout SplitMix64) -> VariantWeights {
                    var weights: VariantWeights = [:]
                    for variant in variants where chance(&random, 70) {
                        weights[variant.key] = UInt32(random.next() % 5)
                    }
                    if weights.values.allSatisfy({ $0 == 0 }) { weights[variants[0].key] = 1 }
                    return weights
                }
                let rules = (0..<Int(random.next() % 3)).map { _ in
                    ExperimentRule(conditions: conditions(&random), weights: weights(&random))
                }
                flags.append(
                    FlagDefinition(
                        key: "experiment_\(index)",
                        kind: .experiment(
                            Experiment(
                                valueType: .integer, variants: variants, defaultVariant: pick(variants, &random).key,
                                weights: weights(&random), rules: rules))))
            } else {
                let gate = PluginSwitchDefinition(
                    disabled: chance(&random, 8),
                    disabledScopes: (0..<Int(random.next() % 3)).map { _ in scope(&random) }.filter {
                        !$0.isEverywhere
                    },
                    rules: (0..<Int(random.next() % 4)).map { _ in
                        SwitchRule(conditions: conditions(&random), rollout: rollout(&random))
                    },
                    rollout: rollout(&random)
                )
                flags.append(FlagDefinition(key: "plugin_switch_\(index)", kind: .pluginSwitch(gate)))
            }
        }
        let switches = flags.filter { $0.pluginSwitch != nil }.map(\.key)
        var kills = [KillSwitch(key: KillSwitch.masterKey, entries: chance(&random, 30) ? [scope(&random)] : [])]
        var points: [PluginPointDefinition] = []
        for group in 0..<3 {
            let members = some(flags.map(\.key), &random, upTo: 4)
            let entries = (0..<Int(random.next() % 3)).map { _ in scope(&random) }
            kills.append(KillSwitch(key: "group_\(group)", members: members, entries: entries))
        }
        // Plugin points over disjoint slices of the switches, each naming one of the groups.
        for (number, start) in stride(from: 0, to: switches.count, by: 4).enumerated() {
            points.append(
                PluginPointDefinition(
                    name: "point_\(number)", killSwitch: "group_\(number % 3)",
                    switches: Array(switches[start..<min(start + 4, switches.count)])))
        }
        if chance(&random, 50) { kills.shuffle(using: &random) }
        return FlagSet(namespace: "differential", pluginPoints: points, killSwitches: kills, flags: flags)
    }

    static func context(_ random: inout SplitMix64) -> EvaluationContext {
        var context = EvaluationContext()
        // Values the flag sets never name among them ("unknown-…"), and attributes missing at times.
        for attribute in ListAttribute.allCases {
            let values = vocabulary(attribute) + ["unknown-\(attribute.name)"]
            let drawn =
                attribute.isMultiValued ? some(values, &random) : chance(&random, 80) ? [pick(values, &random)] : []
            attribute.setValues(drawn, in: &context)
        }
        for attribute in VersionAttribute.allCases {
            context[keyPath: attribute.contextValue] = chance(&random, 80) ? pick(versions, &random) : nil
        }
        return context
    }
}

/// A small deterministic generator, so a failing seed reproduces.
private struct SplitMix64: RandomNumberGenerator {
    var state: UInt64

    init(seed: UInt64) {
        state = seed
    }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
