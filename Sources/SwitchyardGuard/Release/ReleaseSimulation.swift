import Foundation
public import SwitchyardCore
import SwitchyardStorage

/// A seeded fleet running one plugin through a release plan, with flagsd's runner applying ``ReleaseCheck`` every
/// minute and the crash guard watching (``GuardRule``), to measure how long a healthy plugin takes to reach
/// everyone, how often a bad one does, and what each exposes; or the same stages advanced on a fixed timer with
/// the guard alone, for comparison.
///
/// ```swift
/// var scenario = ReleaseSimulation.Scenario(excessCrashRate: 0.01)          // a plugin 1 point worse
/// let outcome = ReleaseSimulation.run(scenario, seed: 7)
/// // outcome.rolledBack == true, outcome.reachedEveryone == false, outcome.stageAtEnd == 0
/// ```
///
/// Each minute the fleet's sessions (`sessionsPerMinute`) are spread over the cities by their shares; in each
/// city the switch is active in a binomial share of them (the stage's percentage; cities of earlier stages keep
/// their rollouts, as flagsd's plans do). Every session crashes at `baselineCrashRate`; one with the switch active crashes at
/// `baselineCrashRate + excessCrashRate`, the excess counted as crashes the plugin caused. Counts are drawn as
/// binomials: exactly (by geometric waiting times) below a mean of 30, by the normal approximation above.
///
/// - In ``Mode/plan(_:)``, at the end of every minute the runner sums the stage's scope since the stage's count began
///   (`countingDelay` minutes after the stage did)
///   (``ReleaseCheck/stageTallies(of:in:counts:criteria:source:)`` over the same counters the guard reads) and acts on the verdict:
///   an advance starts the next stage with the next minute; a rollback ends the run (the plan goes back or off and,
///   either way, waits for a person: what follows is theirs); reaching the last stage completes the plan.
/// - In ``Mode/timer(_:)`` the stages advance every so many minutes whatever the sessions show (Unleash's
///   milestones).
/// - In both, the crash guard (`guardPolicy`, nil for none) assesses the switch's window every minute and its trips
///   apply from the next minute: in a plan, any trip aborts the plan and ends the run (the switch is off there and
///   the plan stops); on a timer, a city trip disables the switch in that city and the timer goes on, a trip
///   everywhere ends the run. The guard reads counts without crash records, so the policy's `min_units` and
///   `min_addresses` are taken as met (a plugin's real crashes come from many devices); its hourly budget is not
///   modelled (one switch).
///
/// A run lasts `horizon` minutes unless it ends earlier; sessions exposed and crashes caused count over the run.
public enum ReleaseSimulation {
    /// One stage: cities (empty: everyone) and the percentage of their sessions with the switch active.
    public struct Stage: Sendable, Hashable, CustomStringConvertible {
        public var cities: [String]
        /// 0...100.
        public var percentage: Double

        public init(cities: [String] = [], percentage: Double) {
            self.cities = cities
            self.percentage = percentage
        }

        public static func everyone(_ percentage: Double) -> Stage { Stage(percentage: percentage) }

        public var description: String {
            "\(cities.isEmpty ? "everyone" : cities.joined(separator: "+")) \(percentage.formatted(.number))%"
        }

        /// The dimensions its check reads.
        var dimensions: [EventDimension] { cities.isEmpty ? [.all] : cities.map(EventDimension.city) }
    }

    /// How the stages advance.
    public enum Mode: Sendable, Hashable {
        /// By evidence: ``ReleaseCheck`` every minute with these criteria.
        case plan(ReleaseCriteria)
        /// On a timer: the next stage every so many minutes.
        case timer(minutes: Int)
    }

    /// What to simulate.
    public struct Scenario: Sendable {
        public var cities = ["lagos", "nairobi", "paris", "lima", "pune"]
        /// Each city's share of the sessions (normalised); nil: equal shares.
        public var cityShares: [Double]?
        /// Sessions per minute in the whole fleet.
        public var sessionsPerMinute = 10_000
        /// The chance that a session crashes whatever it runs.
        public var baselineCrashRate = 0.01
        /// How much more often a session with the plugin active crashes (0.005: half a point).
        public var excessCrashRate: Double
        public var stages = ReleaseSimulation.riderStages
        public var mode = Mode.plan(.defaults)
        /// The crash guard's policy; nil: no guard.
        public var guardPolicy: ResolvedCrashGuardPolicy? = ReleaseSimulation.guardPolicy
        /// The longest run, in minutes.
        public var horizon = 2 * 1440
        /// The minutes a stage's count waits after it began, as flagsd's runner does: events are accepted up to
        /// 10 minutes ahead of the server's clock, so a bucket that starts sooner may hold events received before
        /// the stage began (``ReleaseCheck/countingStart(stageBegan:futureSkew:)``). 0: counts from the stage's
        /// first minute (the rule before issue 31).
        public var countingDelay = 10

