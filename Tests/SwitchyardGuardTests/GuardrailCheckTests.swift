import SwitchyardCore
import SwitchyardGuard
import SwitchyardWire
import Testing

/// A release plan's guardrail metric judged on a stage's units: not worse than its margin, undecided, worse, on
/// either side (better higher or lower) and in either unit (points or relative).
struct GuardrailCheckTests {
    static let booked = MetricDefinition(name: "trip_booked", kind: .conversion)
    static let timeToBook = MetricDefinition(name: "time_to_book", kind: .value, better: .lower, cap: 600)

    /// `units` units of which `converted` have 1, the rest 0.
    static func conversions(_ converted: Int, of units: Int) -> ArmMoments {
        var arm = ArmMoments()
        for index in 0..<units { arm.add(y: index < converted ? 1 : 0) }
        return arm
    }

    /// `units` units whose values alternate `mean − spread` and `mean + spread`.
    static func values(mean: Double, spread: Double, units: Int) -> ArmMoments {
        var arm = ArmMoments()
        for index in 0..<units { arm.add(y: mean + (index % 2 == 0 ? -spread : spread)) }
        return arm
    }

    @Test func equalBookingsOnManyUnitsAreShownWithinHalfAPoint() throws {
        let guardrail = ReleaseGuardrail(metric: "trip_booked", margin: .points(-0.005))
        let check = GuardrailCheck(
            guardrail, metric: Self.booked, without: Self.conversions(40_000, of: 200_000),
            with: Self.conversions(40_000, of: 200_000), criteria: .defaults)
        #expect(check.state == .notWorse, "\(check.summary)")
        #expect(check.estimate == 0)
        #expect(
            try #require(check.lower) > -0.005 && check.lower! < 0, "the interval's lower bound is above the margin")
    }

    @Test func theSameBookingsOnFewUnitsAreUndecided() throws {
        let guardrail = ReleaseGuardrail(metric: "trip_booked", margin: .points(-0.005))
        let check = GuardrailCheck(
            guardrail, metric: Self.booked, without: Self.conversions(200, of: 1000),
            with: Self.conversions(200, of: 1000), criteria: .defaults)
        #expect(check.state == .undecided, "\(check.summary)")
        #expect(check.summary.contains("not yet shown within its margin -0.5pp"), "\(check.summary)")
    }

    @Test func fewerBookingsWithTheSwitchAreShownWorse() throws {
        let guardrail = ReleaseGuardrail(metric: "trip_booked", margin: .points(-0.005))
        let check = GuardrailCheck(
            guardrail, metric: Self.booked, without: Self.conversions(6000, of: 20_000),
            with: Self.conversions(5000, of: 20_000), criteria: .defaults)
        #expect(check.state == .worse, "\(check.summary)")
        #expect(try #require(check.rollbackUpper) < 0)
        #expect(check.summary.contains("trip_booked is worse with the switch"), "\(check.summary)")
    }

    @Test func worseOnTooFewUnitsIsNotARollBack() throws {
        var criteria = ReleaseCriteria.defaults
        criteria.rollbackMinimumSessions = 5000
        let guardrail = ReleaseGuardrail(metric: "trip_booked", margin: .points(-0.005))
        let check = GuardrailCheck(
            guardrail, metric: Self.booked, without: Self.conversions(1800, of: 3000),
            with: Self.conversions(300, of: 3000), criteria: criteria)
        #expect(check.state == .undecided, "fewer units with the switch than the roll-back minimum: \(check.summary)")
    }

    @Test func aMetricBetterLowerIsJudgedOnItsUpperSideRelativeToTheControl() throws {
        let guardrail = ReleaseGuardrail(metric: "time_to_book", margin: .relative(0.05))
        let same = GuardrailCheck(
            guardrail, metric: Self.timeToBook, without: Self.values(mean: 60, spread: 20, units: 50_000),
            with: Self.values(mean: 60, spread: 20, units: 50_000), criteria: .defaults)
        #expect(same.state == .notWorse, "\(same.summary)")
        #expect(try #require(same.upper) < 0.05)
        let slower = GuardrailCheck(
            guardrail, metric: Self.timeToBook, without: Self.values(mean: 60, spread: 20, units: 50_000),
            with: Self.values(mean: 66, spread: 20, units: 50_000), criteria: .defaults)
        #expect(slower.state == .worse, "ten per cent slower to book: \(slower.summary)")
        #expect(
            try #require(slower.estimate) > 0.09 && slower.estimate! < 0.11,
            "the relative change: \(String(describing: slower.estimate))")
    }

    @Test func aStageThatSplitsNoUnitDoesNotJudge() throws {
        let check = GuardrailCheck.notJudged(
            ReleaseGuardrail(metric: "fare", margin: .relative(-0.02)), better: .higher, why: "the stage splits no unit"
        )
        #expect(check.state == .notJudged && check.body.state == "not_judged")
    }
}
