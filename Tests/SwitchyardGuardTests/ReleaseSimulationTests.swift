import SwitchyardCore
import SwitchyardGuard
import TestSupport
import Testing

/// Release plans over seeded fleets, as flagsd's runner applies them (a check every minute, the crash guard
/// watching): the same seed gives the same run, a clearly worse plugin is rolled back before it reaches everyone,
/// and on a timer with the guard alone a mildly worse one is not. The fleets run on a thread of their own (CPU work).
struct ReleaseSimulationTests {
    /// Runs seeds 1...count of a scenario off the cooperative pool.
    static func runs(_ scenario: ReleaseSimulation.Scenario, seeds count: UInt64) async -> [ReleaseSimulation.Outcome] {
        await onOwnThread { (1...count).map { ReleaseSimulation.run(scenario, seed: $0) } }
    }

    static func scenario(points: Double, horizon: Int) -> ReleaseSimulation.Scenario {
        var scenario = ReleaseSimulation.Scenario(excessCrashRate: points / 100)
        scenario.horizon = horizon
        return scenario
    }

    @Test func theSameSeedGivesTheSameRun() async {
        let scenario = Self.scenario(points: 0, horizon: 240)
        let (first, second, other) = await onOwnThread {
            (
                ReleaseSimulation.run(scenario, seed: 42), ReleaseSimulation.run(scenario, seed: 42),
                ReleaseSimulation.run(scenario, seed: 43)
            )
        }
        #expect(first == second)
        #expect(first.sessionsExposed > 0)
        #expect(first.sessionsExposed != other.sessionsExposed)
    }

    @Test func aPluginTwoPointsWorseIsStoppedInTheFirstStageAndNeverReachesEveryone() async {
        let outcomes = await Self.runs(Self.scenario(points: 2, horizon: 1440), seeds: 10)
        for (index, outcome) in outcomes.enumerated() {
            // The plan rolls it back, or the crash guard turns it off first (its trip aborts the plan).
            #expect(
                outcome.rolledBack != !outcome.trips.isEmpty, "seed \(index + 1): \(outcome.lastCheck?.summary ?? "")")
            #expect(!outcome.reachedEveryone, "seed \(index + 1)")
            #expect(outcome.stageAtEnd == 0, "seed \(index + 1): \(outcome.stageStarts)")
            // Lagos at 1 % of 10,000 sessions a minute: about 20 sessions a minute with the plugin.
            #expect(outcome.sessionsExposed < 5000, "seed \(index + 1): \(outcome.sessionsExposed)")
        }
        #expect(outcomes.count(where: \.rolledBack) >= 5)
    }

    @Test func aHealthyPluginAdvancesOnlyAfterEachStageHasSoakedAndIsNotRolledBack() async {
        var scenario = Self.scenario(points: 0, horizon: 1200)
        scenario.sessionsPerMinute = 50_000
        for (index, outcome) in await Self.runs(scenario, seeds: 3).enumerated() {
            #expect(!outcome.rolledBack, "seed \(index + 1): \(outcome.lastCheck?.summary ?? "")")
            #expect(outcome.trips.isEmpty, "seed \(index + 1)")
            #expect(outcome.stageStarts.count > 2, "seed \(index + 1): \(outcome.stageStarts)")
            let spans = zip(outcome.stageStarts.dropFirst(), outcome.stageStarts).map { $0 - $1 }
            #expect(spans.allSatisfy { $0 >= 30 }, "seed \(index + 1): \(outcome.stageStarts)")
        }
    }

    @Test func onATimerWithTheGuardAloneAPluginHalfAPointWorseReachesEveryone() async {
        var scenario = Self.scenario(points: 0.5, horizon: 400)
        scenario.mode = .timer(minutes: 60)
        for (index, outcome) in await Self.runs(scenario, seeds: 3).enumerated() {
            #expect(outcome.reachedEveryone, "seed \(index + 1): \(outcome.trips)")
            #expect(outcome.minutesToEveryone == 360)
            #expect(outcome.crashesCaused > 0)
        }
    }
}
