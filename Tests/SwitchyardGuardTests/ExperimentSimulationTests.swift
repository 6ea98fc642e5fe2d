import Foundation
import SwitchyardGuard
import TestSupport
import Testing

/// Seeded experiments looked at often, through the analysis a results page uses: the confidence sequence keeps
/// its promise under peeking where the fixed-horizon interval does not, a real effect is found, a broken split is
/// caught. The runs are small here (a few seconds in debug); `bench/experiment-statistics.sh` runs the full figures
/// (A/A looked at every minute for 14 days) through `printTheFigures` below.
struct ExperimentSimulationTests {
    /// Runs seeds 1...count of a scenario off the cooperative pool.
    static func runs(_ scenario: ExperimentSimulation.Scenario, seeds count: UInt64) async -> [ExperimentSimulation
        .Outcome]
    {
        await onOwnThread { (1...count).map { ExperimentSimulation.run(scenario, seed: $0) } }
    }

    /// 500 units a day per arm for 3 days, looked at every 5 minutes (864 looks).
    static var small: ExperimentSimulation.Scenario {
        var scenario = ExperimentSimulation.Scenario()
        scenario.unitsPerDay = 1_000
        scenario.days = 3
        scenario.lookEveryMinutes = 5
        return scenario
    }

    @Test func theSameSeedGivesTheSameRun() async {
        let (first, second, other) = await onOwnThread {
            (
                ExperimentSimulation.run(Self.small, seed: 42), ExperimentSimulation.run(Self.small, seed: 42),
                ExperimentSimulation.run(Self.small, seed: 43)
            )
        }
        #expect(first == second)
        #expect(first.controlUnits + first.treatmentUnits > 2_500)
        #expect(first.controlUnits != other.controlUnits || first.value.final != other.value.final)
    }

    @Test func underAAPeekingTheSequenceKeepsItsErrorRateAndTheFixedIntervalDoesNot() async throws {
        let summary = ExperimentSimulation.Summary(await Self.runs(Self.small, seeds: 40))
        let conversion = try #require(summary.conversion.missedTruth)
        let value = try #require(summary.value.missedTruth)
        let naiveConversion = try #require(summary.conversion.naiveMissedTruth)
        let naiveValue = try #require(summary.value.naiveMissedTruth)
        // At least 1 − α of the runs: the interval held 0 at every one of 864 looks.
        #expect(conversion.count <= 2, "\(conversion)")
        #expect(value.count <= 2, "\(value)")
        // The same looks at the fixed-horizon 95 % interval: many more runs wrongly "significant" at some look.
        #expect(naiveConversion.count >= 8, "\(naiveConversion)")
        #expect(naiveValue.count >= 8, "\(naiveValue)")
        #expect(summary.sampleRatioAlarms.count == 0)
        // CUPED applied to the value metric, whose pre-entry value predicts it.
        #expect((summary.value.medianVarianceReduction ?? 0) > 0.2)
        #expect(summary.conversion.medianVarianceReduction == nil)
    }

    @Test func aLargeEffectIsDecidedInTheRightDirection() async {
        var scenario = Self.small
        scenario.conversionLift = 0.5  // 10 % → 15 %
        let summary = ExperimentSimulation.Summary(await Self.runs(scenario, seeds: 10))
        #expect(summary.conversion.decidedHigher.count >= 9, "\(summary.conversion.decidedHigher)")
        #expect(summary.conversion.decidedLower.count == 0)
        #expect((summary.conversion.medianDaysToDecideHigher ?? 99) < 3)
    }

