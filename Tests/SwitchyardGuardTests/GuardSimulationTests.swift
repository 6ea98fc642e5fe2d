import SwitchyardCore
import SwitchyardGuard
import TestSupport
import Testing

/// The guard's rule over seeded fleets, as flagsd runs it (per-minute counters, an assessment after every batch,
/// disables reaching clients a batch later): the crashing plugin is caught, healthy ones never are.
struct GuardSimulationTests {
    /// One plugin crashing in 5 % of its sessions, five healthy ones at 0.1 %, each active in half the sessions.
    static let fleet = GuardSimulation.Scenario(switches: [
        .init(key: "plugin_switch_crashing", crashRate: 0.05),
        .init(key: "plugin_switch_a", crashRate: 0.001), .init(key: "plugin_switch_b", crashRate: 0.001),
        .init(key: "plugin_switch_c", crashRate: 0.001), .init(key: "plugin_switch_d", crashRate: 0.001),
        .init(key: "plugin_switch_e", crashRate: 0.001),
    ])

    @Test func theSameSeedGivesTheSameRun() async {
        await onOwnThread {
            let first = GuardSimulation.run(Self.fleet, seed: 42)
            let second = GuardSimulation.run(Self.fleet, seed: 42)
            #expect(first.trips == second.trips)
            #expect(first.sessions == second.sessions)
        }
    }

    @Test func acrossManySeededRunsTheCrashingPluginIsDisabledWithinTheWindowAndNoHealthyOneEver() async {
        await onOwnThread {
            var scenario = Self.fleet
            scenario.minutes = 20
            for seed in UInt64(1)...50 {
                let outcome = GuardSimulation.run(scenario, seed: seed)
                let crashing = outcome.trips.filter { $0.key == "plugin_switch_crashing" }
                #expect(crashing.count == 1, "seed \(seed): \(outcome.trips)")
                #expect(crashing.first?.scope == .everywhere, "seed \(seed)")
                // Within the 10-minute window: the evidence covers at most the window's sessions.
                #expect((crashing.first?.minute ?? .max) < 10, "seed \(seed): \(outcome.trips)")
                #expect(outcome.trips.allSatisfy { $0.key == "plugin_switch_crashing" }, "seed \(seed): \(outcome.trips)")
            }
        }
    }

    @Test func theBaselineComparisonKeepsHealthyPluginsThatShareSessionsWithACrashingOneFromTakingTheBlame() async {
        await onOwnThread {
            // A plugin crashing in 10 % of its sessions: sessions of each healthy plugin that also ran it crash at
            // about 5 %, well above the 2 % threshold; sessions without them crash as often.
            var scenario = Self.fleet
            scenario.minutes = 15
            scenario.switches[0].crashRate = 0.1
            let compared = (UInt64(1)...10).map { GuardSimulation.run(scenario, seed: $0) }
            for outcome in compared { #expect(outcome.trips.map(\.key) == ["plugin_switch_crashing"], "\(outcome.trips)") }
            // With baseline_ratio 1 (the threshold alone) they take the blame, in every run.
            scenario.policy.baselineRatio = 100
            let alone = (UInt64(1)...10).map { GuardSimulation.run(scenario, seed: $0) }
            #expect(alone.allSatisfy { $0.trips.contains { $0.key != "plugin_switch_crashing" } })
        }
    }

    @Test func crashesInOneCityDisableThePluginThereAndNowhereElse() async {
        await onOwnThread {
            var scenario = GuardSimulation.Scenario(switches: [
                .init(key: "plugin_switch_lagos_only", crashRate: 0.08, crashCity: "lagos"),
                .init(key: "plugin_switch_a", crashRate: 0.001), .init(key: "plugin_switch_b", crashRate: 0.001),
            ])
            scenario.minutes = 30
            for seed in UInt64(1)...30 {
                let outcome = GuardSimulation.run(scenario, seed: seed)
                #expect(outcome.trips.map(\.scope) == [Scope(cities: ["lagos"])], "seed \(seed): \(outcome.trips)")
                #expect(outcome.trips.map(\.key) == ["plugin_switch_lagos_only"], "seed \(seed)")
            }
        }
    }
}
