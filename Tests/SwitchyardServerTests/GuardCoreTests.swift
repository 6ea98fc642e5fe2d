import Foundation
import SwitchyardCore
import SwitchyardGuard
import SwitchyardStorage
import Testing

@testable import SwitchyardServer

/// The crash guard's decisions inside flagsd without a store or a clock (``GuardCore``, ``GuardWorkQueue``,
/// ``GuardHistory/merge(_:)``): flag sets, counts, histories and times made by hand.
struct GuardCoreTests {
    static let promos = "plugin_switch_feed_promos"
    static let weather = "plugin_switch_feed_weather"
    static let now = Date(timeIntervalSince1970: 1_800_000_000)
    /// Small samples, and no minimum of units or addresses (the counts here have no crash records).
    static let policy = CrashGuardPolicy(
        minimumSessions: 100, minimumCrashes: 5, maximumCrashRate: Rollout(basisPoints: 200),
        minimumUnits: 0, minimumAddresses: 0)

    static func flagSet(_ policy: CrashGuardPolicy = policy) -> FlagSet {
        var flagSet = Fixtures.rider()
        flagSet.crashGuard = policy
        return flagSet
    }

    static func state(_ flagSet: FlagSet = flagSet(), version: Int64 = 4) -> NamespaceState {
        NamespaceState(
            record: NamespaceRecord(
                name: "rider", epoch: "e", version: version, reasonPolicy: .kills,
                createdAt: now - 86_400, updatedAt: now - 60), flagSet: flagSet)
    }

    /// Sessions with promos (and of those, crashed) and every session of the namespace, all in the minute before `now`.
    static func events(promos: (Int64, Int64), all: (Int64, Int64)) -> [EventCount] {
        [
            EventCount(
                subject: .pluginSwitch(Self.promos), dimension: .all, bucket: now - 60,
                tally: EventTally(sessions: promos.0, crashedSessions: promos.1)),
            EventCount(
                subject: .baseline, dimension: .all, bucket: now - 60,
                tally: EventTally(sessions: all.0, crashedSessions: all.1)),
        ]
    }

    /// 10 % of 300 sessions with promos crash; 3 of the 2,700 without it.
    static let crashing = events(promos: (300, 30), all: (3000, 33))
    /// 1 of 300 sessions with promos crashes.
    static let healthy = events(promos: (300, 1), all: (3000, 4))

    static func candidate(_ history: GuardHistory = GuardHistory(), flagSet: FlagSet = flagSet()) throws
        -> GuardCore.Candidate
    {
        guard
            case .count(let candidate) = GuardCore.confirmation(
                of: promos, in: state(flagSet), history: history, now: now)
        else {
            throw CandidateMissing()
        }
        return candidate
    }

    struct CandidateMissing: Error {}

    static func trip(_ key: String, minutesAgo: Double, scope: Scope = .everywhere, version: Int64) -> GuardHistory.Trip
    {
        GuardHistory.Trip(
            key: key, scope: scope, version: version, time: now - minutesAgo * 60, reason: nil, evidence: .null)
    }

    static func proposal(_ id: Int64, minutesAgo: Double, dismissedMinutesAgo: Double? = nil) -> GuardHistory.Proposal {
        GuardHistory.Proposal(
            id: id, key: promos, scope: .everywhere, time: now - minutesAgo * 60, why: "budget", reason: nil,
            evidence: .null,
            dismissed: dismissedMinutesAgo.map {
                GuardHistory.Dismissal(id: id + 1, time: now - $0 * 60, actor: "ada", reason: "known")
            })
    }

    // MARK: What a confirmation counts

    @Test func aConfirmationCountsTheSwitchsWindowOnTheStatesDefinition() throws {
        let candidate = try Self.candidate()
        #expect(candidate.key == Self.promos)
        #expect(candidate.flag == Self.flagSet().flag(Self.promos))
        #expect(candidate.from == Date(milliseconds: EventAggregation.bucketStart(of: Self.now - 600)))
    }

    @Test func aConfirmationOfAnUnknownSwitchOrAnExperimentHasNothingToCount() {
        let history = GuardHistory()
        for key in ["plugin_switch_gone", "checkout_button"] {
            guard case .nothing = GuardCore.confirmation(of: key, in: Self.state(), history: history, now: Self.now)
            else {
                Issue.record("\(key) should have nothing to count")
                continue
            }
        }
    }

