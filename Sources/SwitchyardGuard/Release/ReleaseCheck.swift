public import Foundation
public import SwitchyardCore
public import SwitchyardStorage

/// One look at a release plan's stage: sessions in the stage's scope with the switch active and without it since
/// the stage began, and what the plan should do next.
///
/// With `c₁` crashed sessions out of `n₁` with the switch and `c₀` out of `n₀` without it, `δ = c₁/n₁ − c₀/n₀` and
/// `N = n₁n₀/(n₁ + n₀)` (``ReleaseCriteria/effectiveSessions(with:without:)``), both rules read one-sided bounds of
/// confidence sequences (``ReleaseCriteria/advanceUpperBound(estimate:standardError:sessions:)``,
/// ``ReleaseCriteria/rollbackLowerBound(estimate:standardError:sessions:)``), valid however often the stage is
/// looked at:
///
/// - **roll back** when `n₁ ≥ rollbackMinimumSessions` and `δ − SE₀·m_r(N) > 0`, `SE₀` the standard error under
///   "no difference" (the pooled rate): the switch's sessions are shown to crash more often. When the crashes'
///   spread is given (clients' sessions), they must also come from enough units and networks, and the bound must
///   stay above 0 without the crashes of the busiest networks;
/// - **advance** when the stage has soaked for `soak`, `n₁ ≥ minimumSessions` and `δ + SE_m·m_a(N) < margin`,
///   `SE_m` the standard error with the switch's rate at least the control's plus the margin (its variance at the
///   null hypothesis's edge): the switch's sessions are shown not to crash more than `margin` more often (a
///   non-inferiority test);
/// - **hold** otherwise, saying what it waits for.
///
/// ```swift
/// let check = ReleaseCheck(with: EventTally(sessions: 40_000, crashedSessions: 400),
///                          without: EventTally(sessions: 360_000, crashedSessions: 3_600),
///                          criteria: .defaults, timeInStage: .seconds(2400))
/// // check.verdict == .advance: 1 % against 1 %, upper bound of the difference 0.2 points < margin 0.25 points
/// ```
public struct ReleaseCheck: Sendable, Hashable {
    /// What the plan should do.
    public enum Verdict: String, Sendable, Hashable, CustomStringConvertible {
        /// Move to the next stage.
        case advance
        /// Stay in the stage: the evidence is not there yet (``ReleaseCheck/waitingFor`` says what is missing).
        case hold
        /// The switch is shown to crash more often: go back (to the previous stage, or off, as the plan says).
        case rollBack = "roll_back"

        public var description: String { rawValue }
    }

    /// Where the crashed sessions with the switch came from, and how widely they must be spread before they may
    /// roll a stage back: the crash guard's rules (`min_units`, `min_addresses`, the test without the busiest
    /// networks), for the clients' sessions, whose token is public.
    public struct Spread: Sendable, Hashable {
        /// Distinct units and networks of the crashed sessions with the switch, and the crashes left without the
        /// `minimumAddresses − 1` busiest networks.
        public var crashes: CrashSpread
        public var minimumUnits: Int
        public var minimumAddresses: Int

        public init(crashes: CrashSpread, minimumUnits: Int, minimumAddresses: Int) {
            self.crashes = crashes
            self.minimumUnits = minimumUnits
            self.minimumAddresses = minimumAddresses
        }
    }

