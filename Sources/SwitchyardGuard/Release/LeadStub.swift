// TEMPORARY (lead): stands in for the helper's ReleaseCheck until its branch merges. Not to be committed.
public import SwitchyardCore
public import SwitchyardStorage

public struct ReleaseCriteria: Sendable, Hashable {
    public var minimumSessions: Int64
    public var soak: Duration
    public var margin: Double
    public var confidence: Double
    public init(minimumSessions: Int64, soak: Duration, margin: Double, confidence: Double) {
        self.minimumSessions = minimumSessions; self.soak = soak; self.margin = margin; self.confidence = confidence
    }
    public static let defaults = ReleaseCriteria(minimumSessions: 1000, soak: .seconds(1800), margin: 0.0025, confidence: 0.95)
}

public struct ReleaseCheck: Sendable, Hashable {
    public enum Verdict: String, Sendable, Hashable { case advance, hold, rollBack = "roll_back" }
    public var verdict: Verdict
    public var waitingFor: [String]
    public var tree: JSONObject { JSONObject([("verdict", .string(verdict.rawValue))]) }
    public init(with: EventTally, without: EventTally, criteria: ReleaseCriteria, timeInStage: Duration) {
        verdict = with.sessions >= criteria.minimumSessions && timeInStage >= criteria.soak ? .advance : .hold
        waitingFor = []
    }
    public static func tallies(of key: String, in dimensions: [EventDimension], counts: GuardCounts, source: EventSource = .client) -> (with: EventTally, without: EventTally) {
        var with = EventTally.zero, all = EventTally.zero
        for dimension in dimensions {
            with += counts.sessions(of: key, source: source, in: dimension)
            all += counts.baseline(source: source, in: dimension)
        }
        return (with, EventTally(sessions: all.sessions - with.sessions, crashedSessions: all.crashedSessions - with.crashedSessions))
    }
}
