import Foundation
import SwitchyardCore
import SwitchyardGuard
import SwitchyardStorage
import Testing

/// A release plan's stage check on hand-computed samples: it holds (saying why) until the soak, the sessions and
/// the non-inferiority bound are there, advances when they are, and rolls back when the switch is shown worse by
/// crashes spread over enough units and networks. The bounds are the confidence sequences of ``ReleaseCriteria``.
struct ReleaseCheckTests {
    static let criteria = ReleaseCriteria.defaults

    /// 1 % crash rate without the switch, in a large sample.
    static let without = EventTally(sessions: 180_000, crashedSessions: 1_800)

    @Test func holdsOnTooFewSessionsAndSaysHowMany() {
        let check = ReleaseCheck(
            with: EventTally(sessions: 312, crashedSessions: 3), without: Self.without, criteria: Self.criteria,
            timeInStage: .seconds(3600))
        #expect(check.verdict == .hold)
        #expect(check.waitingFor.first == "312 of 1000 sessions needed")
    }

    /// 1 % of 360,000 sessions without the switch.
    static let largeWithout = EventTally(sessions: 360_000, crashedSessions: 3_600)

    @Test func holdsUntilTheStageHasSoakedEvenWithEnoughSessions() {
        let with = EventTally(sessions: 40_000, crashedSessions: 400)
        let early = ReleaseCheck(
            with: with, without: Self.largeWithout, criteria: Self.criteria, timeInStage: .seconds(12 * 60 + 40))
        #expect(early.verdict == .hold)
        #expect(early.waitingFor == ["soak 12m of 30m"])
        #expect(early.summary == "hold: soak 12m of 30m")
        let soaked = ReleaseCheck(
            with: with, without: Self.largeWithout, criteria: Self.criteria, timeInStage: .seconds(1800))
        #expect(soaked.verdict == .advance)
        #expect(soaked.waitingFor.isEmpty)
    }

    @Test func advancesWhenTheAnytimeUpperBoundOfTheDifferenceIsBelowTheMargin() throws {
        // 1 % against 1 %: δ = 0; N = 40,000 · 360,000 / 400,000 = 36,000; the standard error at the margin's edge
        // √(0.0125 · 0.9875 / 40,000 + 0.0099 / 360,000) ≈ 0.058 points times m(36,000) ≈ 3.12 (N* 10,000, α 0.05)
        // gives about 0.18 points, where a single look's 1.96 would give 0.11.
        let check = ReleaseCheck(
            with: EventTally(sessions: 40_000, crashedSessions: 400), without: Self.largeWithout,
            criteria: Self.criteria, timeInStage: .seconds(3600))
        #expect(check.verdict == .advance)
        #expect(check.effectiveSessions == 36_000)
        let upper = try #require(check.upperBound)
        #expect(upper > 0.0017 && upper < 0.0019, "\(upper)")
        #expect(check.difference == 0)
        #expect(check.summary.hasSuffix("at 97.5% over every look"), "\(check.summary)")
    }

    @Test func holdsWhereASingleLookWouldAdvance() throws {
        // 20,000 sessions at 1 %: a fixed-horizon bound (about 0.15 points) is below the margin, the sequence's is not.
        let check = ReleaseCheck(
            with: EventTally(sessions: 20_000, crashedSessions: 200), without: Self.without,
            criteria: Self.criteria, timeInStage: .seconds(3600))
        #expect(check.verdict == .hold)
        let upper = try #require(check.upperBound)
        #expect(upper >= 0.0025 && upper < 0.003, "\(upper)")
    }

