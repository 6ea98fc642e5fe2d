import Foundation
import SwitchyardCore
import SwitchyardGuard
import SwitchyardStorage
import SwitchyardWire
import Testing

/// The trip rule and its choice of scope, on hand-made counts (without crash records: no minimum of units or
/// addresses).
struct GuardRuleTests {
    static let policy = CrashGuardPolicy.resolved(
        namespace: CrashGuardPolicy(
            minimumSessions: 100, minimumCrashes: 5, maximumCrashRate: Rollout(basisPoints: 200)), switch: nil
    )
    .withoutSpreadMinimums
    static let key = "plugin_switch_feed_promos"

    func tallies(_ withSwitch: [EventDimension: (Int64, Int64)], baseline: [EventDimension: (Int64, Int64)] = [:])
        -> SwitchTallies
    {
        var tallies = SwitchTallies()
        for (dimension, (sessions, crashes)) in withSwitch {
            tallies.withSwitch[dimension] = EventTally(sessions: sessions, crashedSessions: crashes)
        }
        for (dimension, (sessions, crashes)) in baseline {
            tallies.all[dimension] = EventTally(sessions: sessions, crashedSessions: crashes)
        }
        return tallies
    }

    @Test func aHighCrashRateSpreadEverywhereTripsGlobally() throws {
        let counts = tallies(
            [.all: (2000, 100), .city("lagos"): (1000, 50), .city("paris"): (1000, 50)],
            baseline: [.all: (10_000, 110), .city("lagos"): (5000, 55), .city("paris"): (5000, 55)])
        let assessment = GuardRule.assess(
            key: Self.key, tallies: counts, policy: Self.policy, gate: PluginSwitchDefinition(rollout: .full))
        let trip = try #require(assessment.trip)
        #expect(trip.scope == .everywhere)
        #expect(trip.check.sessions == 2000 && trip.check.crashes == 100)
        #expect(trip.scopeKind == "global")
        #expect(assessment.exceedingScopes.map(\.dimension) == [.city("lagos"), .city("paris")])
    }

    @Test func crashesConcentratedInOneCityTripThatCityOnly() throws {
        let counts = tallies([.all: (3000, 62), .city("lagos"): (1000, 60), .city("paris"): (2000, 2)])
        let assessment = GuardRule.assess(
            key: Self.key, tallies: counts, policy: Self.policy, gate: PluginSwitchDefinition(rollout: .full))
        let trip = try #require(assessment.trip)
        #expect(trip.scope == Scope(cities: ["lagos"]))
        #expect(trip.scopeText == "city lagos")
        #expect(trip.complement?.sessions == 2000)
        #expect(trip.complement?.crashes == 2)
        #expect(trip.reason.contains("in city lagos"))
    }

    @Test func aCityTooSmallToDiluteTheRestStillTripsOnItsOwn() throws {
        // 6 % in a small city is only 0.6 % overall: the overall test stays quiet, the city's does not.
        let counts = tallies([.all: (20_000, 130), .city("lagos"): (1000, 60), .city("paris"): (19_000, 70)])
        let assessment = GuardRule.assess(
            key: Self.key, tallies: counts, policy: Self.policy, gate: PluginSwitchDefinition(rollout: .full))
        #expect(!assessment.overall.exceeds)
        #expect(assessment.trip?.scope == Scope(cities: ["lagos"]))
    }

    @Test func withoutEnoughSessionsElsewhereTheTripIsGlobal() throws {
        // Every session so far is from Lagos: nothing shows the crashes are Lagos's alone.
        let counts = tallies([.all: (300, 60), .city("lagos"): (300, 60)])
        let assessment = GuardRule.assess(
            key: Self.key, tallies: counts, policy: Self.policy, gate: PluginSwitchDefinition(rollout: .full))
        #expect(assessment.trip?.scope == .everywhere)
    }

    @Test func aCohortCanBeTheScope() throws {
        let counts = tallies([.all: (3000, 70), .cohort("beta"): (500, 60), .city("lagos"): (3000, 70)])
        let assessment = GuardRule.assess(
            key: Self.key, tallies: counts, policy: Self.policy, gate: PluginSwitchDefinition(rollout: .full))
        #expect(assessment.trip?.scope == Scope(cohorts: ["beta"]))
        #expect(assessment.trip?.scopeText == "cohort beta")
    }

    @Test func scopeByLimitsTheScopesTheGuardMayCut() throws {
        let counts = tallies([.all: (3000, 100), .city("lagos"): (1000, 60), .city("paris"): (2000, 40)])
        let byCity = GuardRule.assess(
            key: Self.key, tallies: counts, policy: Self.policy, gate: PluginSwitchDefinition(rollout: .full))
        #expect(byCity.trip?.scope == Scope(cities: ["lagos"]))
        var policy = Self.policy
        policy.scopeBy = []
        let assessment = GuardRule.assess(
            key: Self.key, tallies: counts, policy: policy, gate: PluginSwitchDefinition(rollout: .full))
        #expect(assessment.trip?.scope == .everywhere)
    }

