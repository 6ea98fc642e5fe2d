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

    public init(
        stages: [ReleaseStage], soak: Duration? = nil, minimumSessions: Int? = nil, margin: Rollout? = nil,
        confidence: Rollout? = nil, onBadSignal: BadSignalAction = .previous, guardrails: [ReleaseGuardrail] = [],
        state: ReleaseState? = nil
    ) {
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

    /// The switch's rules and default rollout with stages `0...stage` reached (nil: none, the switch off), within the
    /// limits the plan started with (``ReleaseState/limits``).
    ///
    /// Every scope the stages so far named gets a rule, in the order the stages first named it, with the rollout of
    /// the latest of them (never below the rollout for everyone: a later stage for everyone does not hold a city
    /// back); stages for everyone set the default rollout, or, when the switch has limits, a rule for everyone
    /// within them (the default rollout stays 0). Every rule carries the limits; the switch's rules at 0 % come first.
    public func targeting(at stage: Int?) -> (rules: [SwitchRule], rollout: Rollout) {
        guard let stage, !stages.isEmpty else { return ([], .off) }
        let (scoped, everyone) = reach(at: stage)
        return (state?.limits ?? .none).targeting(scoped: scoped, everyone: everyone, everyoneName: "release: everyone")
    }

    /// The targeting a completed plan leaves: its last stage's, folded into the simplest rules that mean the same.
    /// The stages' rules that the rollout for everyone already gives fold away, so a plan ending with everyone at
    /// 100 % leaves no rules and rollout 100, or, within limits, one rule per limit at 100 % and rollout 0.
    public var completedTargeting: (rules: [SwitchRule], rollout: Rollout) {
        guard !stages.isEmpty else { return ([], .off) }
        var (scoped, everyone) = reach(at: stages.count - 1)
        scoped.removeAll { max($0.rollout, everyone) == everyone }
        return (state?.limits ?? .none).targeting(scoped: scoped, everyone: everyone, everyoneName: "release completed")
    }

    /// The scopes stages `0...stage` named, each at its latest rollout, and the latest rollout for everyone.
    private func reach(at stage: Int) -> (scoped: [(scope: Scope, rollout: Rollout)], everyone: Rollout) {
        var everyone = Rollout.off
        var scoped: [(scope: Scope, rollout: Rollout)] = []
        for step in stages.prefix(min(stage, stages.count - 1) + 1) {
            if step.scope.isEverywhere {
                everyone = step.rollout
            } else if let index = scoped.firstIndex(where: { $0.scope.sameScope(as: step.scope) }) {
                scoped[index].rollout = step.rollout
            } else {
                scoped.append((step.scope, step.rollout))
            }
        }
        return (scoped, everyone)
    }
}

/// What a plan's stages act within: the switch's standing limits, taken from its rules when the plan starts and kept
/// in the plan's state, so that no stage, rollback or completion widens who may get the plugin
/// (docs/release-plans.md, "Limits").
///
/// Stages choose cities and cohorts; what else a rule of the switch asks (app versions, platforms, units, cities or
/// cohorts left out) is a limit, and every rule a stage sets carries it. Rules at 0 % keep the switch off for
/// whom they match, and stay in front. Disables, disabled scopes and kill entries are not targeting: no step
/// touches them.
public struct ReleaseLimits: Sendable, Hashable {
    /// A unit may get the switch only when it meets one of these: each a rule's conditions without cities and cohorts,
    /// each distinct one once. Empty: no limit.
    public var clauses: [Conditions]
    /// The switch's rules at 0 %, kept first.
    public var exclusions: [SwitchRule]

    public init(clauses: [Conditions] = [], exclusions: [SwitchRule] = []) {
        self.clauses = clauses
        self.exclusions = exclusions
    }

    /// No limit: the stages decide alone.
    public static let none = ReleaseLimits()

    public var isNone: Bool { clauses.isEmpty && exclusions.isEmpty }

    /// The standing limits of a switch's targeting.
    ///
    /// A default rollout above 0, or a rule above 0 with no condition but cities and cohorts, reaches any unit: no
    /// clause then. A switch that reaches nobody (every rule at 0 %, rollout 0) has no clause either: a plan turns
    /// it on.
    public init(rules: [SwitchRule], rollout: Rollout) {
        exclusions = rules.filter { $0.rollout == .off }
        let reaching = rules.filter { $0.rollout != .off }.map { Self.clause(of: $0.conditions) }
        clauses = []
        guard rollout == .off, !reaching.contains(where: \.isEmpty) else { return }
        for clause in reaching where !clauses.contains(clause) { clauses.append(clause) }
    }

    /// A rule's conditions without the cities and cohorts stages choose.
    public static func clause(of conditions: Conditions) -> Conditions {
        var clause = conditions
        clause.cities = []
        clause.cohorts = []
        return clause
    }

    /// The rules and default rollout of scoped rollouts and a rollout for everyone, within these limits.
    func targeting(
        scoped: [(scope: Scope, rollout: Rollout)], everyone: Rollout,
        everyoneName: String
    ) -> (rules: [SwitchRule], rollout: Rollout) {
        let within = clauses.isEmpty ? [Conditions()] : clauses
        var rules = exclusions
        for entry in scoped {
            for clause in within {
                var conditions = clause
                conditions.cities = entry.scope.cities
                conditions.cohorts = entry.scope.cohorts
                rules.append(
                    SwitchRule(
                        name: "release: \(entry.scope)", conditions: conditions, rollout: max(entry.rollout, everyone)))
            }
        }
        guard !clauses.isEmpty else { return (rules, everyone) }
        if everyone != .off {
            rules += clauses.map { SwitchRule(name: everyoneName, conditions: $0, rollout: everyone) }
        }
        return (rules, .off)
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
    /// The switch's standing limits when the plan started, which every stage's targeting keeps (none for a plan
    /// stored before flagsd kept them).
    public var limits: ReleaseLimits

    public init(status: Status, stage: Int?, since: Int64, note: String? = nil, limits: ReleaseLimits = .none) {
        self.status = status
        self.stage = stage
        self.since = since
        self.note = note
        self.limits = limits
    }

    /// Whether it may still move (running, paused or rolled back; not completed or aborted).
    public var isActive: Bool { status == .running || status == .paused || status == .rolledBack }
}
