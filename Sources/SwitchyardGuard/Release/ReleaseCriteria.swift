/// What a release plan's stage must show before it advances, and what makes it roll back: the parameters of
/// ``ReleaseCheck``, and the two anytime-valid tests it applies.
///
/// Crash rates and the margin are fractions (`0.0025` is 0.25 percentage points); confidences are one-sided
/// (`0.975`) and hold **over every look** at a stage, however often the runner looks: each rule reads a one-sided
/// bound of a **confidence sequence** (``ConfidenceSequence``, the same asymptotic confidence sequence experiment
/// results use) at `alpha = 2 · (1 − confidence)`, so the chance that the bound is *ever* on the wrong side of the
/// true difference during a stage is at most `1 − confidence`. The defaults were chosen by simulation
/// (`ReleaseSimulation`, `bench/release-simulation.sh`); their measured error rates are in
/// `docs/release-statistics.md`.
///
/// The two tests, for any difference `estimate` (with − without) with its `standardError` after `sessions`
/// effective sessions, are the functions a guardrail on another metric reuses:
///
/// ```swift
/// let criteria = ReleaseCriteria.defaults
/// // Non-inferiority: advance when the anytime-valid upper bound is below the margin.
/// let upper = criteria.advanceUpperBound(estimate: 0.0004, standardError: 0.0007, sessions: 20_000)  // ≈ 0.0026
/// // Harm: roll back when the anytime-valid lower bound (at the roll-back confidence) is above 0.
/// let lower = criteria.rollbackLowerBound(estimate: 0.03, standardError: 0.005, sessions: 2_000)
/// ```
public struct ReleaseCriteria: Sendable, Hashable {
    /// The fewest sessions with the switch active in the stage's scope, since the stage began, before it may advance.
    public var minimumSessions: Int64
    /// The shortest time in a stage before it may advance (a whole day's traffic is not the first hour's).
    public var soak: Duration
    /// How much more often the switch's sessions may crash than those without it, as a fraction (`0.0025`: 0.25
    /// percentage points): the stage advances once the upper bound of the difference is below it.
    public var margin: Double
    /// The one-sided confidence of that upper bound over every look at a stage (0.5 < confidence < 1): a plugin
    /// exactly at the margin passes a stage with a chance of at most `1 − confidence`.
    public var confidence: Double
    /// The one-sided confidence, over every look at a stage, with which the switch's sessions must be shown to
    /// crash more often than those without it before the stage rolls back: a healthy plugin is rolled back in a
    /// stage with a chance of at most `1 − rollbackConfidence`.
    public var rollbackConfidence: Double
    /// The fewest sessions with the switch active before the stage may roll back: a handful of sessions, a few of
    /// them crashed, is not evidence (the bounds are asymptotic).
    public var rollbackMinimumSessions: Int64
    /// N* of the advance rule's confidence sequence: the effective sessions (``effectiveSessions(with:without:)``)
    /// at which its bound is tightest. Near where stages decide: the bound is about 1.55 times a single look's there
    /// and widens slowly beyond it, fast before it.
    public var plannedSessions: Int
    /// N* of the roll-back rule's confidence sequence: tightest where a bad plugin should be caught.
    public var rollbackPlannedSessions: Int

    public init(
        minimumSessions: Int64, soak: Duration, margin: Double, confidence: Double, rollbackConfidence: Double,
        rollbackMinimumSessions: Int64, plannedSessions: Int = 10_000, rollbackPlannedSessions: Int = 1_000
    ) {
        self.minimumSessions = minimumSessions
        self.soak = soak
        self.margin = margin
        self.confidence = confidence
        self.rollbackConfidence = rollbackConfidence
        self.rollbackMinimumSessions = rollbackMinimumSessions
        self.plannedSessions = plannedSessions
        self.rollbackPlannedSessions = rollbackPlannedSessions
    }

    /// The values a plan uses where it names none.
    public static let defaults = ReleaseCriteria(
        minimumSessions: 1000, soak: .seconds(1800), margin: 0.0025, confidence: 0.975,
        rollbackConfidence: 0.9999, rollbackMinimumSessions: 200,
        plannedSessions: 10_000, rollbackPlannedSessions: 1_000)

