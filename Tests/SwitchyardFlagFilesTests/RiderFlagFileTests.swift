import SwitchyardCore
import SwitchyardFlagFiles
import Testing

/// Flags/rider.yaml, the sample app's namespace, as issue 2 asks for it.
struct RiderFlagFileTests {
    let flagSet: FlagSet

    init() throws {
        flagSet = try FlagFile(contentsOf: TestPaths.riderFile).flagSet
    }

    var switches: [FlagDefinition] { flagSet.flags.filter { $0.pluginSwitch != nil } }

    @Test func riderFileLintsClean() {
        let flags = FlagDirectory(reading: TestPaths.flags)
        #expect(flags.problems.map(\.description) == [])
        #expect(flags.namespaces.contains("rider"))
    }

    @Test func declaresFourPluginPointsEachWithItsOwnGroupKillSwitch() throws {
        #expect(flagSet.namespace == "rider")
        #expect(
            flagSet.pluginPoints.map(\.name) == ["preferences_hub", "confirmation_addons", "home_feed", "map_layers"])
        let groups = flagSet.pluginPoints.compactMap(\.killSwitch)
        #expect(groups.count == flagSet.pluginPoints.count)
        #expect(Set(groups).count == groups.count)
        for group in groups { #expect(flagSet.killSwitch(group) != nil) }
        #expect(flagSet.killSwitch(KillSwitch.masterKey) != nil)
    }

    @Test func hasAtLeastTwelvePluginSwitchesAllAtAPluginPoint() {
        #expect(switches.count >= 12)
        let atPoints = Set(flagSet.pluginPoints.flatMap(\.switches))
        for flag in switches {
            #expect(flag.key.hasPrefix("plugin_switch_"))
            #expect(atPoints.contains(flag.key), "\(flag.key) is at no plugin point")
            #expect(flag.description != nil && flag.owner != nil, "\(flag.key) needs a description and an owner")
        }
    }

    @Test func keepsTheMatrixBudgetOfTwentyGates() {
        let groups = flagSet.killSwitches.filter { !$0.isMaster }
        #expect(switches.count + groups.count + 1 <= 20)
    }

    @Test func targetsByCityCohortAllowlistAndAppVersionWithPartialRollouts() {
        let rules = switches.flatMap { $0.pluginSwitch!.rules }
        #expect(rules.contains { !$0.conditions.cities.isEmpty })
        #expect(rules.contains { !$0.conditions.cohorts.isEmpty })
        #expect(rules.contains { !$0.conditions.units.isEmpty })
        #expect(rules.contains { $0.conditions[version: .app].atLeast != nil })
        #expect(rules.contains { $0.conditions[version: .app].below != nil })
        let rollouts = rules.map(\.rollout) + switches.map { $0.pluginSwitch!.rollout }
        #expect(rollouts.contains { $0 != .off && $0 != .full })
    }

    @Test func mostSwitchesAreOnForATypicalRiderSoTheSampleShowsItsPlugins() {
        let compiled = CompiledSnapshot(Snapshot(epoch: "test", version: 1, flagSet: flagSet))
        let evaluator = compiled.evaluator(
            for: EvaluationContext(
                unitId: "rider-1", city: "lagos", appVersion: "5.12.0", platform: "ios"))
        let on = switches.filter { evaluator.isEnabled(compiled.handle(for: $0.key)!) }
        #expect(on.count * 3 >= switches.count * 2, "on: \(on.map(\.key))")
    }

    @Test func theCoreOnlyCohortGetsEverySwitchOff() {
        let compiled = CompiledSnapshot(Snapshot(epoch: "test", version: 1, flagSet: flagSet))
        let evaluator = compiled.evaluator(
            for: EvaluationContext(
                unitId: "qa-rider-1", city: "lagos", cohorts: ["core_only"], appVersion: "5.12.0", platform: "ios"))
        for flag in switches {
            #expect(!evaluator.isEnabled(compiled.handle(for: flag.key)!), "\(flag.key)")
        }
    }

    @Test func hasAStringExperimentWithThreeVariants() throws {
        let experiments = flagSet.flags.compactMap(\.experiment)
        let experiment = try #require(experiments.first)
        #expect(experiment.valueType == .string)
        #expect(experiment.variants.count == 3)
    }

    @Test func percentagesConvertExactlyToBasisPoints() throws {
        #expect(flagSet.flag("plugin_switch_feed_safety_tips")?.pluginSwitch?.rollout.basisPoints == 3333)
        #expect(flagSet.flag("plugin_switch_feed_promos")?.pluginSwitch?.rules[1].rollout.basisPoints == 1250)
    }
}
