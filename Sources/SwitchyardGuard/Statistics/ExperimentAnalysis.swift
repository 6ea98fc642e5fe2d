public import SwitchyardCore

/// One treatment arm against the control on one metric: means, the difference and relative lift with their
/// always-valid intervals, and the verdict. What `ExperimentAnalysis.compare` returns and a results route shows.
///
/// The difference is treatment − control of the per-unit means (conversion, count, value) or of the ratios
/// Σy/Σd (ratio); with CUPED (`cuped` set) it is the difference of the adjusted means. The relative lift is
/// treatment / control − 1 of the same means. Each interval is a confidence sequence (`ConfidenceSequence`), so it
/// may be read at any time, as often as wanted.
public struct MetricComparison: Sendable, Hashable {
    /// What the interval says, given which way is better.
    public enum Verdict: String, Sendable, Hashable, CaseIterable {
        /// The interval of the difference excludes 0 on the better side.
        case better
        /// The interval of the difference excludes 0 on the worse side.
        case worse
        /// The interval contains 0, or there are too few units for one.
        case inconclusive
    }

    /// CUPED's adjustment (Deng, Xu, Kohavi & Walker 2013), when it applied.
    public struct Cuped: Sendable, Hashable {
        /// θ = s_xy / s_x² over the units of both arms together.
        public var theta: Double
        /// 1 − Var(adjusted difference) / Var(plain difference): the share of variance the covariate removed
        /// (0.5 halves the variance; the interval narrows by 1 − √0.5 ≈ 29 %).
        public var varianceReduction: Double
        /// ȳ_c − θ(x̄_c − x̄), x̄ the mean of x over both arms.
        public var adjustedControlMean: Double
        /// ȳ_t − θ(x̄_t − x̄).
        public var adjustedTreatmentMean: Double
    }

    /// The metric's kind (a ratio compares Σy/Σd; the others compare means per unit).
    public var kind: MetricDefinition.Kind
    /// Which way is better (decides the verdict).
    public var better: MetricDefinition.Direction
    /// Units in the control arm.
    public var controlUnits: Int
    /// Units in the treatment arm.
    public var treatmentUnits: Int
    /// The control's observed mean per unit (ratio: Σy/Σd); nil without units (ratio: when Σd = 0).
    public var controlMean: Double?
    /// The treatment's observed mean per unit (ratio: Σy/Σd); nil likewise.
    public var treatmentMean: Double?
    /// Treatment − control (CUPED-adjusted when `cuped` is set); nil when either mean is.
    public var difference: Double?
    /// The estimated standard error of `difference`; nil below 2 units in either arm, and when neither arm has any
    /// spread (the standard error would be 0).
    public var standardError: Double?
    /// The confidence sequence's lower bound for the difference; nil with `standardError`.
    public var lower: Double?
    /// The confidence sequence's upper bound for the difference; nil with `standardError`.
    public var upper: Double?
    /// Treatment / control − 1 (CUPED-adjusted when `cuped` is set); nil when the control's mean is not positive.
    public var relativeLift: Double?
    /// The delta method's standard error of `relativeLift`.
    public var relativeStandardError: Double?
    /// The confidence sequence's lower bound for the relative lift; nil with `relativeStandardError`.
    public var relativeLower: Double?
    /// The confidence sequence's upper bound for the relative lift; nil with `relativeStandardError`.
    public var relativeUpper: Double?
    /// Whether the interval of the difference excludes 0.
    public var decided: Bool
    /// Better, worse or inconclusive: `decided`, on the metric's better or worse side.
    public var verdict: Verdict
    /// CUPED's adjustment; nil when it did not apply (a ratio metric, no unit with a pre-entry value, no spread in
    /// the pre-entry values, or fewer than 2 units in an arm).
    public var cuped: Cuped?
    /// The two-sided error rate of the intervals over all looks.
    public var alpha: Double
    /// N*, the units (both arms) at which the intervals are tightest.
    public var plannedUnits: Int
}

