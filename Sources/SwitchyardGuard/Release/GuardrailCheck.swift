import Foundation
public import SwitchyardCore
public import SwitchyardWire

/// One look at a release plan's guardrail metric in a stage: the switch's units (arm `with`) against the units
/// without it (`without`), both randomised by the stage's split, on the metric's per-unit values since each unit
/// entered the stage.
///
/// - **worse** (the stage rolls back) when the interval of the difference at the roll-back confidence lies wholly
///   on the metric's worse side of 0, with at least `rollbackMinimumSessions` units with the switch;
/// - **not worse** (this guardrail lets the stage advance) when the interval at the plan's confidence lies wholly on
///   the better side of the margin: `lower > margin` for a metric better higher (a margin in points on the
///   difference, a relative one on the lift), `upper < margin` for one better lower;
/// - **undecided** otherwise (the stage holds);
/// - **not judged** when the stage splits no unit (a scope at 100 %, or everyone at 100 %): nothing randomised to
///   compare with; the stage goes on crash rate alone.
///
/// Both intervals are confidence sequences (``ConfidenceSequence``) at a two-sided α of twice the one-sided error
/// rate, so the runner may look every 30 seconds without raising either error rate
/// (docs/release-statistics.md, "Guardrail metrics").
public struct GuardrailCheck: Sendable, Hashable {
    public enum State: String, Sendable, Hashable, CaseIterable {
        /// Shown not worse than the margin.
        case notWorse = "not_worse"
        /// Neither shown.
        case undecided
        /// Shown worse than without the switch.
        case worse
        /// The stage splits no unit.
        case notJudged = "not_judged"
    }

    public var guardrail: ReleaseGuardrail
    /// Which way is better for the metric.
    public var better: MetricDefinition.Direction
    public var state: State
    /// Units with the switch and without it, entered since the stage began.
    public var unitsWith: Int
    public var unitsWithout: Int
    /// Means per unit (a ratio's Σy/Σd); nil without units.
    public var meanWith: Double?
    public var meanWithout: Double?
    /// The estimate the margin is held against: the difference of means (points) or the relative lift (relative).
    public var estimate: Double?
    /// Its interval at the plan's confidence (one-sided bounds each).
    public var lower: Double?
    public var upper: Double?
    /// Its interval at the roll-back confidence.
    public var rollbackLower: Double?
    public var rollbackUpper: Double?
    /// One sentence: what it shows or waits for.
    public var summary: String

    /// A guardrail the stage cannot judge (it splits no unit), saying why.
    public static func notJudged(_ guardrail: ReleaseGuardrail, better: MetricDefinition.Direction, why: String)
        -> GuardrailCheck
    {
        GuardrailCheck(
            guardrail: guardrail, better: better, state: .notJudged, unitsWith: 0, unitsWithout: 0,
            summary: "\(guardrail.metric): not judged in this stage: \(why)")
    }

    init(
        guardrail: ReleaseGuardrail, better: MetricDefinition.Direction, state: State, unitsWith: Int,
        unitsWithout: Int,
        summary: String
    ) {
        self.guardrail = guardrail
        self.better = better
        self.state = state
        self.unitsWith = unitsWith
        self.unitsWithout = unitsWithout
        self.summary = summary
    }

