import Foundation
import SwitchyardCore
import SwitchyardGuard
import SwitchyardStorage

/// The crash guard's decisions inside flagsd, without I/O, locks or clocks: ``CrashGuard`` reads the store and the
/// time, asks here what to do, and does it. The rule itself (``GuardRule``) and the budget (``GuardBudget``) live in
/// SwitchyardGuard; this is what flagsd decides with them on a namespace's flag set, counts and history.
///
/// - On the ingestion path, ``wouldTrip(_:gate:flagSet:window:scopes:history:now:counts:)`` says whether the counts
///   held in memory make a switch look like it trips (the shell then queues a confirmation, ``GuardWorkQueue``).
/// - A confirmation is decided in two steps around its one read of the store's counts:
///   ``confirmation(of:in:history:now:)`` says whether to count and from when, ``decide(_:counts:history:flagSet:now:)``
///   what to do on the counts read: trip, propose, hold, or nothing.
/// - A trip commits as ``disabling(_:in:expecting:_:)``, a conditional edit of the flag set.
/// - The gauges (``assessAll(_:window:history:now:)``) and the API's view (``overview(of:window:scopes:history:now:)``)
///   assess every switch on the counts they are given.
enum GuardCore {
    /// The buckets a switch's window covers at a time, and whether the switch is in its cool-down.
    struct Span: Sendable, Hashable {
        /// The first bucket counted (milliseconds): the window's, or the first minute after the latest re-enable.
        var from: Int64
        /// A person re-enabled the switch less than the policy's cool-down ago: the guard leaves it alone.
        var coolingDown: Bool
        /// The latest re-enable of the switch, if any.
        var reenabled: GuardHistory.Reenable?
    }

    /// The buckets a switch's window covers now, and whether it is in its cool-down.
    static func span(_ key: String, policy: ResolvedCrashGuardPolicy, history: GuardHistory, now: Date) -> Span {
        var from = EventAggregation.bucketStart(of: now - policy.window.timeInterval)
        var coolingDown = false
        let reenable = history.lastReenable(of: key)
        if let reenable {
            // Only minutes that start after the re-enable: the minute it happened in holds earlier sessions.
            let start = EventAggregation.bucketStart(of: reenable.time)
            from = max(from, start == reenable.time.milliseconds ? start : start + 60_000)
            coolingDown = now < reenable.time + policy.cooldown.timeInterval
        }
        return Span(from: from, coolingDown: coolingDown, reenabled: reenable)
    }

    /// The longest window any switch of a flag set uses: what the shell loads and keeps.
    static func longestWindow(_ flagSet: FlagSet) -> Duration {
        flagSet.flags.compactMap(\.pluginSwitch).map {
            CrashGuardPolicy.resolved(namespace: flagSet.crashGuard, switch: $0.crashGuard).window
        }.max() ?? CrashGuardPolicy.resolved(namespace: flagSet.crashGuard, switch: nil).window
    }

    // MARK: Ingestion

    /// Whether the counts in memory make a switch look like it trips, and nothing waits for a person about it (a
    /// confirmation then decides on the store's).
    ///
    /// - Parameters:
    ///   - scopes: where clients' trips may be scoped, as the last reload read it.
    ///   - counts: the window's counts by span start, summed once per batch for the switches sharing one.
    static func wouldTrip(
        _ key: String, gate: PluginSwitchDefinition, flagSet: FlagSet, window: WindowCounts,
        scopes: ScopeEligibility?, history: GuardHistory, now: Date, counts: inout [Int64: GuardCounts]
    ) -> Bool {
        let policy = CrashGuardPolicy.resolved(namespace: flagSet.crashGuard, switch: gate.crashGuard)
        guard policy.enabled, !gate.disabled else { return false }
        let span = span(key, policy: policy, history: history, now: now)
        guard !span.coolingDown else { return false }
        var sums = counts[span.from] ?? window.counts(from: span.from, until: Int64.max)
        sums.scopes = scopes
        counts[span.from] = sums
        guard let trip = GuardRule.assess(key: key, counts: sums, policy: policy, gate: gate).trip else { return false }
        return !history.awaitsPerson(
            key, in: trip.scope, flagSet: flagSet, now: now, cooldown: policy.cooldown.timeInterval)
    }

    // MARK: Confirmation

    /// A switch a confirmation counts, and from when.
    struct Candidate: Sendable {
        var key: String
        /// The switch's definition the decision is made on; the trip commits only while it is still this.
        var flag: FlagDefinition
        var gate: PluginSwitchDefinition
        var policy: ResolvedCrashGuardPolicy
        /// The start of the span counted.
        var from: Date
    }

    /// What a confirmation reads, once it has the namespace's latest state and the history up to it.
    enum Confirmation: Sendable {
        /// Nothing to decide: the switch is gone or no plugin switch, the guard is off for it, or it cools down.
        case nothing
        /// The history is newer than the state (a person applied a proposal between the two reads, and the proposal
        /// would look settled while the switch looks on): read the state again.
        case stale
        /// Count the switch's span on the store, then ``GuardCore/decide(_:counts:history:flagSet:now:)``.
        case count(Candidate)
    }