/// The analysis of experiment results: one treatment arm against the control on one metric, from each arm's
/// sufficient statistics. Pure arithmetic, O(1) in the number of units.
///
/// ```swift
/// let result = ExperimentAnalysis.compare(control: controlMoments, treatment: treatmentMoments,
///                                         kind: .conversion, better: .higher)
/// // result.difference 0.012, result.lower 0.004, result.upper 0.020, result.verdict .better
/// ```
///
/// - Means: ȳ = Σy/n per arm; variance of the mean s_y²/n (s² with divisor n − 1).
/// - Ratio metrics: R̂ = Σy/Σd per arm, with the delta method's variance
///   Var(R̂) ≈ (s_y² − 2R̂·s_yd + R̂²·s_d²) / (n·d̄²).
/// - CUPED (not for ratios; when some unit has x ≠ 0 and s_x² > 0 over both arms): θ = s_xy/s_x² over both
///   arms' units together; adjusted mean ȳ − θ(x̄_arm − x̄); adjusted per-unit variance s_y² − 2θ·s_xy + θ²·s_x²
///   (each arm's own moments).
/// - Difference: Var = Var(mean_t) + Var(mean_c) (Welch: each arm its own variance).
/// - Relative lift: mean_t/mean_c − 1, Var ≈ Var(mean_t)/mean_c² + mean_t²·Var(mean_c)/mean_c⁴ (delta method).
/// - Intervals: estimate ± m(N)·SE with `ConfidenceSequence`, N = n_t + n_c.
public enum ExperimentAnalysis {
    /// Compares a treatment arm with the control on one metric.
    ///
    /// - Parameters:
    ///   - control: the control arm's statistics.
    ///   - treatment: the treatment arm's statistics.
    ///   - kind: the metric's kind (`ratio` reads y and d; the others y and x).
    ///   - better: which way is better, for the verdict.
    ///   - alpha: the two-sided error rate over all looks (default 0.05).
    ///   - plannedUnits: N*, units of both arms at which the interval is tightest (default 10,000).
    ///   - cuped: whether to adjust with the pre-entry values where they exist (default true).
    /// - Returns: the comparison; bounds are nil below 2 units in either arm or when neither arm has any spread.
    public static func compare(
        control: ArmMoments, treatment: ArmMoments, kind: MetricDefinition.Kind,
        better: MetricDefinition.Direction = .higher,
        alpha: Double = ConfidenceSequence.defaultAlpha,
        plannedUnits: Int = ConfidenceSequence.defaultPlannedUnits,
        cuped: Bool = true
    ) -> MetricComparison {
        compare(
            control: control, treatment: treatment, kind: kind, better: better,
            sequence: ConfidenceSequence(alpha: alpha, plannedUnits: plannedUnits), cuped: cuped)
    }

    /// Compares a treatment arm with the control on a metric, with its kind and direction.
    public static func compare(
        control: ArmMoments, treatment: ArmMoments, metric: MetricDefinition,
        alpha: Double = ConfidenceSequence.defaultAlpha,
        plannedUnits: Int = ConfidenceSequence.defaultPlannedUnits,
        cuped: Bool = true
    ) -> MetricComparison {
        compare(
            control: control, treatment: treatment, kind: metric.kind, better: metric.better, alpha: alpha,
            plannedUnits: plannedUnits, cuped: cuped)
    }

