import Foundation
import SwitchyardCore
import SwitchyardGuard
import SwitchyardStorage
import Testing

/// Where the crash guard may cut on clients' evidence (issue 29): only where riders are, counted by networks, with a
/// budget for scoped trips apart from the global one.
struct GuardScopeTests {
    static let promos = GuardAttributionTests.promos

    /// Crashes concentrated in a made-up city beside a healthy fleet in Lagos.
    static func ghostTown() -> GuardCounts {
        var fleet = GuardAttributionTests.Fleet()
        fleet.add(200, crashEvery: 4, switches: [Self.promos], city: "ghost")
        fleet.add(2000, crashEvery: 0, switches: [Self.promos], city: "lagos")
        return fleet.counts
    }

    static func assess(_ counts: GuardCounts) -> GuardAssessment {
        GuardRule.assess(
            key: Self.promos, counts: counts, policy: GuardAttributionTests.policy,
            gate: PluginSwitchDefinition(rollout: .full))
    }

    /// A sketch with `units` and `networks` bits set.
    static func reach(units: Int, networks: Int) -> EventAdmission.Reach {
        func bits(_ count: Int) -> Int64 { count >= 64 ? -1 : Int64(bitPattern: (1 << UInt64(count)) - 1) }
        return EventAdmission.Reach(units: bits(units), networks: bits(networks))
    }

    @Test func aCityNoRiderIsInIsNoScopeForClientsTrips() {
        // Without a view of where riders are (counts held in memory): the city is cut, as before.
        #expect(Self.assess(Self.ghostTown()).trip?.scope == Scope(cities: ["ghost"]))
        // Reported from one network: not a scope, and the fleet as a whole is not shown to crash: nothing trips.
        var counts = Self.ghostTown()
        let ghost = EventDimension(kind: .city, value: "ghost")
        counts.scopes = ScopeEligibility(
            named: [], citiesDeclared: false, cohortsDeclared: false,
            reach: [ghost: Self.reach(units: 64, networks: 1)])
        let forged = Self.assess(counts)
        #expect(forged.trip == nil)
        #expect(forged.exceedingScopes.map(\.dimension) == [ghost], "the city's own test still shows in the assessment")
        #expect(counts.scopes?.shortfall(ghost)?.contains("1 of 10 networks") == true)
        // Reported by enough units from enough networks: a scope.
        counts.scopes?.reach[ghost] = Self.reach(
            units: ScopeEligibility.minimumUnits, networks: ScopeEligibility.minimumNetworks)
        #expect(Self.assess(counts).trip?.scope == Scope(cities: ["ghost"]))
        counts.scopes?.reach[ghost] = Self.reach(units: ScopeEligibility.minimumUnits - 1, networks: 64)
        #expect(Self.assess(counts).trip == nil)
        // Named by a person in the flag set, or declared: a scope whatever its reach.
        counts.scopes = ScopeEligibility(named: [ghost], citiesDeclared: false, cohortsDeclared: false, reach: [:])
        #expect(Self.assess(counts).trip?.scope == Scope(cities: ["ghost"]))
        counts.scopes = ScopeEligibility(named: [], citiesDeclared: true, cohortsDeclared: false, reach: [:])
        #expect(Self.assess(counts).trip?.scope == Scope(cities: ["ghost"]))
    }

    @Test func reportersMayCutAnyCityTheyReport() {
        var fleet = GuardAttributionTests.Fleet()
        fleet.add(200, crashEvery: 4, switches: [Self.promos], city: "ghost", source: .reporter)
        fleet.add(2000, crashEvery: 0, switches: [Self.promos], city: "lagos", source: .reporter)
        var counts = fleet.counts
        counts.scopes = ScopeEligibility(named: [], citiesDeclared: false, cohortsDeclared: false, reach: [:])
        #expect(Self.assess(counts).trip?.scope == Scope(cities: ["ghost"]))
    }