    /// Sessions with the switch active, and crashed ones (clamped to 0...sessions).
    public var with: EventTally
    /// Sessions of the same population without the switch, and crashed ones.
    public var without: EventTally
    /// What `without` counts: the scope's sessions, or the namespace's (see ``stageTallies(of:in:counts:criteria:source:)``).
    public var control: ReleaseTallies.Control
    public var criteria: ReleaseCriteria
    public var timeInStage: Duration
    /// The spread the roll-back needs; nil: not checked (reporters' sessions, the simulation).
    public var spread: Spread?
    /// `c₁/n₁`; nil without sessions.
    public var rateWith: Double?
    /// `c₀/n₀`; nil without sessions.
    public var rateWithout: Double?
    /// `rateWith − rateWithout`; nil when either sample is empty.
    public var difference: Double?
    /// `n₁n₀/(n₁ + n₀)`: the time the confidence sequences run on.
    public var effectiveSessions: Int
    /// The lower bound of the difference at the criteria's confidence (one-sided, anytime-valid).
    public var lowerBound: Double?
    /// The upper bound of the difference at the criteria's confidence (one-sided, anytime-valid): below the margin
    /// to advance.
    public var upperBound: Double?
    /// The lower bound of the difference at the rollback confidence (anytime-valid): above 0 to roll back.
    public var rollbackLowerBound: Double?
    /// The same bound without the crashes of the busiest networks (when a spread is given).
    public var rollbackLowerBoundBeyondBusiest: Double?
    public var verdict: Verdict
    /// Why the stage holds (`312 of 1000 sessions needed`, `soak 12m of 30m`, `upper bound of the difference 0.41
    /// points not yet below the margin 0.25 points`); empty unless it holds.
    public var waitingFor: [String]
    /// One sentence on the verdict and its evidence, for an audit entry or a status line.
    public var summary: String