    /// Judges a guardrail on the stage's units.
    ///
    /// - Parameters:
    ///   - guardrail: the metric and its margin.
    ///   - metric: the metric's definition (kind, direction).
    ///   - without: the moments of the units without the switch (the control).
    ///   - with: the moments of the units with it.
    ///   - criteria: the plan's criteria (confidences, the roll-back minimum, the sequences).
    public init(
        _ guardrail: ReleaseGuardrail, metric: MetricDefinition, without: ArmMoments, with: ArmMoments,
        criteria: ReleaseCriteria
    ) {
        self.guardrail = guardrail
        better = metric.better
        unitsWith = with.units
        unitsWithout = without.units
        func compare(_ sequence: ConfidenceSequence) -> MetricComparison {
            ExperimentAnalysis.compare(
                control: without, treatment: with, kind: metric.kind, better: metric.better,
                sequence: sequence, cuped: metric.kind != .ratio)
        }
        let advance = compare(criteria.advanceSequence)
        let rollback = compare(criteria.guardrailRollbackSequence)
        meanWith = advance.treatmentMean
        meanWithout = advance.controlMean
        let relative: Bool
        if case .relative = guardrail.margin { relative = true } else { relative = false }
        func bounds(_ comparison: MetricComparison) -> (estimate: Double?, lower: Double?, upper: Double?) {
            relative
                ? (comparison.relativeLift, comparison.relativeLower, comparison.relativeUpper)
                : (comparison.difference, comparison.lower, comparison.upper)
        }
        (estimate, lower, upper) = bounds(advance)
        (_, rollbackLower, rollbackUpper) = bounds(rollback)
        let margin = guardrail.margin.value
        let name = guardrail.metric
        let shown = "\(Self.text(estimate, relative)) [\(Self.text(lower, relative)), \(Self.text(upper, relative))]"
        let units = "\(unitsWith) units with the switch, \(unitsWithout) without"
        let worseSide = metric.better == .higher ? rollbackUpper.map { $0 < 0 } : rollbackLower.map { $0 > 0 }
        if worseSide == true, Int64(unitsWith) >= criteria.rollbackMinimumSessions {
            state = .worse
            let bound = metric.better == .higher ? rollbackUpper : rollbackLower
            summary =
                "\(name) is worse with the switch: \(Self.text(estimate, relative)), bound \(Self.text(bound, relative)) "
                + "\(metric.better == .higher ? "< 0" : "> 0") at \(ReleaseCheck.confidence(criteria.rollbackConfidence)) (\(units))"
            return
        }
        let safe = metric.better == .higher ? lower.map { $0 > margin } : upper.map { $0 < margin }
        if safe == true {
            state = .notWorse
            summary =
                "\(name) is not worse than its margin \(guardrail.margin): \(shown) at \(ReleaseCheck.confidence(criteria.confidence)) (\(units))"
        } else {
            state = .undecided
            summary =
                estimate == nil
                ? "\(name): too few units to compare (\(units))"
                : "\(name) not yet shown within its margin \(guardrail.margin): \(shown) at \(ReleaseCheck.confidence(criteria.confidence)) (\(units))"
        }
    }

    /// How the units behind a decision spread over source networks, as the crash guard's `min_addresses` counts them
    /// (an IPv4 /24 or IPv6 /48 each; units whose address is unknown count as one network between them).
    public struct Spread: Sendable, Hashable {
        /// Distinct networks among the units with the switch.
        public var networks: Int
        /// The fewest networks a decision needs (the crash guard's `min_addresses`).
        public var minimumNetworks: Int
        /// How many of the networks with the most units the second look leaves out (`min_addresses − 1`).
        public var leftOut: Int

        public init(networks: Int, minimumNetworks: Int, leftOut: Int) {
            self.networks = networks
            self.minimumNetworks = minimumNetworks
            self.leftOut = leftOut
        }
    }

    /// This check held to the crash guard's spread rules, so that one party's units cannot decide alone: a decision
    /// (worse, or not worse) needs units with the switch from `minimumNetworks` networks, and must be the same
    /// without the units of the `leftOut` busiest networks (`beyondBusiest`: the check on the others); else the
    /// guardrail is undecided, saying why.
    public func holding(to spread: Spread, beyondBusiest: GuardrailCheck) -> GuardrailCheck {
        guard state == .worse || state == .notWorse else { return self }
        var check = self
        let name = guardrail.metric
        if spread.networks < spread.minimumNetworks {
            check.state = .undecided
            check.summary =
                "\(name): units with the switch from \(spread.networks) of \(spread.minimumNetworks) source networks needed "
                + "(an IPv4 /24 or IPv6 /48 each) before it decides; \(summary)"
        } else if spread.leftOut > 0, beyondBusiest.state != state {
            check.state = .undecided
            let busiest = "the \(spread.leftOut) busiest source network\(spread.leftOut == 1 ? "" : "s")"
            check.summary =
                "\(name): without the units of \(busiest) it is not shown \(state == .worse ? "worse" : "within its margin") "
                + "(\(beyondBusiest.summary)); \(summary)"
        }
        return check
    }

    /// `-0.52pp`, `+1.3%`, `?`: an estimate or bound in the margin's unit.
    static func text(_ value: Double?, _ relative: Bool) -> String {
        guard let value else { return "?" }
        var text = String(format: "%+.2f", value * 100)
        if text == "-0.00" || text == "+0.00" { text = "0" }
        return text + (relative ? "%" : "pp")
    }

    /// The check as the status and a step's evidence carry it (fractions).
    public var body: ReleaseStatusBody.Guardrail {
        ReleaseStatusBody.Guardrail(
            metric: guardrail.metric, margin: guardrail.margin.description, better: better.rawValue,
            state: state.rawValue,
            unitsWith: unitsWith, unitsWithout: unitsWithout, meanWith: meanWith, meanWithout: meanWithout,
            estimate: estimate, lower: lower, upper: upper, rollbackLower: rollbackLower, rollbackUpper: rollbackUpper,
            summary: summary)
    }
}
