import Foundation
import SwitchyardCore
import SwitchyardGuard
import Testing

/// The experiment analysis's formulas against values computed by hand (numpy/scipy, from the documented
/// formulas): sufficient statistics, the confidence sequence, Welch's difference, the delta method for ratios
/// and relative lift, CUPED and the sample ratio check.
struct ExperimentStatisticsTests {
    static func arm(_ ys: [Double], x xs: [Double]? = nil, d ds: [Double]? = nil) -> ArmMoments {
        var arm = ArmMoments()
        for (index, y) in ys.enumerated() {
            arm.add(y: y, x: xs?[index] ?? 0, d: ds?[index] ?? 0)
        }
        return arm
    }

    static func close(_ actual: Double?, _ expected: Double, tolerance: Double = 1e-9) -> Bool {
        guard let actual else { return false }
        return abs(actual - expected) <= tolerance * max(1, abs(expected))
    }

    @Test func mergedShardsHoldTheSameSumsAsOneArm() {
        let ys: [Double] = [1, 0, 3, 7, 2, 5]
        let xs: [Double] = [0, 2, 1, 4, 4, 1]
        let ds: [Double] = [1, 1, 2, 3, 1, 2]
        let whole = Self.arm(ys, x: xs, d: ds)
        let merged = Self.arm(Array(ys[..<2]), x: Array(xs[..<2]), d: Array(ds[..<2]))
            .merging(Self.arm(Array(ys[2...]), x: Array(xs[2...]), d: Array(ds[2...])))
        #expect(merged == whole)
        #expect(whole.units == 6)
        #expect(whole.sumY == 18 && whole.sumY2 == 88 && whole.sumXY == 44 && whole.sumYD == 40)
        #expect(Self.close(whole.varianceY, (88 - 18 * 18 / 6.0) / 5))
    }

    @Test func varianceIsNeverNegativeAndNeedsTwoUnits() {
        #expect(Self.arm([3]).varianceY == nil)
        // Σy² − (Σy)²/n cancels to a hair below 0 for identical values in floating point; it is clamped.
        let same = Self.arm(Array(repeating: 0.1, count: 10))
        #expect(same.varianceY == 0 || (same.varianceY ?? -1) > 0)
    }

    @Test func theMultiplierIsTheNormalMixtureBoundary() {
        let sequence = ConfidenceSequence()
        // scipy-free check: sqrt(2(Nρ²+1)/(Nρ²) · log(sqrt(Nρ²+1)/α)), ρ² = (−2 log α + log(1 − 2 log α))/N*.
        #expect(Self.close(sequence.multiplier(units: 10_000), 3.0352089903762534))
        #expect(Self.close(sequence.multiplier(units: 100), 9.084379437310579))
        #expect(Self.close(sequence.multiplier(units: 28_000), 3.089934278524724))
        // Tightest at N*, whatever N* is.
        #expect(Self.close(ConfidenceSequence(plannedUnits: 8).multiplier(units: 8), 3.0352089903762534))
        #expect(sequence.multiplier(units: 9_000) > sequence.multiplier(units: 10_000))
        #expect(sequence.multiplier(units: 11_000) > sequence.multiplier(units: 10_000))
        #expect(sequence.multiplier(units: 0) == .infinity)
        #expect(abs(sequence.fixedHorizonMultiplier - 1.959963984540054) < 1e-9)
    }

    @Test func theDifferenceOfMeansUsesWelchsVarianceAndTheSequence() {
        let result = ExperimentAnalysis.compare(
            control: Self.arm([1, 2, 3, 4]), treatment: Self.arm([2, 4, 6, 8]),
            kind: .value, plannedUnits: 8)
        #expect(result.controlMean == 2.5 && result.treatmentMean == 5)
        #expect(result.difference == 2.5)
        // √(s_t²/n_t + s_c²/n_c) = √(6.667/4 + 1.667/4)
        #expect(Self.close(result.standardError, 1.4433756729740645))
        #expect(Self.close(result.lower, -1.880946819101255))
        #expect(Self.close(result.upper, 6.880946819101255))
        // Delta method: √(V_t/c̄² + t̄²·V_c/c̄⁴)
        #expect(Self.close(result.relativeLift, 1))
        #expect(Self.close(result.relativeStandardError, 0.7302967433402215))
        #expect(Self.close(result.relativeLower, -1.2166032410287393))
        #expect(Self.close(result.relativeUpper, 3.2166032410287393))
        #expect(!result.decided && result.verdict == .inconclusive)
        #expect(result.cuped == nil)
        #expect(result.controlUnits == 4 && result.treatmentUnits == 4)
    }