    /// Looks at a stage.
    ///
    /// - Parameters:
    ///   - with: sessions in the stage's scope with the switch active since the stage began.
    ///   - without: sessions in the same scope and time without it (see ``stageTallies(of:in:counts:criteria:source:)``).
    ///   - criteria: the plan's criteria.
    ///   - timeInStage: how long the stage has run.
    ///   - control: what `without` counts (recorded in the evidence).
    ///   - spread: where the crashed sessions with the switch came from, for clients' sessions; nil: not checked.
    public init(
        with: EventTally, without: EventTally, criteria: ReleaseCriteria, timeInStage: Duration,
        control: ReleaseTallies.Control = .scope, spread: Spread? = nil
    ) {
        self.with = GuardRule.clamped(with)
        self.without = GuardRule.clamped(without)
        self.criteria = criteria
        self.timeInStage = max(.zero, timeInStage)
        self.control = control
        self.spread = spread
        rateWith = self.with.crashRate
        rateWithout = self.without.crashRate
        let (n1, c1, n0) = (self.with.sessions, self.with.crashedSessions, self.without.sessions)
        effectiveSessions = ReleaseCriteria.effectiveSessions(with: n1, without: n0)
        if let p1 = rateWith, let p0 = rateWithout, n0 > 0 {
            let delta = p1 - p0
            difference = delta
            let observed = (p1 * (1 - p1) / Double(n1) + p0 * (1 - p0) / Double(n0)).squareRoot()
            let edge = min(1, max(p1, p0 + criteria.margin))
            let atMargin = (edge * (1 - edge) / Double(n1) + p0 * (1 - p0) / Double(n0)).squareRoot()
            lowerBound = delta - observed * criteria.advanceSequence.multiplier(units: effectiveSessions)
            upperBound = criteria.advanceUpperBound(
                estimate: delta, standardError: atMargin, sessions: effectiveSessions)
            rollbackLowerBound = Self.harmBound(
                crashes: c1, with: self.with.sessions, without: self.without, criteria: criteria)
            if let beyond = spread?.crashes.crashesBeyondBusiest {
                rollbackLowerBoundBeyondBusiest = Self.harmBound(
                    crashes: beyond, with: self.with.sessions, without: self.without,
                    criteria: criteria)
            }
        } else {
            effectiveSessions = 0
        }
        let confidence = Self.confidence(criteria.confidence)
        let rollbackConfidence = Self.confidence(criteria.rollbackConfidence)

        var spreadShort: [String] = []
        if n1 >= criteria.rollbackMinimumSessions, let lower = rollbackLowerBound, lower > 0 {
            if let spread {
                if spread.crashes.units < spread.minimumUnits {
                    spreadShort.append(
                        "crashes from \(spread.crashes.units) of \(spread.minimumUnits) units needed to roll back")
                }
                if let addresses = spread.crashes.addresses, addresses < spread.minimumAddresses {
                    spreadShort.append(
                        "crashes from \(addresses) of \(spread.minimumAddresses) networks needed to roll back")
                } else if let beyond = rollbackLowerBoundBeyondBusiest, !(beyond > 0) {
                    spreadShort.append(
                        "not shown worse without the crashes of the \(max(0, spread.minimumAddresses - 1)) busiest networks "
                            + "(lower bound \(Self.points(beyond)))")
                }
            }
            if spreadShort.isEmpty {
                verdict = .rollBack
                waitingFor = []
                summary =
                    "roll back: sessions with the switch crash more often (\(Self.percent(rateWith ?? 0)) of \(n1) against "
                    + "\(Self.percent(rateWithout ?? 0)) of \(n0) without it); lower bound of the difference \(Self.points(lower)) > 0 "
                    + "at \(rollbackConfidence) over every look"
                return
            }
        }
        var waiting: [String] = []
        if n1 < criteria.minimumSessions { waiting.append("\(n1) of \(criteria.minimumSessions) sessions needed") }
        if self.timeInStage < criteria.soak {
            waiting.append("soak \(Self.minutes(self.timeInStage)) of \(GuardDurationText.text(criteria.soak))")
        }
        if let upper = upperBound {
            if upper >= criteria.margin {
                waiting.append(
                    "upper bound of the difference \(Self.points(upper)) not yet below the margin \(Self.points(criteria.margin))"
                )
            }
        } else if n1 == 0 {
            waiting.append("no sessions with the switch yet")
        } else if control != .none {
            waiting.append("no sessions without the switch to compare with")
        }
        waiting += spreadShort
        // Control `none`: every session of the namespace has the switch (everyone at 100 %), so nothing is left to
        // compare with; the step into the stage was judged on the stage before, and this one passes on its soak
        // and sessions (the crash guard watches its absolute crash rate).
        waitingFor = waiting
        if waiting.isEmpty, upperBound == nil {
            verdict = .advance
            summary =
                "advance: every session has the switch (\(n1), crash rate \(Self.percent(rateWith ?? 0))), so there is "
                + "nothing to compare with; soak and sessions met"
        } else if waiting.isEmpty {
            verdict = .advance
            summary =
                "advance: sessions with the switch crash \(Self.percent(rateWith ?? 0)) of \(n1), without it "
                + "\(Self.percent(rateWithout ?? 0)) of \(n0); upper bound of the difference \(Self.points(upperBound ?? 0)) < margin "
                + "\(Self.points(criteria.margin)) at \(confidence) over every look"
        } else {
            verdict = .hold
            summary = "hold: " + waiting.joined(separator: "; ")
        }
    }

    /// The roll-back rule's bound for `crashes` crashed sessions of `with`: the anytime-valid lower bound of the
    /// difference, with the standard error of "no difference" (the pooled rate of both samples).
    static func harmBound(crashes: Int64, with sessions: Int64, without: EventTally, criteria: ReleaseCriteria)
        -> Double?
    {
        guard sessions > 0, without.sessions > 0 else { return nil }
        let (n1, n0) = (Double(sessions), Double(without.sessions))
        let c1 = Double(min(max(0, crashes), sessions))
        let pooled = (c1 + Double(without.crashedSessions)) / (n1 + n0)
        let standardError = (pooled * (1 - pooled) * (1 / n1 + 1 / n0)).squareRoot()
        return criteria.rollbackLowerBound(
            estimate: c1 / n1 - Double(without.crashedSessions) / n0, standardError: standardError,
            sessions: ReleaseCriteria.effectiveSessions(with: sessions, without: without.sessions))
    }

