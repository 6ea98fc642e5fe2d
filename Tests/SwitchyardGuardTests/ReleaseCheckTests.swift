import SwitchyardCore
import SwitchyardGuard
import SwitchyardStorage
import Testing

/// A release plan's stage check on hand-computed samples: it holds (saying why) until the soak, the sessions and
/// the non-inferiority bound are there, advances when they are, and rolls back when the switch is shown worse.
struct ReleaseCheckTests {
    static let criteria = ReleaseCriteria.defaults

    /// 1 % crash rate without the switch, in a large sample.
    static let without = EventTally(sessions: 180_000, crashedSessions: 1_800)

    @Test func holdsOnTooFewSessionsAndSaysHowMany() {
        let check = ReleaseCheck(with: EventTally(sessions: 312, crashedSessions: 3), without: Self.without, criteria: Self.criteria,
                                 timeInStage: .seconds(3600))
        #expect(check.verdict == .hold)
        #expect(check.waitingFor.first == "312 of 1000 sessions needed")
    }

    @Test func holdsUntilTheStageHasSoakedEvenWithEnoughSessions() {
        let with = EventTally(sessions: 20_000, crashedSessions: 200)
        let early = ReleaseCheck(with: with, without: Self.without, criteria: Self.criteria, timeInStage: .seconds(12 * 60 + 40))
        #expect(early.verdict == .hold)
        #expect(early.waitingFor == ["soak 12m of 30m"])
        #expect(early.summary == "hold: soak 12m of 30m")
        let soaked = ReleaseCheck(with: with, without: Self.without, criteria: Self.criteria, timeInStage: .seconds(1800))
        #expect(soaked.verdict == .advance)
        #expect(soaked.waitingFor.isEmpty)
    }

    @Test func advancesWhenTheUpperBoundOfTheDifferenceIsBelowTheMargin() throws {
        // 1 % against 1 %: δ = 0; the 97.5 % one-sided upper bound is about 1.96 × √(0.0099/20000 + 0.0099/180000) ≈ 0.15 points.
        let check = ReleaseCheck(with: EventTally(sessions: 20_000, crashedSessions: 200), without: Self.without,
                                 criteria: Self.criteria, timeInStage: .seconds(3600))
        #expect(check.verdict == .advance)
        let upper = try #require(check.upperBound)
        #expect(upper > 0.0013 && upper < 0.0017, "\(upper)")
        #expect(check.difference == 0)
    }

    @Test func holdsWhileTheUpperBoundIsAtOrAboveTheMarginAndSaysBothInPoints() throws {
        // 1,000 sessions: the same rates, but the bound is about 1.96 × √(0.0099/1000 + 0.0099/180000) ≈ 0.62 points, more
        // with the Wilson intervals' skew at 10 crashes (0.83).
        let check = ReleaseCheck(with: EventTally(sessions: 1000, crashedSessions: 10), without: Self.without,
                                 criteria: Self.criteria, timeInStage: .seconds(3600))
        #expect(check.verdict == .hold)
        let upper = try #require(check.upperBound)
        #expect(upper > 0.006 && upper < 0.01, "\(upper)")
        #expect(check.waitingFor == ["upper bound of the difference \(ReleaseCheck.points(upper)) ≥ margin 0.25 points"])
    }

    @Test func rollsBackWhenTheSwitchIsClearlyWorseWhateverTheSoak() throws {
        // 4 % of 2,000 against 1 %: the 99.999 % lower bound of the difference is about 1.5 points.
        let check = ReleaseCheck(with: EventTally(sessions: 2000, crashedSessions: 80), without: EventTally(sessions: 20_000, crashedSessions: 200),
                                 criteria: Self.criteria, timeInStage: .seconds(120))
        #expect(check.verdict == .rollBack)
        let lower = try #require(check.rollbackLowerBound)
        #expect(lower > 0.01 && lower < 0.02, "\(lower)")
        #expect(check.waitingFor.isEmpty)
        #expect(check.summary.hasPrefix("roll back: sessions with the switch crash more often (4% of 2000 against 1% of 20000 without it)"))
    }

