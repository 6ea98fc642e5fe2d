import Foundation

/// Confidence bounds for proportions (crash rates), as the crash guard and experiment results use them.
///
/// - The crash guard compares the **Wilson score lower bound** of a switch's crash rate with its threshold: with
///   `c` crashed sessions out of `n`, `p̂ = c/n` and `z` the standard normal quantile of the confidence,
///   `L = (p̂ + z²/2n − z·√(p̂(1−p̂)/n + z²/4n²)) / (1 + z²/n)`. A small sample has a low bound, so it cannot trip
///   on noise; `docs/crash-guard.md` gives the measured false-trip rates.
/// - Experiment results give **Newcombe's hybrid score interval** (his method 10) for the difference of two
///   crash rates, built from the two Wilson intervals.
public enum Proportions {
    /// The Wilson score interval of `successes` out of `trials` at `z`; nil without trials.
    ///
    /// - Parameters:
    ///   - successes: events counted (crashed sessions), 0...trials.
    ///   - trials: the sample size (sessions).
    ///   - z: the normal quantile: 1.96 for a two-sided 95 % interval, 3.09 for a one-sided 99.9 % bound.
    /// - Returns: the lower and upper bounds, within 0...1.
    public static func wilson(successes: Int64, trials: Int64, z: Double) -> (lower: Double, upper: Double)? {
        guard trials > 0 else { return nil }
        let n = Double(trials)
        let p = Double(min(max(successes, 0), trials)) / n
        let z2 = z * z
        let denominator = 1 + z2 / n
        let center = (p + z2 / (2 * n)) / denominator
        let half = z * (p * (1 - p) / n + z2 / (4 * n * n)).squareRoot() / denominator
        // At p̂ = 0 (or 1) the bound is exactly 0 (or 1); rounding must not push it past.
        let lower = successes <= 0 ? 0 : max(0, center - half)
        let upper = successes >= trials ? 1 : min(1, center + half)
        return (lower, upper)
    }

    /// The one-sided Wilson lower bound at a confidence level (0.5 < confidence < 1); nil without trials.
    public static func wilsonLowerBound(successes: Int64, trials: Int64, confidence: Double) -> Double? {
        wilson(successes: successes, trials: trials, z: normalQuantile(confidence))?.lower
    }

    /// Newcombe's hybrid score interval for `p1 − p2` (method 10 of Newcombe 1998), from the Wilson intervals of
    /// each proportion at the same `z`; nil when either sample is empty.
    ///
    /// `L = δ − √((p̂1 − l1)² + (u2 − p̂2)²)`, `U = δ + √((u1 − p̂1)² + (p̂2 − l2)²)`, with `δ = p̂1 − p̂2`.
    public static func newcombeDifference(
        successes1: Int64, trials1: Int64, successes2: Int64, trials2: Int64,
        z: Double
    ) -> (difference: Double, lower: Double, upper: Double)? {
        guard let first = wilson(successes: successes1, trials: trials1, z: z),
            let second = wilson(successes: successes2, trials: trials2, z: z)
        else { return nil }
        let p1 = Double(successes1) / Double(trials1)
        let p2 = Double(successes2) / Double(trials2)
        let difference = p1 - p2
        let lower =
            difference
            - ((p1 - first.lower) * (p1 - first.lower) + (second.upper - p2) * (second.upper - p2)).squareRoot()
        let upper =
            difference
            + ((first.upper - p1) * (first.upper - p1) + (p2 - second.lower) * (p2 - second.lower)).squareRoot()
        return (difference, max(-1, lower), min(1, upper))
    }

    /// The lower bound of Newcombe's hybrid score interval for `p1 − ratio × p2`: the Wilson bounds of `p2` scale
    /// with the ratio, so `L = (p̂1 − r·p̂2) − √((p̂1 − l1)² + r²(u2 − p̂2)²)`. Nil when either sample is empty.
    public static func newcombeScaledDifferenceLowerBound(
        successes1: Int64, trials1: Int64, successes2: Int64, trials2: Int64,
        ratio: Double, z: Double
    ) -> Double? {
        guard let first = wilson(successes: successes1, trials: trials1, z: z),
            let second = wilson(successes: successes2, trials: trials2, z: z)
        else { return nil }
        let p1 = Double(successes1) / Double(trials1)
        let p2 = Double(successes2) / Double(trials2)
        return (p1 - ratio * p2)
            - ((p1 - first.lower) * (p1 - first.lower) + ratio * ratio * (second.upper - p2) * (second.upper - p2))
            .squareRoot()
    }

    /// The standard normal quantile Φ⁻¹(p) for 0 < p < 1 (Acklam's rational approximation refined by one Halley
    /// step: absolute error below 1e-12).
    public static func normalQuantile(_ p: Double) -> Double {
        precondition(p > 0 && p < 1, "a quantile needs 0 < p < 1")
        let a = [
            -3.969683028665376e+01, 2.209460984245205e+02, -2.759285104469687e+02, 1.383577518672690e+02,
            -3.066479806614716e+01, 2.506628277459239e+00,
        ]
        let b = [
            -5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02, 6.680131188771972e+01,
            -1.328068155288572e+01,
        ]
        let c = [
            -7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00, -2.549732539343734e+00,
            4.374664141464968e+00, 2.938163982698783e+00,
        ]
        let d = [7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00, 3.754408661907416e+00]
        let low = 0.02425
        var x: Double
        if p < low {
            let q = (-2 * log(p)).squareRoot()
            x =
                (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5])
                / ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1)
        } else if p <= 1 - low {
            let q = p - 0.5
            let r = q * q
            x =
                (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q
                / (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1)
        } else {
            let q = (-2 * log(1 - p)).squareRoot()
            x =
                -(((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5])
                / ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1)
        }
        // One Halley step on Φ(x) − p.
        let e = 0.5 * erfc(-x / 2.0.squareRoot()) - p
        let u = e * (2 * Double.pi).squareRoot() * exp(x * x / 2)
        x -= u / (1 + x * u / 2)
        return x
    }
}