    /// Looks at a stage on the sessions ``stageTallies(of:in:counts:criteria:source:)`` chose.
    public init(_ tallies: ReleaseTallies, criteria: ReleaseCriteria, timeInStage: Duration, spread: Spread? = nil) {
        self.init(
            with: tallies.with, without: tallies.without, criteria: criteria, timeInStage: timeInStage,
            control: tallies.control,
            spread: spread)
    }

    /// The sessions of a scope with a switch and without it, from a namespace's counts over the stage's time.
    ///
    /// A stage scoped to cities sums their city dimensions (`[.city("lagos"), .city("nairobi")]`), one scoped to
    /// cohorts their cohort dimensions; "everyone" is `[.all]`. Pass dimensions of one kind: a session counts in
    /// its city and in its cohort, so mixing kinds counts it twice. Cities the namespace does not count on their
    /// own (`(other)`, unless declared in its `crash_guard: cities`) have no sessions here.
    ///
    /// - Parameters:
    ///   - key: the plugin switch.
    ///   - dimensions: the stage's scope.
    ///   - counts: the namespace's counts since the stage began.
    ///   - source: whose sessions: clients' by default.
    public static func tallies(
        of key: String, in dimensions: [EventDimension], counts: GuardCounts,
        source: EventSource = .client
    ) -> ReleaseTallies {
        var with = EventTally.zero
        var all = EventTally.zero
        for dimension in Set(dimensions.contains(.all) ? [.all] : dimensions) {
            with += counts.sessions(of: key, source: source, in: dimension)
            all += counts.baseline(source: source, in: dimension)
        }
        let without = GuardRule.clamped(all - with)
        return ReleaseTallies(
            with: GuardRule.clamped(with), without: without, control: without.sessions > 0 ? .scope : .none)
    }

    /// The sessions a stage is judged on: ``tallies(of:in:counts:source:)`` of its scope, with the control the
    /// runner uses.
    ///
    /// When the scope has fewer than `criteria.minimumSessions` sessions without the switch (a city at 100 %, or the
    /// first minutes of a stage) and the namespace has more, the sessions without the switch are the namespace's
    /// (other cities: a different population, but the only control left; ``ReleaseTallies/Control/namespace``).
    /// Everyone at 100 % leaves none (``ReleaseTallies/Control/none``): nothing to compare with.
    public static func stageTallies(
        of key: String, in dimensions: [EventDimension], counts: GuardCounts, criteria: ReleaseCriteria,
        source: EventSource = .client
    ) -> ReleaseTallies {
        var scoped = tallies(of: key, in: dimensions, counts: counts, source: source)
        if scoped.without.sessions < criteria.minimumSessions, !dimensions.contains(.all) {
            let everywhere = tallies(of: key, in: [.all], counts: counts, source: source)
            if everywhere.without.sessions > scoped.without.sessions {
                (scoped.without, scoped.control) = (everywhere.without, .namespace)
            }
        }
        return scoped
    }

    /// The start of the first minute a stage counts: the first bucket that cannot hold an event received before
    /// the stage began. Events may be stamped up to `futureSkew` ahead of the server's clock (and count in their own
    /// minute), so one received just before the stage began may sit in any bucket starting before `began +
    /// futureSkew`; from the first bucket starting at or after it, every event counted was received after the stage
    /// began.
    ///
    /// - Parameters:
    ///   - began: when the stage began.
    ///   - futureSkew: how far ahead of the server's clock events are accepted (10 minutes in flagsd).
    public static func countingStart(stageBegan began: Date, futureSkew: Duration) -> Date {
        let earliest = began.addingTimeInterval(TimeInterval(futureSkew.components.seconds))
        let bucket = EventAggregation.bucketStart(of: earliest)
        let start = Date(milliseconds: bucket)
        return start < earliest ? start.addingTimeInterval(60) : start
    }

