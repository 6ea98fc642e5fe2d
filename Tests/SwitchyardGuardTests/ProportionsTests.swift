import SwitchyardGuard
import Testing

/// The statistics against published values.
struct ProportionsTests {
    @Test(arguments: [
        (0.975, 1.959963984540054), (0.999, 3.090232306167813), (0.9999, 3.719016485455709),
        (0.5, 0.0), (0.01, -2.326347874040841), (0.001, -3.090232306167813),
    ])
    func normalQuantileMatchesTheTables(p: Double, z: Double) {
        #expect(abs(Proportions.normalQuantile(p) - z) < 1e-9)
    }

    @Test func wilsonIntervalOfTenInAHundredMatchesTheLiterature() throws {
        // Newcombe (1998), table I: 10/100 → 0.0552 to 0.1744 (95 %).
        let interval = try #require(Proportions.wilson(successes: 10, trials: 100, z: 1.959963984540054))
        #expect(abs(interval.lower - 0.0552291) < 1e-6)
        #expect(abs(interval.upper - 0.1743657) < 1e-6)
    }

    @Test func wilsonBoundsStayInsideTheUnitIntervalAtTheEdges() throws {
        let none = try #require(Proportions.wilson(successes: 0, trials: 20, z: 3.09))
        #expect(none.lower == 0)
        #expect(none.upper > 0 && none.upper < 1)
        let all = try #require(Proportions.wilson(successes: 20, trials: 20, z: 3.09))
        #expect(all.upper == 1)
        #expect(all.lower > 0 && all.lower < 1)
        #expect(Proportions.wilson(successes: 0, trials: 0, z: 1.96) == nil)
    }

    @Test func aSmallSampleHasALowLowerBound() throws {
        // 1 crash in 10 sessions is a 10 % rate, but its 99.9 % lower bound is under 1 %: no trip on noise.
        let bound = try #require(Proportions.wilsonLowerBound(successes: 1, trials: 10, confidence: 0.999))
        #expect(bound < 0.01)
        let large = try #require(Proportions.wilsonLowerBound(successes: 200, trials: 1000, confidence: 0.999))
        #expect(large > 0.15)
    }

    @Test func newcombeHybridIntervalMatchesThePublishedExample() throws {
        // Newcombe (1998), method 10, example (a): 56/70 − 48/80 = 0.2000, 95 % CI 0.0524 to 0.3339.
        let interval = try #require(
            Proportions.newcombeDifference(
                successes1: 56, trials1: 70, successes2: 48, trials2: 80,
                z: 1.959963984540054))
        #expect(abs(interval.difference - 0.2) < 1e-12)
        #expect(abs(interval.lower - 0.0524) < 5e-5)
        #expect(abs(interval.upper - 0.3339) < 5e-5)
        #expect(Proportions.newcombeDifference(successes1: 1, trials1: 0, successes2: 1, trials2: 2, z: 1.96) == nil)
    }
}
