import SwitchyardCore
import SwitchyardFlagFiles
import SwitchyardMatrixPlan
import TestSupport
import Testing

/// The gates of a namespace and the combinations a plan runs.
struct MatrixLayoutTests {
    @Test func theRiderNamespaceHasSeventeenGatesInFlagFileOrder() throws {
        let layout = MatrixLayout(flagSet: try FlagFile(contentsOf: TestPaths.riderFlags).flagSet)
        #expect(layout.switchCount == 12)
        #expect(layout.killSwitchCount == 5)
        #expect(layout.gateCount == 17)
        #expect(
            layout.gates.prefix(3).map(\.key) == [
                "plugin_switch_prefs_saved_places", "plugin_switch_prefs_ride_pass",
                "plugin_switch_prefs_accessibility",
            ])
        #expect(
            layout.gates.suffix(5).map(\.key) == [
                "kill_preferences_hub", "kill_confirmation_addons", "kill_home_feed",
                "kill_map_layers", "master",
            ])
        #expect(layout.points.map(\.name) == ["preferences_hub", "confirmation_addons", "home_feed", "map_layers"])
        // Each point: its three switches, its group and the master.
        #expect(
            layout.points[2].gates.map { layout.gates[$0].key } == [
                "plugin_switch_feed_promos", "plugin_switch_feed_trip_history", "plugin_switch_feed_safety_tips",
                "kill_home_feed", "master",
            ])
    }

    @Test func aSwitchIsEffectivelyOnOnlyWhenOnAndNoCoveringKillSwitchIsKilled() throws {
        let layout = MatrixLayout(flagSet: Shop.flagSet)
        func effective(_ name: String) throws -> [String] {
            layout.effectiveSwitches(of: try layout.combination(named: name)).members.map { layout.gates[$0].key }
        }
        #expect(
            try effective("plugin_switch_banner_sale,plugin_switch_gift_wrap") == [
                "plugin_switch_banner_sale", "plugin_switch_gift_wrap",
            ])
        // A group spanning two points kills its members at both.
        #expect(
            try effective("plugin_switch_banner_sale,plugin_switch_banner_news,plugin_switch_gift_wrap,kill_promotions")
                == ["plugin_switch_banner_news"])
        // A point's group kills the point's switches only.
        #expect(
            try effective("plugin_switch_banner_news,plugin_switch_insurance,kill_banner") == [
                "plugin_switch_insurance"
            ])
        // The master kills everything; a kill switch never turns a switch on.
        #expect(try effective("plugin_switch_banner_news,plugin_switch_insurance,master").isEmpty)
        #expect(try effective("kill_banner,kill_checkout").isEmpty)
    }

    /// The matrix computes effective states itself (fast); the real evaluator must agree: a switch on is a 100 %
    /// rollout, off is 0 %, killed is a kill entry everywhere.
    @Test func effectiveStatesAgreeWithTheRealEvaluatorForEveryShopCombination() {
        let base = Shop.flagSet
        let layout = MatrixLayout(flagSet: base)
        let context = EvaluationContext(unitId: "rider-1", city: "lagos")
        for index in 0..<(UInt64(1) << UInt64(layout.gateCount)) {
            let combination = GateSet(words: [index])
            var flags = base
            for gate in 0..<layout.switchCount {
                let position = flags.flags.firstIndex { $0.key == layout.gates[gate].key }!
                flags.flags[position].pluginSwitch?.rollout = combination.contains(gate) ? .full : .off
            }
            for gate in layout.switchCount..<layout.gateCount {
                let position = flags.killSwitches.firstIndex { $0.key == layout.gates[gate].key }!
                flags.killSwitches[position].entries = combination.contains(gate) ? [.everywhere] : []
            }
            let compiled = CompiledSnapshot(Snapshot(epoch: "e", version: 1, flagSet: flags))
            let evaluator = compiled.evaluator(for: context)
            let evaluated = (0..<layout.switchCount).filter {
                evaluator.isEnabled(compiled.handle(for: layout.gates[$0].key)!)
            }
            #expect(
                evaluated == layout.effectiveSwitches(of: combination).members,
                "combination \(layout.name(of: combination))")
        }
    }

    @Test func combinationNamesReadBackAndUnknownKeysGetSuggestions() throws {
        let layout = MatrixLayout(flagSet: Shop.flagSet)
        let combination = try layout.combination(named: "kill_banner, plugin_switch_gift_wrap")
        #expect(layout.name(of: combination) == "plugin_switch_gift_wrap,kill_banner")
        #expect(layout.describe(combination) == "on plugin_switch_gift_wrap; killed kill_banner")
        #expect(try layout.combination(named: "none").isEmpty)
        #expect(layout.name(of: GateSet(capacity: 9)) == "none")
        #expect(layout.describe(GateSet(capacity: 9)) == "every switch off, nothing killed")
        let error = #expect(throws: MatrixPlanError.self) { try layout.combination(named: "plugin_switch_gift_warp") }
        #expect(
            error?.description
                == "'plugin_switch_gift_warp' is neither a plugin switch nor a kill switch of the namespace; "
                + "did you mean 'plugin_switch_gift_wrap'?")
    }

    @Test func killSwitchesThatCoverNoPluginSwitchAreNotGates() throws {
        var flags = Shop.flagSet
        flags.killSwitches.append(KillSwitch(key: "kill_nothing"))
        let layout = MatrixLayout(flagSet: flags)
        #expect(layout.gateCount == 9)
        #expect(layout.ignoredKillSwitches == ["kill_nothing"])
    }
}