    @Test func doesNotRollBackBeforeTheRollbackMinimumOrOnAMildExcess() {
        // 20 crashes in 150 sessions would be shown worse, but 150 is under the 200 the rollback needs.
        let small = ReleaseCheck(with: EventTally(sessions: 150, crashedSessions: 20), without: Self.without, criteria: Self.criteria,
                                 timeInStage: .seconds(60))
        #expect(small.verdict == .hold)
        // 1.3 % of 2,000 against 1 %: worse, but not shown at 99.999 %; not shown non-inferior either.
        let mild = ReleaseCheck(with: EventTally(sessions: 2000, crashedSessions: 26), without: Self.without, criteria: Self.criteria,
                                timeInStage: .seconds(3600))
        #expect(mild.verdict == .hold)
        #expect(mild.waitingFor.count == 1)
    }

    @Test func theBoundsAreNewcombesHybridScoreIntervalAtTheCriteriasConfidence() throws {
        // Newcombe (1998), method 10, example (a): 56/70 − 48/80 = 0.2000, 95 % two-sided (97.5 % one-sided each) 0.0524 to 0.3339.
        var criteria = Self.criteria
        criteria.confidence = 0.975
        let check = ReleaseCheck(with: EventTally(sessions: 70, crashedSessions: 56), without: EventTally(sessions: 80, crashedSessions: 48),
                                 criteria: criteria, timeInStage: .seconds(0))
        #expect(abs(try #require(check.difference) - 0.2) < 1e-12)
        #expect(abs(try #require(check.lowerBound) - 0.0524) < 5e-5)
        #expect(abs(try #require(check.upperBound) - 0.3339) < 5e-5)
    }

    @Test func withoutSessionsToCompareWithItHoldsAndSaysSo() {
        let check = ReleaseCheck(with: EventTally(sessions: 5000, crashedSessions: 50), without: .zero, criteria: Self.criteria,
                                 timeInStage: .seconds(3600))
        #expect(check.verdict == .hold)
        #expect(check.waitingFor == ["no sessions without the switch to compare with"])
        #expect(check.upperBound == nil && check.rollbackLowerBound == nil)
    }

    @Test func whenEverySessionHasTheSwitchItPassesOnSoakAndSessionsAlone() {
        let everyone = ReleaseTallies(with: EventTally(sessions: 5000, crashedSessions: 50), without: .zero, control: .none)
        let early = ReleaseCheck(everyone, criteria: Self.criteria, timeInStage: .seconds(60))
        #expect(early.verdict == .hold)
        #expect(early.waitingFor.count == 1 && early.waitingFor[0].hasPrefix("soak "), "\(early.waitingFor)")
        let soaked = ReleaseCheck(everyone, criteria: Self.criteria, timeInStage: .seconds(3600))
        #expect(soaked.verdict == .advance)
        #expect(soaked.summary.contains("nothing to compare with"), "\(soaked.summary)")
        let none = ReleaseCheck(ReleaseTallies(with: .zero, without: .zero, control: .none), criteria: Self.criteria, timeInStage: .seconds(3600))
        #expect(none.verdict == .hold)
    }