    /// The check as JSON: counts, rates and bounds as fractions, criteria, verdict and what it waits for.
    public var tree: JSONObject {
        func number(_ value: Double?) -> JSONValue { value.map(JSONValue.double) ?? .null }
        var object = JSONObject([
            ("verdict", .string(verdict.rawValue)),
            ("sessions_with", .int64(with.sessions)), ("crashes_with", .int64(with.crashedSessions)),
            ("crash_rate_with", number(rateWith)),
            ("sessions_without", .int64(without.sessions)), ("crashes_without", .int64(without.crashedSessions)),
            ("crash_rate_without", number(rateWithout)), ("control", .string(control.rawValue)),
            ("difference", number(difference)), ("difference_lower", number(lowerBound)),
            ("difference_upper", number(upperBound)),
            ("rollback_difference_lower", number(rollbackLowerBound)),
            ("rule", .string("confidence-sequence")), ("effective_sessions", .int(effectiveSessions)),
            ("planned_sessions", .int(criteria.plannedSessions)),
            ("rollback_planned_sessions", .int(criteria.rollbackPlannedSessions)),
            ("time_in_stage_seconds", .int64(timeInStage.components.seconds)),
            ("min_sessions", .int64(criteria.minimumSessions)),
            ("soak_seconds", .int64(criteria.soak.components.seconds)),
            ("margin", .double(criteria.margin)), ("confidence", .double(criteria.confidence)),
            ("rollback_confidence", .double(criteria.rollbackConfidence)),
            ("rollback_min_sessions", .int64(criteria.rollbackMinimumSessions)),
            ("waiting_for", .array(waitingFor.map(JSONValue.string))), ("summary", .string(summary)),
        ])
        if let spread {
            object["crash_units"] = .int(spread.crashes.units)
            object["crash_addresses"] = spread.crashes.addresses.map(JSONValue.int) ?? .null
            object["min_units"] = .int(spread.minimumUnits)
            object["min_addresses"] = .int(spread.minimumAddresses)
            object["rollback_difference_lower_beyond_busiest"] = number(rollbackLowerBoundBeyondBusiest)
        }
        return object
    }

    /// `0.41 points`, `0.025 points`, `-0.1 points`: a difference of rates in percentage points.
    public static func points(_ fraction: Double) -> String {
        let value = fraction * 100
        var text = String(format: abs(value) < 0.1 && value != 0 ? "%.3f" : "%.2f", value)
        while text.contains("."), text.hasSuffix("0") { text.removeLast() }
        if text.hasSuffix(".") { text.removeLast() }
        if text == "-0" { text = "0" }
        return text + " points"
    }

    /// `1.19%`, `0.971%`: a crash rate.
    static func percent(_ fraction: Double) -> String {
        RateCheck.percent(fraction)
    }

    /// `99.99%`, `95%`: a confidence, with every digit it has (up to four decimals).
    static func confidence(_ fraction: Double) -> String {
        var text = String(format: "%.4f", fraction * 100)
        while text.contains("."), text.hasSuffix("0") { text.removeLast() }
        if text.hasSuffix(".") { text.removeLast() }
        return text + "%"
    }

    /// `12m`, `0m`: whole minutes of a time in stage.
    static func minutes(_ duration: Duration) -> String {
        let seconds = duration.components.seconds
        return seconds < 60 ? "\(seconds)s" : GuardDurationText.text(.seconds(seconds / 60 * 60))
    }
}

/// The sessions of a stage's scope with a switch and without it: what ``ReleaseCheck`` reads.
public struct ReleaseTallies: Sendable, Hashable {
    /// What the sessions without the switch are.
    public enum Control: String, Sendable, Hashable, CustomStringConvertible {
        /// Sessions of the stage's scope without the switch.
        case scope
        /// Sessions of the whole namespace without the switch: the scope has too few (a city at 100 %).
        case namespace
        /// None: every session has the switch (everyone at 100 %).
        case none

        public var description: String { rawValue }
    }

    /// Sessions with the switch active in the scope, and crashed ones.
    public var with: EventTally
    /// Sessions without it, as `control` says.
    public var without: EventTally
    public var control: Control

    public init(with: EventTally, without: EventTally, control: Control = .scope) {
        self.with = with
        self.without = without
        self.control = control
    }
}