    @Test func aConfirmationWithThePolicyOffHasNothingToCount() {
        let off = Self.flagSet(CrashGuardPolicy(enabled: false))
        guard
            case .nothing = GuardCore.confirmation(
                of: Self.promos, in: Self.state(off), history: GuardHistory(), now: Self.now)
        else {
            Issue.record("the guard is off")
            return
        }
    }

    @Test func aHistoryNewerThanTheStateIsStale() {
        var history = GuardHistory()
        history.seenVersion = 5
        guard
            case .stale = GuardCore.confirmation(
                of: Self.promos, in: Self.state(version: 4), history: history, now: Self.now)
        else {
            Issue.record("a state older than the history must be read again")
            return
        }
        history.seenVersion = 4
        guard
            case .count = GuardCore.confirmation(
                of: Self.promos, in: Self.state(version: 4), history: history, now: Self.now)
        else {
            Issue.record("a state as new as the history is decided on")
            return
        }
    }

    @Test func aSwitchReenabledWithinTheCooldownIsLeftAloneThenCountedFromTheMinuteAfter() throws {
        var history = GuardHistory()
        var trip = Self.trip(Self.promos, minutesAgo: 40, version: 2)
        trip.reenabled = GuardHistory.Reenable(version: 3, time: Self.now - 10 * 60 + 15, actor: "ada", deleted: false)
        history.trips[2] = trip
        guard case .nothing = GuardCore.confirmation(of: Self.promos, in: Self.state(), history: history, now: Self.now)
        else {
            Issue.record("within the 30-minute cool-down")
            return
        }
        let later = Self.now + 25 * 60
        guard
            case .count(let candidate) = GuardCore.confirmation(
                of: Self.promos, in: Self.state(), history: history, now: later)
        else {
            Issue.record("after the cool-down")
            return
        }
        #expect(candidate.from == Date(milliseconds: EventAggregation.bucketStart(of: later - 600)))
        let span = GuardCore.span(Self.promos, policy: candidate.policy, history: history, now: Self.now)
        #expect(span.coolingDown)
        #expect(span.from == EventAggregation.bucketStart(of: Self.now - 10 * 60 + 15) + 60_000)
    }

    // MARK: What a confirmation does

    @Test func crashesPastTheRuleTripTheSwitchEverywhere() throws {
        let action = GuardCore.decide(
            try Self.candidate(), counts: GuardCounts(Self.crashing, crashes: []), history: GuardHistory(),
            flagSet: Self.flagSet(), now: Self.now)
        guard case .trip(let trip) = action else {
            Issue.record("expected a trip, got \(action)")
            return
        }
        #expect(trip.key == Self.promos)
        #expect(trip.scope == .everywhere)
        #expect(trip.check.sessions == 300 && trip.check.crashes == 30)
    }

    @Test func aHealthySwitchDoesNotTrip() throws {
        let action = GuardCore.decide(
            try Self.candidate(), counts: GuardCounts(Self.healthy, crashes: []), history: GuardHistory(),
            flagSet: Self.flagSet(), now: Self.now)
        #expect(action == .noTrip)
    }

    @Test func pastTheHourlyBudgetTheTripIsProposed() throws {
        var history = GuardHistory()
        // The built-in budget: 3 global trips an hour. Two in the hour and one before it leave room for one more.
        history.trips[2] = Self.trip(Self.weather, minutesAgo: 70, version: 2)
        history.trips[3] = Self.trip("plugin_switch_map_traffic", minutesAgo: 50, version: 3)
        history.trips[4] = Self.trip("plugin_switch_map_traffic", minutesAgo: 20, version: 4)
        let counts = GuardCounts(Self.crashing, crashes: [])
        let within = GuardCore.decide(
            try Self.candidate(history), counts: counts, history: history, flagSet: Self.flagSet(), now: Self.now)
        guard case .trip = within else {
            Issue.record("2 trips in the hour: within the budget, got \(within)")
            return
        }
        history.trips[5] = Self.trip(Self.weather, minutesAgo: 5, version: 5)
        let past = GuardCore.decide(
            try Self.candidate(history), counts: counts, history: history, flagSet: Self.flagSet(), now: Self.now)
        guard case .propose(let trip, let reason) = past else {
            Issue.record("3 trips in the hour: past the budget, got \(past)")
            return
        }
        #expect(reason == .budget)
        #expect(trip.key == Self.promos)
    }

    @Test func aPersonsTripsDoNotSpendTheBudget() throws {
        var history = GuardHistory()
        for version in Int64(2)...4 {
            var trip = Self.trip(Self.weather, minutesAgo: 10, version: version)
            trip.actor = "ada"
            history.trips[version] = trip
        }
        let action = GuardCore.decide(
            try Self.candidate(history), counts: GuardCounts(Self.crashing, crashes: []), history: history,
            flagSet: Self.flagSet(), now: Self.now)
        guard case .trip = action else {
            Issue.record("proposals a person applied are not the guard's own trips, got \(action)")
            return
        }
    }