struct ShardTests {
    @Test func shardsPartitionTheCombinationsInOrder() throws {
        for total: UInt64 in [0, 1, 7, 512, 131_072, 1_000_003] {
            for count in [1, 2, 3, 4, 7, 16] {
                let ranges = try Shard.split(into: count).map { $0.range(of: total) }
                #expect(ranges.first?.lowerBound == 0)
                #expect(ranges.last?.upperBound == total)
                for (left, right) in zip(ranges, ranges.dropFirst()) { #expect(left.upperBound == right.lowerBound) }
                let sizes = ranges.map(\.count)
                #expect(sizes.max()! - sizes.min()! <= 1, "shards of \(total) in \(count) are even")
            }
        }
    }

    @Test func shardTextIsReadWithClearErrors() throws {
        #expect(try Shard(parsing: "2/4") == Shard(2, of: 4))
        #expect(try Shard(parsing: " 1/1 ").description == "1/1")
        #expect(throws: MatrixPlanError.self) { try Shard(parsing: "0/4") }
        #expect(throws: MatrixPlanError.self) { try Shard(parsing: "5/4") }
        let error = #expect(throws: MatrixPlanError.self) { try Shard(parsing: "two") }
        #expect(error?.description == "'two' is not a shard: write i/n, e.g. 2/4 for the second of four shards")
    }
}

struct CoveringArrayTests {
    @Test(arguments: [
        ([2, 2, 2, 2, 2, 2, 2, 2, 2, 2], 2), ([16, 16, 16, 16, 2], 2), ([4, 8, 2, 16, 3, 5], 2),
        ([2, 2, 2, 2, 2, 2, 2], 3), ([8, 8, 8, 8, 2], 3), ([4, 3, 2, 4, 2, 3], 3), ([5], 2), ([3, 4], 3),
    ])
    func everyInteractionIsCovered(levels: [Int], strength: Int) {
        let array = CoveringArray(levels: levels, strength: strength)
        #expect(array.missingInteractionCount() == 0)
        for row in array.rows {
            #expect(row.count == levels.count)
            for (level, count) in zip(row, levels) { #expect(level >= 0 && level < count) }
        }
    }

    @Test func pairwiseIsFarSmallerThanTheProductAndNearTheLowerBound() {
        let array = CoveringArray(levels: [16, 16, 16, 16, 16, 16, 2], strength: 2)
        #expect(array.rows.count >= 256)
        #expect(array.rows.count <= 400)
        let threeWise = CoveringArray(levels: [2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2], strength: 3)
        #expect(threeWise.rows.count < 40)
    }

    /// A long plan reports how far it got: once per factor after the first `t`, never less than before, all done at
    /// the end; the rows are the same as without a listener.
    @Test func progressRisesFactorByFactorToAllDone() {
        let levels = [4, 8, 2, 16, 3, 5]
        var reports: [Double] = []
        let array = CoveringArray(levels: levels, strength: 2) { reports.append($0) }
        #expect(reports.count == levels.count - 2)
        #expect(zip(reports, reports.dropFirst()).allSatisfy { $0 <= $1 })
        #expect(reports.first.map { $0 > 0 && $0 < 1 } == true)
        #expect(reports.last == 1)
        #expect(array.rows == CoveringArray(levels: levels, strength: 2).rows)
    }

    @Test func theSameLevelsGiveTheSameRows() {
        #expect(
            CoveringArray(levels: [4, 8, 2, 16, 3], strength: 2)
                == CoveringArray(levels: [4, 8, 2, 16, 3], strength: 2))
    }
}

struct MatrixPlanTests {
    @Test func withinTheBoundEveryCombinationRuns() throws {
        let plan = try MatrixPlan(layout: MatrixLayout(flagSet: Shop.flagSet))
        #expect(plan.isExhaustive)
        #expect(plan.total == 512)
        #expect(plan.combination(at: 0).isEmpty)
        #expect(plan.combination(at: 5).members == [0, 2])
        #expect(plan.coverageDescription == "exhaustive: every one of the 2^9 = 512 combinations of 9 gates")
    }

