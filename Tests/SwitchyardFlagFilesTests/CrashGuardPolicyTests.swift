import Foundation
import SwitchyardCore
import SwitchyardFlagFiles
import Testing

/// Crash guard policies in flag files: read, written, resolved, and left out of snapshots.
struct CrashGuardPolicyTests {
    static let text = """
        namespace: rider
        crash_guard:
          window: 15m
          min_sessions: 500
          max_crash_rate: 1.5
          baseline_ratio: 2.5
          confidence: 99.95
          cooldown: 1h
        flags:
          plugin_switch_feed_promos:
            rollout: 100
            crash_guard: {max_crash_rate: 0.25, scope_by: [city]}
          plugin_switch_map_traffic:
            rollout: 100

        """

    /// Fixtures/crash-guard/crash-guard-invalid.yaml lists the problems it must produce as `# expect:` lines.
    @Test func everyMistakeInAPolicyIsReportedWithItsPath() throws {
        let directory = TestPaths.fixtures + "/crash-guard"
        let path = directory + "/crash-guard-invalid.yaml"
        let expected = try TestPaths.expectedProblems(in: path)
        #expect(expected.count == 10)
        #expect(FlagDirectory(reading: directory).problems(inFile: path).map(\.description) == expected)
    }

    @Test func policiesReadExactlyWithPercentagesAsBasisPoints() throws {
        let flagSet = try FlagFile(yaml: Self.text, path: "Flags/rider.yaml").flagSet
        let defaults = try #require(flagSet.crashGuard)
        #expect(defaults.window == .seconds(900))
        #expect(defaults.minimumSessions == 500)
        #expect(defaults.maximumCrashRate?.basisPoints == 150)
        #expect(defaults.baselineRatio == 250)
        #expect(defaults.confidence?.basisPoints == 9995)
        #expect(defaults.cooldown == .seconds(3600))
        #expect(defaults.enabled == nil && defaults.scopeBy == nil)
        let own = try #require(flagSet.flag("plugin_switch_feed_promos")?.pluginSwitch?.crashGuard)
        #expect(own == CrashGuardPolicy(maximumCrashRate: Rollout(basisPoints: 25), scopeBy: [.city]))
    }

    @Test func aSwitchInheritsTheNamespaceDefaultsFieldByFieldOverTheBuiltInOnes() throws {
        let flagSet = try FlagFile(yaml: Self.text, path: "Flags/rider.yaml").flagSet
        let promos = CrashGuardPolicy.resolved(
            namespace: flagSet.crashGuard,
            switch: flagSet.flag("plugin_switch_feed_promos")?.pluginSwitch?.crashGuard)
        #expect(promos.maximumCrashRate.basisPoints == 25)
        #expect(promos.scopeBy == [.city])
        #expect(promos.window == .seconds(900))
        #expect(promos.minimumCrashes == CrashGuardPolicy.builtIn.minimumCrashes)
        #expect(promos.enabled)
        let traffic = CrashGuardPolicy.resolved(namespace: flagSet.crashGuard, switch: nil)
        #expect(traffic.maximumCrashRate.basisPoints == 150)
        #expect(traffic.scopeBy == [.city, .cohort])
        #expect(CrashGuardPolicy.resolved(namespace: nil, switch: nil) == CrashGuardPolicy.builtIn)
    }

