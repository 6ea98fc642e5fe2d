import Foundation
import SwitchyardCore
import SwitchyardGuard
import TestSupport
import Testing

/// The guardrail rule's error rates by simulation, through `GuardrailCheck` at every look: small seeded scenarios
/// here; the figures of docs/release-statistics.md ("Guardrail metrics") through `printTheFigures`
/// (bench/experiment-statistics.sh guardrails).
struct GuardrailSimulationTests {
    static func runs(_ scenario: GuardrailSimulation.Scenario, seeds count: UInt64) async -> GuardrailSimulation.Summary
    {
        await onOwnThread {
            GuardrailSimulation.Summary((1...count).map { GuardrailSimulation.run(scenario, seed: $0) })
        }
    }

    /// 200 new units a minute at 50 %, a 20 % conversion, a −3 point margin, a day at most.
    static var small: GuardrailSimulation.Scenario {
        var scenario = GuardrailSimulation.Scenario()
        scenario.unitsPerMinute = 200
        scenario.margin = -0.03
        scenario.hours = 24
        return scenario
    }

    @Test func aSwitchAtItsMarginIsRarelyLetThroughThoughTheRunnerLooksEveryMinute() async {
        var atMargin = Self.small
        atMargin.effect = atMargin.margin
        let sequence = await Self.runs(atMargin, seeds: 60)
        // Nominal 2.5 %: 1.5 of 60 expected; the fixed-horizon rule read as often lets through many more.
        #expect(sequence.passed.count <= 4, "\(sequence.passed)")
        atMargin.fixedHorizon = true
        let fixed = await Self.runs(atMargin, seeds: 60)
        #expect(
            fixed.passed.count > sequence.passed.count, "fixed horizon \(fixed.passed), sequence \(sequence.passed)")
    }

    @Test func aHarmlessSwitchPassesAndAHarmfulOneIsRolledBack() async {
        var harmless = Self.small
        harmless.effect = 0
        let passed = await Self.runs(harmless, seeds: 20)
        #expect(passed.passed.count == 20 && passed.rolledBack.count == 0, "\(passed)")
        var harmful = Self.small
        harmful.effect = -0.06
        let rolledBack = await Self.runs(harmful, seeds: 20)
        #expect(rolledBack.rolledBack.count == 20, "\(rolledBack)")
    }

    // MARK: The figures (bench/experiment-statistics.sh guardrails)

    static var figureRuns: UInt64? {
        ProcessInfo.processInfo.environment["SWITCHYARD_GUARDRAIL_FIGURES"].flatMap { UInt64($0) }.flatMap {
            $0 > 0 ? $0 : nil
        }
    }

    @Test(
        .enabled(if: figureRuns != nil, "bench/experiment-statistics.sh guardrails sets SWITCHYARD_GUARDRAIL_FIGURES"))
    func printTheFigures() async throws {
        let runs = try #require(Self.figureRuns)
        let base = GuardrailSimulation.Scenario()
        print(
            """
            Guardrail scenario: \(Int(base.unitsPerMinute)) new units a minute at \(Int(base.share * 100)) % with the switch, \
            conversion \(Int(base.baseRate * 100)) %, margin \(base.margin * 100) points, soak \(base.soakMinutes) minutes, \
            a look every minute with new units, \(base.hours) hours at most; confidence \(base.criteria.confidence), \
            roll-back confidence \(base.criteria.rollbackConfidence), N* \(base.criteria.plannedSessions) units; \(runs) seeded runs per row.
            """)
        print(
            "| switch's true effect | rule | advanced | rolled back | median minutes to advance | median minutes to roll back |"
        )
        print("|---|---|---:|---:|---:|---:|")
        for (title, effect) in [
            ("at the margin (−1 point)", base.margin), ("harmless (0)", 0.0),
            ("half the margin (−0.5 point)", base.margin / 2),
            ("twice the margin (−2 points)", base.margin * 2), ("five points worse", -0.05),
        ] {
            for fixed in [false, true] {
                var scenario = base
                scenario.effect = effect
                scenario.fixedHorizon = fixed
                let summary = await Self.runs(scenario, seeds: runs)
                print(
                    "| \(title) | \(fixed ? "fixed-horizon z, same looks" : "confidence sequence") | \(summary.passed) | \(summary.rolledBack) | "
                        + "\(summary.medianMinutesToPass.map(String.init) ?? "–") | \(summary.medianMinutesToRollBack.map(String.init) ?? "–") |"
                )
            }
        }
    }
}
