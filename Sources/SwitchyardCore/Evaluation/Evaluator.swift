/// A context prepared against one compiled snapshot: evaluates flags through handles without string lookups
/// or allocation.
///
/// Preparing interns the context's city, cohorts, platform and unit id and compares its app version with the
/// snapshot's version bounds, once. Prepare again when the context or the snapshot changes.
public struct Evaluator: Sendable {
    public let snapshot: CompiledSnapshot
    public let context: EvaluationContext

    /// -2: the context has no such attribute; -1: it has one the snapshot never mentions.
    let city: Int32
    let platform: Int32
    let unit: Int32
    let hasUnitId: Bool
    let hasCohorts: Bool
    let hasVersion: Bool
    let unitBytes: [UInt8]
    let cohortWords: [UInt64]
    /// Bit i: the context's app version is at or above `versionBounds[i]`.
    let versionAtLeast: [UInt64]

    init(snapshot: CompiledSnapshot, context: EvaluationContext) {
        self.snapshot = snapshot
        self.context = context
        func intern(_ value: String?, _ ids: [String: Int32]) -> Int32 {
            guard let value else { return -2 }
            return ids[value] ?? -1
        }
        city = intern(context.city, snapshot.cityIds)
        platform = intern(context.platform, snapshot.platformIds)
        unit = intern(context.unitId, snapshot.unitIds)
        // An empty unit id is no unit id: hashing "" would put every such unit in one bucket.
        hasUnitId = !(context.unitId ?? "").isEmpty
        unitBytes = Array((context.unitId ?? "").utf8)
        hasCohorts = !context.cohorts.isEmpty
        var cohortWords = [UInt64](repeating: 0, count: (snapshot.cohortIds.count + 63) / 64)
        for cohort in context.cohorts {
            if let id = snapshot.cohortIds[cohort] { cohortWords[Int(id) / 64] |= 1 << UInt64(id % 64) }
        }
        self.cohortWords = cohortWords
        let version = context.appVersion.flatMap(SemanticVersion.init)
        hasVersion = version != nil
        var versionAtLeast = [UInt64](repeating: 0, count: (snapshot.versionBounds.count + 63) / 64)
        if let version {
            for (index, bound) in snapshot.versionBounds.enumerated() where !(version < bound) {
                versionAtLeast[index / 64] |= 1 << UInt64(index % 64)
            }
        }
        self.versionAtLeast = versionAtLeast
    }

    /// Whether a plugin switch is on. Off for unknown flags and experiment flags.
    @inline(__always)
    public func isEnabled(_ handle: FlagHandle) -> Bool {
        evaluate(handle).isOn
    }

    /// Evaluates a flag: a plugin switch by the evaluation table, an experiment flag by its weights.
    public func evaluate(_ handle: FlagHandle) -> Evaluation {
        let records = snapshot.flagRecords
        let index = Int(handle.index)
        guard index >= 0, index < records.count else { return .notFound }
        let flag = records[index]
        return flag.isExperiment ? evaluateExperiment(flag) : evaluateSwitch(flag)
    }

    /// Evaluates a plugin switch; an experiment flag gives `TYPE_MISMATCH`.
    public func evaluateSwitch(_ handle: FlagHandle) -> Evaluation {
        let records = snapshot.flagRecords
        let index = Int(handle.index)
        guard index >= 0, index < records.count else { return .notFound }
        let flag = records[index]
        return flag.isExperiment ? .typeMismatch : evaluateSwitch(flag)
    }

    @inline(__always)
    private func evaluateSwitch(_ flag: FlagRecord) -> Evaluation {
        if flag.killCount > 0, let killed = killEntry(flag) {
            return Evaluation(isOn: false, variantIndex: 0, reason: .disabled, decision: killed)
        }
        if flag.disabled {
            return Evaluation(isOn: false, variantIndex: 0, reason: .disabled, decision: .disabled)
        }
        if flag.disableCount > 0 {
            for offset in 0..<flag.disableCount where matches(snapshot.scopes[Int(flag.disableStart + offset)]) {
                return Evaluation(isOn: false, variantIndex: 0, reason: .disabled, decision: .disabledInScope(offset))
            }
        }
        var rollout = flag.rollout
        var decision = Decision.fallback
        var fixedReason: EvaluationReason = flag.ruleCount == 0 ? .static : .default
        if flag.ruleCount > 0 {
            let rules = snapshot.rules
            for offset in 0..<flag.ruleCount where holds(rules[Int(flag.ruleStart + offset)]) {
                rollout = rules[Int(flag.ruleStart + offset)].rollout
                decision = .rule(offset)
                fixedReason = .targetingMatch
                break
            }
        }
        if rollout == 0 || rollout >= Rollout.maximum {
            let isOn = rollout != 0
            return Evaluation(isOn: isOn, variantIndex: isOn ? 1 : 0, reason: fixedReason, decision: decision)
        }
        guard hasUnitId else {
            return Evaluation(isOn: false, variantIndex: 0, reason: .error, errorCode: .targetingKeyMissing, decision: decision)
        }
        let bucket = Int32(Bucketing.bucket(hash: hash(flag)))
        let isOn = bucket < Int32(rollout)
        return Evaluation(isOn: isOn, variantIndex: isOn ? 1 : 0, reason: .split, decision: decision, bucket: bucket)
    }

