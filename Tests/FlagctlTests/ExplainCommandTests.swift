import FlagctlCommands
import Foundation
import SwitchyardCore
import Testing

/// `flagctl explain KEY`, run in-process against Flags/rider.yaml.
struct ExplainCommandTests {
    func explain(_ arguments: String...) async -> Outcome {
        await flagctl(["explain"] + arguments + ["--flags", TestPaths.flags])
    }

    @Test func aPartialRolloutShowsTheRuleTheBucketAndTheThreshold() async {
        let result = await explain("plugin_switch_feed_promos", "--unit", "rider-42", "--city", "nairobi")
        #expect(result.status == 0)
        #expect(
            result.output == """
                flag           plugin_switch_feed_promos (plugin switch)
                plugin point   home_feed, position 1 of 3
                namespace      rider (\(TestPaths.flags)/rider.yaml)
                context        unit rider-42, city nairobi
                value          false
                variant        off
                reason         SPLIT
                decided by     rule 1 'Nairobi ramp' at 12.5%
                bucket         9038 (on below 1250)
                kill switches  master, kill_home_feed (no entry matches)

                """)
    }

    @Test func anAllowlistRuleMatchesWithoutABucket() async {
        let result = await explain("plugin_switch_feed_promos", "--unit", "qa-rider-1", "--city", "nairobi")
        #expect(result.output.contains("value          true\n"))
        #expect(result.output.contains("reason         TARGETING_MATCH\n"))
        #expect(result.output.contains("decided by     rule 0 'QA allowlist' at 100%\n"))
        #expect(result.output.contains("bucket         none (no bucket needed)\n"))
    }

    @Test func theMasterKillSwitchEntryThatDecidedIsNamed() async {
        let result = await explain("plugin_switch_map_traffic", "--unit", "rider-42", "--cohort", "core_only")
        #expect(result.status == 0)
        #expect(result.output.contains("reason         DISABLED\n"))
        #expect(result.output.contains("decided by     master kill switch entry 0 (cohorts core_only)\n"))
        #expect(result.output.contains("kill switches  master, kill_map_layers\n"))
    }

    @Test func aScopedDisableIsNamed() async {
        let result = await explain("plugin_switch_surge_notice", "--unit", "rider-42", "--city", "berlin")
        #expect(result.output.contains("decided by     disabled in scope 0 (cities berlin)\n"))
    }

    @Test func aSwitchWithoutRulesIsStatic() async {
        let result = await explain("plugin_switch_map_traffic", "--unit", "rider-42")
        #expect(result.output.contains("reason         STATIC\n"))
        #expect(result.output.contains("decided by     default rollout 100%\n"))
    }

    @Test func appVersionBoundsDecide() async {
        let old = await explain("plugin_switch_split_fare", "--unit", "rider-42", "--app-version", "5.11.9")
        #expect(old.output.contains("value          false\n"))
        #expect(old.output.contains("reason         DEFAULT\n"))
        let new = await explain("plugin_switch_split_fare", "--unit", "rider-42", "--app-version", "5.12.0")
        #expect(new.output.contains("value          true\n"))
        #expect(new.output.contains("decided by     rule 0 'app versions with the split payments SDK' at 100%\n"))
    }

    @Test func osVersionBoundsDecideAndAreShownInTheContext() async throws {
        let directory = try TestPaths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try """
        namespace: devices
        flags:
          plugin_switch_legacy_map:
            type: plugin_switch
            rules:
              - name: riders on old iOS
                platforms: [ios]
                os_version_below: "16"
                rollout: 100
            rollout: 0
        """.write(toFile: directory + "/devices.yaml", atomically: true, encoding: .utf8)
        func run(_ os: String) async -> Outcome {
            await flagctl(
                "explain", "plugin_switch_legacy_map", "--flags", directory, "--unit", "rider-42", "--platform", "ios",
                "--app-version", "5.12.0", "--os-version", os)
        }
        let old = await run("15.7.2")
        #expect(old.status == 0, "\(old.error)")
        #expect(old.output.contains("context        unit rider-42, platform ios, app 5.12.0, os 15.7.2\n"))
        #expect(old.output.contains("value          true\n"))
        #expect(old.output.contains("decided by     rule 0 'riders on old iOS' at 100%\n"))
        let current = await run("16")
        #expect(current.output.contains("value          false\n"))
        #expect(current.output.contains("reason         DEFAULT\n"))
        let bad = await run("sixteen")
        #expect(bad.status == 64)
        #expect(bad.error.hasPrefix("Error: 'sixteen' is not a semantic version. Pass one like --os-version 5.12.0.\n"))
    }

    @Test func anExperimentShowsItsVariantAndWeights() async {
        let result = await explain("confirmation_button_copy", "--unit", "rider-7")
        #expect(
            result.output == """
                flag           confirmation_button_copy (experiment, string values)
                namespace      rider (\(TestPaths.flags)/rider.yaml)
                context        unit rider-7
                value          "Confirm ride"
                variant        control
                reason         SPLIT
                decided by     no rule held; the flag's weights
                bucket         381 (of 0...9999; weights control 34, book_now 33, lets_go 33)
                kill switches  master, kill_confirmation_addons (no entry matches)

                """)
    }

    @Test func jsonOutputIsOneStableObject() async throws {
        let result = await explain(
            "confirmation_button_copy", "--unit", "rider-42", "--cohort", "beta",
            "--cohort", "employees", "--app-version", "5.12.0", "--platform", "ios", "-o", "json")
        #expect(result.status == 0)
        #expect(
            result.output == """
                {
                  "bucket": null,
                  "context": {
                    "app_version": "5.12.0",
                    "city": null,
                    "cohorts": [
                      "beta",
                      "employees"
                    ],
                    "os_version": null,
                    "platform": "ios",
                    "unit": "rider-42"
                  },
                  "decided_by": "rule 0 'employees dogfood'",
                  "key": "confirmation_button_copy",
                  "metadata": {
                    "flag_type": "experiment",
                    "rule": 0
                  },
                  "namespace": "rider",
                  "reason": "TARGETING_MATCH",
                  "value": "Let's go",
                  "variant": "lets_go"
                }

                """)
    }

    @Test func jsonOutputOfASplitCarriesTheBucket() async throws {
        let result = await explain("plugin_switch_feed_promos", "--unit", "rider-42", "--city", "nairobi", "-o", "json")
        let tree = try JSONValue.parse(result.output)
        #expect(tree["bucket"] == .int(9038))
        #expect(tree["value"] == .bool(false))
        #expect(tree["reason"] == .string("SPLIT"))
        #expect(tree["metadata"]?["rule"] == .int(1))
    }

    @Test func anUnknownFlagExitsWithStatusFourAndSuggestsTheNearestKey() async {
        let result = await explain("plugin_switch_feed_promo", "--unit", "rider-42")
        #expect(result.status == 4)
        #expect(result.output == "")
        #expect(
            result.error
                == "error: no flag 'plugin_switch_feed_promo' in namespace 'rider' (\(TestPaths.flags)/rider.yaml); did you mean 'plugin_switch_feed_promos'?\n"
        )
    }

    @Test func anUnknownNamespaceExitsWithStatusFour() async {
        let result = await explain("plugin_switch_feed_promos", "--unit", "rider-42", "--namespace", "driver")
        #expect(result.status == 4)
        #expect(
            result.error
                == "error: no namespace 'driver' in \(TestPaths.flags) (namespaces: rider); a namespace's flags live in \(TestPaths.flags)/driver.yaml\n"
        )
    }

    @Test func aBadAppVersionIsAUsageError() async {
        let result = await explain("plugin_switch_feed_promos", "--unit", "rider-42", "--app-version", "5.x")
        #expect(result.status == 64)
        #expect(result.error.hasPrefix("Error: '5.x' is not a semantic version. Pass one like --app-version 5.12.0.\n"))
    }

    @Test func aMissingUnitIsAUsageError() async {
        let result = await explain("plugin_switch_feed_promos")
        #expect(result.status == 64)
        #expect(result.error.contains("--unit"))
    }

    @Test func helpTeachesWithAnExample() async {
        let result = await flagctl("explain", "--help")
        #expect(result.status == 0)
        #expect(result.output.contains("$ flagctl explain plugin_switch_feed_promos --flags Flags"))
        #expect(result.output.contains("--cohort <cohort>"))
    }
}