    /// Scoped trips have a budget of their own; a namespace that sets only `max_trips_per_hour` (as before that
    /// budget existed) keeps it for both, so `max_trips_per_hour: 0` still means the guard only proposes.
    @Test func theScopedBudgetFollowsTheGlobalOneUnlessSetItself() {
        #expect(CrashGuardPolicy.resolved(namespace: nil, switch: nil).maximumScopedTripsPerHour == 3)
        #expect(
            CrashGuardPolicy.resolved(namespace: CrashGuardPolicy(maximumTripsPerHour: 0), switch: nil)
                .maximumScopedTripsPerHour == 0)
        let both = CrashGuardPolicy.resolved(
            namespace: CrashGuardPolicy(maximumTripsPerHour: 0, maximumScopedTripsPerHour: 5), switch: nil)
        #expect(both.maximumTripsPerHour == 0 && both.maximumScopedTripsPerHour == 5)
    }

    @Test func policiesRoundTripThroughYAMLAndTheAPIForm() throws {
        let flagSet = try FlagFile(yaml: Self.text, path: "Flags/rider.yaml").flagSet
        let yaml = flagSet.yamlText()
        #expect(
            yaml.contains(
                "crash_guard:\n  window: \"15m\"\n  min_sessions: 500\n  max_crash_rate: 1.5\n  baseline_ratio: 2.5\n  confidence: 99.95\n  cooldown: \"1h\"\n"
            ))
        #expect(try FlagFile(yaml: yaml, path: "Flags/rider.yaml").flagSet == flagSet)
        let api = flagSet.tree(unit: .basisPoints)
        #expect(api["crash_guard"]?["max_crash_rate"] == .int(150))
        #expect(api["crash_guard"]?["confidence"] == .int(9995))
        #expect(api["crash_guard"]?["baseline_ratio"] == .number(JSONNumber(uncheckedLiteral: "2.5")))
        #expect(try FlagSet(tree: .object(api), unit: .basisPoints) == flagSet)
    }

    @Test func snapshotsLeaveThePoliciesOut() throws {
        let flagSet = try FlagFile(yaml: Self.text, path: "Flags/rider.yaml").flagSet
        let bytes = SnapshotDocument.encode(Snapshot(epoch: "e1", version: 3, flagSet: flagSet))
        #expect(!String(decoding: bytes, as: UTF8.self).contains("crash_guard"))
        let decoded = try SnapshotDocument.decode(bytes)
        #expect(decoded.flagSet.crashGuard == nil)
        #expect(decoded.flagSet.flag("plugin_switch_feed_promos")?.pluginSwitch?.crashGuard == nil)
        #expect(decoded.flagSet.flag("plugin_switch_feed_promos")?.pluginSwitch?.rollout == .full)
    }

    @Test func whoMayTripAndHowMuchEachSourceCountsReadAndRoundTrip() throws {
        let text = """
            namespace: rider
            crash_guard:
              min_units: 3
              min_addresses: 2
              trip_sources: [reporters]
              max_scoped_disables: 2
              max_sessions_per_unit: 10
              max_sessions_per_address: 500
              max_trips_per_hour: 0
              cities: [lagos, paris]
              cohorts: [beta]
              max_scope_values: 50
            flags:
              plugin_switch_feed_promos:
                rollout: 100
                crash_guard: {trip_sources: [clients, reporters], min_addresses: 5}

            """
        let flagSet = try FlagFile(yaml: text, path: "Flags/rider.yaml").flagSet
        let promos = CrashGuardPolicy.resolved(
            namespace: flagSet.crashGuard, switch: flagSet.flag("plugin_switch_feed_promos")?.pluginSwitch?.crashGuard)
        #expect(
            promos.tripSources == [.clients, .reporters] && promos.minimumAddresses == 5 && promos.minimumUnits == 3)
        #expect(
            promos.maximumTripsPerHour == 0 && promos.maximumSessionsPerAddress == 500
                && promos.maximumSessionsPerUnit == 10)
        #expect(promos.cities == ["lagos", "paris"] && promos.cohorts == ["beta"] && promos.maximumScopeValues == 50)
        #expect(try FlagFile(yaml: flagSet.yamlText(), path: "Flags/rider.yaml").flagSet == flagSet)
        #expect(try FlagSet(tree: .object(flagSet.tree(unit: .basisPoints)), unit: .basisPoints) == flagSet)
        let builtIn = CrashGuardPolicy.builtIn
        #expect(
            builtIn.tripSources == [.clients, .reporters] && builtIn.minimumUnits == 5 && builtIn.minimumAddresses == 3)
        #expect(builtIn.maximumTripsPerHour == 3 && builtIn.cities == nil)
    }

    @Test func aSwitchCannotSetWhatOnlyTheNamespaceDecides() throws {
        let text = """
            namespace: rider
            flags:
              plugin_switch_feed_promos:
                rollout: 100
                crash_guard: {max_trips_per_hour: 10, cities: [lagos], trip_sources: [everyone], max_scope_values: 0}

            """
        #expect {
            try FlagFile(yaml: text, path: "Flags/rider.yaml")
        } throws: { error in
            let messages = Set((error as? DefinitionError)?.problems.map(\.description) ?? [])
            return messages == [
                "Flags/rider.yaml: flags.plugin_switch_feed_promos.crash_guard.cities: is a namespace setting (it applies to every switch of the namespace); set it in the namespace's crash_guard",
                "Flags/rider.yaml: flags.plugin_switch_feed_promos.crash_guard.max_scope_values: is a namespace setting (it applies to every switch of the namespace); set it in the namespace's crash_guard",
                "Flags/rider.yaml: flags.plugin_switch_feed_promos.crash_guard.max_trips_per_hour: is a namespace setting (it applies to every switch of the namespace); set it in the namespace's crash_guard",
                "Flags/rider.yaml: flags.plugin_switch_feed_promos.crash_guard.max_scope_values: 0 is not between 1 and 10000",
                "Flags/rider.yaml: flags.plugin_switch_feed_promos.crash_guard.trip_sources[0]: 'everyone' is not clients or reporters",
            ]
        }
    }

    @Test(arguments: [("30s", 30), ("10m", 600), ("2h", 7200), ("1d", 86_400), ("0s", 0)])
    func durationsReadAndWriteInTheirShortestForm(text: String, seconds: Int64) {
        #expect(GuardDurationText.parse(text) == .seconds(seconds))
        #expect(GuardDurationText.text(.seconds(seconds)) == text)
    }

    @Test(arguments: ["", "10", "m", "-5m", "+5m", "1.5h", "10 m", "10w"])
    func durationTextThatIsNotOneIsRefused(text: String) {
        #expect(GuardDurationText.parse(text) == nil)
    }

    @Test func disabledInScopeCoversTheScopesASwitchIsOffFor() {
        let gate = PluginSwitchDefinition(disabledScopes: [
            Scope(cities: ["lagos", "paris"]), Scope(cities: ["rome"], cohorts: ["beta"]),
        ])
        #expect(gate.isDisabled(in: Scope(cities: ["lagos"])))
        #expect(gate.isDisabled(in: Scope(cities: ["paris"])))
        #expect(!gate.isDisabled(in: Scope(cities: ["rome"])))
        #expect(!gate.isDisabled(in: Scope(cohorts: ["beta"])))
        #expect(!gate.isDisabled(in: .everywhere))
        #expect(PluginSwitchDefinition(disabled: true).isDisabled(in: .everywhere))
        #expect(PluginSwitchDefinition(disabled: true).isDisabled(in: Scope(cohorts: ["beta"])))
    }
}