    @Test func aSplitThatLosesTreatmentUnitsFailsTheSampleRatioCheck() async {
        var scenario = Self.small
        scenario.treatmentShare = 0.40
        let outcomes = await Self.runs(scenario, seeds: 10)
        #expect(
            outcomes.allSatisfy { $0.firstSampleRatioAlarmMinute != nil },
            "\(outcomes.map { ($0.controlUnits, $0.treatmentUnits, $0.firstSampleRatioAlarmMinute) })")
    }

    // MARK: The figures (bench/experiment-statistics.sh)

    /// The run count the bench asked for (`SWITCHYARD_EXPERIMENT_FIGURES=400`), nil in ordinary test runs.
    static var figureRuns: UInt64? {
        ProcessInfo.processInfo.environment["SWITCHYARD_EXPERIMENT_FIGURES"].flatMap { UInt64($0) }.flatMap {
            $0 > 0 ? $0 : nil
        }
    }

    @Test(.enabled(if: figureRuns != nil, "bench/experiment-statistics.sh sets SWITCHYARD_EXPERIMENT_FIGURES"))
    func printTheFigures() async throws {
        let runs = try #require(Self.figureRuns)
        let aa = ExperimentSimulation.Scenario()
        print(
            """
            Scenario: \(Int(aa.unitsPerDay / 2)) units a day per arm (50/50), \(aa.days) days, a look every \
            \(aa.lookEveryMinutes) minute (\(aa.looks) looks); conversion \(Int(aa.conversionRate * 100)) %; value: \
            median \(aa.valueScale), log spread \(aa.valueSpread), period noise \(aa.valueNoise), cap \(aa.valueCap); \
            α = \(aa.alpha) two-sided, N* = \(aa.plannedUnits); SRM threshold p < 0.001; \(runs) seeded runs per scenario.
            """)
        let aaSummary = ExperimentSimulation.Summary(await Self.runs(aa, seeds: runs))
        Self.printMetric("A/A conversion", aaSummary.conversion)
        Self.printMetric("A/A value (CUPED)", aaSummary.value)
        print("A/A sample ratio check: false alarms \(aaSummary.sampleRatioAlarms)")

        var power = aa
        power.conversionLift = 0.10
        power.valueLift = 0.03
        let powerSummary = ExperimentSimulation.Summary(await Self.runs(power, seeds: runs))
        Self.printMetric("Effect: conversion +10 % relative (10 % → 11 %)", powerSummary.conversion)
        Self.printMetric("Effect: value +3 % relative (CUPED)", powerSummary.value)

        var tuned = power
        tuned.plannedUnits = Int(tuned.unitsPerDay) * tuned.days
        let tunedSummary = ExperimentSimulation.Summary(await Self.runs(tuned, seeds: runs))
        Self.printMetric(
            "Effect, N* = \(tuned.plannedUnits) (the planned sample): conversion +10 %", tunedSummary.conversion)
        Self.printMetric("Effect, N* = \(tuned.plannedUnits): value +3 % (CUPED)", tunedSummary.value)

        var busier = power
        busier.unitsPerDay *= 3
        let busierSummary = ExperimentSimulation.Summary(await Self.runs(busier, seeds: runs))
        Self.printMetric(
            "Effect at \(Int(busier.unitsPerDay / 2)) units a day per arm: conversion +10 %", busierSummary.conversion)
        Self.printMetric(
            "Effect at \(Int(busier.unitsPerDay / 2)) units a day per arm: value +3 % (CUPED)", busierSummary.value)

        var skewed = aa
        skewed.treatmentShare = 0.48
        let skewedSummary = ExperimentSimulation.Summary(await Self.runs(skewed, seeds: runs))
        print(
            """
            Split 48/52 against a declared 50/50: sample ratio check failed in \(skewedSummary.sampleRatioAlarms), \
            median \(Self.days(skewedSummary.medianDaysToSampleRatioAlarm)) days to the alarm
            """)
    }

    static func printMetric(_ title: String, _ summary: ExperimentSimulation.MetricSummary) {
        var line = "\(title):"
        if let missed = summary.missedTruth {
            line += "\n  confidence sequence excluded the true difference at some look: \(missed)"
        }
        if let naive = summary.naiveMissedTruth {
            line += "\n  fixed-horizon 95 % z-interval, same looks: \(naive)"
        }
        if let atEnd = summary.naiveMissedTruthAtEnd {
            line += "\n  fixed-horizon 95 % z-interval, last look only: \(atEnd)"
        }
        line +=
            "\n  decided higher: \(summary.decidedHigher), median \(Self.days(summary.medianDaysToDecideHigher)) days; "
            + "decided lower: \(summary.decidedLower)"
        if let reduction = summary.medianVarianceReduction {
            line +=
                "\n  CUPED variance reduction at the last look (median): \(String(format: "%.1f %%", reduction * 100))"
        }
        print(line)
    }

    static func days(_ value: Double?) -> String {
        value.map { String(format: "%.1f", $0) } ?? "–"
    }
}
