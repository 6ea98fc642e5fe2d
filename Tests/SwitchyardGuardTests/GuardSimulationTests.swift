import SwitchyardCore
import SwitchyardGuard
import TestSupport
import Testing

/// The guard's rule over seeded fleets, as flagsd runs it (admission caps, per-minute counters, an assessment
/// after every batch, the trip budget, disables reaching clients a batch later): the crashing plugin is caught,
/// healthy ones never are, and forged reports from one address trip nothing. The fleets run on a thread of their
/// own (they are CPU work).
struct GuardSimulationTests {
    /// One plugin crashing in 5 % of its sessions, five healthy ones at 0.1 %, each active in half the sessions.
    static let fleet = GuardSimulation.Scenario(switches: [
        .init(key: "plugin_switch_crashing", crashRate: 0.05),
        .init(key: "plugin_switch_a", crashRate: 0.001), .init(key: "plugin_switch_b", crashRate: 0.001),
        .init(key: "plugin_switch_c", crashRate: 0.001), .init(key: "plugin_switch_d", crashRate: 0.001),
        .init(key: "plugin_switch_e", crashRate: 0.001),
    ])

    /// Runs seeds 1...count of a scenario off the cooperative pool.
    static func runs(_ scenario: GuardSimulation.Scenario, seeds count: UInt64) async -> [GuardSimulation.Outcome] {
        await onOwnThread { (1...count).map { GuardSimulation.run(scenario, seed: $0) } }
    }

    @Test func theSameSeedGivesTheSameRun() async {
        let (first, second) = await onOwnThread {
            (GuardSimulation.run(Self.fleet, seed: 42), GuardSimulation.run(Self.fleet, seed: 42))
        }
        #expect(first.trips == second.trips)
        #expect(first.sessions == second.sessions)
    }