    /// Whether a confirmation has anything to count.
    static func confirmation(of key: String, in state: NamespaceState, history: GuardHistory, now: Date) -> Confirmation
    {
        guard let flag = state.flagSet.flag(key), let gate = flag.pluginSwitch else { return .nothing }
        if history.seenVersion > state.record.version { return .stale }
        let policy = CrashGuardPolicy.resolved(namespace: state.flagSet.crashGuard, switch: gate.crashGuard)
        let span = span(key, policy: policy, history: history, now: now)
        guard policy.enabled, !span.coolingDown else { return .nothing }
        return .count(Candidate(key: key, flag: flag, gate: gate, policy: policy, from: Date(milliseconds: span.from)))
    }

    /// What a confirmation does.
    enum Action: Sendable, Hashable {
        /// The store's counts do not make the case.
        case noTrip
        /// A proposal for the switch and scope is open, or was dismissed within the cool-down: a person decides.
        case hold
        /// Past the budget: propose the trip to a person.
        case propose(GuardTrip, GuardBudget.ProposalReason)
        /// Disable the switch in the trip's scope, on the version decided on.
        case trip(GuardTrip)
    }

    /// Decides a confirmation on the store's counts of its span (with the scopes clients' trips may take) and the
    /// guard's history: the rule, then the budget.
    static func decide(_ candidate: Candidate, counts: GuardCounts, history: GuardHistory, flagSet: FlagSet, now: Date)
        -> Action
    {
        let assessment = GuardRule.assess(
            key: candidate.key, counts: counts, policy: candidate.policy, gate: candidate.gate)
        guard let trip = assessment.trip else { return .noTrip }
        let scoped = !trip.scope.isEverywhere
        let budget = GuardBudget.decide(
            trip, tripsInLastHour: history.automaticTrips(since: now - GuardBudget.period, scoped: scoped),
            openScopedDisables: history.openScopedTrips(of: candidate.key),
            pending: history.awaitsPerson(
                candidate.key, in: trip.scope, flagSet: flagSet, now: now,
                cooldown: candidate.policy.cooldown.timeInterval))
        switch budget {
        case .hold: return .hold
        case .propose(let reason): return .propose(trip, reason)
        case .trip: return .trip(trip)
        }
    }

    /// The trip as a conditional edit: nothing when the switch is off in the scope already; ``StaleDecision`` when the
    /// switch changed since the decision (`expected`; nil: whatever it is now, a person applying a proposal).
    static func disabling(_ key: String, in scope: Scope, expecting expected: FlagDefinition?, _ flagSet: FlagSet)
        throws -> FlagSet
    {
        guard let flag = flagSet.flag(key), let gate = flag.pluginSwitch, !gate.isDisabled(in: scope) else {
            return flagSet
        }
        if let expected, flag != expected { throw StaleDecision() }
        return try flagSet.disabling(key, scope: scope)
    }

    // MARK: Views and gauges

    /// Every plugin switch of a flag set assessed on a namespace's counts in memory (for the gauges).
    static func assessAll(_ flagSet: FlagSet, window: WindowCounts, history: GuardHistory, now: Date)
        -> [GuardAssessment]
    {
        var spans: [Int64: GuardCounts] = [:]
        return flagSet.flags.compactMap { flag in
            guard let gate = flag.pluginSwitch else { return nil }
            let policy = CrashGuardPolicy.resolved(namespace: flagSet.crashGuard, switch: gate.crashGuard)
            let span = span(flag.key, policy: policy, history: history, now: now)
            let counts = spans[span.from] ?? window.counts(from: span.from, until: Int64.max)
            spans[span.from] = counts
            return GuardRule.assess(key: flag.key, counts: counts, policy: policy, gate: gate)
        }
    }

    /// A namespace as the guard sees it: every plugin switch on the store's counts, the open proposals and the
    /// budget spent (for the API).
    static func overview(
        of flagSet: FlagSet, window: WindowCounts, scopes: ScopeEligibility, history: GuardHistory,
        now: Date
    ) -> GuardOverview {
        var spans: [Int64: GuardCounts] = [:]
        let statuses: [SwitchStatus] = flagSet.flags.compactMap { flag in
            guard let gate = flag.pluginSwitch else { return nil }
            let policy = CrashGuardPolicy.resolved(namespace: flagSet.crashGuard, switch: gate.crashGuard)
            let span = span(flag.key, policy: policy, history: history, now: now)
            var sums = spans[span.from] ?? window.counts(from: span.from, until: Int64.max)
            sums.scopes = scopes
            spans[span.from] = sums
            let assessment = GuardRule.assess(key: flag.key, counts: sums, policy: policy, gate: gate)
            return SwitchStatus(
                key: flag.key, gate: gate, assessment: assessment, from: Date(milliseconds: span.from), until: now,
                coolingDownUntil: span.coolingDown
                    ? span.reenabled.map { $0.time + policy.cooldown.timeInterval } : nil,
                openTrips: history.openTrips(of: flag.key), latestTrip: history.latestTrip(of: flag.key),
                openProposals: history.openProposals(of: flag.key, in: flagSet))
        }
        let policy = CrashGuardPolicy.resolved(namespace: flagSet.crashGuard, switch: nil)
        return GuardOverview(
            switches: statuses, proposals: history.openProposals(in: flagSet),
            tripsLastHour: history.automaticTrips(since: now - GuardBudget.period, scoped: false),
            maximumTripsPerHour: policy.maximumTripsPerHour,
            scopedTripsLastHour: history.automaticTrips(since: now - GuardBudget.period, scoped: true),
            maximumScopedTripsPerHour: policy.maximumScopedTripsPerHour)
    }
}

extension Duration {
    /// The duration in seconds, for `Date` arithmetic.
    var timeInterval: TimeInterval { seconds }
}
