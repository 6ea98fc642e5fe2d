import Foundation

/// The always-valid interval experiment results give: an **asymptotic confidence sequence** (Waudby-Smith,
/// Arbour, Sinha, Kennedy & Ramdas 2021, "Time-uniform central limit theory and asymptotic confidence
/// sequences", Theorem 2.2), whose boundary is the two-sided normal mixture of Robbins as tuned by Howard, Ramdas,
/// McAuliffe & Sekhon (2021, "Time-uniform, nonparametric, nonasymptotic confidence sequences").
///
/// For an estimate with estimated variance `Var̂` after `N` units (both arms together):
///
/// ```
/// half-width = σ̂ · √( 2(Nρ² + 1) / (N²ρ²) · log( √(Nρ² + 1) / α ) ),   σ̂² = N · Var̂
///            = √Var̂ · m(N),   m(N) = √( 2(Nρ² + 1) / (Nρ²) · log( √(Nρ² + 1) / α ) )
/// ρ² = ( −2 log α + log(−2 log α + 1) ) / N*
/// ```
///
/// Why this one:
/// - **Valid under continuous monitoring.** The chance that the interval *ever* excludes the true difference, at
///   any of infinitely many looks, is at most α (asymptotically), so results can be read every minute and an
///   experiment stopped whenever it is decided. A fixed-horizon z-interval read that often excludes the truth in
///   far more than α of experiments (`docs/experiment-statistics.md` gives both rates, measured).
/// - **Nonparametric.** It needs only a finite variance (a central limit theorem), not a distribution: the same
///   interval serves conversions, counts, capped values, ratios (through the delta method) and CUPED-adjusted
///   means.
/// - **Cheap.** It is the usual standard error times a multiplier `m(N)` that depends on `N` alone: O(1) from the
///   arms' running sums.
///
/// `N*` (`plannedUnits`) is where the boundary is tightest (ρ minimises the width at `N = N*`): about 1.55 times the
/// fixed-horizon width there (3.04 standard errors instead of 1.96 at α = 0.05), growing slowly beyond it (3.09 at
/// 2.8 N*) and fast below it (9.1 at N*/100).
/// The default, 10,000 units, suits experiments of a few thousand units a day read over one or two weeks.
public struct ConfidenceSequence: Sendable, Hashable {
    /// The default planned sample size N*: the number of units (both arms) at which the boundary is tightest.
    public static let defaultPlannedUnits = 10_000
    /// The default error rate: two-sided, over all looks.
    public static let defaultAlpha = 0.05

    /// The two-sided error rate over all looks (0 < α < 1).
    public var alpha: Double
    /// N*, the sample size (units of both arms) at which the boundary is tightest (> 0).
    public var plannedUnits: Int
    /// ρ², the mixture's variance: ( −2 log α + log(−2 log α + 1) ) / N*.
    public let rhoSquared: Double

    /// A confidence sequence at `alpha`, tightest at `plannedUnits`.
    ///
    /// - Parameters:
    ///   - alpha: the two-sided error rate over all looks, 0 < α < 1 (out of range: clamped to 1e-12...0.5).
    ///   - plannedUnits: N*, units of both arms (at least 1).
    public init(
        alpha: Double = ConfidenceSequence.defaultAlpha, plannedUnits: Int = ConfidenceSequence.defaultPlannedUnits
    ) {
        let alpha = min(0.5, max(1e-12, alpha.isFinite ? alpha : Self.defaultAlpha))
        self.alpha = alpha
        self.plannedUnits = max(1, plannedUnits)
        let twoLogs = -2 * log(alpha)
        rhoSquared = (twoLogs + log(twoLogs + 1)) / Double(self.plannedUnits)
    }

    /// m(N): the half-width in standard errors of the estimate after `units` units (both arms); infinite without
    /// units.
    public func multiplier(units: Int) -> Double {
        guard units > 0 else { return .infinity }
        let nRho2 = Double(units) * rhoSquared
        return (2 * (nRho2 + 1) / nRho2 * log((nRho2 + 1).squareRoot() / alpha)).squareRoot()
    }

    /// The fixed-horizon multiplier z₁₋α/₂ (1.96 at α = 0.05): valid for one look at a sample size fixed in
    /// advance, not for repeated looks. Given for comparison (the simulation and the documentation), never in results.
    public var fixedHorizonMultiplier: Double {
        Proportions.normalQuantile(1 - alpha / 2)
    }
}
