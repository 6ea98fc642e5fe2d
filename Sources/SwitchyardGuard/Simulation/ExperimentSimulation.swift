import Foundation
import SwitchyardCore

/// Seeded experiments run through the analysis exactly as a results page reads it (`ExperimentAnalysis.compare`
/// and `SampleRatioCheck` at every look, from running sums), to measure the error rates of always-valid intervals
/// read every minute, against the fixed-horizon interval read as often, and the power for a stated effect.
///
/// ```swift
/// var scenario = ExperimentSimulation.Scenario()        // A/A: 1,000 units a day per arm, 14 days, a look a minute
/// let outcomes = (1...400).map { ExperimentSimulation.run(scenario, seed: $0) }
/// let summary = ExperimentSimulation.Summary(outcomes)
/// // summary.conversion.missedTruth: the share of runs whose interval ever excluded the true difference (0)
/// ```
///
/// The model: units arrive as a Poisson process (`unitsPerDay` in both arms together, spread evenly over the
/// day), each assigned to the treatment with chance `treatmentShare` (the split the flag declares is
/// `declaredTreatmentShare`, for the sample ratio check). A unit's outcomes are known when it arrives:
/// - **conversion**: 1 with chance `conversionRate` (control) or `conversionRate × (1 + conversionLift)`
///   (treatment); no pre-entry value, so no CUPED;
/// - **value** (a fare-like sum per unit): the unit has a level `L ~ N(0, valueSpread²)`; its pre-entry value is
///   `x = min(cap, valueScale · e^(L + valueNoise·ε₁))` and its post-entry value
///   `y = min(cap, valueScale · (1 + valueLift) · e^(L + valueNoise·ε₂))`, ε independent standard normals, so x
///   predicts y and CUPED applies.
///
/// Every `lookEveryMinutes` minutes the simulation compares the arms on both metrics, and records the first look
/// whose confidence sequence excludes 0, whether any look's interval excludes the true difference, and the same
/// for the fixed-horizon z-interval (difference ± z₁₋α/₂·SE) read at the same looks and at the last look only.
/// A look at which no unit arrived since the previous one would repeat it, so it is skipped.
public enum ExperimentSimulation {
    /// What to simulate.
    public struct Scenario: Sendable, Hashable {
        /// Units entering the experiment per day, both arms together (2,000: 1,000 a day per arm at a 50/50 split).
        public var unitsPerDay = 2_000.0
        /// How long the experiment runs.
        public var days = 14
        /// Minutes between looks (1: 20,160 looks over 14 days).
        public var lookEveryMinutes = 1
        /// The chance that a unit is assigned to the treatment.
        public var treatmentShare = 0.5
        /// The treatment's share the split declares (the sample ratio check's expectation).
        public var declaredTreatmentShare = 0.5
        /// The control's conversion rate.
        public var conversionRate = 0.10
        /// The treatment's relative effect on the conversion rate (0.1: 10 % → 11 %).
        public var conversionLift = 0.0
        /// The median of a unit's value (before noise and cap).
        public var valueScale = 10.0
        /// The treatment's relative effect on the value (before the cap).
        public var valueLift = 0.0
        /// The standard deviation of units' log levels (how much units differ: what CUPED removes).
        public var valueSpread = 0.8
        /// The standard deviation of a period's log noise around the unit's level (what CUPED cannot remove).
        public var valueNoise = 0.5
        /// The value metric's cap.
        public var valueCap = 200.0
        /// The intervals' two-sided error rate over all looks.
        public var alpha = ConfidenceSequence.defaultAlpha
        /// N* of the confidence sequence.
        public var plannedUnits = ConfidenceSequence.defaultPlannedUnits

        /// The defaults: an A/A experiment at 1,000 units a day per arm for 14 days, looked at every minute.
        public init() {}

        /// The number of looks over the run.
        public var looks: Int { days * 1440 / max(1, lookEveryMinutes) }
    }

