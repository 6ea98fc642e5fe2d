import SwitchyardCore
import Testing

/// Release plans in the model: reading and writing, the targeting of each stage, the state machine of their edits,
/// and how a person's change or the crash guard's trip stops a running plan.
struct ReleasePlanTests {
    static let promos = "plugin_switch_feed_promos"
    static let lagos = Scope(cities: ["lagos"])

    /// Lagos at 1 %, Lagos at 100 %, Nairobi at 50 %, everyone at 10 %, everyone at 100 %.
    static let plan = ReleasePlan(
        stages: [
            ReleaseStage(scope: lagos, rollout: Rollout(basisPoints: 100)!),
            ReleaseStage(scope: lagos, rollout: .full),
            ReleaseStage(scope: Scope(cities: ["nairobi"]), rollout: Rollout(basisPoints: 5000)!, soak: .seconds(3600)),
            ReleaseStage(rollout: Rollout(basisPoints: 1000)!),
            ReleaseStage(rollout: .full),
        ], soak: .seconds(1800), minimumSessions: 500, margin: Rollout(basisPoints: 25))

    func rider(withPlan plan: ReleasePlan? = Self.plan) throws -> FlagSet {
        var rider = try Samples.rider()
        let index = try rider.flagIndex(Self.promos)
        rider.flags[index].pluginSwitch?.release = plan
        return rider
    }

    func gate(_ flagSet: FlagSet) -> PluginSwitchDefinition? { flagSet.flag(Self.promos)?.pluginSwitch }

    @Test func eachStageKeepsTheCitiesBeforeItAndEveryoneSetsTheDefaultRollout() {
        let plan = Self.plan
        #expect(plan.targeting(at: nil).rules.isEmpty && plan.targeting(at: nil).rollout == .off)
        let first = plan.targeting(at: 0)
        #expect(first.rules.map(\.conditions.cities) == [["lagos"]])
        #expect(first.rules.map(\.rollout) == [Rollout(basisPoints: 100)!])
        #expect(first.rollout == .off)
        let third = plan.targeting(at: 2)
        #expect(third.rules.map(\.conditions.cities) == [["lagos"], ["nairobi"]])
        #expect(third.rules.map(\.rollout) == [.full, Rollout(basisPoints: 5000)!])
        let fourth = plan.targeting(at: 3)
        #expect(fourth.rollout == Rollout(basisPoints: 1000)!)
        // Everyone at 100 % lifts Nairobi's rule (50 %) with it.
        let last = plan.targeting(at: 4)
        #expect(last.rollout == .full && last.rules.allSatisfy { $0.rollout == .full })
        #expect(plan.targeting(at: 99) == last)
    }

    @Test func aPlanReadsFromAFlagFileTreeAndWritesBackTheSame() throws {
        let rider = try rider()
        var started = try rider.startingRelease(Self.promos, plan: nil, at: 1_795_680_000, note: "started by alice")
        started = try started.advancingRelease(Self.promos, at: 1_795_681_800, note: "stage 1 passed")
        for unit in [RolloutUnit.percent, .basisPoints] {
            let read = try FlagSet(tree: .object(started.tree(unit: unit)), unit: unit)
            #expect(read == started)
        }
        let release = try #require(started.tree(unit: .percent)["flags"]?[Self.promos]?["release"])
        #expect(release["margin"] == .number(JSONNumber(uncheckedLiteral: "0.25")))
        #expect(release["stages"]?.arrayValue?.first?["rollout"] == .number(JSONNumber(uncheckedLiteral: "1")))
        #expect(release["state"]?["since"] == .string("2026-11-26T08:30:00Z"))
        #expect(release["state"]?["stage"] == .int(1))
        // Snapshots leave the plan out: clients do not need it.
        let snapshot = try JSONValue.parse(SnapshotDocument.encode(Snapshot(epoch: "e", version: 1, flagSet: started)))
        #expect(snapshot["flags"]?[Self.promos]?["release"] == nil)
        #expect(snapshot["flags"]?[Self.promos]?["rules"] != nil)
    }

