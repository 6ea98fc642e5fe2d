import SwitchyardCore
import TestSupport
import Testing

/// Properties of evaluation over many seeded random units, contexts and flag sets.
struct EvaluationPropertyTests {
    static func snapshot(_ flags: [FlagDefinition], kills: [KillSwitch] = []) -> CompiledSnapshot {
        CompiledSnapshot(
            Snapshot(epoch: "e", version: 1, flagSet: FlagSet(namespace: "p", killSwitches: kills, flags: flags)))
    }

    static func units(_ count: Int, seed: UInt64) -> [String] {
        var generator = SeededGenerator(seed: seed)
        return (0..<count).map { _ in "rider-\(String(generator.next(), radix: 36))" }
    }

    /// For each unit, walking up the rollouts, once on it stays on: raising a rollout only adds units.
    @Test(arguments: [false, true])
    func raisingAPercentageNeverTurnsAUnitOff(throughARule: Bool) async {
        await onOwnThread {
            let rollouts = [0, 1, 7, 50, 110, 999, 1_000, 2_500, 3_333, 5_000, 7_500, 9_998, 9_999, 10_000]
            let key = "plugin_switch_feed_promos"
            let snapshots = rollouts.map { basisPoints in
                let rollout = Rollout(basisPoints: basisPoints)!
                let gate =
                    throughARule
                    ? PluginSwitchDefinition(
                        rules: [SwitchRule(conditions: Conditions(cities: ["lagos"]), rollout: rollout)], rollout: .off)
                    : PluginSwitchDefinition(rollout: rollout)
                return Self.snapshot([FlagDefinition(key: key, kind: .pluginSwitch(gate))])
            }
            let handles = snapshots.map { $0.handle(for: key)! }
            var onCounts = [Int](repeating: 0, count: rollouts.count)
            for unit in Self.units(5_000, seed: 1) {
                var wasOn = false
                for (index, compiled) in snapshots.enumerated() {
                    let isOn = compiled.evaluator(for: EvaluationContext(unitId: unit, city: "lagos")).isEnabled(
                        handles[index])
                    if wasOn && !isOn {
                        Issue.record("\(unit) was on at \(rollouts[index - 1]) and off at \(rollouts[index])")
                    }
                    wasOn = isOn
                    if isOn { onCounts[index] += 1 }
                }
            }
            #expect(onCounts.first == 0 && onCounts.last == 5_000)
            #expect(onCounts == onCounts.sorted())
        }
    }