    /// Compares with a confidence sequence built once (the simulation looks thousands of times with the same one).
    public static func compare(
        control: ArmMoments, treatment: ArmMoments, kind: MetricDefinition.Kind,
        better: MetricDefinition.Direction, sequence: ConfidenceSequence,
        cuped: Bool = true
    ) -> MetricComparison {
        var result = MetricComparison(
            kind: kind, better: better, controlUnits: control.units, treatmentUnits: treatment.units,
            decided: false, verdict: .inconclusive, alpha: sequence.alpha, plannedUnits: sequence.plannedUnits)
        let estimateC: Estimate?
        let estimateT: Estimate?
        if kind == .ratio {
            estimateC = ratioEstimate(control)
            estimateT = ratioEstimate(treatment)
        } else {
            estimateC = meanEstimate(control)
            estimateT = meanEstimate(treatment)
        }
        result.controlMean = estimateC?.mean
        result.treatmentMean = estimateT?.mean
        guard var c = estimateC, var t = estimateT else { return result }

        if cuped, kind != .ratio, let adjustment = cupedAdjustment(control: control, treatment: treatment) {
            let plainVariance = c.varianceOfMean.flatMap { vc in t.varianceOfMean.map { vc + $0 } }
            c = adjustment.control
            t = adjustment.treatment
            let adjustedVariance = c.varianceOfMean.flatMap { vc in t.varianceOfMean.map { vc + $0 } }
            var reduction = 0.0
            if let plainVariance, let adjustedVariance, plainVariance > 0 {
                reduction = 1 - adjustedVariance / plainVariance
            }
            result.cuped = MetricComparison.Cuped(
                theta: adjustment.theta, varianceReduction: reduction,
                adjustedControlMean: c.mean, adjustedTreatmentMean: t.mean)
        }

        let difference = t.mean - c.mean
        result.difference = difference
        let units = control.units + treatment.units
        // A zero standard error (no spread in either arm: 2 units that all converted against 2 that did not) is no
        // evidence of precision, only of too few units: no interval.
        if let vc = c.varianceOfMean, let vt = t.varianceOfMean, vc + vt > 0 {
            let standardError = (vc + vt).squareRoot()
            let half = sequence.multiplier(units: units) * standardError
            result.standardError = standardError
            result.lower = difference - half
            result.upper = difference + half
            if let lower = result.lower, let upper = result.upper, lower > 0 || upper < 0 {
                result.decided = true
                let up = lower > 0
                result.verdict = up == (better == .higher) ? .better : .worse
            }
        }
        if c.mean > 0 {
            let lift = t.mean / c.mean - 1
            result.relativeLift = lift
            if let vc = c.varianceOfMean, let vt = t.varianceOfMean, vc + vt > 0 {
                let c2 = c.mean * c.mean
                let relativeStandardError = (vt / c2 + t.mean * t.mean * vc / (c2 * c2)).squareRoot()
                let half = sequence.multiplier(units: units) * relativeStandardError
                result.relativeStandardError = relativeStandardError
                result.relativeLower = lift - half
                result.relativeUpper = lift + half
            }
        }
        return result
    }

    /// An arm's estimate and the estimated variance of it (nil below 2 units).
    struct Estimate: Hashable {
        var mean: Double
        var varianceOfMean: Double?
    }

    /// ȳ and s_y²/n.
    static func meanEstimate(_ arm: ArmMoments) -> Estimate? {
        guard let mean = arm.meanY else { return nil }
        return Estimate(mean: mean, varianceOfMean: arm.varianceY.map { $0 / Double(arm.units) })
    }

    /// R̂ = Σy/Σd and the delta method's (s_y² − 2R̂·s_yd + R̂²·s_d²) / (n·d̄²); nil when Σd is not positive.
    static func ratioEstimate(_ arm: ArmMoments) -> Estimate? {
        guard arm.units > 0, arm.sumD > 0 else { return nil }
        let ratio = arm.sumY / arm.sumD
        guard let sy2 = arm.varianceY, let sd2 = arm.varianceD, let syd = arm.covarianceYD, let meanD = arm.meanD else {
            return Estimate(mean: ratio, varianceOfMean: nil)
        }
        let perUnit = max(0, sy2 - 2 * ratio * syd + ratio * ratio * sd2)
        return Estimate(mean: ratio, varianceOfMean: perUnit / (Double(arm.units) * meanD * meanD))
    }

    /// CUPED's adjusted estimates of both arms, or nil when it does not apply: fewer than 2 units in an arm, no
    /// unit with x ≠ 0, or no spread in x over both arms.
    static func cupedAdjustment(control: ArmMoments, treatment: ArmMoments) -> (
        theta: Double, control: Estimate, treatment: Estimate
    )? {
        guard control.units >= 2, treatment.units >= 2 else { return nil }
        let pooled = control.merging(treatment)
        guard pooled.sumX2 > 0, let sx2 = pooled.varianceX, sx2 > 0, let sxy = pooled.covarianceXY,
            let pooledMeanX = pooled.meanX
        else { return nil }
        let theta = sxy / sx2
        func adjusted(_ arm: ArmMoments) -> Estimate? {
            guard let meanY = arm.meanY, let meanX = arm.meanX, let sy2 = arm.varianceY, let armSx2 = arm.varianceX,
                let armSxy = arm.covarianceXY
            else { return nil }
            let perUnit = max(0, sy2 - 2 * theta * armSxy + theta * theta * armSx2)
            return Estimate(mean: meanY - theta * (meanX - pooledMeanX), varianceOfMean: perUnit / Double(arm.units))
        }
        guard let c = adjusted(control), let t = adjusted(treatment) else { return nil }
        return (theta, c, t)
    }
}
