import SwitchyardCore
import Testing

/// The evaluation cases of `Data/evaluation/*.json`, run against the compiled engine, against the reference
/// semantics of the model, and against a snapshot that went through the snapshot document.
struct EvaluationCaseTests {
    /// Evaluates a case through a compiled snapshot, the way apps and the service do.
    static func compiledOutcome(_ testCase: EvaluationCase, in compiled: CompiledSnapshot) -> (
        Outcome, EvaluationDetails
    ) {
        let evaluator = compiled.evaluator(for: testCase.context)
        guard let handle = compiled.handle(for: testCase.flagKey) else {
            let details = evaluator.details(for: testCase.flagKey)
            let decision: DecisionStep = details.errorCode == .flagNotFound ? .notFound : .fallback
            return (
                Outcome(
                    value: details.value, variant: details.variant, reason: details.reason,
                    errorCode: details.errorCode, decision: decision, bucket: details.bucket), details
            )
        }
        let evaluation = testCase.askedAsSwitch ? evaluator.evaluateSwitch(handle) : evaluator.evaluate(handle)
        let details = evaluator.details(for: handle, evaluation: evaluation)
        let outcome = Outcome(
            value: details.value, variant: details.variant, reason: evaluation.reason,
            errorCode: evaluation.errorCode,
            decision: DecisionStep(evaluation.decision, in: compiled.snapshot.flagSet),
            bucket: evaluation.bucket)
        return (outcome, details)
    }

    @Test(arguments: try EvaluationCase.all())
    func compiledSnapshotGivesTheExpectedOutcome(_ testCase: EvaluationCase) {
        let (outcome, details) = Self.compiledOutcome(testCase, in: testCase.file.compiled)
        #expect(outcome == testCase.expected, "\(testCase.testDescription)")
        #expect(details.reason.openFeatureName == testCase.expected.reason)
        #expect(details.errorCode?.openFeatureName == testCase.expected.errorCode)
        #expect(details.bucket == testCase.expected.bucket)
    }

    @Test(arguments: try EvaluationCase.all())
    func detailsCarryTheDecisionInTheirMetadata(_ testCase: EvaluationCase) {
        let (_, details) = Self.compiledOutcome(testCase, in: testCase.file.compiled)
        let metadata = details.metadata
        switch testCase.expected.decision {
        case .kill(let killSwitch, let entry):
            #expect(metadata["kill_switch"] == .string(killSwitch))
            #expect(metadata["kill_entry"] == .int(entry))
            #expect(details.decidedBy.contains(killSwitch == "master" ? "master kill switch" : "'\(killSwitch)'"))
        case .disabled:
            #expect(metadata["scope"] == .string("everywhere"))
            #expect(details.decidedBy == "disabled everywhere")
        case .disabledScope(let index):
            #expect(metadata["disabled_scope"] == .int(index))
            #expect(details.decidedBy.hasPrefix("disabled in scope \(index)"))
        case .rule(let index):
            #expect(metadata["rule"] == .int(index))
            #expect(details.decidedBy.hasPrefix("rule \(index)"))
        case .fallback:
            #expect(metadata["rule"] == nil && metadata["kill_switch"] == nil)
        case .notFound:
            #expect(details.errorMessage?.contains(testCase.flagKey) == true)
        case .typeMismatch:
            #expect(details.decidedBy.contains("not a plugin switch"))
        }
        #expect(metadata["bucket"] == testCase.expected.bucket.map { .int($0) })
        if testCase.expected.errorCode == "TARGETING_KEY_MISSING" {
            #expect(details.errorMessage?.contains("unit id") == true)
        }
    }

    @Test(arguments: try EvaluationCase.all())
    func referenceSemanticsGiveTheExpectedOutcome(_ testCase: EvaluationCase) {
        let reference = ReferenceEvaluator(flagSet: testCase.file.flagSet)
        let outcome = reference.outcome(
            flagKey: testCase.flagKey, context: testCase.context, askedAsSwitch: testCase.askedAsSwitch)
        #expect(outcome == testCase.expected, "\(testCase.testDescription)")
    }