    @Test func anOpenProposalOrARecentDismissalHoldsTheSwitch() throws {
        let counts = GuardCounts(Self.crashing, crashes: [])
        var history = GuardHistory()
        history.proposals[7] = Self.proposal(7, minutesAgo: 5)
        #expect(
            GuardCore.decide(
                try Self.candidate(history), counts: counts, history: history, flagSet: Self.flagSet(), now: Self.now)
                == .hold)

        history.proposals[7] = Self.proposal(7, minutesAgo: 50, dismissedMinutesAgo: 20)
        #expect(
            GuardCore.decide(
                try Self.candidate(history), counts: counts, history: history, flagSet: Self.flagSet(), now: Self.now)
                == .hold)

        // Dismissed longer ago than the 30-minute cool-down: the guard may act again.
        history.proposals[7] = Self.proposal(7, minutesAgo: 50, dismissedMinutesAgo: 31)
        let action = GuardCore.decide(
            try Self.candidate(history), counts: counts, history: history, flagSet: Self.flagSet(), now: Self.now)
        guard case .trip = action else {
            Issue.record("expected a trip once the dismissal's cool-down passed, got \(action)")
            return
        }
    }

    // MARK: The trip's edit

    @Test func theTripDisablesTheSwitchOnlyWhileItIsAsDecided() throws {
        let flagSet = Self.flagSet()
        let decidedOn = try #require(flagSet.flag(Self.promos))
        let disabled = try GuardCore.disabling(Self.promos, in: .everywhere, expecting: decidedOn, flagSet)
        #expect(disabled.flag(Self.promos)?.pluginSwitch?.disabled == true)
        // Off already: nothing to change, whatever it was decided on.
        #expect(try GuardCore.disabling(Self.promos, in: .everywhere, expecting: decidedOn, disabled) == disabled)
        // Changed since the decision (a person set its rollout): decide again.
        let (changed, _) = try flagSet.settingRollout(
            Self.promos, Rollout(basisPoints: 1000)!, rule: nil, conditions: nil)
        #expect(throws: StaleDecision.self) {
            try GuardCore.disabling(Self.promos, in: .everywhere, expecting: decidedOn, changed)
        }
        // A person applying a proposal expects nothing.
        #expect(
            try GuardCore.disabling(Self.promos, in: .everywhere, expecting: nil, changed).flag(Self.promos)?
                .pluginSwitch?.disabled == true)
    }

    // MARK: The ingestion path's look

    @Test func theCountsInMemoryQueueAConfirmationUnlessAPersonDecides() {
        let window = WindowCounts(Self.crashing)
        var spans: [Int64: GuardCounts] = [:]
        let gate = Self.flagSet().flag(Self.promos)!.pluginSwitch!
        #expect(
            GuardCore.wouldTrip(
                Self.promos, gate: gate, flagSet: Self.flagSet(), window: window, scopes: nil,
                history: GuardHistory(), now: Self.now, counts: &spans))
        #expect(
            spans.keys.sorted() == [EventAggregation.bucketStart(of: Self.now - 600)],
            "the window's sums kept for the next switch")

        var pending = GuardHistory()
        pending.proposals[7] = Self.proposal(7, minutesAgo: 5)
        var fresh: [Int64: GuardCounts] = [:]
        #expect(
            !GuardCore.wouldTrip(
                Self.promos, gate: gate, flagSet: Self.flagSet(), window: window, scopes: nil,
                history: pending, now: Self.now, counts: &fresh))
        var healthy: [Int64: GuardCounts] = [:]
        #expect(
            !GuardCore.wouldTrip(
                Self.promos, gate: gate, flagSet: Self.flagSet(), window: WindowCounts(Self.healthy), scopes: nil,
                history: GuardHistory(), now: Self.now, counts: &healthy))
    }

    // MARK: The work queue

    typealias Queue = GuardWorkQueue<ContinuousClock.Instant>

    @Test func aConfirmationIsQueuedOnceAndOneAskedForTooSoonWaitsForTheIntervalsEnd() {
        let start = ContinuousClock.now
        var queue = Queue(interval: .seconds(5))
        let first = queue.confirm("rider", Self.promos, receivedAt: Self.now, now: start)
        let again = queue.confirm("rider", Self.promos, receivedAt: Self.now + 1, now: start)
        #expect(first)
        #expect(!again, "queued already")
        let taken = queue.next(now: start)
        let none = queue.next(now: start)
        #expect(taken == .confirm("rider", Self.promos))
        #expect(none == nil)
        let askedAt = queue.starting("rider", Self.promos, now: start)
        #expect(askedAt == Self.now, "the first batch that asked")

        // A batch 4 s after the start: deferred to 5 s, not dropped.
        let tooSoon = queue.confirm("rider", Self.promos, receivedAt: Self.now + 4, now: start + .seconds(4))
        #expect(!tooSoon)
        #expect(queue.hasDeferred)
        let notYet = queue.next(now: start + .seconds(4))
        #expect(notYet == nil)
        let due = queue.next(now: start + .seconds(5))
        #expect(due == .confirm("rider", Self.promos))
        #expect(!queue.hasDeferred)
        let deferredAskedAt = queue.starting("rider", Self.promos, now: start + .seconds(5))
        let nobody = queue.starting("rider", Self.promos, now: start + .seconds(5))
        #expect(deferredAskedAt == Self.now + 4)
        #expect(nobody == nil, "no batch asked since")
    }

    @Test func otherSwitchesAreNotHeldByOnesInterval() {
        let start = ContinuousClock.now
        var queue = Queue(interval: .seconds(5))
        _ = queue.starting("rider", Self.promos, now: start)
        let promos = queue.confirm("rider", Self.promos, receivedAt: Self.now, now: start + .seconds(1))
        let weather = queue.confirm("rider", Self.weather, receivedAt: Self.now, now: start + .seconds(1))
        let other = queue.confirm("other", Self.promos, receivedAt: Self.now, now: start + .seconds(1))
        #expect(!promos && weather && other)
        var taken: [Queue.Work] = []
        while let work = queue.next(now: start + .seconds(1)) { taken.append(work) }
        #expect(taken == [.confirm("rider", Self.weather), .confirm("other", Self.promos)])
    }

    @Test func aLoadStaysQueuedUntilItFinishes() {
        let start = ContinuousClock.now
        var queue = Queue(interval: .seconds(1))
        let load = queue.load("rider")
        #expect(load)
        let taken = queue.next(now: start)
        #expect(taken == .load("rider"))
        let again = queue.load("rider")
        #expect(!again, "every batch until the counts are loaded would queue another")
        queue.finished(.load("rider"))
        let afterwards = queue.load("rider")
        #expect(afterwards)
    }

    @Test func aDeletedNamespacesConfirmationTimesAreForgotten() {
        let start = ContinuousClock.now
        var queue = Queue(interval: .seconds(5))
        _ = queue.starting("rider", Self.promos, now: start)
        queue.forget("rider")
        let queued = queue.confirm("rider", Self.promos, receivedAt: Self.now, now: start + .seconds(1))
        #expect(queued)
    }

    // MARK: Merging a history read from the store

    @Test func aHistoryReadFromTheStoreKeepsWhatThisProcessKnowsNewer() {
        var known = GuardHistory()
        known.epoch = "e"
        known.seenVersion = 9
        var tripped = Self.trip(Self.promos, minutesAgo: 30, version: 2)
        tripped.reenabled = GuardHistory.Reenable(version: 8, time: Self.now - 60, actor: "ada", deleted: false)
        known.trips[2] = tripped
        known.proposals[11] = Self.proposal(11, minutesAgo: 1)

        var read = GuardHistory()
        read.epoch = "e"
        read.seenVersion = 7
        read.trips[2] = Self.trip(Self.promos, minutesAgo: 30, version: 2)
        read.trips[6] = Self.trip(Self.weather, minutesAgo: 10, version: 6)
        read.proposals[10] = Self.proposal(10, minutesAgo: 20, dismissedMinutesAgo: 2)

        var merged = known
        merged.merge(read)
        #expect(merged.trips[2]?.reenabled?.version == 8, "a re-enable this process read is not forgotten")
        #expect(merged.trips[6]?.key == Self.weather)
        #expect(merged.seenVersion == 9)
        #expect(merged.proposals.keys.sorted() == [10, 11], "a proposal just made here and missed by the read is kept")
        #expect(merged.proposals[10]?.dismissed != nil)

        var other = read
        other.epoch = "f"
        merged.merge(other)
        #expect(merged.seenVersion == 7, "another epoch replaces the history")
        #expect(merged.proposals.keys.sorted() == [10])
        #expect(merged.trips[2]?.reenabled == nil)
    }
}