    @Test func beyondTheBoundEachPointRunsExhaustivelyPlusACoveringArrayAcrossPoints() async throws {
        try await onOwnThread {
            let layout = MatrixLayout(flagSet: Shop.wide(points: 6, switchesPerPoint: 3))
            #expect(layout.gateCount == 6 * 4 + 1)
            let plan = try MatrixPlan(layout: layout)
            #expect(plan.mode == .covering(strength: 2))
            // Each point: 3 switches, its group and the master: 32 combinations.
            #expect(plan.segments.prefix(6).map(\.count) == Array(repeating: 32, count: 6))
            // Factors: six points of 16 levels (switches and own group) and the master.
            #expect(plan.factors.map(\.levels) == [16, 16, 16, 16, 16, 16, 2])
            let rows = plan.segments.last!.count
            #expect(plan.total == 6 * 32 + rows)
            // Every pair of point states appears in some combination of the covering rows.
            for (a, b) in [(0, 1), (2, 5), (3, 4)] {
                var seen = Set<[Int]>()
                for index in plan.start(of: 6)..<plan.total {
                    let combination = plan.combination(at: index)
                    seen.insert(
                        [a, b].map { point in
                            plan.factors[point].gates.enumerated().reduce(0) {
                                $0 | (combination.contains($1.element) ? 1 << $1.offset : 0)
                            }
                        })
                }
                #expect(seen.count == 256, "points \(a) and \(b)")
            }
            #expect(
                plan.coverageDescription.hasPrefix(
                    "beyond the bound of 2^20 combinations: every combination of each plugin point's gates (6 points, 192 combinations) plus a pairwise covering array across 7 factors"
                ))
            let threeWise = try MatrixPlan(layout: layout, strength: 3)
            #expect(threeWise.segments.last!.count > UInt64(rows))
        }
    }

    /// Past the planning budget a plan is refused before anything is built (a namespace of 1,250 points of eight
    /// switches planned for hours), saying what it would take and what to change.
    @Test func aPlanTooLargeToBuildIsRefusedSayingWhatToChange() throws {
        // 60 points of 7 switches and their group: 61 factors, the points of 2^8 states.
        let wide = MatrixLayout(flagSet: Shop.wide(points: 60, switchesPerPoint: 7))
        let error = try #require(throws: MatrixPlanError.self) { try MatrixPlan(layout: wide) }
        #expect(error.isTooLarge)
        #expect(error.description.contains("the matrix of 481 gates is too large to plan"))
        #expect(
            error.description.contains(
                "needs at least 65536 rows and about 3×10^10 steps to build, past the planner's 5×10^9"))
        #expect(error.description.contains("give plugin points fewer switches"))
        #expect(!error.description.contains("--strength 2"))
        // Pairwise plans 80 points of 3 switches; three-wise would not, and says so.
        let many = MatrixLayout(flagSet: Shop.wide(points: 80, switchesPerPoint: 3))
        // (its factors: 80 points of 2^4 states and the master)
        let levels = Array(repeating: 16, count: 80) + [2]
        #expect(CoveringArray.estimatedSteps(levels: levels, strength: 2) < MatrixPlan.defaultPlanningBudget)
        let threeWise = try #require(throws: MatrixPlanError.self) { try MatrixPlan(layout: many, strength: 3) }
        #expect(threeWise.isTooLarge)
        #expect(threeWise.description.contains("use --strength 2 (pairwise)"))
        // A budget of one's own: a small covering plan refused under a tiny one, planned under the default.
        let small = MatrixLayout(flagSet: Shop.wide(points: 6, switchesPerPoint: 3))
        let tiny = try #require(throws: MatrixPlanError.self) { try MatrixPlan(layout: small, planningBudget: 10) }
        #expect(tiny.isTooLarge && tiny.description.contains("past the planner's 10; "))
        #expect(try MatrixPlan(layout: small).mode == .covering(strength: 2))
        // A wrong option is not a plan too large.
        let option = try #require(throws: MatrixPlanError.self) { try MatrixPlan(layout: wide, strength: 4) }
        #expect(!option.isTooLarge)
    }

    @Test func aLowerBoundSwitchesToCoveringAndBadOptionsAreRefused() throws {
        let layout = MatrixLayout(flagSet: Shop.flagSet)
        #expect(try MatrixPlan(layout: layout, bound: 512).isExhaustive)
        #expect(try !MatrixPlan(layout: layout, bound: 511).isExhaustive)
        #expect(throws: MatrixPlanError.self) { try MatrixPlan(layout: layout, strength: 4) }
        #expect(throws: MatrixPlanError.self) { try MatrixPlan(layout: layout, bound: 0) }
    }
}
