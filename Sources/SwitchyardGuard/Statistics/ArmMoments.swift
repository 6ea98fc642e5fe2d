/// The sufficient statistics of one experiment arm for one metric: the number of units and the sums that the
/// analysis needs, so that a result is a few arithmetic operations however many units the arm has.
///
/// Each unit (the unit of randomisation: a rider, not a session) is one observation with
/// - `y`: its value of the metric since it entered the experiment (a conversion's 0 or 1, a count, a capped sum;
///   for a ratio metric, the numerator's per-unit sum),
/// - `x`: its value of the same metric before it entered (CUPED's covariate; 0 when it has none),
/// - `d`: for a ratio metric, the denominator's per-unit sum (0 otherwise).
///
/// A unit of the arm that never reported the metric is still an observation, with `y = 0`.
///
/// ```swift
/// var control = ArmMoments()
/// control.add(y: 1, x: 0)      // a unit that booked a trip
/// control.add(y: 0, x: 1)      // one that did not (it had booked one before entering)
/// control.merge(otherShard)    // sums add up
/// ```
public struct ArmMoments: Sendable, Hashable, Codable {
    /// Units in the arm (n).
    public var units: Int
    /// Σy
    public var sumY: Double
    /// Σy²
    public var sumY2: Double
    /// Σx
    public var sumX: Double
    /// Σx²
    public var sumX2: Double
    /// Σxy
    public var sumXY: Double
    /// Σd
    public var sumD: Double
    /// Σd²
    public var sumD2: Double
    /// Σyd
    public var sumYD: Double

    /// Statistics from stored sums (all zero: an empty arm).
    public init(
        units: Int = 0, sumY: Double = 0, sumY2: Double = 0, sumX: Double = 0, sumX2: Double = 0, sumXY: Double = 0,
        sumD: Double = 0, sumD2: Double = 0, sumYD: Double = 0
    ) {
        self.units = units
        self.sumY = sumY
        self.sumY2 = sumY2
        self.sumX = sumX
        self.sumX2 = sumX2
        self.sumXY = sumXY
        self.sumD = sumD
        self.sumD2 = sumD2
        self.sumYD = sumYD
    }

    /// Adds one unit's observation.
    ///
    /// - Parameters:
    ///   - y: the unit's post-entry value (a ratio metric's numerator).
    ///   - x: its pre-entry value of the same metric, for CUPED (0 when none).
    ///   - d: a ratio metric's denominator for the unit (0 for other kinds).
    public mutating func add(y: Double, x: Double = 0, d: Double = 0) {
        units += 1
        sumY += y
        sumY2 += y * y
        sumX += x
        sumX2 += x * x
        sumXY += x * y
        sumD += d
        sumD2 += d * d
        sumYD += y * d
    }

    /// Adds another set of units (another shard, another period) to these.
    public mutating func merge(_ other: ArmMoments) {
        units += other.units
        sumY += other.sumY
        sumY2 += other.sumY2
        sumX += other.sumX
        sumX2 += other.sumX2
        sumXY += other.sumXY
        sumD += other.sumD
        sumD2 += other.sumD2
        sumYD += other.sumYD
    }

    /// These units and another's together.
    public func merging(_ other: ArmMoments) -> ArmMoments {
        var merged = self
        merged.merge(other)
        return merged
    }

    /// ȳ, the mean of `y` per unit; nil without units.
    public var meanY: Double? { units > 0 ? sumY / Double(units) : nil }
    /// x̄, the mean of `x` per unit; nil without units.
    public var meanX: Double? { units > 0 ? sumX / Double(units) : nil }
    /// d̄, the mean of `d` per unit; nil without units.
    public var meanD: Double? { units > 0 ? sumD / Double(units) : nil }

    /// s_y², the sample variance of `y` (divisor n − 1); nil below 2 units.
    public var varianceY: Double? { Self.covariance(sumY2, sumY, sumY, units).map { max(0, $0) } }
    /// s_x², the sample variance of `x`; nil below 2 units.
    public var varianceX: Double? { Self.covariance(sumX2, sumX, sumX, units).map { max(0, $0) } }
    /// s_d², the sample variance of `d`; nil below 2 units.
    public var varianceD: Double? { Self.covariance(sumD2, sumD, sumD, units).map { max(0, $0) } }
    /// s_xy, the sample covariance of `x` and `y`; nil below 2 units.
    public var covarianceXY: Double? { Self.covariance(sumXY, sumX, sumY, units) }
    /// s_yd, the sample covariance of `y` and `d`; nil below 2 units.
    public var covarianceYD: Double? { Self.covariance(sumYD, sumY, sumD, units) }

    /// (Σab − Σa·Σb/n) / (n − 1): a sample covariance from sums (a variance when a = b). The one-pass form loses
    /// digits when the mean is large against the spread; for per-unit metrics (values capped at 1e9, spreads of
    /// the order of the mean) double precision leaves far more digits than the interval shows. Callers clamp
    /// variances at 0.
    static func covariance(_ sumAB: Double, _ sumA: Double, _ sumB: Double, _ units: Int) -> Double? {
        guard units >= 2 else { return nil }
        let n = Double(units)
        return (sumAB - sumA * sumB / n) / (n - 1)
    }
}