    @Test func acrossManySeededRunsTheCrashingPluginIsDisabledWithinTheWindowAndNoHealthyOneEver() async {
        var scenario = Self.fleet
        scenario.minutes = 20
        for (index, outcome) in await Self.runs(scenario, seeds: 30).enumerated() {
            let crashing = outcome.trips.filter { $0.key == "plugin_switch_crashing" }
            #expect(crashing.count == 1, "seed \(index + 1): \(outcome.trips)")
            #expect(crashing.first?.scope == .everywhere, "seed \(index + 1)")
            // Within the 10-minute window: the evidence covers at most the window's sessions.
            #expect((crashing.first?.minute ?? .max) < 10, "seed \(index + 1): \(outcome.trips)")
            #expect(
                outcome.trips.allSatisfy { $0.key == "plugin_switch_crashing" }, "seed \(index + 1): \(outcome.trips)")
        }
    }

    @Test func theBaselineComparisonKeepsHealthyPluginsThatShareSessionsWithACrashingOneFromTakingTheBlame() async {
        // A plugin crashing in 10 % of its sessions: sessions of each healthy plugin that also ran it crash at
        // about 5 %, well above the 2 % threshold; sessions without them crash as often.
        var scenario = Self.fleet
        scenario.minutes = 15
        scenario.switches[0].crashRate = 0.1
        for outcome in await Self.runs(scenario, seeds: 10) {
            #expect(outcome.trips.map(\.key) == ["plugin_switch_crashing"], "\(outcome.trips)")
        }
        // With baseline_ratio 1 (the threshold alone) they take the blame in most runs (as trips or, past the budget,
        // proposals): all but those where the crashing plugin is off before any of them has crashes from enough
        // units and addresses.
        scenario.policy.baselineRatio = 100
        let alone = await Self.runs(scenario, seeds: 10)
        #expect(alone.count { ($0.trips + $0.proposals).contains { $0.key != "plugin_switch_crashing" } } >= 7)
    }

    @Test func crashesInOneCityDisableThePluginThereAndNowhereElse() async {
        var scenario = GuardSimulation.Scenario(switches: [
            .init(key: "plugin_switch_lagos_only", crashRate: 0.08, crashCity: "lagos"),
            .init(key: "plugin_switch_a", crashRate: 0.001), .init(key: "plugin_switch_b", crashRate: 0.001),
        ])
        scenario.minutes = 30
        for (index, outcome) in await Self.runs(scenario, seeds: 20).enumerated() {
            #expect(outcome.trips.map(\.scope) == [Scope(cities: ["lagos"])], "seed \(index + 1): \(outcome.trips)")
            #expect(outcome.trips.map(\.key) == ["plugin_switch_lagos_only"], "seed \(index + 1)")
        }
    }

    /// The fleet: accessibility in every session, traffic in half of them crashing 10 % (the others 1 %),
    /// 800 sessions over 4 cities in the window.
    static let alwaysOn: GuardSimulation.Scenario = {
        var scenario = GuardSimulation.Scenario(switches: [
            .init(key: "plugin_switch_prefs_accessibility", crashRate: 0, activeShare: 1),
            .init(key: "plugin_switch_map_traffic", crashRate: 0.09, activeShare: 0.5),
        ])
        scenario.cities = ["lagos", "paris", "lima", "pune"]
        scenario.baselineCrashRate = 0.01
        scenario.sessionsPerMinute = 80
        scenario.minutes = 20
        return scenario
    }()

    @Test func aCrashingPluginDoesNotTakeAnAlwaysOnOneDownWithIt() async {
        for (index, outcome) in await Self.runs(Self.alwaysOn, seeds: 20).enumerated() {
            #expect(outcome.trips.map(\.key) == ["plugin_switch_map_traffic"], "seed \(index + 1): \(outcome.trips)")
            #expect(outcome.proposals.isEmpty, "seed \(index + 1): \(outcome.proposals)")
        }
    }

    @Test func severalAlwaysOnPluginsStayOnBesideACrashingOneAndAnAlwaysOnCrasherTrips() async {
        var scenario = Self.alwaysOn
        scenario.switches += [
            .init(key: "plugin_switch_always_b", crashRate: 0, activeShare: 1),
            .init(key: "plugin_switch_always_c", crashRate: 0, activeShare: 1),
            .init(key: "plugin_switch_half", crashRate: 0.001),
        ]
        for (index, outcome) in await Self.runs(scenario, seeds: 10).enumerated() {
            #expect(
                (outcome.trips + outcome.proposals).map(\.key) == ["plugin_switch_map_traffic"],
                "seed \(index + 1): \(outcome.trips)")
        }
        // One always-on plugin really crashes (5 %), beside the crashing traffic layer: it trips.
        scenario.switches[0].crashRate = 0.05
        for (index, outcome) in await Self.runs(scenario, seeds: 10).enumerated() {
            #expect(
                outcome.trips.contains { $0.key == "plugin_switch_prefs_accessibility" },
                "seed \(index + 1): \(outcome.trips)")
        }
    }

    @Test func forgedCrashesFromOneAddressTripNothingAndFromManyTheyDoWithinTheBudget() async {
        var scenario = Self.fleet
        scenario.switches[0].crashRate = 0.001
        scenario.minutes = 30
        // 300 made-up crashed sessions a minute, each naming a new unit, all from one address.
        scenario.forgers = [.init(key: "plugin_switch_a", sessionsPerMinute: 300, addresses: 1)]
        for outcome in await Self.runs(scenario, seeds: 5) {
            #expect(outcome.trips.isEmpty && outcome.proposals.isEmpty, "\(outcome.trips)")
            #expect(outcome.dropped > 0)
        }
        // From 20 addresses they trip it: that is the cost of a forgery, and the budget bounds what it reaches.
        scenario.forgers = [.init(key: "plugin_switch_a", sessionsPerMinute: 300, addresses: 20)]
        for outcome in await Self.runs(scenario, seeds: 5) {
            #expect(outcome.trips.map(\.key).contains("plugin_switch_a"), "\(outcome.trips)")
        }
    }
}