    @Test func problemsNameTheFieldAtFault() throws {
        let tree = try JSONValue.parse(
            Array(
                """
                {"stages": [{"cities": ["lagos"], "rollout": 0}, {"rollout": 120, "soak": "forever"}, {"cohort": ["beta"], "rollout": 5}],
                 "margin": 20, "on_bad_signal": "panic", "state": {"status": "asleep", "since": "yesterday"}}
                """.utf8))
        let error = #expect(throws: DefinitionError.self) { try ReleasePlan(tree: tree, unit: .percent, at: "release") }
        let paths = Set(error?.problems.map(\.path.description) ?? [])
        #expect(
            paths.isSuperset(of: [
                "release.stages[0].rollout", "release.stages[1].rollout", "release.stages[1].soak",
                "release.stages[2].cohort", "release.margin", "release.on_bad_signal",
                "release.state.status", "release.state.since",
            ]), "\(paths.sorted())")
        let empty = #expect(throws: DefinitionError.self) {
            try ReleasePlan(tree: .object(JSONObject([("stages", .array([]))])), unit: .percent)
        }
        #expect(empty?.problems.first?.message == "must list at least one stage")
    }

    @Test func startingSetsTheFirstStageAndRefusesAPlanAlreadyActive() throws {
        let rider = try rider()
        let started = try rider.startingRelease(Self.promos, plan: nil, at: 100, note: "started by alice")
        let first = try #require(gate(started))
        let standing = try #require(gate(rider))
        let limits = ReleaseLimits(rules: standing.rules, rollout: standing.rollout)
        #expect(
            first.release?.state
                == ReleaseState(status: .running, stage: 0, since: 100, note: "started by alice", limits: limits))
        #expect(first.rules == limits.exclusions + Self.plan.targeting(at: 0).rules && first.rollout == .off)
        let again = #expect(throws: FlagEditError.self) { try started.startingRelease(Self.promos, plan: nil, at: 200) }
        #expect(again?.kind == .conflict)
        let none = #expect(throws: FlagEditError.self) {
            try self.rider(withPlan: nil).startingRelease(Self.promos, plan: nil, at: 0)
        }
        #expect(none?.problems.map(\.path.description) == ["plan"])
        // A plan given replaces the declared one; a state sent with it is not kept.
        var given = ReleasePlan(stages: [ReleaseStage(rollout: .full)])
        given.state = ReleaseState(status: .completed, stage: 0, since: 1)
        let replaced = try rider.startingRelease(Self.promos, plan: given, at: 300)
        #expect(gate(replaced)?.release?.stages.count == 1)
        #expect(gate(replaced)?.release?.state?.status == .running)
        #expect(gate(replaced)?.rollout == .full)
    }

    @Test func advancingWalksTheStagesThenCompletes() throws {
        var flagSet = try rider().startingRelease(Self.promos, plan: nil, at: 0)
        for stage in 1..<Self.plan.stages.count {
            flagSet = try flagSet.advancingRelease(Self.promos, at: Int64(stage), note: nil)
            #expect(gate(flagSet)?.release?.state?.stage == stage)
            #expect(gate(flagSet)?.rules == gate(flagSet)?.release?.targeting(at: stage).rules)
        }
        flagSet = try flagSet.advancingRelease(Self.promos, at: 99, note: "every stage passed")
        #expect(gate(flagSet)?.release?.state?.status == .completed)
        #expect(gate(flagSet)?.rollout == .full)
        let more = #expect(throws: FlagEditError.self) { try flagSet.advancingRelease(Self.promos, at: 100, note: nil) }
        #expect(more?.kind == .conflict)
        #expect(more?.message.contains("is completed") == true)
    }

    @Test func rollingBackStepsBackOrTurnsOffAndWaitsForAPerson() throws {
        var flagSet = try rider().startingRelease(Self.promos, plan: nil, at: 0)
        flagSet = try flagSet.advancingRelease(Self.promos, at: 1, note: nil).advancingRelease(
            Self.promos, at: 2, note: nil)
        let back = try flagSet.rollingBackRelease(Self.promos, at: 3, note: "shown worse")
        let limits = gate(flagSet)?.release?.state?.limits ?? .none
        #expect(
            gate(back)?.release?.state
                == ReleaseState(status: .rolledBack, stage: 1, since: 3, note: "shown worse", limits: limits))
        #expect(gate(back)?.rules == gate(back)?.release?.targeting(at: 1).rules)
        // It waits: no second rollback, no pause; a person resumes (the stage's targeting again) or aborts.
        #expect(throws: FlagEditError.self) { try back.rollingBackRelease(Self.promos, at: 4, note: nil) }
        let resumed = try back.resumingRelease(Self.promos, at: 5, note: "resumed by alice")
        #expect(gate(resumed)?.release?.state?.status == .running && gate(resumed)?.release?.state?.stage == 1)
        // On a plan saying off, or from the first stage: no rules, rollout 0.
        var offPlan = Self.plan
        offPlan.onBadSignal = .off
        let off = try rider(withPlan: offPlan).startingRelease(Self.promos, plan: nil, at: 0)
            .advancingRelease(Self.promos, at: 1, note: nil).rollingBackRelease(Self.promos, at: 2, note: nil)
        #expect(gate(off)?.release?.state?.stage == nil)
        #expect(gate(off)?.rules.isEmpty == true && gate(off)?.rollout == .off)
        let first = try rider().startingRelease(Self.promos, plan: nil, at: 0).rollingBackRelease(
            Self.promos, at: 1, note: nil)
        #expect(gate(first)?.rules.isEmpty == true && gate(first)?.release?.state?.stage == nil)
    }

    @Test func aPersonsChangePausesARunningPlanAndTheGuardsTripAbortsIt() throws {
        let running = try rider().startingRelease(Self.promos, plan: nil, at: 0)
        let (edited, _) = try running.settingRollout(
            Self.promos, Rollout(basisPoints: 5000)!, rule: nil, conditions: nil)
        let paused = edited.stoppingInterruptedReleases(
            since: running, actor: "alice", summary: "roll out to 50%", isCrashGuard: false, at: 10)
        #expect(gate(paused)?.release?.state?.status == .paused)
        #expect(gate(paused)?.release?.state?.note?.contains("alice changed the switch (roll out to 50%)") == true)
        #expect(gate(paused)?.rollout == Rollout(basisPoints: 5000)!, "the person's change stands")
        let tripped = try running.disabling(Self.promos, scope: Self.lagos)
            .stoppingInterruptedReleases(since: running, actor: "crash-guard", summary: nil, isCrashGuard: true, at: 10)
        #expect(gate(tripped)?.release?.state?.status == .aborted)
        // Another flag's change, or the plan's own edits, leave it running.
        let other = try running.disabling("plugin_switch_feed_weather", scope: nil)
            .stoppingInterruptedReleases(since: running, actor: "bob", summary: nil, isCrashGuard: false, at: 10)
        #expect(gate(other)?.release?.state?.status == .running)
        let advanced = try running.advancingRelease(Self.promos, at: 5, note: nil)
            .stoppingInterruptedReleases(since: running, actor: "bob", summary: nil, isCrashGuard: false, at: 10)
        #expect(gate(advanced)?.release?.state?.stage == 1 && gate(advanced)?.release?.state?.status == .running)
    }

    @Test func aDocumentDeclaringTheSamePlanKeepsItsProgress() throws {
        let declared = try rider()
        let current = try declared.startingRelease(Self.promos, plan: nil, at: 0).advancingRelease(
            Self.promos, at: 1, note: nil)
        let kept = declared.keepingReleaseProgress(of: current)
        #expect(gate(kept)?.release == gate(current)?.release)
        #expect(gate(kept)?.rules == gate(current)?.rules)
        var changed = Self.plan
        changed.stages.removeFirst()
        let restarted = try rider(withPlan: changed).keepingReleaseProgress(of: current)
        #expect(gate(restarted)?.release?.state == nil, "a plan declared differently starts over")
    }

    @Test func utcTimesRoundTrip() {
        for seconds: Int64 in [0, 951_782_400, 1_795_681_800, 4_102_444_799, -86_400] {
            let text = UTCTime.text(seconds: seconds)
            #expect(UTCTime.seconds(from: text) == seconds, "\(text)")
        }
        #expect(UTCTime.text(seconds: 951_782_400) == "2000-02-29T00:00:00Z")
        #expect(UTCTime.seconds(from: "2026-11-26T08:30:00.123Z") == 1_795_681_800)
        for bad in [
            "2026-02-30T00:00:00Z", "2026-11-26 08:30:00Z", "2026-11-26T08:30:00", "2026-11-26T24:00:00Z", "soon",
        ] {
            #expect(UTCTime.seconds(from: bad) == nil, "\(bad)")
        }
    }
}
