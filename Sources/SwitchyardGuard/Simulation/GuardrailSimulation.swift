import Foundation
import SwitchyardCore

/// Seeded release stages judged on one guardrail metric exactly as the runner judges it (``GuardrailCheck`` at every
/// look, from running sums), to measure how often a switch at the margin is let through, how often a harmless one
/// is rolled back, and how long each takes, when the runner looks every minute.
///
/// ```swift
/// var scenario = GuardrailSimulation.Scenario()    // a switch exactly at its −1 point margin on bookings
/// let summary = GuardrailSimulation.Summary((1...400).map { GuardrailSimulation.run(scenario, seed: $0) })
/// // summary.passed: the share of stages that advanced on the guardrail (nominal: at most 2.5 %)
/// ```
///
/// The model: units enter the stage as a Poisson process (`unitsPerMinute`), each put with the switch with chance
/// `share` (the stage's rollout); a unit converts with chance `baseRate` without the switch and
/// `baseRate + effect` with it. From `soakMinutes` on, each minute with new units is a look: the stage ends at the
/// first look where the guardrail is not worse (`passed`) or worse (`rolledBack`), or undecided at `hours`.
public enum GuardrailSimulation {
    public struct Scenario: Sendable, Hashable {
        /// New units in the stage's scope per minute, both arms.
        public var unitsPerMinute = 1_000.0
        /// The stage's rollout: the chance a unit has the switch.
        public var share = 0.5
        /// The conversion rate without the switch.
        public var baseRate = 0.2
        /// The switch's true effect on it, in points as a fraction (−0.01: one point fewer).
        public var effect = -0.01
        /// The guardrail's margin, in points as a fraction.
        public var margin = -0.01
        /// The least time in the stage before it may advance (a roll-back needs none).
        public var soakMinutes = 30
        /// How long a stage may run before the simulation calls it undecided.
        public var hours = 48
        /// The plan's criteria (confidences, the roll-back minimum).
        public var criteria = ReleaseCriteria.defaults
        /// Judge with fixed-horizon z-intervals (difference ± z·SE at the same confidences) at the same looks instead
        /// of the confidence sequences: what the rule would do without them, for comparison.
        public var fixedHorizon = false

        /// A switch exactly at a −1 point margin on a 20 % conversion, at 50 % of 1,000 new units a minute.
        public init() {}
    }

    /// What one stage did.
    public struct Outcome: Sendable, Hashable {
        /// `passed`, `rolledBack` or undecided (neither).
        public var passed: Bool
        public var rolledBack: Bool
        /// Minutes to the decision; nil when undecided.
        public var minutes: Int?
        /// Units with the switch when it ended.
        public var unitsWith: Int
    }

    /// Runs a scenario with a seed; the same seed gives the same outcome.
    public static func run(_ scenario: Scenario, seed: UInt64) -> Outcome {
        var random = SplitMix64(seed: seed)
        let guardrail = ReleaseGuardrail(metric: "trip_booked", margin: .points(scenario.margin))
        let metric = MetricDefinition(name: "trip_booked", kind: .conversion)
        let rateWith = min(1, max(0, scenario.baseRate + scenario.effect))
        var with = ArmMoments()
        var without = ArmMoments()
        for minute in 1...max(1, scenario.hours * 60) {
            let arrived = random.poisson(scenario.unitsPerMinute)
            for _ in 0..<arrived {
                if random.uniform() < scenario.share {
                    with.add(y: random.uniform() < rateWith ? 1 : 0)
                } else {
                    without.add(y: random.uniform() < scenario.baseRate ? 1 : 0)
                }
            }
            guard arrived > 0 else { continue }
            let state =
                scenario.fixedHorizon
                ? fixedHorizonState(without: without, with: with, margin: scenario.margin, criteria: scenario.criteria)
                : GuardrailCheck(guardrail, metric: metric, without: without, with: with, criteria: scenario.criteria)
                    .state
            if state == .worse {
                return Outcome(passed: false, rolledBack: true, minutes: minute, unitsWith: with.units)
            }
            if state == .notWorse, minute >= scenario.soakMinutes {
                return Outcome(passed: true, rolledBack: false, minutes: minute, unitsWith: with.units)
            }
        }
        return Outcome(passed: false, rolledBack: false, minutes: nil, unitsWith: with.units)
    }

    /// The guardrail's state with fixed-horizon bounds: difference ± Φ⁻¹(confidence)·SE.
    static func fixedHorizonState(without: ArmMoments, with: ArmMoments, margin: Double, criteria: ReleaseCriteria)
        -> GuardrailCheck.State
    {
        let comparison = ExperimentAnalysis.compare(
            control: without, treatment: with, kind: .conversion, better: .higher, cuped: false)
        guard let difference = comparison.difference, let standardError = comparison.standardError else {
            return .undecided
        }
        if Int64(with.units) >= criteria.rollbackMinimumSessions,
            difference + Proportions.normalQuantile(criteria.rollbackConfidence) * standardError < 0
        {
            return .worse
        }
        return difference - Proportions.normalQuantile(criteria.confidence) * standardError > margin
            ? .notWorse : .undecided
    }

    /// The figures of many runs of one scenario.
    public struct Summary: Sendable, Hashable {
        /// Stages that advanced on the guardrail.
        public var passed: ExperimentSimulation.Rate
        /// Stages rolled back on it.
        public var rolledBack: ExperimentSimulation.Rate
        /// The median minutes to advance, over the stages that advanced; nil when none did.
        public var medianMinutesToPass: Int?
        /// The median minutes to a roll-back, over the stages rolled back; nil when none was.
        public var medianMinutesToRollBack: Int?

        public init(_ outcomes: [Outcome]) {
            passed = .init(count: outcomes.filter(\.passed).count, runs: outcomes.count)
            rolledBack = .init(count: outcomes.filter(\.rolledBack).count, runs: outcomes.count)
            func median(_ values: [Int]) -> Int? {
                values.isEmpty ? nil : values.sorted()[values.count / 2]
            }
            medianMinutesToPass = median(outcomes.filter(\.passed).compactMap(\.minutes))
            medianMinutesToRollBack = median(outcomes.filter(\.rolledBack).compactMap(\.minutes))
        }
    }
}
