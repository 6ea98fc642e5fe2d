import Foundation

/// The sample ratio mismatch check: do the arms hold the shares of units the split declares? Shown before any
/// metric, since a broken split (a redirect that loses units of one arm, a bot in one arm, a crash before the
/// exposure is sent) biases every comparison in ways no interval accounts for.
///
/// The test is the sequential multinomial test of Lindon & Malek (2022, "Anytime-valid inference for
/// multinomial count data", NeurIPS), valid however often it is looked at. With counts `nᵢ` (n = Σnᵢ), declared
/// shares `pᵢ` and a Dirichlet prior `aᵢ = k·pᵢ` centred on them (k = `concentration`, 100 by default, as the
/// authors' `savvi` package), the Bayes factor of "some other shares" against "the declared shares" is
///
/// ```
/// BF = Γ(Σaᵢ) / Γ(Σaᵢ + n) · Πᵢ Γ(aᵢ + nᵢ) / Γ(aᵢ) / Πᵢ pᵢ^nᵢ
/// p  = min(1, 1 / BF)
/// ```
///
/// (computed in logs with `lgamma`). `1/BF` is an anytime-valid p-value: under the declared split, the chance
/// that it ever falls below `threshold` is at most `threshold` (Ville's inequality), so the check can run at every
/// look. The running minimum of `p` over looks is valid too; this type gives the current value, which is what a
/// results page shows. The check **fails** when p < 0.001: then results are marked untrustworthy.
///
/// ```swift
/// let check = SampleRatioCheck(counts: [5_120, 4_880], expectedShares: [0.5, 0.5])
/// // check?.pValue ≈ 1, check?.failed == false
/// ```
public struct SampleRatioCheck: Sendable, Hashable {
    /// The default failure threshold on the anytime-valid p-value.
    public static let defaultThreshold = 0.001
    /// The default prior concentration k (the prior is Dirichlet(k·p)).
    public static let defaultConcentration = 100.0

    /// Units per arm, in the order of `expectedShares`.
    public var counts: [Int]
    /// The declared shares, normalised to sum to 1.
    public var expectedShares: [Double]
    /// The observed shares (all 0 without units).
    public var observedShares: [Double]
    /// log BF (natural log); +∞ when an arm declared at 0 % has units.
    public var logBayesFactor: Double
    /// The anytime-valid p-value min(1, 1/BF).
    public var pValue: Double
    /// The threshold below which the check fails.
    public var threshold: Double

    /// Whether the split is broken: p < threshold.
    public var failed: Bool { pValue < threshold }

    /// Checks counts against declared shares; nil when there are fewer than 2 arms, the lists differ in length, a
    /// count is negative, or the shares are not finite, non-negative and positive in sum.
    ///
    /// - Parameters:
    ///   - counts: units per arm.
    ///   - expectedShares: each arm's declared share (weights or percentages: normalised here). An arm declared at
    ///     0 must have no units (any unit fails the check).
    ///   - concentration: k of the prior Dirichlet(k·p) (> 0).
    ///   - threshold: the p-value below which the check fails.
    public init?(
        counts: [Int], expectedShares: [Double], concentration: Double = SampleRatioCheck.defaultConcentration,
        threshold: Double = SampleRatioCheck.defaultThreshold
    ) {
        guard counts.count >= 2, counts.count == expectedShares.count, counts.allSatisfy({ $0 >= 0 }),
            expectedShares.allSatisfy({ $0.isFinite && $0 >= 0 }), concentration > 0, concentration.isFinite
        else { return nil }
        let total = expectedShares.reduce(0, +)
        guard total > 0 else { return nil }
        let shares = expectedShares.map { $0 / total }
        self.counts = counts
        self.expectedShares = shares
        let units = counts.reduce(0, +)
        observedShares = counts.map { units > 0 ? Double($0) / Double(units) : 0 }
        logBayesFactor = Self.logBayesFactor(counts: counts, shares: shares, concentration: concentration)
        pValue = logBayesFactor <= 0 ? 1 : exp(-logBayesFactor)
        self.threshold = threshold
    }

    /// log BF for normalised shares; arms declared at 0 take no part unless they have units (then +∞).
    static func logBayesFactor(counts: [Int], shares: [Double], concentration: Double) -> Double {
        var sumA = 0.0
        var units = 0.0
        var logBF = 0.0
        for (count, share) in zip(counts, shares) {
            guard share > 0 else {
                if count > 0 { return .infinity }
                continue
            }
            let a = concentration * share
            let n = Double(count)
            sumA += a
            units += n
            logBF += lgamma(a + n) - lgamma(a) - n * log(share)
        }
        return logBF + lgamma(sumA) - lgamma(sumA + units)
    }
}