    @Test(arguments: try EvaluationCase.all())
    func switchesAnswerIsEnabledAndDetailsByKeyAlike(_ testCase: EvaluationCase) throws {
        let compiled = testCase.file.compiled
        let evaluator = compiled.evaluator(for: testCase.context)
        let byKey = evaluator.details(for: testCase.flagKey)
        guard let handle = compiled.handle(for: testCase.flagKey) else {
            #expect(byKey.errorCode == .flagNotFound)
            return
        }
        if !testCase.askedAsSwitch {
            #expect(byKey == evaluator.details(for: handle, evaluation: evaluator.evaluate(handle)))
        }
        if testCase.file.flagSet.flag(testCase.flagKey)?.pluginSwitch != nil {
            #expect(evaluator.isEnabled(handle) == (testCase.expected.value == "true"))
            #expect(evaluator.evaluate(handle) == evaluator.evaluateSwitch(handle))
        } else {
            #expect(!evaluator.isEnabled(handle), "an experiment flag is never an enabled switch")
        }
    }

    /// The snapshot document sorts kill switches and flags by key; decisions must not depend on that order
    /// beyond what the cases pin.
    @Test(arguments: try EvaluationCase.files())
    func casesGiveTheSameOutcomeAfterASnapshotDocumentRoundTrip(_ file: EvaluationFile) throws {
        let snapshot = Snapshot(epoch: "round-trip", version: 7, flagSet: file.flagSet)
        let decoded = try SnapshotDocument.decode(SnapshotDocument.encode(snapshot))
        let compiled = CompiledSnapshot(decoded)
        for testCase in try EvaluationCase.all() where testCase.file === file {
            let (outcome, _) = Self.compiledOutcome(testCase, in: compiled)
            #expect(outcome == testCase.expected, "\(testCase.testDescription)")
        }
    }