    /// What one metric did over one run.
    public struct MetricOutcome: Sendable, Hashable {
        /// The first look (minutes since the start) at which the confidence sequence excluded 0; nil if none.
        public var firstDecisionMinute: Int?
        /// Whether that first decision said treatment > control.
        public var firstDecisionPositive: Bool?
        /// Whether the confidence sequence excluded the true difference at some look (nil when the true
        /// difference is not known exactly: the value metric with an effect, whose cap bends it).
        public var missedTruth: Bool?
        /// The first look at which the confidence sequence excluded the true difference (when known); nil if none.
        public var firstMissMinute: Int?
        /// Whether the fixed-horizon z-interval, read at the same looks, excluded the true difference at some look.
        public var naiveMissedTruth: Bool?
        /// Whether the fixed-horizon z-interval excluded the true difference at the last look (one look only).
        public var naiveMissedTruthAtEnd: Bool?
        /// The comparison at the last look.
        public var final: MetricComparison
    }

    /// What one run did.
    public struct Outcome: Sendable, Hashable {
        /// The conversion metric's record.
        public var conversion: MetricOutcome
        /// The value metric's record (CUPED-adjusted).
        public var value: MetricOutcome
        /// The first look at which the sample ratio check failed (p < 0.001); nil if none.
        public var firstSampleRatioAlarmMinute: Int?
        /// Units in the control arm at the end.
        public var controlUnits: Int
        /// Units in the treatment arm at the end.
        public var treatmentUnits: Int
    }

    /// Runs a scenario with a seed; the same seed gives the same outcome.
    public static func run(_ scenario: Scenario, seed: UInt64) -> Outcome {
        var random = SplitMix64(seed: seed)
        let sequence = ConfidenceSequence(alpha: scenario.alpha, plannedUnits: scenario.plannedUnits)
        let z = sequence.fixedHorizonMultiplier
        let perMinute = scenario.unitsPerDay / 1440
        let treatmentRate = min(1, scenario.conversionRate * (1 + scenario.conversionLift))
        let conversionTruth = treatmentRate - scenario.conversionRate
        let valueTruth: Double? = scenario.valueLift == 0 ? 0 : nil
        let srmShares = [1 - scenario.declaredTreatmentShare, scenario.declaredTreatmentShare]
        let srmLimit = -log(SampleRatioCheck.defaultThreshold)
        var srmCounts = [0, 0]

        var conversion = (control: ArmMoments(), treatment: ArmMoments())
        var value = (control: ArmMoments(), treatment: ArmMoments())
        var conversionTrack = Track(truth: conversionTruth)
        var valueTrack = Track(truth: valueTruth)
        var firstAlarm: Int?
        var arrivedSinceLook = false
        var lastConversion = ExperimentAnalysis.compare(
            control: conversion.control, treatment: conversion.treatment,
            kind: .conversion, better: .higher, sequence: sequence)
        var lastValue = lastConversion
        let minutes = scenario.days * 1440
        let lookEvery = max(1, scenario.lookEveryMinutes)
        for minute in 1...max(1, minutes) {
            for _ in 0..<random.poisson(perMinute) {
                let treated = random.uniform() < scenario.treatmentShare
                let converted: Double = random.uniform() < (treated ? treatmentRate : scenario.conversionRate) ? 1 : 0
                let level = scenario.valueSpread * random.gaussian()
                let before = min(
                    scenario.valueCap, scenario.valueScale * exp(level + scenario.valueNoise * random.gaussian()))
                let after = min(
                    scenario.valueCap,
                    scenario.valueScale * (treated ? 1 + scenario.valueLift : 1)
                        * exp(level + scenario.valueNoise * random.gaussian()))
                if treated {
                    conversion.treatment.add(y: converted)
                    value.treatment.add(y: after, x: before)
                    srmCounts[1] += 1
                } else {
                    conversion.control.add(y: converted)
                    value.control.add(y: after, x: before)
                    srmCounts[0] += 1
                }
                arrivedSinceLook = true
            }
            guard minute % lookEvery == 0, arrivedSinceLook else { continue }
            arrivedSinceLook = false
            lastConversion = ExperimentAnalysis.compare(
                control: conversion.control, treatment: conversion.treatment,
                kind: .conversion, better: .higher, sequence: sequence)
            lastValue = ExperimentAnalysis.compare(
                control: value.control, treatment: value.treatment,
                kind: .value, better: .higher, sequence: sequence)
            conversionTrack.look(lastConversion, minute: minute, z: z)
            valueTrack.look(lastValue, minute: minute, z: z)
            if firstAlarm == nil,
                SampleRatioCheck.logBayesFactor(
                    counts: srmCounts, shares: srmShares,
                    concentration: SampleRatioCheck.defaultConcentration) > srmLimit
            {
                firstAlarm = minute
            }
        }
        return Outcome(
            conversion: conversionTrack.outcome(lastConversion, z: z), value: valueTrack.outcome(lastValue, z: z),
            firstSampleRatioAlarmMinute: firstAlarm,
            controlUnits: conversion.control.units, treatmentUnits: conversion.treatment.units)
    }

