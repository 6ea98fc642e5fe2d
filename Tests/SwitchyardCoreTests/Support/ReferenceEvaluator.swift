import SwitchyardCore

/// The evaluation table of PRODUCT.md written the straightforward way, over the model: the compiled engine is
/// checked against it. It uses `Scope.matches` and `Conditions.hold(for:)` (the model's reference semantics)
/// and hashes with the one-shot `Murmur3Hasher.hash` over the concatenated key, never the compiled state.
struct ReferenceEvaluator {
    let flagSet: FlagSet

    func outcome(flagKey: String, context: EvaluationContext, askedAsSwitch: Bool = false) -> Outcome {
        guard let flag = flagSet.flag(flagKey) else {
            return Outcome(
                value: .boolean(false), variant: "off", reason: .error, errorCode: .flagNotFound,
                decision: .notFound, bucket: nil)
        }
        if askedAsSwitch && flag.experiment != nil {
            return Outcome(
                value: .boolean(false), variant: "off", reason: .error, errorCode: .typeMismatch,
                decision: .typeMismatch, bucket: nil)
        }
        switch flag.kind {
        case .pluginSwitch(let gate): return switchOutcome(flag.key, gate, context)
        case .experiment(let experiment): return experimentOutcome(flag.key, experiment, context)
        }
    }

    /// The first kill entry covering the flag that matches: the master's entries first, then each group's, in
    /// the order of the flag set.
    func killingEntry(of flagKey: String, for context: EvaluationContext) -> DecisionStep? {
        let covering = Set(flagSet.killSwitchKeys(covering: flagKey))
        let ordered = flagSet.killSwitches.filter(\.isMaster) + flagSet.killSwitches.filter { !$0.isMaster }
        for kill in ordered where covering.contains(kill.key) {
            if let entry = kill.entries.firstIndex(where: { $0.matches(context) }) {
                return .kill(killSwitch: kill.key, entry: entry)
            }
        }
        return nil
    }

    private func switchOutcome(_ key: String, _ gate: PluginSwitchDefinition, _ context: EvaluationContext) -> Outcome {
        func off(_ reason: EvaluationReason, _ decision: DecisionStep, error: EvaluationErrorCode? = nil) -> Outcome {
            Outcome(
                value: .boolean(false), variant: "off", reason: reason, errorCode: error, decision: decision,
                bucket: nil)
        }
        if let killed = killingEntry(of: key, for: context) { return off(.disabled, killed) }
        if gate.disabled { return off(.disabled, .disabled) }
        if let scope = gate.disabledScopes.firstIndex(where: { $0.matches(context) }) {
            return off(.disabled, .disabledScope(scope))
        }

        let rollout: Rollout
        let decision: DecisionStep
        let fixedReason: EvaluationReason
        if let index = gate.rules.firstIndex(where: { $0.conditions.hold(for: context) }) {
            (rollout, decision, fixedReason) = (gate.rules[index].rollout, .rule(index), .targetingMatch)
        } else {
            (rollout, decision, fixedReason) = (gate.rollout, .fallback, gate.rules.isEmpty ? .static : .default)
        }
        switch rollout.basisPoints {
        case 0: return off(fixedReason, decision)
        case 10_000:
            return Outcome(
                value: .boolean(true), variant: "on", reason: fixedReason, errorCode: nil, decision: decision,
                bucket: nil)
        default:
            guard let unit = context.unitId, !unit.isEmpty else {
                return off(.error, decision, error: .targetingKeyMissing)
            }
            let bucket = Self.bucket(Self.hash(key, unit))
            let isOn = bucket < Int(rollout.basisPoints)
            return Outcome(
                value: .boolean(isOn), variant: isOn ? "on" : "off", reason: .split, errorCode: nil,
                decision: decision, bucket: bucket)
        }
    }

    private func experimentOutcome(_ key: String, _ experiment: Experiment, _ context: EvaluationContext) -> Outcome {
        let fallbackVariant = experiment.variant(experiment.defaultVariant) ?? experiment.variants[0]
        func serve(
            _ variant: Variant, _ reason: EvaluationReason, _ decision: DecisionStep,
            error: EvaluationErrorCode? = nil, bucket: Int? = nil
        ) -> Outcome {
            Outcome(
                value: variant.value, variant: variant.key, reason: reason, errorCode: error, decision: decision,
                bucket: bucket)
        }
        if let killed = killingEntry(of: key, for: context) { return serve(fallbackVariant, .disabled, killed) }
        let weights: VariantWeights
        let decision: DecisionStep
        if let index = experiment.rules.firstIndex(where: { $0.conditions.hold(for: context) }) {
            (weights, decision) = (experiment.rules[index].weights, .rule(index))
        } else {
            (weights, decision) = (experiment.weights, .fallback)
        }
        let weighted = experiment.variants.filter { (weights[$0.key] ?? 0) > 0 }
        if weighted.count == 1 { return serve(weighted[0], .targetingMatch, decision) }
        guard let unit = context.unitId, !unit.isEmpty else {
            return serve(fallbackVariant, .error, decision, error: .targetingKeyMissing)
        }
        let hash = Self.hash(key, unit)
        let total = experiment.variants.reduce(UInt64(0)) { $0 + UInt64(weights[$1.key] ?? 0) }
        let point = (UInt64(hash) * total) >> 32
        var cumulative: UInt64 = 0
        for variant in experiment.variants {
            cumulative += UInt64(weights[variant.key] ?? 0)
            if cumulative > point { return serve(variant, .split, decision, bucket: Self.bucket(hash)) }
        }
        fatalError("weights of '\(key)' add up to \(total) and picked nothing for point \(point)")
    }

    /// murmur3_x86_32 (seed 0) of the UTF-8 bytes of `flagKey + unitId`.
    static func hash(_ flagKey: String, _ unitId: String) -> UInt32 {
        Murmur3Hasher.hash(Array((flagKey + unitId).utf8))
    }

    /// `(UInt64(h) * 10000) >> 32`.
    static func bucket(_ hash: UInt32) -> Int {
        Int((UInt64(hash) * 10_000) >> 32)
    }
}