    /// The advance rule's confidence sequence: two-sided at `alpha = 2 · (1 − confidence)`, so each side holds at
    /// `confidence` over every look; tightest at ``plannedSessions``.
    public var advanceSequence: ConfidenceSequence {
        ConfidenceSequence(alpha: 2 * (1 - confidence), plannedUnits: plannedSessions)
    }

    /// The roll-back rule's confidence sequence: two-sided at `alpha = 2 · (1 − rollbackConfidence)`; tightest at
    /// ``rollbackPlannedSessions``.
    public var rollbackSequence: ConfidenceSequence {
        ConfidenceSequence(alpha: 2 * (1 - rollbackConfidence), plannedUnits: rollbackPlannedSessions)
    }

    /// The guardrails' roll-back sequence: at the roll-back confidence, tightest at ``plannedSessions`` units (a
    /// guardrail's harm shows on units, over the stage, not on the first few hundred crashed sessions).
    public var guardrailRollbackSequence: ConfidenceSequence {
        ConfidenceSequence(alpha: 2 * (1 - rollbackConfidence), plannedUnits: plannedSessions)
    }

    /// The anytime-valid one-sided upper bound of a difference (with − without) at ``confidence``: the advance
    /// rule's, below ``margin`` to advance (non-inferiority).
    ///
    /// - Parameters:
    ///   - estimate: the difference, with the switch minus without it.
    ///   - standardError: its standard error.
    ///   - sessions: the effective sample size the sequence's time runs on (``effectiveSessions(with:without:)``
    ///     for two samples; the units of an experiment); at most 0 gives an infinite bound.
    /// - Returns: `estimate + standardError · m(sessions)`, `m` the ``advanceSequence``'s multiplier.
    public func advanceUpperBound(estimate: Double, standardError: Double, sessions: Int) -> Double {
        estimate + standardError * advanceSequence.multiplier(units: sessions)
    }

    /// The anytime-valid one-sided lower bound of a difference (with − without) at ``rollbackConfidence``: the
    /// roll-back rule's, above 0 to roll back (harm shown).
    ///
    /// - Parameters: as ``advanceUpperBound(estimate:standardError:sessions:)``.
    /// - Returns: `estimate − standardError · m(sessions)`, `m` the ``rollbackSequence``'s multiplier.
    public func rollbackLowerBound(estimate: Double, standardError: Double, sessions: Int) -> Double {
        estimate - standardError * rollbackSequence.multiplier(units: sessions)
    }

    /// The sessions of one sample, compared with an unlimited control, that weigh as much as `with` sessions
    /// compared with `without`: `n₁·n₀ / (n₁ + n₀)`, the time the release rules' sequences run on (it grows in
    /// proportion to the comparison's information while a stage's share stays the same). `n₁` when the control is
    /// much larger; half of each when the two are equal.
    public static func effectiveSessions(with: Int64, without: Int64) -> Int {
        guard with > 0, without > 0 else { return 0 }
        let (n1, n0) = (Double(with), Double(without))
        return Int((n1 * n0 / (n1 + n0)).rounded())
    }

    /// Why these criteria cannot be used (`margin 0 is not above 0`); empty when they can.
    public var problems: [String] {
        var problems: [String] = []
        if minimumSessions < 0 { problems.append("min_sessions \(minimumSessions) is negative") }
        if soak < .zero { problems.append("soak \(soak) is negative") }
        if !(margin > 0 && margin < 1) {
            problems.append("margin \(margin) is not between 0 and 1 (a fraction: 0.0025 is 0.25 points)")
        }
        if !(confidence > 0.5 && confidence < 1) {
            problems.append("confidence \(confidence) is not between 0.5 and 1")
        }
        if !(rollbackConfidence > 0.5 && rollbackConfidence < 1) {
            problems.append("rollback confidence \(rollbackConfidence) is not between 0.5 and 1")
        }
        if rollbackMinimumSessions < 0 {
            problems.append("rollback min_sessions \(rollbackMinimumSessions) is negative")
        }
        if plannedSessions < 1 { problems.append("planned sessions \(plannedSessions) is not positive") }
        if rollbackPlannedSessions < 1 {
            problems.append("rollback planned sessions \(rollbackPlannedSessions) is not positive")
        }
        return problems
    }
}
