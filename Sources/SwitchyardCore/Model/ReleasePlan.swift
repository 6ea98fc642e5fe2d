/// A release plan: how flagsd rolls a plugin switch out, stage by stage, advancing on evidence and rolling back on
/// a bad signal (docs/release-plans.md).
///
/// Declared under a plugin switch (`release:` in its flag file, or through the API); flagsd keeps its progress in
/// ``state``. While a plan runs, it owns the switch's targeting: each stage's rules and default rollout are
/// ``targeting(at:)``. Left out of snapshots (clients do not need it).
///
/// ```yaml
/// plugin_switch_feed_promos:
///   type: plugin_switch
///   release:
///     soak: 30m                 # least time in each stage (a stage may say otherwise)
///     min_sessions: 1000        # least sessions with the switch in each stage's scope
///     margin: 0.25              # crash-rate points the switch may add and still advance
///     on_bad_signal: previous   # or off
///     guardrails:               # metrics the switch must not harm (crash rate is always one)
///       trip_booked: -0.5pp
///       fare: -2%
///     stages:
///       - {cities: [lagos], rollout: 1}
///       - {cities: [lagos], rollout: 100}
///       - {cities: [nairobi], rollout: 100}
///       - {rollout: 10}         # everyone
///       - {rollout: 100}
/// ```
public struct ReleasePlan: Sendable, Hashable {
    public var stages: [ReleaseStage]
    /// The least time in each stage; nil: the built-in default.
    public var soak: Duration?
    /// The least sessions with the switch active in a stage's scope before it may advance; nil: the default.
    public var minimumSessions: Int?
    /// How much higher (in crash-rate basis points: 25 is 0.25 points) the switch's crash rate may be than that of
    /// sessions without it, and the stage still advance (the non-inferiority margin); nil: the default.
    public var margin: Rollout?
    /// The one-sided confidence of the tests, in basis points (9500 = 95 %); nil: the default.
    public var confidence: Rollout?
    /// What flagsd does when the switch is shown to crash more than sessions without it, or worse on a guardrail.
    public var onBadSignal: BadSignalAction
    /// The metrics besides crash rate that each stage must show not worse than their margins, by name.
    public var guardrails: [ReleaseGuardrail]
    /// The plan's progress, kept by flagsd; nil: declared, not started.
    public var state: ReleaseState?

    public init(stages: [ReleaseStage], soak: Duration? = nil, minimumSessions: Int? = nil, margin: Rollout? = nil,
                confidence: Rollout? = nil, onBadSignal: BadSignalAction = .previous, guardrails: [ReleaseGuardrail] = [],
                state: ReleaseState? = nil) {
        self.stages = stages
        self.soak = soak
        self.minimumSessions = minimumSessions
        self.margin = margin
        self.confidence = confidence
        self.onBadSignal = onBadSignal
        self.guardrails = guardrails
        self.state = state
    }

    /// What to do when the switch is shown worse.
    public enum BadSignalAction: String, Sendable, Hashable, CaseIterable {
        /// Back to the previous stage (off before the first), and wait for a person.
        case previous
        /// Off: no rules, rollout 0.
        case off
    }

    /// The most stages a plan may have.
    public static let maximumStages = 20

    /// The plan as declared (without its progress): what a flag file states.
    public var declared: ReleasePlan {
        var plan = self
        plan.state = nil
        return plan
    }

    /// Whether flagsd is running it now.
    public var isRunning: Bool { state?.status == .running }

    /// The switch's rules and default rollout with stages `0...stage` reached (nil: none, the switch off).
    ///
    /// Every scope the stages so far named gets a rule, in the order the stages first named it, with the rollout of
    /// the latest of them (never below the default rollout: a later stage for everyone does not hold a city back);
    /// stages for everyone set the default rollout.
    public func targeting(at stage: Int?) -> (rules: [SwitchRule], rollout: Rollout) {
        guard let stage, !stages.isEmpty else { return ([], .off) }
        let reached = stages.prefix(min(stage, stages.count - 1) + 1)
        var rollout = Rollout.off
        var scoped: [(scope: Scope, rollout: Rollout)] = []
        for step in reached {
            if step.scope.isEverywhere {
                rollout = step.rollout
            } else if let index = scoped.firstIndex(where: { $0.scope.sameScope(as: step.scope) }) {
                scoped[index].rollout = step.rollout
            } else {
                scoped.append((step.scope, step.rollout))
            }
        }
        let rules = scoped.map { entry in
            SwitchRule(name: "release: \(entry.scope)",
                       conditions: Conditions(cities: entry.scope.cities, cohorts: entry.scope.cohorts),
                       rollout: max(entry.rollout, rollout))
        }
        return (rules, rollout)
    }
}

/// One stage of a release plan: a scope and a rollout, with its own soak and minimum sessions when they differ
/// from the plan's.
public struct ReleaseStage: Sendable, Hashable, CustomStringConvertible {
    /// Where the stage rolls out: cities, cohorts, or everyone (empty).
    public var scope: Scope
    public var rollout: Rollout
    public var soak: Duration?
    public var minimumSessions: Int?

    public init(scope: Scope = .everywhere, rollout: Rollout, soak: Duration? = nil, minimumSessions: Int? = nil) {
        self.scope = scope
        self.rollout = rollout
        self.soak = soak
        self.minimumSessions = minimumSessions
    }

    /// `cities lagos at 1%`, `everyone at 100%`.
    public var description: String {
        "\(scope.isEverywhere ? "everyone" : scope.description) at \(rollout)"
    }
}

/// Where a release plan is: its status, its stage, since when, and why (the last decision's words).
public struct ReleaseState: Sendable, Hashable {
    public enum Status: String, Sendable, Hashable, CaseIterable {
        /// flagsd advances it on evidence.
        case running
        /// Stopped by a person, or by a person's change to the switch; `resume` runs it again.
        case paused
        /// Every stage passed.
        case completed
        /// Shown worse: back to the previous stage (or off); a person resumes or aborts it.
        case rolledBack = "rolled_back"
        /// Stopped for good (by a person, or by the crash guard's trip); the switch stays as it is.
        case aborted
    }

    public var status: Status
    /// The stage reached (its targeting applies); nil: none (before the first stage, or rolled back to off).
    public var stage: Int?
    /// When the stage was entered or the status last changed, in seconds since 1970 (UTC).
    public var since: Int64
    /// Why it is in this state (`paused by alice: …`, `rolled back from stage 2: …`); nil when nothing to say.
    public var note: String?

    public init(status: Status, stage: Int?, since: Int64, note: String? = nil) {
        self.status = status
        self.stage = stage
        self.since = since
        self.note = note
    }

    /// Whether it may still move (running, paused or rolled back; not completed or aborted).
    public var isActive: Bool { status == .running || status == .paused || status == .rolledBack }
}