    @Test func aRatioMetricUsesTheDeltaMethod() {
        let control = Self.arm([2, 0, 3, 1], d: [1, 1, 2, 1])
        let treatment = Self.arm([4, 1, 2, 2, 5], d: [2, 1, 1, 1, 3])
        let result = ExperimentAnalysis.compare(control: control, treatment: treatment, kind: .ratio, plannedUnits: 9)
        #expect(Self.close(result.controlMean, 1.2) && Self.close(result.treatmentMean, 1.75))
        #expect(Self.close(result.difference, 0.55))
        // Var(R̂) = (s_y² − 2R s_yd + R² s_d²)/(n d̄²) per arm.
        #expect(Self.close(result.standardError, 0.38961252118825274))
        #expect(Self.close(result.lower, -0.632555427073743))
        #expect(Self.close(result.upper, 1.732555427073743))
        #expect(Self.close(result.relativeLift, 0.4583333333333335))
        #expect(Self.close(result.relativeStandardError, 0.4570645668407439))
        // A ratio never takes CUPED, even with pre-entry values.
        let withX = ExperimentAnalysis.compare(
            control: Self.arm([2, 0, 3, 1], x: [1, 2, 3, 4], d: [1, 1, 2, 1]),
            treatment: Self.arm([4, 1, 2, 2, 5], x: [4, 3, 2, 1, 0], d: [2, 1, 1, 1, 3]),
            kind: .ratio, plannedUnits: 9)
        #expect(withX.cuped == nil && withX.difference == result.difference)
    }

    @Test func aRatioWithoutDenominatorHasNoMean() {
        let result = ExperimentAnalysis.compare(
            control: Self.arm([1, 2], d: [0, 0]), treatment: Self.arm([1, 2], d: [1, 1]), kind: .ratio)
        #expect(result.controlMean == nil && result.treatmentMean == 1.5)
        #expect(result.difference == nil && result.lower == nil && result.verdict == .inconclusive)
    }

    @Test func cupedMatchesTheHandComputation() throws {
        let control = Self.arm([3, 5, 2, 8, 6], x: [2, 4, 2, 7, 5])
        let treatment = Self.arm([4, 7, 3, 9, 8, 5], x: [2, 5, 1, 8, 6, 4])
        let result = ExperimentAnalysis.compare(control: control, treatment: treatment, kind: .value)
        let cuped = try #require(result.cuped)
        // θ = s_xy/s_x² over both arms; adjusted means ȳ − θ(x̄_arm − x̄).
        #expect(Self.close(cuped.theta, 0.9894366197183099))
        #expect(Self.close(cuped.adjustedControlMean, 4.979897567221511))
        #expect(Self.close(cuped.adjustedTreatmentMean, 5.850085360648741))
        #expect(Self.close(result.difference, 0.8701877934272302))
        #expect(Self.close(result.standardError, 0.29057548502880465))
        #expect(Self.close(cuped.varianceReduction, 0.9592761515274638))
        // The observed means stay as observed.
        #expect(Self.close(result.controlMean, 4.8) && Self.close(result.treatmentMean, 6))
    }

    @Test func cupedShrinksTheVarianceWhenThePastPredictsTheFuture() throws {
        var control = ArmMoments()
        var treatment = ArmMoments()
        // Deterministic: units' levels spread widely, periods differ by a small wobble.
        for unit in 0..<400 {
            let level = Double((unit * 37) % 101)
            let wobble = Double((unit * 13) % 7) - 3
            if unit % 2 == 0 {
                control.add(y: level + wobble, x: level)
            } else {
                treatment.add(y: level + wobble + 2, x: level)
            }
        }
        let adjusted = ExperimentAnalysis.compare(control: control, treatment: treatment, kind: .value)
        let plain = ExperimentAnalysis.compare(control: control, treatment: treatment, kind: .value, cuped: false)
        let reduction = try #require(adjusted.cuped?.varianceReduction)
        #expect(reduction > 0.9)
        #expect((adjusted.standardError ?? 1) < (plain.standardError ?? 0) * 0.4)
        #expect(plain.cuped == nil)
        // The +2 effect is found with the covariate, not without it.
        #expect(adjusted.verdict == .better)
        #expect(plain.verdict == .inconclusive)
    }