    @Test func theFlagSetNamesTheScopesAPersonChose() throws {
        var flagSet = FlagSet(
            namespace: "rider",
            killSwitches: [KillSwitch(key: KillSwitch.masterKey, entries: [Scope(cohorts: ["core_only"])])])
        var gate = PluginSwitchDefinition(
            disabledScopes: [Scope(cities: ["lima"])],
            rules: [SwitchRule(conditions: Conditions(cities: ["paris"], notCohorts: ["staff"]), rollout: .full)])
        gate.release = ReleasePlan(stages: [
            ReleaseStage(scope: Scope(cities: ["nairobi"]), rollout: .full), ReleaseStage(rollout: .full),
        ])
        flagSet.flags = [FlagDefinition(key: Self.promos, kind: .pluginSwitch(gate))]
        let named = flagSet.namedScopes
        #expect(named.cities == ["lima", "paris", "nairobi"])
        #expect(named.cohorts == ["core_only", "staff"])
        let eligibility = ScopeEligibility(flagSet: flagSet, reach: [:])
        #expect(eligibility.shortfall(EventDimension(kind: .city, value: "nairobi")) == nil)
        #expect(eligibility.shortfall(EventDimension(kind: .city, value: "atlantis")) != nil)
        // Declared cities in the policy make every counted city a scope (the others are counted as (other)).
        flagSet.crashGuard = CrashGuardPolicy(cities: ["lagos"])
        #expect(
            ScopeEligibility(flagSet: flagSet, reach: [:]).shortfall(EventDimension(kind: .city, value: "lagos")) == nil
        )
        #expect(
            ScopeEligibility(flagSet: flagSet, reach: [:]).shortfall(EventDimension(kind: .cohort, value: "ghosts"))
                != nil)
    }

    @Test func scopedTripsSpendABudgetOfTheirOwn() throws {
        var fleet = GuardAttributionTests.Fleet()
        fleet.add(300, crashEvery: 5, switches: [Self.promos])
        fleet.add(300, crashEvery: 0, switches: [])
        let global = try #require(fleet.assess(Self.promos).trip)
        #expect(global.scope.isEverywhere)
        var scoped = global
        scoped.scope = Scope(cohorts: ["beta"])
        var policy = global.policy
        policy.maximumTripsPerHour = 3
        policy.maximumScopedTripsPerHour = 2
        scoped.policy = policy
        var everywhere = global
        everywhere.policy = policy
        // Scoped trips past their budget are proposed; a global trip still has its own.
        #expect(GuardBudget.decide(scoped, tripsInLastHour: 1, openScopedDisables: 0, pending: false) == .trip)
        #expect(
            GuardBudget.decide(scoped, tripsInLastHour: 2, openScopedDisables: 0, pending: false)
                == .propose(.scopedBudget))
        #expect(GuardBudget.decide(everywhere, tripsInLastHour: 2, openScopedDisables: 0, pending: false) == .trip)
        #expect(
            GuardBudget.decide(everywhere, tripsInLastHour: 3, openScopedDisables: 0, pending: false)
                == .propose(.budget))
        #expect(GuardBudget.sentence(.scopedBudget, policy: policy).contains("max_scoped_trips_per_hour"))
    }

    @Test func crashesAreCountedByNetworkNotByAddress() {
        func spread(_ addresses: [String]) -> CrashSpread {
            CrashSpread(
                addresses.enumerated().map { index, address in
                    CrashRecord(
                        id: "c\(index)", source: .client, bucket: 0, unit: "u\(index)", address: address, city: nil,
                        cohorts: [], switches: [])
                }, source: .client, leavingOut: 2)
        }
        // Five neighbours in one /24, or five /64s of one /48: one network each.
        #expect(spread((1...5).map { "203.0.113.\($0)" }).addresses == 1)
        #expect(spread((1...5).map { "2001:db8:5:\($0)::/64" }).addresses == 1)
        let three = spread(["203.0.113.1", "198.51.100.1", "192.0.2.1", "2001:db8:5:1::/64", "2001:db8:6:1::/64"])
        #expect(three.addresses == 5)
        // Without the two busiest networks, what is left.
        let busy = spread(["203.0.113.1", "203.0.113.2", "203.0.113.3", "198.51.100.1", "198.51.100.2", "192.0.2.9"])
        #expect(busy.addresses == 3 && busy.crashesBeyondBusiest == 1)
    }
}