    @Test func holdsWhileTheUpperBoundIsAtOrAboveTheMarginAndSaysBothInPoints() throws {
        // 1,000 sessions: the same rates, but the bound is about 3.9 × √(0.0125 · 0.9875 / 1000) ≈ 1.4 points.
        let check = ReleaseCheck(
            with: EventTally(sessions: 1000, crashedSessions: 10), without: Self.without,
            criteria: Self.criteria, timeInStage: .seconds(3600))
        #expect(check.verdict == .hold)
        let upper = try #require(check.upperBound)
        #expect(upper > 0.012 && upper < 0.016, "\(upper)")
        #expect(
            check.waitingFor == [
                "upper bound of the difference \(ReleaseCheck.points(upper)) not yet below the margin 0.25 points"
            ])
    }

    @Test func rollsBackWhenTheSwitchIsClearlyWorseWhateverTheSoak() throws {
        // 4 % of 2,000 against 1 % of 20,000: pooled standard error 0.263 points times m(1,818) ≈ 4.61 (N* 1,000,
        // α 0.0002): the lower bound is about 1.79 points.
        let check = ReleaseCheck(
            with: EventTally(sessions: 2000, crashedSessions: 80),
            without: EventTally(sessions: 20_000, crashedSessions: 200),
            criteria: Self.criteria, timeInStage: .seconds(120))
        #expect(check.verdict == .rollBack)
        let lower = try #require(check.rollbackLowerBound)
        #expect(lower > 0.017 && lower < 0.019, "\(lower)")
        #expect(check.waitingFor.isEmpty)
        #expect(
            check.summary.hasPrefix(
                "roll back: sessions with the switch crash more often (4% of 2000 against 1% of 20000 without it)"))
    }

    @Test func doesNotRollBackBeforeTheRollbackMinimumOrOnAMildExcess() {
        // 20 crashes in 150 sessions would be shown worse, but 150 is under the 200 the rollback needs.
        let small = ReleaseCheck(
            with: EventTally(sessions: 150, crashedSessions: 20), without: Self.without, criteria: Self.criteria,
            timeInStage: .seconds(60))
        #expect(small.verdict == .hold)
        // 1.3 % of 2,000 against 1 %: worse, but not shown at 99.99 % over every look; not shown non-inferior either.
        let mild = ReleaseCheck(
            with: EventTally(sessions: 2000, crashedSessions: 26), without: Self.without, criteria: Self.criteria,
            timeInStage: .seconds(3600))
        #expect(mild.verdict == .hold)
        #expect(mild.waitingFor.count == 1)
    }

    @Test func theBoundsAreTheCriteriasConfidenceSequencesOverTheEffectiveSessions() throws {
        let (with, without) = (
            EventTally(sessions: 5_000, crashedSessions: 70), EventTally(sessions: 45_000, crashedSessions: 450)
        )
        let check = ReleaseCheck(with: with, without: without, criteria: Self.criteria, timeInStage: .seconds(0))
        let (p1, p0) = (0.014, 0.01)
        #expect(check.effectiveSessions == 4_500)
        // Advance: the with-arm's variance at least at the control's rate plus the margin (here its own, 1.4 %).
        let atMargin = (p1 * (1 - p1) / 5_000 + p0 * (1 - p0) / 45_000).squareRoot()
        let upper = try #require(check.upperBound)
        #expect(
            abs(upper - Self.criteria.advanceUpperBound(estimate: p1 - p0, standardError: atMargin, sessions: 4_500))
                < 1e-12)
        #expect(
            abs(
                upper
                    - (p1 - p0 + atMargin
                        * ConfidenceSequence(alpha: 0.05, plannedUnits: 10_000).multiplier(units: 4_500))) < 1e-12)
        // Roll back: the pooled rate's standard error (no difference).
        let pooled = 520.0 / 50_000
        let standardError = (pooled * (1 - pooled) * (1.0 / 5_000 + 1.0 / 45_000)).squareRoot()
        let lower = try #require(check.rollbackLowerBound)
        #expect(
            abs(
                lower
                    - (p1 - p0 - standardError
                        * ConfidenceSequence(alpha: 0.0002, plannedUnits: 1_000).multiplier(units: 4_500))) < 1e-12)
    }

    @Test func theCriteriasSequencesHoldEachSideAtTheirConfidence() {
        let criteria = ReleaseCriteria.defaults
        #expect(
            abs(criteria.advanceSequence.alpha - 0.05) < 1e-12
                && criteria.advanceSequence.plannedUnits == criteria.plannedSessions)
        #expect(
            abs(criteria.rollbackSequence.alpha - 0.0002) < 1e-12
                && criteria.rollbackSequence.plannedUnits == criteria.rollbackPlannedSessions)
        // Wider than one look's z everywhere, tightest near N*.
        let z = Proportions.normalQuantile(0.975)
        for units in [100, 1_000, 10_000, 100_000] { #expect(criteria.advanceSequence.multiplier(units: units) > z) }
        #expect(criteria.advanceSequence.multiplier(units: 10_000) < criteria.advanceSequence.multiplier(units: 1_000))
        #expect(criteria.advanceUpperBound(estimate: 0.001, standardError: 0.0005, sessions: 0) == .infinity)
        #expect(ReleaseCriteria.effectiveSessions(with: 100, without: 100) == 50)
        #expect(ReleaseCriteria.effectiveSessions(with: 100, without: 0) == 0)
    }

    // MARK: Spread: evidence one party cannot make

    /// The issue's attack: 100 made-up crashed sessions with the switch from one network beside 400 honest ones, none
    /// crashed, against 400 without it.
    static let forged = (
        with: EventTally(sessions: 500, crashedSessions: 100), without: EventTally(sessions: 400, crashedSessions: 0)
    )

    @Test func withoutTheSpreadRulesTheIssuesForgeryWouldRollBack() {
        let check = ReleaseCheck(
            with: Self.forged.with, without: Self.forged.without, criteria: Self.criteria, timeInStage: .seconds(60))
        #expect(check.verdict == .rollBack)
    }

    @Test func crashesFromOneNetworkDoNotRollBackAndTheHoldSaysWhy() {
        let spread = ReleaseCheck.Spread(
            crashes: CrashSpread(units: 100, addresses: 1, crashesBeyondBusiest: 0), minimumUnits: 5,
            minimumAddresses: 3)
        let check = ReleaseCheck(
            with: Self.forged.with, without: Self.forged.without, criteria: Self.criteria, timeInStage: .seconds(60),
            spread: spread)
        #expect(check.verdict == .hold)
        #expect(check.waitingFor.contains("crashes from 1 of 3 networks needed to roll back"), "\(check.waitingFor)")
        #expect(check.tree["crash_addresses"] == .int(1))
    }

    @Test func crashesThatVanishWithoutTheBusiestNetworksDoNotRollBack() {
        // Four networks, but 97 of the 100 crashes from the busiest two: the other 3 crashes do not show harm.
        let spread = ReleaseCheck.Spread(
            crashes: CrashSpread(units: 100, addresses: 4, crashesBeyondBusiest: 3), minimumUnits: 5,
            minimumAddresses: 3)
        let check = ReleaseCheck(
            with: Self.forged.with, without: Self.forged.without, criteria: Self.criteria, timeInStage: .seconds(60),
            spread: spread)
        #expect(check.verdict == .hold)
        #expect(
            check.waitingFor.contains { $0.hasPrefix("not shown worse without the crashes of the 2 busiest networks") },
            "\(check.waitingFor)")
    }

    @Test func crashesSpreadOverManyUnitsAndNetworksRollBack() {
        let spread = ReleaseCheck.Spread(
            crashes: CrashSpread(units: 100, addresses: 40, crashesBeyondBusiest: 94), minimumUnits: 5,
            minimumAddresses: 3)
        let check = ReleaseCheck(
            with: Self.forged.with, without: Self.forged.without, criteria: Self.criteria, timeInStage: .seconds(60),
            spread: spread)
        #expect(check.verdict == .rollBack)
        #expect(check.tree["crash_units"] == .int(100))
        #expect((check.rollbackLowerBoundBeyondBusiest ?? 0) > 0)
    }

    @Test func aStageCountsFromTheFirstMinuteNoEventReceivedBeforeItCanBeIn() {
        // Began 09:00:30; events may be stamped 10 minutes ahead: one received at 09:00:29 may sit in 09:10.
        let minute = TimeInterval(1_795_000_000 / 60 * 60)
        let began = Date(timeIntervalSince1970: minute + 30)
        let start = ReleaseCheck.countingStart(stageBegan: began, futureSkew: .seconds(600))
        #expect(start.timeIntervalSince(began) == 630)
        let onTheMinute = Date(timeIntervalSince1970: minute)
        #expect(
            ReleaseCheck.countingStart(stageBegan: onTheMinute, futureSkew: .seconds(600)).timeIntervalSince(
                onTheMinute) == 600)
        #expect(ReleaseCheck.countingStart(stageBegan: began, futureSkew: .zero).timeIntervalSince(began) == 30)
    }

    @Test func withoutSessionsToCompareWithItHoldsAndSaysSo() {
        let check = ReleaseCheck(
            with: EventTally(sessions: 5000, crashedSessions: 50), without: .zero, criteria: Self.criteria,
            timeInStage: .seconds(3600))
        #expect(check.verdict == .hold)
        #expect(check.waitingFor == ["no sessions without the switch to compare with"])
        #expect(check.upperBound == nil && check.rollbackLowerBound == nil)
    }

    @Test func whenEverySessionHasTheSwitchItPassesOnSoakAndSessionsAlone() {
        let everyone = ReleaseTallies(
            with: EventTally(sessions: 5000, crashedSessions: 50), without: .zero, control: .none)
        let early = ReleaseCheck(everyone, criteria: Self.criteria, timeInStage: .seconds(60))
        #expect(early.verdict == .hold)
        #expect(early.waitingFor.count == 1 && early.waitingFor[0].hasPrefix("soak "), "\(early.waitingFor)")
        let soaked = ReleaseCheck(everyone, criteria: Self.criteria, timeInStage: .seconds(3600))
        #expect(soaked.verdict == .advance)
        #expect(soaked.summary.contains("nothing to compare with"), "\(soaked.summary)")
        let none = ReleaseCheck(
            ReleaseTallies(with: .zero, without: .zero, control: .none), criteria: Self.criteria,
            timeInStage: .seconds(3600))
        #expect(none.verdict == .hold)
    }

    @Test func theEvidenceTreeNamesEveryFigureInSnakeCase() {
        let check = ReleaseCheck(
            with: EventTally(sessions: 2000, crashedSessions: 80),
            without: EventTally(sessions: 20_000, crashedSessions: 200),
            criteria: Self.criteria, timeInStage: .seconds(120))
        let tree = check.tree
        #expect(tree["verdict"] == .string("roll_back"))
        #expect(tree["sessions_with"] == .int64(2000))
        #expect(tree["crashes_without"] == .int64(200))
        #expect(tree["crash_rate_with"] == .double(0.04))
        #expect(tree["margin"] == .double(0.0025))
        #expect(tree["time_in_stage_seconds"] == .int64(120))
        #expect(tree["soak_seconds"] == .int64(1800))
        #expect(tree["control"] == .string("scope"))
        #expect(tree["rule"] == .string("confidence-sequence"))
        #expect(tree["effective_sessions"] == .int(1818))
        #expect(tree["rollback_planned_sessions"] == .int(1000))
        #expect(tree.memberKeys.allSatisfy { $0 == $0.lowercased() && !$0.contains("-") })
    }

    @Test func pointsReadAsPercentagePoints() {
        #expect(ReleaseCheck.points(0.0041) == "0.41 points")
        #expect(ReleaseCheck.points(0.0025) == "0.25 points")
        #expect(ReleaseCheck.points(0.00025) == "0.025 points")
        #expect(ReleaseCheck.points(-0.001) == "-0.1 points")
        #expect(ReleaseCheck.points(0) == "0 points")
    }

    @Test func theDefaultsAreUsableAndNonsenseIsNamed() {
        #expect(ReleaseCriteria.defaults.problems.isEmpty)
        var wrong = ReleaseCriteria.defaults
        wrong.margin = 0.25 * 100
        wrong.confidence = 1
        #expect(wrong.problems.count == 2)
        #expect(wrong.problems[0].hasPrefix("margin 25.0 is not between 0 and 1"))
    }

    // MARK: The scope's tallies

    static let key = "plugin_switch_feed_promos"

    /// Sessions with the switch: 100 in Lagos (2 crashed), 50 in Nairobi (1), from clients; 400 from a reporter.
    static let counts = GuardCounts(
        [
            EventCount(
                subject: .pluginSwitch(key), dimension: .city("lagos"),
                tally: EventTally(sessions: 100, crashedSessions: 2)),
            EventCount(
                subject: .pluginSwitch(key), dimension: .city("nairobi"),
                tally: EventTally(sessions: 50, crashedSessions: 1)),
            EventCount(
                subject: .pluginSwitch(key), dimension: .all, tally: EventTally(sessions: 150, crashedSessions: 3)),
            EventCount(
                subject: .baseline, dimension: .city("lagos"), tally: EventTally(sessions: 1000, crashedSessions: 10)),
            EventCount(
                subject: .baseline, dimension: .city("nairobi"), tally: EventTally(sessions: 500, crashedSessions: 5)),
            EventCount(
                subject: .baseline, dimension: .city("paris"), tally: EventTally(sessions: 3500, crashedSessions: 35)),
            EventCount(subject: .baseline, dimension: .all, tally: EventTally(sessions: 5000, crashedSessions: 50)),
            EventCount(
                source: .reporter, subject: .pluginSwitch(key), dimension: .all,
                tally: EventTally(sessions: 400, crashedSessions: 4)),
            EventCount(
                source: .reporter, subject: .baseline, dimension: .all,
                tally: EventTally(sessions: 800, crashedSessions: 8)),
        ], crashes: [])

    @Test func aStageScopedToCitiesSumsThoseCities() {
        let tallies = ReleaseCheck.tallies(of: Self.key, in: [.city("lagos"), .city("nairobi")], counts: Self.counts)
        #expect(
            tallies
                == ReleaseTallies(
                    with: EventTally(sessions: 150, crashedSessions: 3),
                    without: EventTally(sessions: 1350, crashedSessions: 12)))
        let lagos = ReleaseCheck.tallies(of: Self.key, in: [.city("lagos"), .city("lagos")], counts: Self.counts)
        #expect(lagos.with == EventTally(sessions: 100, crashedSessions: 2))
        #expect(lagos.without == EventTally(sessions: 900, crashedSessions: 8))
    }

    @Test func everyoneIsTheAllDimensionAndEachSourceIsCountedApart() {
        let everyone = ReleaseCheck.tallies(of: Self.key, in: [.all], counts: Self.counts)
        #expect(
            everyone
                == ReleaseTallies(
                    with: EventTally(sessions: 150, crashedSessions: 3),
                    without: EventTally(sessions: 4850, crashedSessions: 47)))
        let reporters = ReleaseCheck.tallies(of: Self.key, in: [.all], counts: Self.counts, source: .reporter)
        #expect(reporters.with == EventTally(sessions: 400, crashedSessions: 4))
        #expect(reporters.without == EventTally(sessions: 400, crashedSessions: 4))
        // A city the counts do not hold (counted as `(other)`): nothing with the switch there.
        #expect(ReleaseCheck.tallies(of: Self.key, in: [.city("lima")], counts: Self.counts).with == .zero)
    }

    @Test func aScopeWithTooFewSessionsWithoutTheSwitchIsComparedWithTheNamespace() {
        // Lagos at 100 %: 995 of its 1,000 sessions run the switch; the 5 without it are no control.
        let counts = GuardCounts(
            [
                EventCount(
                    subject: .pluginSwitch(Self.key), dimension: .city("lagos"),
                    tally: EventTally(sessions: 995, crashedSessions: 12)),
                EventCount(
                    subject: .pluginSwitch(Self.key), dimension: .all,
                    tally: EventTally(sessions: 995, crashedSessions: 12)),
                EventCount(
                    subject: .baseline, dimension: .city("lagos"),
                    tally: EventTally(sessions: 1000, crashedSessions: 12)),
                EventCount(subject: .baseline, dimension: .all, tally: EventTally(sessions: 5000, crashedSessions: 52)),
            ], crashes: [])
        #expect(
            ReleaseCheck.tallies(of: Self.key, in: [.city("lagos")], counts: counts).without
                == EventTally(sessions: 5, crashedSessions: 0))
        let tallies = ReleaseCheck.stageTallies(of: Self.key, in: [.city("lagos")], counts: counts, criteria: .defaults)
        #expect(
            tallies
                == ReleaseTallies(
                    with: EventTally(sessions: 995, crashedSessions: 12),
                    without: EventTally(sessions: 4005, crashedSessions: 40),
                    control: .namespace))
        let check = ReleaseCheck(tallies, criteria: .defaults, timeInStage: .seconds(60))
        #expect(check.control == .namespace)
        #expect(check.tree["control"] == .string("namespace"))
        // With enough sessions without the switch in the scope (the first fixture's Lagos has 900), the scope is the control.
        #expect(
            ReleaseCheck.stageTallies(
                of: Self.key, in: [.city("lagos")], counts: Self.counts,
                criteria: ReleaseCriteria.defaults.with(minimumSessions: 900)
            ).control == .scope)
        // Everyone at 100 %: nothing is left to compare with.
        let everyone = GuardCounts(
            [
                EventCount(
                    subject: .pluginSwitch(Self.key), dimension: .all,
                    tally: EventTally(sessions: 5000, crashedSessions: 52)),
                EventCount(subject: .baseline, dimension: .all, tally: EventTally(sessions: 5000, crashedSessions: 52)),
            ], crashes: [])
        #expect(
            ReleaseCheck.stageTallies(of: Self.key, in: [.all], counts: everyone, criteria: .defaults).control == .none)
    }
}

extension ReleaseCriteria {
    func with(minimumSessions: Int64) -> ReleaseCriteria {
        var criteria = self
        criteria.minimumSessions = minimumSessions
        return criteria
    }
}