/// `flagctl explain` over directories other than Flags/.
struct ExplainDirectoryTests {
    let directory: String

    init() throws {
        directory = try TestPaths.temporaryDirectory()
    }

    func write(_ name: String, _ text: String) throws {
        try Data(text.utf8).write(to: URL(fileURLWithPath: directory + "/" + name))
    }

    @Test func severalNamespacesNeedTheNamespaceOption() async throws {
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try write("rider.yaml", "namespace: rider\nflags:\n  plugin_switch_a:\n    rollout: 100\n")
        try write("driver.yaml", "namespace: driver\nflags:\n  plugin_switch_a:\n    rollout: 0\n")
        let ambiguous = await flagctl("explain", "plugin_switch_a", "--flags", directory, "--unit", "u")
        #expect(ambiguous.status == 64)
        #expect(
            ambiguous.error.hasPrefix(
                "Error: \(directory) holds several namespaces (driver, rider). Pass one, e.g. --namespace driver.\n"))
        let driver = await flagctl(
            "explain", "plugin_switch_a", "--flags", directory, "--unit", "u", "--namespace", "driver")
        #expect(driver.status == 0)
        #expect(driver.output.contains("value          false\n"))
        let rider = await flagctl(
            "explain", "plugin_switch_a", "--flags", directory, "--unit", "u", "--namespace", "rider")
        #expect(rider.output.contains("value          true\n"))
    }

    @Test func aBrokenFlagFileExitsWithStatusOneAndItsProblems() async throws {
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try write("rider.yaml", "namespace: rider\nflags:\n  plugin_switch_a:\n    rollout: 120\n")
        let result = await flagctl("explain", "plugin_switch_a", "--flags", directory, "--unit", "u")
        #expect(result.status == 1)
        #expect(
            result.error == """
                \(directory)/rider.yaml: flags.plugin_switch_a.rollout: 120 is not between 0 and 100
                error: the flag file has problems (above); fix them first, 'flagctl lint \(directory)' checks them

                """)
    }

    @Test func problemsInOtherNamespacesOnlyWarn() async throws {
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try write("rider.yaml", "namespace: rider\nflags:\n  plugin_switch_a:\n    rollout: 100\n")
        try write("driver.yaml", "namespace: driver\nflags:\n  plugin_switch_a:\n    rollot: 0\n")
        let result = await flagctl(
            "explain", "plugin_switch_a", "--flags", directory, "--unit", "u", "--namespace", "rider")
        #expect(result.status == 0)
        #expect(result.error == "note: 1 problem in other files of \(directory); run 'flagctl lint \(directory)'\n")
    }
}