        public init(excessCrashRate: Double) {
            self.excessCrashRate = excessCrashRate
        }
    }

    /// The issue's plan: Lagos 1 %, 10 %, 100 %, then Nairobi, then everyone 10 %, 50 %, 100 %.
    public static let riderStages = [
        Stage(cities: ["lagos"], percentage: 1), Stage(cities: ["lagos"], percentage: 10),
        Stage(cities: ["lagos"], percentage: 100), Stage(cities: ["nairobi"], percentage: 100),
        .everyone(10), .everyone(50), .everyone(100),
    ]

    /// The built-in policy (`CrashGuardPolicy.resolved(namespace: nil, switch: nil)`), its crash-spread minimums
    /// taken as met (the simulation has counts, not crash records).
    public static var guardPolicy: ResolvedCrashGuardPolicy {
        var policy = CrashGuardPolicy.resolved(namespace: nil, switch: nil)
        policy.minimumUnits = 0
        policy.minimumAddresses = 0
        return policy
    }

    /// A trip of the crash guard.
    public struct Trip: Sendable, Hashable {
        public var minute: Int
        public var scope: Scope
    }

    /// What one run did.
    public struct Outcome: Sendable, Hashable {
        /// Whether the plugin reached the last stage (everyone at 100 %) with no disable in force.
        public var reachedEveryone = false
        /// The minute the last stage began.
        public var minutesToEveryone: Int?
        /// Whether the plan rolled back (plan mode).
        public var rolledBack = false
        /// The crash guard's trips.
        public var trips: [Trip] = []
        /// The stage the run ended in (its index).
        public var stageAtEnd = 0
        /// The minutes each stage began, from the first (minute 0).
        public var stageStarts: [Int] = [0]
        /// The minute the run ended (the horizon, or when the switch went off or the plan stopped).
        public var minutes = 0
        /// Sessions with the plugin active.
        public var sessionsExposed: Int64 = 0
        /// Crashes the plugin caused (beyond the baseline).
        public var crashesCaused: Int64 = 0
        /// The last check of the plan (plan mode).
        public var lastCheck: ReleaseCheck?
    }

    /// The key the simulated switch has.
    static let key = "plugin_switch_release"

    /// Runs a scenario with a seed; the same seed gives the same outcome.
    public static func run(_ scenario: Scenario, seed: UInt64) -> Outcome {
        var random = SplitMix64(seed: seed)
        let cities = scenario.cities
        let shares = (scenario.cityShares ?? cities.map { _ in 1 })
        let totalShare = shares.reduce(0, +)
        var outcome = Outcome()
        var stage = 0
        var stageStart = 0
        var disabled = Set<String>()
        // Since the stage began (the plan's check) and per minute over the guard's window: per city, with and all.
        var stageWith = [EventTally](repeating: .zero, count: cities.count)
        var stageAll = stageWith
        var recent: [(with: [EventTally], all: [EventTally])] = []
        let windowMinutes = max(1, Int(scenario.guardPolicy?.window.components.seconds ?? 60) / 60)
        let pluginShare = scenario.excessCrashRate / max(1e-12, 1 - scenario.baselineCrashRate)

        for minute in 0..<scenario.horizon {
            outcome.minutes = minute + 1
            let percentages = exposure(scenario.stages, at: stage, cities: cities)
            var minuteWith = [EventTally](repeating: .zero, count: cities.count)
            var minuteAll = minuteWith
            // The minute's sessions, spread over the cities (a multinomial, one binomial per city).
            var remaining = Int64(scenario.sessionsPerMinute)
            var shareLeft = totalShare
            for (index, city) in cities.enumerated() {
                let sessions =
                    index == cities.count - 1 ? remaining : random.binomial(remaining, shares[index] / shareLeft)
                remaining -= sessions
                shareLeft -= shares[index]
                let active = disabled.contains(city) ? 0 : random.binomial(sessions, percentages[index] / 100)
                let baseCrashes = random.binomial(active, scenario.baselineCrashRate)
                let caused = random.binomial(active - baseCrashes, pluginShare)
                let otherCrashes = random.binomial(sessions - active, scenario.baselineCrashRate)
                outcome.sessionsExposed += active
                outcome.crashesCaused += caused
                minuteWith[index] = EventTally(sessions: active, crashedSessions: baseCrashes + caused)
                minuteAll[index] = EventTally(sessions: sessions, crashedSessions: baseCrashes + caused + otherCrashes)
            }
            if minute - stageStart >= scenario.countingDelay {
                for index in cities.indices {
                    stageWith[index] += minuteWith[index]
                    stageAll[index] += minuteAll[index]
                }
            }
            recent.append((minuteWith, minuteAll))
            if recent.count > windowMinutes { recent.removeFirst() }

            // The crash guard, over its window.
            if let policy = scenario.guardPolicy,
                let trip = guardTrip(recent, cities: cities, disabled: disabled, policy: policy)
            {
                outcome.trips.append(Trip(minute: minute, scope: trip))
                if trip.isEverywhere || !isTimer(scenario.mode) {
                    outcome.stageAtEnd = stage
                    return outcome
                }
                disabled.formUnion(trip.cities)
            }

            let last = scenario.stages.count - 1
            guard stage < last else { continue }
            var next = false
            switch scenario.mode {
            case .timer(let every):
                next = minute + 1 - stageStart >= every
            case .plan(let criteria):
                let counts = Self.counts(with: stageWith, all: stageAll, cities: cities)
                let tallies = ReleaseCheck.stageTallies(
                    of: key, in: scenario.stages[stage].dimensions, counts: counts, criteria: criteria)
                let check = ReleaseCheck(
                    tallies, criteria: criteria, timeInStage: .seconds(60 * (minute + 1 - stageStart)))
                outcome.lastCheck = check
                switch check.verdict {
                case .advance: next = true
                case .hold: break
                case .rollBack:
                    outcome.rolledBack = true
                    outcome.stageAtEnd = stage
                    return outcome
                }
            }
            if next {
                stage += 1
                stageStart = minute + 1
                outcome.stageStarts.append(stageStart)
                stageWith = stageWith.map { _ in .zero }
                stageAll = stageWith
                if stage == last, disabled.isEmpty {
                    outcome.reachedEveryone = true
                    outcome.minutesToEveryone = stageStart
                }
            }
        }
        outcome.stageAtEnd = stage
        return outcome
    }