    @Test func withoutPreEntryValuesCupedLeavesThePlainEstimate() {
        let control = Self.arm([3, 5, 2, 8, 6])
        let treatment = Self.arm([4, 7, 3, 9, 8, 5])
        let result = ExperimentAnalysis.compare(control: control, treatment: treatment, kind: .count)
        let plain = ExperimentAnalysis.compare(control: control, treatment: treatment, kind: .count, cuped: false)
        #expect(result.cuped == nil)
        #expect(result == plain)
        // A constant covariate has no variance to use either.
        let constant = ExperimentAnalysis.compare(
            control: Self.arm([3, 5, 2, 8, 6], x: [1, 1, 1, 1, 1]),
            treatment: Self.arm([4, 7, 3, 9, 8, 5], x: [1, 1, 1, 1, 1, 1]), kind: .count)
        #expect(
            constant.cuped == nil && constant.difference == plain.difference
                && constant.standardError == plain.standardError)
    }

    @Test func theVerdictFollowsWhichWayIsBetter() {
        var control = ArmMoments()
        var treatment = ArmMoments()
        for unit in 0..<20_000 {
            control.add(y: unit % 10 == 0 ? 1 : 0)  // 10 %
            treatment.add(y: unit % 5 == 0 ? 1 : 0)  // 20 %
        }
        let higher = ExperimentAnalysis.compare(
            control: control, treatment: treatment, kind: .conversion, better: .higher)
        #expect(higher.decided && higher.verdict == .better)
        #expect((higher.lower ?? 0) > 0 && Self.close(higher.relativeLift, 1))
        let crashes = MetricDefinition(name: "crashed", kind: .conversion, better: .lower)
        let lower = ExperimentAnalysis.compare(control: control, treatment: treatment, metric: crashes)
        #expect(lower.decided && lower.verdict == .worse)
        let reversed = ExperimentAnalysis.compare(control: treatment, treatment: control, metric: crashes)
        #expect(reversed.verdict == .better && (reversed.upper ?? 0) < 0)
    }

    @Test func tooFewUnitsGiveMeansButNoInterval() {
        let none = ExperimentAnalysis.compare(control: ArmMoments(), treatment: Self.arm([1]), kind: .conversion)
        #expect(none.controlMean == nil && none.treatmentMean == 1 && none.difference == nil)
        let one = ExperimentAnalysis.compare(control: Self.arm([0]), treatment: Self.arm([1, 0]), kind: .conversion)
        #expect(one.difference == 0.5 && one.standardError == nil && one.lower == nil && one.verdict == .inconclusive)
        #expect(one.relativeLift == nil, "the control's mean is 0: no lift")
        // Two units that converted against two that did not: no spread, a standard error of 0, which is no
        // precision at all; no interval, no verdict.
        let constant = ExperimentAnalysis.compare(
            control: Self.arm([0, 0]), treatment: Self.arm([1, 1]), kind: .conversion)
        #expect(constant.difference == 1 && constant.standardError == nil && constant.lower == nil)
        #expect(!constant.decided && constant.verdict == .inconclusive)
    }

    @Test func theSampleRatioBayesFactorMatchesLgamma() throws {
        // log BF = lgamma(Σa) − lgamma(Σa + n) + Σ(lgamma(aᵢ + nᵢ) − lgamma(aᵢ)) − Σ nᵢ log pᵢ, aᵢ = 100 pᵢ (scipy.special.gammaln).
        let even = try #require(SampleRatioCheck(counts: [60, 40], expectedShares: [0.5, 0.5]))
        #expect(Self.close(even.logBayesFactor, 0.6588918180466266))
        #expect(Self.close(even.pValue, exp(-0.6588918180466266)) && !even.failed)
        let three = try #require(SampleRatioCheck(counts: [230, 260, 510], expectedShares: [20, 30, 50]))
        #expect(Self.close(three.logBayesFactor, 2.164004916990052))
        #expect(three.expectedShares == [0.2, 0.3, 0.5])
        let broken = try #require(SampleRatioCheck(counts: [5300, 4700], expectedShares: [1, 1]))
        #expect(Self.close(broken.logBayesFactor, 15.524011683468416))
        #expect(broken.failed && broken.pValue < 1e-6)
        let fine = try #require(SampleRatioCheck(counts: [5020, 4980], expectedShares: [1, 1]))
        #expect(Self.close(fine.logBayesFactor, -2.230819493481249))
        #expect(fine.pValue == 1 && !fine.failed)
        #expect(Self.close(fine.observedShares[0], 0.502))
    }

    @Test func theSampleRatioCheckRefusesWhatItCannotTest() throws {
        #expect(SampleRatioCheck(counts: [10], expectedShares: [1]) == nil)
        #expect(SampleRatioCheck(counts: [10, 10], expectedShares: [1]) == nil)
        #expect(SampleRatioCheck(counts: [10, -1], expectedShares: [1, 1]) == nil)
        #expect(SampleRatioCheck(counts: [10, 10], expectedShares: [0, 0]) == nil)
        // An arm declared at 0 with units is a broken split; without units it takes no part.
        let leaking = try #require(SampleRatioCheck(counts: [10, 10, 1], expectedShares: [1, 1, 0]))
        #expect(leaking.failed && leaking.pValue == 0)
        let empty = try #require(SampleRatioCheck(counts: [10, 10, 0], expectedShares: [1, 1, 0]))
        #expect(!empty.failed)
        let nothing = try #require(SampleRatioCheck(counts: [0, 0], expectedShares: [1, 1]))
        #expect(nothing.pValue == 1 && nothing.logBayesFactor == 0)
    }
}