    @Test func aCityDisabledAlreadyIsLeftOutAndNotTrippedAgain() throws {
        // Late reports from Lagos keep its count high; Paris is healthy: nothing more to do.
        let gate = PluginSwitchDefinition(disabledScopes: [Scope(cities: ["lagos"])], rollout: .full)
        let counts = tallies([.all: (3000, 62), .city("lagos"): (1000, 60), .city("paris"): (2000, 2)])
        let assessment = GuardRule.assess(key: Self.key, tallies: counts, policy: Self.policy, gate: gate)
        #expect(assessment.trip == nil)
        #expect(assessment.overall.sessions == 2000 && assessment.overall.crashes == 2)
        // If Paris starts crashing too, Paris is cut, not the whole world.
        let worse = tallies([
            .all: (4000, 161), .city("lagos"): (1000, 60), .city("paris"): (2000, 100), .city("rome"): (1000, 1),
        ])
        #expect(
            GuardRule.assess(key: Self.key, tallies: worse, policy: Self.policy, gate: gate).trip?.scope
                == Scope(cities: ["paris"]))
    }

    @Test func aSwitchDisabledEverywhereOrWithTheGuardOffNeverTrips() {
        let counts = tallies([.all: (2000, 100)])
        #expect(
            GuardRule.assess(
                key: Self.key, tallies: counts, policy: Self.policy, gate: PluginSwitchDefinition(disabled: true)
            ).trip == nil)
        var off = Self.policy
        off.enabled = false
        #expect(
            GuardRule.assess(key: Self.key, tallies: counts, policy: off, gate: PluginSwitchDefinition(rollout: .full))
                .trip == nil)
    }

    @Test func smallSamplesNeverTripWhateverTheirRate() {
        let counts = tallies([.all: (99, 50)])
        let assessment = GuardRule.assess(
            key: Self.key, tallies: counts, policy: Self.policy, gate: PluginSwitchDefinition(rollout: .full))
        #expect(assessment.trip == nil)
        #expect(assessment.overall.shortfall == ["99 of 100 sessions needed"])
        let fewCrashes = GuardRule.assess(
            key: Self.key, tallies: tallies([.all: (100, 4)]), policy: Self.policy,
            gate: PluginSwitchDefinition(rollout: .full))
        #expect(fewCrashes.overall.shortfall.first == "4 of 5 crashes needed")
    }

    @Test func theLowerBoundNotThePointRateDecides() {
        // 3 % observed over 500 sessions: the 99.9 % lower bound (1.4 %) is under 2 %.
        let assessment = GuardRule.assess(
            key: Self.key, tallies: tallies([.all: (500, 15)]), policy: Self.policy,
            gate: PluginSwitchDefinition(rollout: .full))
        #expect(assessment.overall.rate == 0.03)
        #expect(assessment.trip == nil)
        #expect(assessment.overall.shortfall.first?.hasPrefix("lower bound 1.") == true)
    }

    @Test func theBaselineRatioKeepsTheGuardQuietWhenEverythingCrashes() throws {
        var policy = Self.policy
        policy.baselineRatio = 300
        // 5 % with the switch, 4 % without: a bad release, not this plugin.
        let release = tallies([.all: (2000, 100)], baseline: [.all: (12_000, 500)])
        let quiet = GuardRule.assess(
            key: Self.key, tallies: release, policy: policy, gate: PluginSwitchDefinition(rollout: .full))
        #expect(quiet.overall.baselineRate == 0.04)
        #expect(abs(quiet.overall.bound - 0.12) < 1e-12)
        #expect(quiet.trip == nil)
        // 5 % with the switch, 0.5 % without: the plugin.
        let plugin = tallies([.all: (2000, 100)], baseline: [.all: (12_000, 150)])
        let trip = try #require(
            GuardRule.assess(
                key: Self.key, tallies: plugin, policy: policy, gate: PluginSwitchDefinition(rollout: .full)
            ).trip)
        #expect(trip.check.bound == 0.02)
        #expect(trip.check.baselineRate == 0.005)
    }

    @Test func evidenceNamesCountsRatesBoundWindowAndScope() throws {
        let counts = tallies([.all: (3000, 62), .city("lagos"): (1000, 60), .city("paris"): (2000, 2)])
        let trip = try #require(
            GuardRule.assess(
                key: Self.key, tallies: counts, policy: Self.policy,
                gate: PluginSwitchDefinition(rollout: .full)
            ).trip)
        let evidence = trip.evidence(from: .init(timeIntervalSince1970: 0), until: .init(timeIntervalSince1970: 600))
            .json
        #expect(evidence["switch"] == .string(Self.key))
        #expect(evidence["scope"] == .object(JSONObject([("cities", .array([.string("lagos")]))])))
        #expect(evidence["sessions"] == .int64(1000))
        #expect(evidence["crashes"] == .int64(60))
        #expect(evidence["crash_rate"] == .double(0.06))
        #expect(evidence["window"] == .string("10m"))
        #expect(evidence["from"] == .string("1970-01-01T00:00:00.000Z"))
        #expect(evidence["bound"] == .double(0.02))
        #expect(evidence["complement"]?["crashes"] == .int64(2))
        #expect(evidence["policy"]?["max_crash_rate"] == .int(200))
        guard case .number(let number)? = evidence["lower_bound"], let lower = number.doubleValue else {
            Issue.record("lower_bound is not a number")
            return
        }
        #expect(lower > 0.02 && lower < 0.06)
    }
}

extension ResolvedCrashGuardPolicy {
    /// The policy with no minimum of distinct units or addresses, for counts without crash records.
    var withoutSpreadMinimums: ResolvedCrashGuardPolicy {
        var policy = self
        policy.minimumUnits = 0
        policy.minimumAddresses = 0
        return policy
    }
}
