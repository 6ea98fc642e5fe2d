import SwitchyardCore
import Testing

/// Buckets and variant picks against vectors computed with Python's mmh3 and the formulas of PRODUCT.md.
struct BucketingTests {
    @Test(arguments: try BucketVector.all())
    func hashAndBucketMatchPython(_ vector: BucketVector) {
        #expect(Bucketing.hash(flagKey: vector.flagKey, unitId: vector.unitId) == vector.hash)
        #expect(Bucketing.bucket(hash: vector.hash) == vector.bucket)
        #expect(Bucketing.bucket(flagKey: vector.flagKey, unitId: vector.unitId) == vector.bucket)
    }

    @Test func bucketArithmeticHoldsAtItsEdges() throws {
        for (hash, bucket) in try BucketVector.formula() {
            #expect(Bucketing.bucket(hash: hash) == bucket, "hash \(hash)")
        }
        #expect(Bucketing.bucket(hash: .max) == 9_999)
        #expect(Bucketing.bucket(hash: 0) == 0)
    }

    /// The compiled snapshot hashes the flag key once and continues with the unit id; it must agree.
    @Test func compiledSnapshotComputesThePythonBuckets() throws {
        let vectors = try BucketVector.all()
        let keys = Array(Set(vectors.map(\.flagKey)))
        let flagSet = FlagSet(
            namespace: "vectors",
            flags: keys.map {
                FlagDefinition(
                    key: $0, kind: .pluginSwitch(PluginSwitchDefinition(rollout: Rollout(basisPoints: 5_000)!)))
            })
        let compiled = CompiledSnapshot(Snapshot(epoch: "e", version: 1, flagSet: flagSet))
        for vector in vectors {
            let evaluation = compiled.evaluator(for: EvaluationContext(unitId: vector.unitId)).evaluate(
                compiled.handle(for: vector.flagKey)!)
            if vector.unitId.isEmpty {
                #expect(evaluation.errorCode == .targetingKeyMissing, "an empty unit id is no unit id")
            } else {
                #expect(evaluation.bucket == vector.bucket, "\(vector.testDescription)")
                #expect(evaluation.isOn == (vector.bucket < 5_000))
            }
        }
    }

    @Test func weightPointsMatchPython() throws {
        for vector in try VariantVector.all() {
            let total = vector.weights.reduce(UInt64(0)) { $0 + UInt64($1.weight) }
            #expect(Bucketing.weightPoint(hash: vector.hash, totalWeight: total) == vector.point)
            #expect(Bucketing.hash(flagKey: vector.flagKey, unitId: vector.unitId) == vector.hash)
        }
    }

    /// Each weight set of the vectors becomes an experiment; the compiled snapshot picks Python's variant.
    @Test func compiledExperimentsPickThePythonVariants() throws {
        let vectors = try VariantVector.all()
        var weightSets: [[String]] = []
        for vector in vectors where !weightSets.contains(vector.weights.map { "\($0.key)=\($0.weight)" }) {
            weightSets.append(vector.weights.map { "\($0.key)=\($0.weight)" })
        }
        #expect(weightSets.count >= 5)
        for vector in vectors where !vector.unitId.isEmpty {
            let experiment = Experiment(
                valueType: .string, variants: vector.weights.map { Variant(key: $0.key, value: .string($0.key)) },
                defaultVariant: vector.weights[0].key,
                weights: Dictionary(uniqueKeysWithValues: vector.weights.map { ($0.key, $0.weight) }))
            let flagSet = FlagSet(
                namespace: "variants", flags: [FlagDefinition(key: vector.flagKey, kind: .experiment(experiment))])
            let compiled = CompiledSnapshot(Snapshot(epoch: "e", version: 1, flagSet: flagSet))
            let details = compiled.evaluator(for: EvaluationContext(unitId: vector.unitId)).details(for: vector.flagKey)
            #expect(details.variant == vector.variant, "\(vector.unitId.debugDescription) with \(vector.weights)")
            #expect(details.reason == .split)
            #expect(details.bucket == Bucketing.bucket(hash: vector.hash))
        }
    }

    /// The worked examples of docs/evaluation.md.
    @Test func workedExamplesOfTheDocumentationHold() throws {
        #expect(Bucketing.hash(flagKey: "plugin_switch_feed_promos", unitId: "rider-42") == 0xE762_D569)
        #expect(Bucketing.bucket(flagKey: "plugin_switch_feed_promos", unitId: "rider-42") == 9_038)
        #expect(Bucketing.bucket(flagKey: "plugin_switch_feed_promos", unitId: "rider-43") == 1_922)
        #expect(Bucketing.bucket(flagKey: "plugin_switch_rollout_110", unitId: "rider-8300") == 109)
        #expect(Bucketing.bucket(flagKey: "plugin_switch_rollout_110", unitId: "rider-1083") == 110)
        let colors = Experiment(
            valueType: .string, variants: ["green", "blue", "red"].map { Variant(key: $0, value: .string($0)) },
            defaultVariant: "green", weights: ["green": 34, "blue": 33, "red": 33])
        let compiled = CompiledSnapshot(
            Snapshot(
                epoch: "e", version: 1,
                flagSet: FlagSet(
                    namespace: "docs", flags: [FlagDefinition(key: "checkout_button_color", kind: .experiment(colors))])
            ))
        #expect(
            Bucketing.weightPoint(
                hash: Bucketing.hash(flagKey: "checkout_button_color", unitId: "unit-d1212a8d9b"), totalWeight: 100)
                == 90)
        #expect(
            compiled.evaluator(for: EvaluationContext(unitId: "unit-d1212a8d9b")).details(for: "checkout_button_color")
                .variant == "red")
        #expect(
            compiled.evaluator(for: EvaluationContext(unitId: "rider-42")).details(for: "checkout_button_color").variant
                == "green")
    }

    /// PRODUCT.md: concatenation with no separator, so a key and unit split differently hash alike.
    @Test func theHashCoversThePlainConcatenation() {
        #expect(
            Bucketing.hash(flagKey: "plugin_switch_ab", unitId: "c")
                == Bucketing.hash(flagKey: "plugin_switch_a", unitId: "bc"))
        #expect(
            Bucketing.hash(flagKey: "k", unitId: "caf\u{E9}") != Bucketing.hash(flagKey: "k", unitId: "cafe\u{301}"),
            "no Unicode normalisation: composed and decomposed forms are different units")
    }
}
