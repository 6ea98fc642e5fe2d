import Foundation
import SwitchyardCore
import SwitchyardFlagFiles
import SwitchyardStorage
import Testing

@testable import FlagctlCommands

/// `flagctl diff` and `flagctl apply` against a live flagsd: plans, idempotence, operational state, pruning.
struct DiffApplyTests {
    /// Flags/rider.yaml with the safety tips at 50 %, Ride Pass ramping in Nairobi, and a new switch.
    static func edited(_ text: String) -> String {
        text.replacingOccurrences(of: "    rollout: 33.33\n", with: "    rollout: 50\n")
            .replacingOccurrences(
                of: """
                            cities: [paris, london, lagos, sao_paulo]
                            rollout: 100
                    """,
                with: """
                            cities: [paris, london, lagos, sao_paulo]
                            rollout: 100
                          - name: nairobi launch
                            cities: [nairobi]
                            rollout: 5
                    """
            )
            .replacingOccurrences(
                of: "switches: [plugin_switch_map_traffic, plugin_switch_map_pickup_spots, plugin_switch_map_scooters]",
                with:
                    "switches: [plugin_switch_map_traffic, plugin_switch_map_pickup_spots, plugin_switch_map_scooters, plugin_switch_map_bikes]"
            )
            .replacingOccurrences(
                of: "  # Experiments\n",
                with: """
                      plugin_switch_map_bikes:
                        description: Shared bikes nearby.
                        rollout: 10

                      # Experiments

                    """)
    }