    /// Every row of the evaluation table of PRODUCT.md, and every error, has at least one case.
    @Test func casesCoverEveryRowOfTheEvaluationTable() throws {
        let cases = try EvaluationCase.all()
        func isSwitch(_ testCase: EvaluationCase) -> Bool {
            testCase.file.flagSet.flag(testCase.flagKey)?.pluginSwitch != nil
        }
        func isExperiment(_ testCase: EvaluationCase) -> Bool {
            testCase.file.flagSet.flag(testCase.flagKey)?.experiment != nil
        }
        let rows: [(String, (EvaluationCase) -> Bool)] = [
            (
                "master kill entry everywhere",
                {
                    if case .kill("master", _) = $0.expected.decision {
                        isSwitch($0) && $0.file.flagSet.master.entries.contains(where: \.isEverywhere)
                    } else {
                        false
                    }
                }
            ),
            (
                "master kill entry with cities",
                {
                    if case .kill("master", let e) = $0.expected.decision {
                        !$0.file.flagSet.master.entries[e].cities.isEmpty
                    } else {
                        false
                    }
                }
            ),
            (
                "master kill entry with cohorts",
                {
                    if case .kill("master", let e) = $0.expected.decision {
                        !$0.file.flagSet.master.entries[e].cohorts.isEmpty
                    } else {
                        false
                    }
                }
            ),
            (
                "kill entry with cities and cohorts",
                {
                    if case .kill(let k, let e) = $0.expected.decision {
                        $0.file.flagSet.killSwitch(k).map {
                            !$0.entries[e].cities.isEmpty && !$0.entries[e].cohorts.isEmpty
                        } ?? false
                    } else {
                        false
                    }
                }
            ),
            (
                "group kill through a plugin point",
                { if case .kill("kill_feed", _) = $0.expected.decision { true } else { false } }
            ),
            (
                "group kill through members",
                { if case .kill("kill_promos", _) = $0.expected.decision { true } else { false } }
            ),
            ("disabled everywhere", { $0.expected.decision == .disabled }),
            ("scoped disable", { if case .disabledScope = $0.expected.decision { true } else { false } }),
            (
                "rule at 0",
                {
                    if case .rule = $0.expected.decision {
                        isSwitch($0) && $0.expected.reason == "TARGETING_MATCH" && $0.expected.value == "false"
                    } else {
                        false
                    }
                }
            ),
            (
                "rule at 10000",
                {
                    if case .rule = $0.expected.decision {
                        isSwitch($0) && $0.expected.reason == "TARGETING_MATCH" && $0.expected.value == "true"
                    } else {
                        false
                    }
                }
            ),
            (
                "partial rule, bucket hits",
                {
                    if case .rule = $0.expected.decision {
                        isSwitch($0) && $0.expected.reason == "SPLIT" && $0.expected.value == "true"
                    } else {
                        false
                    }
                }
            ),
            (
                "partial rule, bucket misses (no fall-through)",
                {
                    if case .rule = $0.expected.decision {
                        isSwitch($0) && $0.expected.reason == "SPLIT" && $0.expected.value == "false"
                    } else {
                        false
                    }
                }
            ),
            ("default 0 with rules: DEFAULT", { $0.expected.reason == "DEFAULT" && $0.expected.value == "false" }),
            ("default 10000 with rules: DEFAULT", { $0.expected.reason == "DEFAULT" && $0.expected.value == "true" }),
            ("default 0 without rules: STATIC", { $0.expected.reason == "STATIC" && $0.expected.value == "false" }),
            ("default 10000 without rules: STATIC", { $0.expected.reason == "STATIC" && $0.expected.value == "true" }),
            (
                "partial default, on",
                {
                    $0.expected.decision == .fallback && isSwitch($0) && $0.expected.reason == "SPLIT"
                        && $0.expected.value == "true"
                }
            ),
            (
                "partial default, off",
                {
                    $0.expected.decision == .fallback && isSwitch($0) && $0.expected.reason == "SPLIT"
                        && $0.expected.value == "false"
                }
            ),
            (
                "TARGETING_KEY_MISSING from a rule",
                {
                    if case .rule = $0.expected.decision {
                        $0.expected.errorCode == "TARGETING_KEY_MISSING"
                    } else {
                        false
                    }
                }
            ),
            (
                "TARGETING_KEY_MISSING from the default",
                { $0.expected.decision == .fallback && $0.expected.errorCode == "TARGETING_KEY_MISSING" }
            ),
            ("FLAG_NOT_FOUND", { $0.expected.errorCode == "FLAG_NOT_FOUND" }),
            ("TYPE_MISMATCH", { $0.expected.errorCode == "TYPE_MISMATCH" }),
            ("killed experiment: default variant", { isExperiment($0) && $0.expected.reason == "DISABLED" }),
            ("experiment, single weighted variant", { isExperiment($0) && $0.expected.reason == "TARGETING_MATCH" }),
            (
                "experiment, flag weights",
                { isExperiment($0) && $0.expected.reason == "SPLIT" && $0.expected.decision == .fallback }
            ),
            (
                "experiment, rule weights",
                {
                    if case .rule = $0.expected.decision {
                        isExperiment($0) && $0.expected.reason == "SPLIT"
                    } else {
                        false
                    }
                }
            ),
            (
                "rollout boundary r - 1",
                {
                    $0.expected.bucket.map { $0 + 1 }
                        == $0.file.flagSet.flag($0.flagKey)?.pluginSwitch?.rollout.basisPoints.asInt
                }
            ),
            (
                "rollout boundary r",
                { $0.expected.bucket == $0.file.flagSet.flag($0.flagKey)?.pluginSwitch?.rollout.basisPoints.asInt }
            ),
        ]
        for (row, isCovered) in rows {
            #expect(cases.contains(where: isCovered), "no evaluation case covers: \(row)")
        }
    }
}

extension UInt16 {
    var asInt: Int { Int(self) }
}