    /// One metric's record over the looks of a run.
    struct Track {
        var truth: Double?
        var firstDecisionMinute: Int?
        var firstDecisionPositive: Bool?
        var firstMissMinute: Int?
        var naiveMissed = false

        init(truth: Double?) {
            self.truth = truth
        }

        mutating func look(_ comparison: MetricComparison, minute: Int, z: Double) {
            guard let lower = comparison.lower, let upper = comparison.upper else { return }
            if firstDecisionMinute == nil, comparison.decided {
                firstDecisionMinute = minute
                firstDecisionPositive = lower > 0
            }
            guard let truth, let difference = comparison.difference, let standardError = comparison.standardError else {
                return
            }
            if firstMissMinute == nil, truth < lower || truth > upper { firstMissMinute = minute }
            if abs(difference - truth) > z * standardError { naiveMissed = true }
        }

        func outcome(_ final: MetricComparison, z: Double) -> MetricOutcome {
            var atEnd: Bool?
            if let truth, let difference = final.difference, let standardError = final.standardError {
                atEnd = abs(difference - truth) > z * standardError
            }
            return MetricOutcome(
                firstDecisionMinute: firstDecisionMinute, firstDecisionPositive: firstDecisionPositive,
                missedTruth: truth == nil ? nil : firstMissMinute != nil,
                firstMissMinute: firstMissMinute, naiveMissedTruth: truth == nil ? nil : naiveMissed,
                naiveMissedTruthAtEnd: atEnd, final: final)
        }
    }
}

extension ExperimentSimulation {
    /// A share of runs with its Monte Carlo standard error √(p(1 − p)/runs).
    public struct Rate: Sendable, Hashable, CustomStringConvertible {
        /// Runs in which it happened.
        public var count: Int
        /// Runs in all.
        public var runs: Int

        /// `count` of `runs`.
        public init(count: Int, runs: Int) {
            self.count = count
            self.runs = runs
        }

        /// count / runs.
        public var value: Double { runs > 0 ? Double(count) / Double(runs) : 0 }
        /// √(p(1 − p)/runs).
        public var standardError: Double { runs > 0 ? (value * (1 - value) / Double(runs)).squareRoot() : 0 }

        /// "1.8 % ± 0.7 % (7/400)".
        public var description: String {
            "\(ExperimentSimulation.percent(value)) ± \(ExperimentSimulation.percent(standardError)) (\(count)/\(runs))"
        }
    }

