/// What a release plan's stage must show before it advances, and what makes it roll back: the parameters of
/// ``ReleaseCheck``.
///
/// Crash rates and the margin are fractions (`0.0025` is 0.25 percentage points); confidences are one-sided
/// (`0.95`). The defaults were chosen by simulation (`ReleaseSimulation`, `bench/release-simulation.sh`); their
/// measured error rates are in `docs/release-statistics.md`.
public struct ReleaseCriteria: Sendable, Hashable {
    /// The fewest sessions with the switch active in the stage's scope, since the stage began, before it may advance.
    public var minimumSessions: Int64
    /// The shortest time in a stage before it may advance (a whole day's traffic is not the first hour's).
    public var soak: Duration
    /// How much more often the switch's sessions may crash than those without it, as a fraction (`0.0025`: 0.25
    /// percentage points): the stage advances once the upper bound of the difference is below it.
    public var margin: Double
    /// The one-sided confidence of that upper bound (0.5 < confidence < 1).
    public var confidence: Double
    /// The one-sided confidence with which the switch's sessions must be shown to crash more often than those
    /// without it before the stage rolls back: high, because the runner tests the growing sample every minute.
    public var rollbackConfidence: Double
    /// The fewest sessions with the switch active before the stage may roll back: a handful of sessions, a few of
    /// them crashed, is not evidence.
    public var rollbackMinimumSessions: Int64

    public init(minimumSessions: Int64, soak: Duration, margin: Double, confidence: Double, rollbackConfidence: Double,
                rollbackMinimumSessions: Int64) {
        self.minimumSessions = minimumSessions
        self.soak = soak
        self.margin = margin
        self.confidence = confidence
        self.rollbackConfidence = rollbackConfidence
        self.rollbackMinimumSessions = rollbackMinimumSessions
    }

    /// The values a plan uses where it names none.
    public static let defaults = ReleaseCriteria(minimumSessions: 1000, soak: .seconds(1800), margin: 0.0025, confidence: 0.975,
                                                 rollbackConfidence: 0.99999, rollbackMinimumSessions: 200)

    /// Why these criteria cannot be used (`margin 0 is not above 0`); empty when they can.
    public var problems: [String] {
        var problems: [String] = []
        if minimumSessions < 0 { problems.append("min_sessions \(minimumSessions) is negative") }
        if soak < .zero { problems.append("soak \(soak) is negative") }
        if !(margin > 0 && margin < 1) { problems.append("margin \(margin) is not between 0 and 1 (a fraction: 0.0025 is 0.25 points)") }
        if !(confidence > 0.5 && confidence < 1) { problems.append("confidence \(confidence) is not between 0.5 and 1") }
        if !(rollbackConfidence > 0.5 && rollbackConfidence < 1) {
            problems.append("rollback confidence \(rollbackConfidence) is not between 0.5 and 1")
        }
        if rollbackMinimumSessions < 0 { problems.append("rollback min_sessions \(rollbackMinimumSessions) is negative") }
        return problems
    }
}