    @inline(__always)
    private func evaluateExperiment(_ flag: FlagRecord) -> Evaluation {
        if flag.killCount > 0, let killed = killEntry(flag) {
            return Evaluation(isOn: false, variantIndex: flag.defaultVariant, reason: .disabled, decision: killed)
        }
        var weights = flag.weights
        var decision = Decision.fallback
        if flag.ruleCount > 0 {
            let rules = snapshot.rules
            for offset in 0..<flag.ruleCount where holds(rules[Int(flag.ruleStart + offset)]) {
                weights = rules[Int(flag.ruleStart + offset)].weights
                decision = .rule(offset)
                break
            }
        }
        if weights.single >= 0 {
            return Evaluation(isOn: false, variantIndex: weights.single, reason: .targetingMatch, decision: decision)
        }
        guard hasUnitId else {
            return Evaluation(isOn: false, variantIndex: flag.defaultVariant, reason: .error,
                              errorCode: .targetingKeyMissing, decision: decision)
        }
        let hash = hash(flag)
        let point = Bucketing.weightPoint(hash: hash, totalWeight: weights.total)
        var variant = flag.variantCount - 1
        let cumulative = snapshot.cumulativeWeights
        for offset in 0..<flag.variantCount where cumulative[Int(weights.start + offset)] > point {
            variant = offset
            break
        }
        return Evaluation(isOn: false, variantIndex: variant, reason: .split, decision: decision,
                          bucket: Int32(Bucketing.bucket(hash: hash)))
    }

    @inline(__always)
    private func hash(_ flag: FlagRecord) -> UInt32 {
        var hasher = flag.hasher
        unitBytes.withUnsafeBufferPointer { hasher.combine(contiguous: $0) }
        return hasher.finalize()
    }

    private func killEntry(_ flag: FlagRecord) -> Decision? {
        let refs = snapshot.killRefs
        for offset in 0..<flag.killCount {
            let ref = refs[Int(flag.killStart + offset)]
            if matches(snapshot.scopes[Int(ref.scope)]) {
                return .killed(killSwitch: ref.killSwitch, entry: ref.entry)
            }
        }
        return nil
    }

    // MARK: Conditions

    @inline(__always)
    private func contains(_ set: BitsetRef, _ id: Int32) -> Bool {
        guard id >= 0, id / 64 < set.count else { return false }
        return snapshot.words[Int(set.start + id / 64)] & (1 << UInt64(id % 64)) != 0
    }

    @inline(__always)
    private func intersects(_ set: BitsetRef, _ bits: [UInt64]) -> Bool {
        let words = snapshot.words
        for offset in 0..<min(Int(set.count), bits.count) where words[Int(set.start) + offset] & bits[offset] != 0 {
            return true
        }
        return false
    }

    @inline(__always)
    private func versionIsAtLeast(_ bound: Int32) -> Bool {
        versionAtLeast[Int(bound) / 64] & (1 << UInt64(bound % 64)) != 0
    }

    @inline(__always)
    private func matches(_ scope: ScopeRecord) -> Bool {
        if scope.cities.count > 0 && !contains(scope.cities, city) { return false }
        if scope.cohorts.count > 0 && !(hasCohorts && intersects(scope.cohorts, cohortWords)) { return false }
        return true
    }

    @inline(__always)
    private func holds(_ rule: RuleRecord) -> Bool {
        if rule.cityIn.count > 0 && !contains(rule.cityIn, city) { return false }
        if rule.cityNotIn.count > 0 && (city == -2 || contains(rule.cityNotIn, city)) { return false }
        if rule.cohortIn.count > 0 && !(hasCohorts && intersects(rule.cohortIn, cohortWords)) { return false }
        if rule.cohortNotIn.count > 0 && (!hasCohorts || intersects(rule.cohortNotIn, cohortWords)) { return false }
        if rule.unitIn.count > 0 && !contains(rule.unitIn, unit) { return false }
        if rule.atLeast >= 0 || rule.below >= 0 {
            if !hasVersion { return false }
            if rule.atLeast >= 0 && !versionIsAtLeast(rule.atLeast) { return false }
            if rule.below >= 0 && versionIsAtLeast(rule.below) { return false }
        }
        if rule.platformIn.count > 0 && !contains(rule.platformIn, platform) { return false }
        return true
    }
}