    @Test func diffOfTheSeededFilesHasNothingToApply() async throws {
        try await LiveServer.run { server in
            let result = await server.flagctl("diff", TestPaths.flags, "--exit-code")
            #expect(result.status == 0, "\(result.error)")
            #expect(
                result.output
                    == "namespace rider (\(TestPaths.flags)/rider.yaml) matches version 1 on \(server.url): nothing to apply\n"
            )
        }
    }

    @Test func diffShowsEachChangeWhoItAffectsAndRoughlyHowMany() async throws {
        try await LiveServer.run { server in
            let directory = try FlagFolder.copyOfRider(Self.edited)
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let result = await server.flagctl("diff", directory, "--exit-code")
            #expect(result.status == 1)
            #expect(result.error.isEmpty)
            #expect(
                result.output == """
                    namespace rider (\(directory)/rider.yaml), version 1 on \(server.url): 4 changes
                      ~ plugin point map_layers
                          switches: [plugin_switch_map_traffic, plugin_switch_map_pickup_spots, plugin_switch_map_scooters] → [plugin_switch_map_traffic, plugin_switch_map_pickup_spots, plugin_switch_map_scooters, plugin_switch_map_bikes]
                      ~ flag plugin_switch_feed_safety_tips
                          rollout: 33.33% → 50%
                          units no rule matches: 33.33% → 50%, about 16.67% of them turn on
                      ~ flag plugin_switch_prefs_ride_pass
                          rules[1]: none → name nairobi launch; cities [nairobi]; rollout 5%
                          units matching new rule 1 (cities nairobi): 0% → 5%, about 5% of them turn on
                      + flag plugin_switch_map_bikes
                          every unit: 0% → 10%, about 10% of them turn on
                      affects: every city; every cohort

                    """)
            let json = await server.flagctl("diff", directory, "-o", "json")
            let tree = try JSONValue.parse(json.output)
            let plan = try #require(tree["namespaces"]?.arrayValue?.first)
            #expect(tree["changes"] == .int(4))
            #expect(plan["version"] == .int(1))
            #expect(plan["exists"] == .bool(true))
            let rideCity = try #require(
                plan["changes"]?.arrayValue?.first { $0["key"] == .string("plugin_switch_prefs_ride_pass") })
            #expect(rideCity["action"] == .string("update"))
            #expect(rideCity["impact"]?.arrayValue?.first?["cities"] == .array([.string("nairobi")]))
            #expect(rideCity["impact"]?.arrayValue?.first?["share"] == .int(500))
            #expect(plan["affected_cities"] == .null, "the default rollout change reaches every city")
            #expect(await server.state().record.version == 1, "diff changes nothing")
        }
    }

    @Test func applyMakesTheServerMatchTheFilesAndIsIdempotent() async throws {
        try await LiveServer.run { server in
            let directory = try FlagFolder.copyOfRider(Self.edited)
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let dryRun = await server.flagctl("apply", directory, "--dry-run")
            #expect(dryRun.status == 0)
            #expect(dryRun.output.hasSuffix("dry run: nothing was applied\n"))
            let refused = await server.flagctl("apply", directory)
            #expect(refused.status == 64)
            #expect(
                refused.error
                    == "error: not on a terminal, so flagctl cannot ask before it changes anything; add --yes to apply these changes\n"
            )
            #expect(await server.state().record.version == 1)

            let applied = await server.flagctl("apply", directory, "--yes", "--reason", "release 5.14 flags")
            #expect(applied.status == 0, "\(applied.error)")
            #expect(applied.output.hasSuffix("applied \(directory)/rider.yaml to namespace rider: version 1 → 2\n"))
            let state = await server.state()
            let file = try FlagFile(contentsOf: directory + "/rider.yaml").flagSet
            #expect(state.flagSet == file)
            let change = try #require(await server.change(2))
            #expect(change.source == .apply)
            #expect(change.reason == "release 5.14 flags")

            let again = await server.flagctl("apply", directory, "--yes")
            #expect(again.status == 0)
            #expect(
                again.output == """
                    namespace rider (\(directory)/rider.yaml) matches version 2 on \(server.url): nothing to apply
                    nothing to apply

                    """)
            #expect(await server.state().record.version == 2)
        }
    }

    @Test func applyLeavesKillsAndDisablesAloneUnlessAsked() async throws {
        try await LiveServer.run { server in
            _ = await server.flagctl("kill", "--city", "lagos", "--reason", "INC-4411", "--yes")
            _ = await server.flagctl("disable", "plugin_switch_feed_promos", "--reason", "crash guard tripped")
            let directory = try FlagFolder.copyOfRider(Self.edited)
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let applied = await server.flagctl("apply", directory, "--yes")
            #expect(applied.status == 0, "\(applied.error)")
            #expect(
                applied.output.contains(
                    """
                      operational state left as it is on the server (--include-state applies the files'):
                        kill switch master entries: [cohorts core_only; cities lagos] (file: [cohorts core_only])
                        flag plugin_switch_feed_promos disabled: true (file: false)

                    """))
            var state = await server.state()
            #expect(state.flagSet.master.entries == [Scope(cohorts: ["core_only"]), Scope(cities: ["lagos"])])
            #expect(state.flagSet.flag("plugin_switch_feed_promos")?.pluginSwitch?.disabled == true)
            #expect(state.flagSet.flag("plugin_switch_feed_safety_tips")?.pluginSwitch?.rollout.basisPoints == 5000)

            let withState = await server.flagctl("apply", directory, "--include-state", "--yes")
            #expect(withState.status == 0, "\(withState.error)")
            #expect(
                withState.output.contains(
                    "  ~ kill switch master\n      entries: [cohorts core_only; cities lagos] → [cohorts core_only]\n"))
            state = await server.state()
            #expect(state.flagSet.master.entries == [Scope(cohorts: ["core_only"])])
            #expect(state.flagSet.flag("plugin_switch_feed_promos")?.pluginSwitch?.disabled == false)
        }
    }

    @Test func flagsMissingFromTheFilesAreRemovedOnlyWithPrune() async throws {
        try await LiveServer.run { server in
            let withBikes = try FlagFolder.copyOfRider(Self.edited)
            defer { try? FileManager.default.removeItem(atPath: withBikes) }
            _ = await server.flagctl("apply", withBikes, "--yes")
            let kept = await server.flagctl("diff", TestPaths.flags)
            #expect(
                kept.output.contains(
                    "  kept (only on the server; --prune removes them): flag plugin_switch_map_bikes\n"))
            #expect(!kept.output.contains("- flag plugin_switch_map_bikes"))
            let pruned = await server.flagctl("apply", TestPaths.flags, "--prune", "--yes")
            #expect(pruned.status == 0, "\(pruned.error)")
            #expect(pruned.output.contains("  - flag plugin_switch_map_bikes\n"))
            #expect(
                pruned.output.contains(
                    "every unit: the flag is removed: apps use their code default (off) for it; units that had it lose it"
                ))
            #expect(await server.state().flagSet.flag("plugin_switch_map_bikes") == nil)
            #expect(await server.state().flagSet == Fixtures.rider)
        }
    }

    /// Flags/rider.yaml with the fare capped higher, time to book dropped and a new metric.
    static func editedMetrics(_ text: String) -> String {
        text.replacingOccurrences(of: "    kind: value\n    cap: 200\n", with: "    kind: value\n    cap: 250.5\n")
            .replacingOccurrences(
                of: """
                      time_to_book:
                        description: Seconds from opening the app to booking a trip; a rider's total counts for at most 600.
                        owner: team-rider
                        kind: value
                        cap: 600
                        better: lower

                    """,
                with: """
                      support_contacted:
                        kind: conversion
                        better: lower

                    """
            )
            // time_per_trip is time_to_book's ratio: it goes with it.
            .components(separatedBy: "\n  time_per_trip:\n")[0]
    }

    @Test func metricsAreCreatedChangedAndRemovedOnlyWithPrune() async throws {
        try await LiveServer.run { server in
            let directory = try FlagFolder.copyOfRider(Self.editedMetrics)
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let diff = await server.flagctl("diff", directory)
            #expect(diff.status == 0, "\(diff.error)")
            #expect(
                diff.output == """
                    namespace rider (\(directory)/rider.yaml), version 1 on \(server.url): 2 changes
                      ~ metric fare
                          cap: 200 → 250.5
                      + metric support_contacted
                      kept (only on the server; --prune removes them): metric time_per_trip, metric time_to_book

                    """)
            let json = try JSONValue.parse(await server.flagctl("diff", directory, "-o", "json").output)
            let changes = try #require(json["namespaces"]?.arrayValue?.first?["changes"]?.arrayValue)
            #expect(changes.map { $0["kind"] } == [.string("metric"), .string("metric")])
            #expect(
                changes.first?["fields"]
                    == .array([
                        .object(
                            JSONObject([
                                ("path", .string("cap")), ("before", .int(200)),
                                ("after", .number(JSONNumber(uncheckedLiteral: "250.5"))),
                            ]))
                    ]))
            let applied = await server.flagctl("apply", directory, "--yes")
            #expect(applied.status == 0, "\(applied.error)")
            var state = await server.state()
            #expect(state.flagSet.metric("fare")?.cap == 250.5)
            #expect(state.flagSet.metric("support_contacted")?.better == .lower)
            #expect(state.flagSet.metric("time_to_book") != nil)
            let again = await server.flagctl("diff", directory, "--exit-code")
            #expect(again.status == 0, "apply is idempotent: \(again.output)")
            let pruned = await server.flagctl("apply", directory, "--prune", "--yes")
            #expect(pruned.status == 0, "\(pruned.error)")
            #expect(
                pruned.output.contains("  - metric time_to_book\n")
                    && pruned.output.contains("  - metric time_per_trip\n"))
            state = await server.state()
            #expect(state.flagSet.metric("time_to_book") == nil)
            #expect(
                state.flagSet.metrics.map(\.name) == [
                    "fare", "fare_per_trip", "support_contacted", "trip_booked", "trips",
                ])
            // A ratio naming a metric the file does not declare is refused by lint, before anything is compared.
            let broken = try FlagFolder.copyOfRider {
                Self.editedMetrics($0).replacingOccurrences(
                    of: "    denominator: trips\n", with: "    denominator: time_to_book\n")
            }
            defer { try? FileManager.default.removeItem(atPath: broken) }
            let refused = await server.flagctl("apply", broken, "--yes")
            #expect(refused.status == 1)
            #expect(
                refused.error.contains(
                    "rider.yaml: metrics.fare_per_trip.denominator: 'time_to_book' is not a metric of this namespace"),
                "\(refused.error)")
        }
    }

    @Test func applyCreatesANamespaceThatHasAFileWithAnAdminToken() async throws {
        try await LiveServer.run { server in
            let directory = try FlagFolder.copyOfRider()
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let staging = try String(contentsOfFile: directory + "/rider.yaml", encoding: .utf8)
                .replacingOccurrences(of: "\nnamespace: rider\n", with: "\nnamespace: rider-staging\n")
            try staging.write(toFile: directory + "/rider-staging.yaml", atomically: true, encoding: .utf8)
            let plan = await server.flagctl("diff", directory, "--namespace", "rider-staging")
            #expect(
                plan.output.hasPrefix(
                    "namespace rider-staging (\(directory)/rider-staging.yaml) does not exist on \(server.url): apply creates it with 4 plugin points, 5 kill switches, 13 flags and 6 metrics\n"
                ))
            let asEditor = await server.flagctl("apply", directory, "--yes")
            #expect(asEditor.status == 5)
            let applied = await server.flagctl("apply", directory, "--yes", "-o", "json", as: "admin")
            #expect(applied.status == 0, "\(applied.error)")
            let tree = try JSONValue.parse(applied.output)
            let namespaces = try #require(tree["namespaces"]?.arrayValue)
            // Files in name order: rider-staging.yaml sorts before rider.yaml.
            #expect(namespaces.map { $0["namespace"] } == [.string("rider-staging"), .string("rider")])
            try #require(namespaces.count == 2)
            #expect(namespaces[0]["result"]?["version"] == .int(1))
            #expect(namespaces[1]["result"] == .null, "rider matched already")
            #expect(await server.state("rider-staging").flagSet.flags.count == 13)
        }
    }

    @Test func invalidFilesStopDiffAndApplyWithEveryProblem() async throws {
        try await LiveServer.run { server in
            let directory = try FlagFolder.copyOfRider {
                $0.replacingOccurrences(of: "rollout: 33.33", with: "rollout: 33.333")
            }
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let result = await server.flagctl("apply", directory, "--yes")
            #expect(result.status == 1)
            #expect(
                result.error.contains(
                    "rider.yaml: flags.plugin_switch_feed_safety_tips.rollout: 33.333 has more than two decimals"))
            #expect(
                result.error.hasSuffix(
                    "error: the flag files have problems (above); nothing was compared. Fix them ('flagctl lint \(directory)' checks them) and run again\n"
                ))
            let missing = await server.flagctl("diff", directory, "--namespace", "driver")
            #expect(missing.status == 1)
            let noDirectory = await server.flagctl("diff", "/nonexistent/Flags")
            #expect(noDirectory.status == 64)
        }
    }

    // MARK: plans as data

    @Test func theImpactOfARolloutChangeIsTheDifferenceInShare() {
        let before = FlagDefinition(
            key: "plugin_switch_x",
            kind: .pluginSwitch(
                PluginSwitchDefinition(
                    rules: [
                        SwitchRule(conditions: Conditions(cities: ["nairobi"]), rollout: Rollout(basisPoints: 100)!)
                    ], rollout: .off)))
        var after = before
        after.pluginSwitch?.rules[0].rollout = Rollout(basisPoints: 5000)!
        let impact = NamespacePlan.impact(before, after)
        #expect(impact.map(\.text) == ["units matching rule 0 (cities nairobi): 1% → 50%, about 49% of them turn on"])
        #expect(impact[0].cities == ["nairobi"])
        #expect(impact[0].cohorts == nil)
        after.pluginSwitch?.rules[0].conditions.cohorts = ["beta"]
        let changed = NamespacePlan.impact(before, after).map(\.text)
        #expect(
            changed == [
                "units of rule 0 (was cities nairobi; now cities nairobi; cohorts beta): 1% → 50%, about 49% of them turn on"
            ])
        after.pluginSwitch?.rules[0].rollout = Rollout(basisPoints: 100)!
        #expect(
            NamespacePlan.impact(before, after).map(\.text) == [
                "units of rule 0 (was cities nairobi; now cities nairobi; cohorts beta): units entering it get 1%, units leaving it get later rules or the default 0%"
            ])
    }

    @Test func metricChangesArePlannedAsMetricObjectsFieldByField() {
        var after = Fixtures.rider
        let fare = after.metrics.firstIndex { $0.name == "fare" }!
        after.metrics[fare].better = .lower
        after.metrics.removeAll { $0.name == "trip_booked" }
        after.metrics.append(MetricDefinition(name: "tips", kind: .value, cap: 20))
        let objects = NamespacePlan.diff(before: Fixtures.rider, after: after)
        #expect(
            objects.map { "\($0.kind) \($0.key) \($0.action.rawValue)" } == [
                "metric trip_booked remove", "metric fare update", "metric tips create",
            ])
        #expect(objects[1].fields == [ObjectDiff.Field(path: "better", before: nil, after: .string("lower"))])
        #expect(ObjectDiff.text(nil, key: "better") == "higher")
    }

    @Test func experimentWeightChangesAreDescribed() {
        let flag = Fixtures.rider.flag("confirmation_button_copy")!
        var after = flag
        after.experiment?.weights = ["control": 50, "book_now": 50]
        #expect(
            NamespacePlan.impact(flag, after).map(\.text) == [
                "units no rule matches: weights control 34, book_now 33, lets_go 33 → control 50, book_now 50"
            ])
    }
}