    /// One metric's figures over many runs.
    public struct MetricSummary: Sendable, Hashable {
        /// Runs whose confidence sequence ever excluded the true difference (under A/A: false positives); nil when
        /// the truth is not known exactly.
        public var missedTruth: Rate?
        /// The same for the fixed-horizon z-interval read at every look.
        public var naiveMissedTruth: Rate?
        /// The same for the fixed-horizon z-interval read once, at the end.
        public var naiveMissedTruthAtEnd: Rate?
        /// Runs whose confidence sequence decided treatment > control (at its first decision).
        public var decidedHigher: Rate
        /// Runs whose confidence sequence decided treatment < control.
        public var decidedLower: Rate
        /// The median of the days to the first decision, over the runs that decided treatment > control.
        public var medianDaysToDecideHigher: Double?
        /// The median of CUPED's variance reduction at the last look (nil when CUPED never applied).
        public var medianVarianceReduction: Double?

        init(_ outcomes: [MetricOutcome]) {
            let runs = outcomes.count
            func rate(_ flags: [Bool?]) -> Rate? {
                let known = flags.compactMap { $0 }
                return known.isEmpty ? nil : Rate(count: known.count(where: { $0 }), runs: known.count)
            }
            missedTruth = rate(outcomes.map(\.missedTruth))
            naiveMissedTruth = rate(outcomes.map(\.naiveMissedTruth))
            naiveMissedTruthAtEnd = rate(outcomes.map(\.naiveMissedTruthAtEnd))
            decidedHigher = Rate(count: outcomes.count(where: { $0.firstDecisionPositive == true }), runs: runs)
            decidedLower = Rate(count: outcomes.count(where: { $0.firstDecisionPositive == false }), runs: runs)
            medianDaysToDecideHigher = ExperimentSimulation.median(
                outcomes.compactMap { outcome in
                    outcome.firstDecisionPositive == true ? outcome.firstDecisionMinute.map { Double($0) / 1440 } : nil
                })
            medianVarianceReduction = ExperimentSimulation.median(
                outcomes.compactMap { $0.final.cuped?.varianceReduction })
        }
    }

    /// The figures of many runs of one scenario.
    public struct Summary: Sendable, Hashable {
        /// The number of runs.
        public var runs: Int
        /// The conversion metric's figures.
        public var conversion: MetricSummary
        /// The value metric's figures.
        public var value: MetricSummary
        /// Runs in which the sample ratio check failed at some look.
        public var sampleRatioAlarms: Rate
        /// The median of the days to the first alarm, over the runs that had one.
        public var medianDaysToSampleRatioAlarm: Double?

        /// The figures of these runs.
        public init(_ outcomes: [Outcome]) {
            runs = outcomes.count
            conversion = MetricSummary(outcomes.map(\.conversion))
            value = MetricSummary(outcomes.map(\.value))
            sampleRatioAlarms = Rate(
                count: outcomes.count(where: { $0.firstSampleRatioAlarmMinute != nil }), runs: runs)
            medianDaysToSampleRatioAlarm = ExperimentSimulation.median(
                outcomes.compactMap {
                    $0.firstSampleRatioAlarmMinute.map { Double($0) / 1440 }
                })
        }
    }

    /// The median of some numbers; nil when there are none.
    static func median(_ values: [Double]) -> Double? {
        guard !values.isEmpty else { return nil }
        let sorted = values.sorted()
        let middle = sorted.count / 2
        return sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
    }

    /// "1.8 %".
    static func percent(_ share: Double) -> String {
        String(format: "%.1f %%", share * 100)
    }
}

extension SplitMix64 {
    /// A standard normal draw (Box–Muller).
    mutating func gaussian() -> Double {
        let u1 = max(uniform(), 1e-300)
        let u2 = uniform()
        return (-2 * log(u1)).squareRoot() * cos(2 * Double.pi * u2)
    }

    /// A Poisson draw of mean `mean` (Knuth's product of uniforms below a mean of 30, the normal approximation
    /// above).
    mutating func poisson(_ mean: Double) -> Int {
        guard mean > 0 else { return 0 }
        if mean >= 30 {
            return max(0, Int((mean + mean.squareRoot() * gaussian()).rounded()))
        }
        let limit = exp(-mean)
        var count = 0
        var product = uniform()
        while product > limit {
            count += 1
            product *= uniform()
        }
        return count
    }
}