    /// Over 100,000 units the share that is on lies within 1 point of the rollout. The share of a fair split
    /// has a standard deviation of at most sqrt(0.25 / 100000) ≈ 0.16 points, so 1 point is more than 6 sigma.
    @Test func shareOfUnitsOnIsWithinOnePointOfThePercentage() async {
        await onOwnThread {
            let rollouts = [7, 110, 500, 1_234, 3_333, 5_000, 9_000, 9_999]
            let flags = rollouts.map { basisPoints in
                FlagDefinition(
                    key: "plugin_switch_share_\(basisPoints)",
                    kind: .pluginSwitch(PluginSwitchDefinition(rollout: Rollout(basisPoints: basisPoints)!)))
            }
            let compiled = Self.snapshot(flags)
            let handles = flags.map { compiled.handle(for: $0.key)! }
            let units = Self.units(100_000, seed: 2)
            var onCounts = [Int](repeating: 0, count: rollouts.count)
            for unit in units {
                let evaluator = compiled.evaluator(for: EvaluationContext(unitId: unit))
                for (index, handle) in handles.enumerated() where evaluator.isEnabled(handle) { onCounts[index] += 1 }
            }
            for (index, basisPoints) in rollouts.enumerated() {
                let sharePercent = Double(onCounts[index]) * 100 / Double(units.count)
                let expectedPercent = Double(basisPoints) / 100
                #expect(
                    abs(sharePercent - expectedPercent) <= 1,
                    "rollout \(expectedPercent) %: \(sharePercent) % of units on")
            }
        }
    }

    /// Variant shares follow the weights. With 40,000 units the standard deviation of a share is at most
    /// sqrt(0.25 / 40000) = 0.0025, so a tolerance of 0.015 is 6 sigma: a correct pick passes for any seed (the
    /// seed is fixed anyway), while a pick that ignored a weight, or cumulated weights in another order, would miss
    /// by a whole variant's share.
    @Test(arguments: [[1, 1], [1, 2, 7], [50, 25, 25], [0, 3, 0, 1], [9_999, 1], [1_000_000, 1_000_000, 1]])
    func variantSharesFollowTheWeights(_ weights: [Int]) async {
        await onOwnThread {
            let variants = weights.indices.map { Variant(key: "v\($0)", value: .integer(Int64($0))) }
            let experiment = Experiment(
                valueType: .integer, variants: variants, defaultVariant: "v0",
                weights: Dictionary(uniqueKeysWithValues: weights.enumerated().map { ("v\($0)", UInt32($1)) }))
            let compiled = Self.snapshot([FlagDefinition(key: "checkout_button_color", kind: .experiment(experiment))])
            let handle = compiled.handle(for: "checkout_button_color")!
            let units = Self.units(40_000, seed: 3)
            var counts = [Int](repeating: 0, count: weights.count)
            for unit in units {
                let evaluation = compiled.evaluator(for: EvaluationContext(unitId: unit)).evaluate(handle)
                counts[Int(evaluation.variantIndex)] += 1
            }
            let total = Double(weights.reduce(0, +))
            for (index, weight) in weights.enumerated() {
                let share = Double(counts[index]) / Double(units.count)
                #expect(
                    abs(share - Double(weight) / total) <= 0.015,
                    "variant \(index) weight \(weight)/\(Int(total)): share \(share)")
                if weight == 0 { #expect(counts[index] == 0, "a variant of weight 0 is never served") }
            }
        }
    }

    /// A master kill entry that applies everywhere turns every plugin switch off, and every experiment to its
    /// default variant, in every context, whatever the switches' rules, rollouts and disables say.
    @Test(arguments: 0..<8)
    func killedMasterTurnsEveryPluginSwitchOffInEveryContext(seed: Int) async {
        await onOwnThread {
            var random = RandomFlagSets(seed: UInt64(seed) + 100)
            var flagSet = random.flagSet(switches: 16, experiments: 4)
            let masterIndex = flagSet.killSwitches.firstIndex(where: \.isMaster)!
            flagSet.killSwitches[masterIndex].entries.append(.everywhere)
            let compiled = CompiledSnapshot(Snapshot(epoch: "e", version: 1, flagSet: flagSet))
            for _ in 0..<300 {
                let context = random.context()
                let evaluator = compiled.evaluator(for: context)
                for (index, flag) in flagSet.flags.enumerated() {
                    let handle = compiled.handle(for: flag.key)!
                    let evaluation = evaluator.evaluate(handle)
                    #expect(!evaluator.isEnabled(handle), "\(flag.key) is on in \(context)")
                    #expect(evaluation.reason == .disabled && evaluation.errorCode == nil)
                    guard case .killed(let kill, _) = evaluation.decision, kill == Int32(masterIndex) else {
                        Issue.record("\(flag.key) was decided by \(evaluation.decision), not the master")
                        continue
                    }
                    if let experiment = flag.experiment {
                        let served = evaluator.details(for: handle, evaluation: evaluation).variant
                        #expect(served == experiment.defaultVariant, "flag \(index)")
                    }
                }
            }
        }
    }

    /// The compiled engine agrees with the reference semantics of the model on random flag sets and contexts:
    /// value, variant, reason, error code, decision and bucket.
    @Test(arguments: 0..<8)
    func compiledEngineAgreesWithTheReferenceOnRandomFlagSets(seed: Int) async {
        await onOwnThread {
            var random = RandomFlagSets(seed: UInt64(seed))
            let flagSet = random.flagSet()
            let compiled = CompiledSnapshot(Snapshot(epoch: "e", version: 1, flagSet: flagSet))
            let reference = ReferenceEvaluator(flagSet: flagSet)
            var disagreements = 0
            for _ in 0..<200 {
                let context = random.context()
                let evaluator = compiled.evaluator(for: context)
                for flag in flagSet.flags {
                    for askedAsSwitch in flag.experiment == nil ? [false] : [false, true] {
                        let handle = compiled.handle(for: flag.key)!
                        let evaluation = askedAsSwitch ? evaluator.evaluateSwitch(handle) : evaluator.evaluate(handle)
                        let details = evaluator.details(for: handle, evaluation: evaluation)
                        let actual = Outcome(
                            value: details.value, variant: details.variant, reason: evaluation.reason,
                            errorCode: evaluation.errorCode,
                            decision: DecisionStep(evaluation.decision, in: flagSet), bucket: evaluation.bucket)
                        let expected = reference.outcome(
                            flagKey: flag.key, context: context, askedAsSwitch: askedAsSwitch)
                        if actual != expected && disagreements < 5 {
                            disagreements += 1
                            Issue.record(
                                "seed \(seed), \(flag.key)\(askedAsSwitch ? " as a switch" : "") in \(context): compiled \(actual), reference \(expected)"
                            )
                        }
                    }
                }
            }
        }
    }

    /// The random generator exercises every step of the table, so the agreement above means something.
    @Test func randomFlagSetsReachEveryStepOfTheTable() async {
        await onOwnThread {
            var reached = Set<String>()
            for seed in 0..<8 {
                var random = RandomFlagSets(seed: UInt64(seed))
                let flagSet = random.flagSet()
                let reference = ReferenceEvaluator(flagSet: flagSet)
                for _ in 0..<100 {
                    let context = random.context()
                    for flag in flagSet.flags {
                        let outcome = reference.outcome(flagKey: flag.key, context: context)
                        let step =
                            switch outcome.decision {
                            case .kill(let key, _): key == "master" ? "master kill" : "group kill"
                            case .disabled: "disabled"
                            case .disabledScope: "disabled scope"
                            case .rule: "rule"
                            case .fallback: "fallback"
                            case .notFound: "not found"
                            case .typeMismatch: "type mismatch"
                            }
                        reached.insert("\(step) \(outcome.reason)")
                    }
                }
            }
            let wanted = [
                "master kill DISABLED", "group kill DISABLED", "disabled DISABLED", "disabled scope DISABLED",
                "rule TARGETING_MATCH", "rule SPLIT", "rule ERROR", "fallback DEFAULT", "fallback STATIC",
                "fallback SPLIT", "fallback ERROR", "fallback TARGETING_MATCH",
            ]
            #expect(
                Set(wanted).subtracting(reached).isEmpty, "not reached: \(Set(wanted).subtracting(reached).sorted())")
        }
    }
}