    @Test func theEvidenceTreeNamesEveryFigureInSnakeCase() {
        let check = ReleaseCheck(with: EventTally(sessions: 2000, crashedSessions: 80), without: EventTally(sessions: 20_000, crashedSessions: 200),
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
    static let counts = GuardCounts([
        EventCount(subject: .pluginSwitch(key), dimension: .city("lagos"), tally: EventTally(sessions: 100, crashedSessions: 2)),
        EventCount(subject: .pluginSwitch(key), dimension: .city("nairobi"), tally: EventTally(sessions: 50, crashedSessions: 1)),
        EventCount(subject: .pluginSwitch(key), dimension: .all, tally: EventTally(sessions: 150, crashedSessions: 3)),
        EventCount(subject: .baseline, dimension: .city("lagos"), tally: EventTally(sessions: 1000, crashedSessions: 10)),
        EventCount(subject: .baseline, dimension: .city("nairobi"), tally: EventTally(sessions: 500, crashedSessions: 5)),
        EventCount(subject: .baseline, dimension: .city("paris"), tally: EventTally(sessions: 3500, crashedSessions: 35)),
        EventCount(subject: .baseline, dimension: .all, tally: EventTally(sessions: 5000, crashedSessions: 50)),
        EventCount(source: .reporter, subject: .pluginSwitch(key), dimension: .all, tally: EventTally(sessions: 400, crashedSessions: 4)),
        EventCount(source: .reporter, subject: .baseline, dimension: .all, tally: EventTally(sessions: 800, crashedSessions: 8)),
    ], crashes: [])

    @Test func aStageScopedToCitiesSumsThoseCities() {
        let tallies = ReleaseCheck.tallies(of: Self.key, in: [.city("lagos"), .city("nairobi")], counts: Self.counts)
        #expect(tallies == ReleaseTallies(with: EventTally(sessions: 150, crashedSessions: 3), without: EventTally(sessions: 1350, crashedSessions: 12)))
        let lagos = ReleaseCheck.tallies(of: Self.key, in: [.city("lagos"), .city("lagos")], counts: Self.counts)
        #expect(lagos.with == EventTally(sessions: 100, crashedSessions: 2))
        #expect(lagos.without == EventTally(sessions: 900, crashedSessions: 8))
    }

    @Test func everyoneIsTheAllDimensionAndEachSourceIsCountedApart() {
        let everyone = ReleaseCheck.tallies(of: Self.key, in: [.all], counts: Self.counts)
        #expect(everyone == ReleaseTallies(with: EventTally(sessions: 150, crashedSessions: 3), without: EventTally(sessions: 4850, crashedSessions: 47)))
        let reporters = ReleaseCheck.tallies(of: Self.key, in: [.all], counts: Self.counts, source: .reporter)
        #expect(reporters.with == EventTally(sessions: 400, crashedSessions: 4))
        #expect(reporters.without == EventTally(sessions: 400, crashedSessions: 4))
        // A city the counts do not hold (counted as `(other)`): nothing with the switch there.
        #expect(ReleaseCheck.tallies(of: Self.key, in: [.city("lima")], counts: Self.counts).with == .zero)
    }

    @Test func aScopeWithTooFewSessionsWithoutTheSwitchIsComparedWithTheNamespace() {
        // Lagos at 100 %: 995 of its 1,000 sessions run the switch; the 5 without it are no control.
        let counts = GuardCounts([
            EventCount(subject: .pluginSwitch(Self.key), dimension: .city("lagos"), tally: EventTally(sessions: 995, crashedSessions: 12)),
            EventCount(subject: .pluginSwitch(Self.key), dimension: .all, tally: EventTally(sessions: 995, crashedSessions: 12)),
            EventCount(subject: .baseline, dimension: .city("lagos"), tally: EventTally(sessions: 1000, crashedSessions: 12)),
            EventCount(subject: .baseline, dimension: .all, tally: EventTally(sessions: 5000, crashedSessions: 52)),
        ], crashes: [])
        #expect(ReleaseCheck.tallies(of: Self.key, in: [.city("lagos")], counts: counts).without == EventTally(sessions: 5, crashedSessions: 0))
        let tallies = ReleaseCheck.stageTallies(of: Self.key, in: [.city("lagos")], counts: counts, criteria: .defaults)
        #expect(tallies == ReleaseTallies(with: EventTally(sessions: 995, crashedSessions: 12), without: EventTally(sessions: 4005, crashedSessions: 40),
                                          control: .namespace))
        let check = ReleaseCheck(tallies, criteria: .defaults, timeInStage: .seconds(60))
        #expect(check.control == .namespace)
        #expect(check.tree["control"] == .string("namespace"))
        // With enough sessions without the switch in the scope (the first fixture's Lagos has 900), the scope is the control.
        #expect(ReleaseCheck.stageTallies(of: Self.key, in: [.city("lagos")], counts: Self.counts,
                                          criteria: ReleaseCriteria.defaults.with(minimumSessions: 900)).control == .scope)
        // Everyone at 100 %: nothing is left to compare with.
        let everyone = GuardCounts([
            EventCount(subject: .pluginSwitch(Self.key), dimension: .all, tally: EventTally(sessions: 5000, crashedSessions: 52)),
            EventCount(subject: .baseline, dimension: .all, tally: EventTally(sessions: 5000, crashedSessions: 52)),
        ], crashes: [])
        #expect(ReleaseCheck.stageTallies(of: Self.key, in: [.all], counts: everyone, criteria: .defaults).control == .none)
    }
}

extension ReleaseCriteria {
    func with(minimumSessions: Int64) -> ReleaseCriteria {
        var criteria = self
        criteria.minimumSessions = minimumSessions
        return criteria
    }
}