    static func isTimer(_ mode: Mode) -> Bool {
        if case .timer = mode { return true }
        return false
    }

    /// The percentage of each city's sessions with the switch active in a stage: a stage keeps the cities of the
    /// stages before it at their rollouts (the latest stage naming a city sets its rollout), and a stage for
    /// everyone raises every city to at least its own.
    static func exposure(_ stages: [Stage], at index: Int, cities: [String]) -> [Double] {
        cities.map { city in
            var percentage = 0.0
            for stage in stages[...index] {
                if stage.cities.contains(city) {
                    percentage = stage.percentage
                } else if stage.cities.isEmpty {
                    percentage = max(percentage, stage.percentage)
                }
            }
            return percentage
        }
    }

    /// The counts flagsd keeps, for one switch: per city and in all, with the switch and the baseline.
    static func counts(with: [EventTally], all: [EventTally], cities: [String]) -> GuardCounts {
        var counts: [EventCount] = []
        var withAll = EventTally.zero
        var allAll = EventTally.zero
        for (index, city) in cities.enumerated() {
            if !with[index].isZero {
                counts.append(EventCount(subject: .pluginSwitch(key), dimension: .city(city), tally: with[index]))
            }
            counts.append(EventCount(subject: .baseline, dimension: .city(city), tally: all[index]))
            withAll += with[index]
            allAll += all[index]
        }
        if !withAll.isZero { counts.append(EventCount(subject: .pluginSwitch(key), dimension: .all, tally: withAll)) }
        counts.append(EventCount(subject: .baseline, dimension: .all, tally: allAll))
        return GuardCounts(counts, crashes: [])
    }

    /// The guard's trip over its window, if any.
    static func guardTrip(
        _ window: [(with: [EventTally], all: [EventTally])], cities: [String], disabled: Set<String>,
        policy: ResolvedCrashGuardPolicy
    ) -> Scope? {
        var with = [EventTally](repeating: .zero, count: cities.count)
        var all = with
        for minute in window {
            for index in cities.indices {
                with[index] += minute.with[index]
                all[index] += minute.all[index]
            }
        }
        var gate = PluginSwitchDefinition(rollout: .full)
        gate.disabledScopes = disabled.sorted().map { Scope(cities: [$0]) }
        let counts = counts(with: with, all: all, cities: cities)
        return GuardRule.assess(key: key, counts: counts, policy: policy, gate: gate).trip?.scope
    }
}

extension SplitMix64 {
    /// A binomial draw: successes in `trials` trials of chance `p`. Exact (geometric waiting times) below a mean of
    /// 30, the normal approximation (rounded, clamped) above.
    mutating func binomial(_ trials: Int64, _ p: Double) -> Int64 {
        guard trials > 0, p > 0 else { return 0 }
        guard p < 1 else { return trials }
        if p > 0.5 { return trials - binomial(trials, 1 - p) }
        let mean = Double(trials) * p
        if mean < 30 {
            let logQ = log1p(-p)
            var successes: Int64 = 0
            var position: Int64 = 0
            while true {
                position += Int64(min(Double(trials), (log1p(-uniform()) / logQ).rounded(.down))) + 1
                if position > trials { return successes }
                successes += 1
            }
        }
        // Box–Muller.
        let u1 = max(uniform(), 1e-300)
        let u2 = uniform()
        let gauss = (-2 * log(u1)).squareRoot() * cos(2 * Double.pi * u2)
        let draw = (mean + (mean * (1 - p)).squareRoot() * gauss).rounded()
        return min(trials, max(0, Int64(draw)))
    }
}
