import FlagctlCommands
import Foundation
import SwitchyardCore
import SwitchyardFlagFiles
import SwitchyardStorage
import TestSupport
import Testing

/// Every server command end to end: flagctl in-process against a live flagsd on a random loopback port.
struct LiveCommandTests {
    // MARK: get

    @Test func getListsEveryFlagWithItsStateAndTheKillSwitches() async throws {
        try await LiveServer.run { server in
            let result = await server.flagctl("get")
            try #require(
                result.status == 0, "flagctl get exited with \(result.status): \(result.error)\(result.output)")
            let lines = result.output.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
            try #require(lines.count >= 2, "flagctl get printed: \(result.output)")
            #expect(lines[0] == "namespace rider at version 1")
            #expect(lines[1] == "master kill switch entries: cohorts core_only (every flag is off there)")
            #expect(
                lines.contains {
                    $0.hasPrefix("plugin_switch_surge_notice ") && $0.hasSuffix("disabled in cities berlin")
                })
            #expect(
                lines.contains {
                    $0.hasPrefix("plugin_switch_feed_safety_tips ") && $0.contains(" on ") && $0.contains("33.33%")
                })
            #expect(
                lines.contains {
                    $0.hasPrefix("confirmation_button_copy ") && $0.contains("control 34, book_now 33, lets_go 33")
                })
            #expect(lines.contains { $0.hasPrefix("KILL SWITCH") })
            #expect(
                lines.contains {
                    $0.hasPrefix("master ") && $0.contains("cohorts core_only") && $0.hasSuffix("13 flags")
                })
            #expect(!result.output.contains("\u{1B}["), "no colour off a terminal")
        }
    }

    @Test func getOfOneFlagShowsItsRulesNumberedAsRuleTakesThem() async throws {
        try await LiveServer.run { server in
            let result = await server.flagctl("get", "plugin_switch_feed_promos")
            #expect(result.status == 0)
            #expect(
                result.output == """
                    flag             plugin_switch_feed_promos (plugin switch)
                    description      Promotions card of the home feed. Ramping up in Nairobi; everywhere else it is on.
                    owner            team-promotions
                    plugin point     home_feed, position 1 of 3
                    namespace        rider at version 1
                    state            on
                    disabled         no
                    disabled in      none
                    rule 0           units qa-rider-1, qa-rider-2, qa-rider-3 → 100%  ('QA allowlist')
                    rule 1           cities nairobi → 12.5%  ('Nairobi ramp')
                    default rollout  100%
                    kill switches    master (entries: cohorts core_only), kill_home_feed (no entries)

                    """)
        }
    }

    @Test func getInJSONHasStableFieldsAndBasisPoints() async throws {
        try await LiveServer.run { server in
            let result = await server.flagctl("get", "plugin_switch_feed_promos", "-o", "json")
            #expect(result.status == 0)
            let tree = try JSONValue.parse(result.output)
            #expect(tree["namespace"] == .string("rider"))
            #expect(tree["version"] == .int(1))
            #expect(tree["etag"]?.stringValue?.hasSuffix(".1\"") == true)
            let flag = try #require(tree["flag"])
            #expect(flag["key"] == .string("plugin_switch_feed_promos"))
            #expect(flag["state"] == .string("on"))
            #expect(flag["rollout"] == .int(10000))
            let rules = try #require(flag["rules"]?.arrayValue)
            try #require(rules.count == 2, "\(rules)")
            #expect(rules[1]["rollout"] == .int(1250))
            #expect(flag["plugin_point"] == .string("home_feed"))
            #expect(flag["kill_switches"] == .array([.string("master"), .string("kill_home_feed")]))
            #expect(
                tree["kill_switches"]?.arrayValue?.first?["entries"]
                    == .array([.object(JSONObject([("cohorts", .array([.string("core_only")]))]))]))
        }
    }

    @Test func getInYAMLIsTheSameTree() async throws {
        try await LiveServer.run { server in
            let json = try JSONValue.parse(await server.flagctl("get", "-o", "json").output)
            let yaml = await server.flagctl("get", "-o", "yaml")
            #expect(yaml.status == 0)
            #expect(yaml.output.hasPrefix("namespace: rider\n") || yaml.output.contains("\nnamespace: rider\n"))
            #expect(yaml.output.contains("key: plugin_switch_feed_promos"))
            #expect(json["flags"]?.arrayValue?.count == 13)
            #expect(yaml.output.components(separatedBy: "\n  - key: ").count - 1 >= 13)
        }
    }

    @Test func getOfAKillSwitchShowsWhatItCovers() async throws {
        try await LiveServer.run { server in
            let result = await server.flagctl("get", "kill_home_feed")
            #expect(
                result.output.contains(
                    "covers       plugin_switch_feed_promos, plugin_switch_feed_trip_history, plugin_switch_feed_safety_tips\n"
                ))
        }
    }

    /// Built-in metrics first, then the declared ones in name order (the store keeps flags, kill switches and metrics
    /// by key).
    @Test func getListsTheMetricsBuiltInFirstAndShowsOne() async throws {
        try await LiveServer.run { server in
            let list = await server.flagctl("get")
            #expect(
                list.output.hasSuffix(
                    """
                    METRIC            KIND                               BETTER  CAP  OWNER
                    sessions          count                              higher  -    built in
                    crashed_sessions  count                              lower   -    built in
                    crash_rate        ratio crashed_sessions / sessions  lower   -    built in
                    fare              value                              higher  200  team-rider
                    fare_per_trip     ratio fare / trips                 higher  -    team-rider
                    time_per_trip     ratio time_to_book / trips         lower   -    team-rider
                    time_to_book      value                              lower   600  team-rider
                    trip_booked       conversion                         higher  -    team-rider
                    trips             count                              higher  20   team-rider

                    """), "\(list.output)")
            let fare = await server.flagctl("get", "fare")
            #expect(fare.status == 0)
            #expect(
                fare.output == """
                    metric       fare
                    description  Fares a rider paid, in currency units; a rider's total counts for at most 200.
                    owner        team-rider
                    namespace    rider at version 1
                    kind         value
                    better       higher
                    cap          200

                    """)
            let json = try JSONValue.parse(await server.flagctl("get", "-o", "json").output)
            let metrics = try #require(json["metrics"]?.arrayValue)
            #expect(
                metrics.map { $0["name"]?.stringValue ?? "" } == [
                    "sessions", "crashed_sessions", "crash_rate", "fare", "fare_per_trip",
                    "time_per_trip", "time_to_book", "trip_booked", "trips",
                ])
            #expect(metrics[2]["built_in"] == .bool(true) && metrics[2]["numerator"] == .string("crashed_sessions"))
            let timeToBook = try #require(metrics[6].objectValue)
            #expect(
                Set(timeToBook.memberKeys) == ["name", "description", "owner", "kind", "better", "cap", "built_in"])
            #expect(
                timeToBook["description"]
                    == .string(
                        "Seconds from opening the app to booking a trip; a rider's total counts for at most 600."))
            #expect(
                timeToBook["better"] == .string("lower") && timeToBook["cap"] == .int(600)
                    && timeToBook["built_in"] == .bool(false))
            #expect(metrics[7]["better"] == .string("higher"), "better is spelled out when it is the default")
            let one = try JSONValue.parse(await server.flagctl("get", "crash_rate", "-o", "json").output)
            #expect(one["metric"]?["denominator"] == .string("sessions"))
        }
    }

    @Test func getOfAnUnknownKeySuggestsTheNearestAndExitsWithFour() async throws {
        try await LiveServer.run { server in
            let result = await server.flagctl("get", "plugin_switch_feed_promo")
            #expect(result.status == 4)
            #expect(
                result.error
                    == "error: namespace 'rider' has no flag, kill switch or metric 'plugin_switch_feed_promo'; did you mean 'plugin_switch_feed_promos'?; 'flagctl get' lists them\n"
            )
        }
    }

    // MARK: enable / disable

    @Test func disableAndEnableEverywhereAndInOneCity() async throws {
        try await LiveServer.run { server in
            let disabled = await server.flagctl(
                "disable", "plugin_switch_feed_promos", "--reason", "INC-1: crashes on open")
            #expect(disabled.status == 0, "\(disabled.error)")
            #expect(
                disabled.output == "disabled plugin_switch_feed_promos everywhere (namespace rider is at version 2)\n")
            #expect(await server.state().flagSet.flag("plugin_switch_feed_promos")?.pluginSwitch?.disabled == true)

            let again = await server.flagctl("disable", "plugin_switch_feed_promos")
            #expect(
                again.output
                    == "plugin_switch_feed_promos is disabled everywhere already; nothing changed (namespace rider stays at version 2)\n"
            )

            let scoped = await server.flagctl(
                "disable", "plugin_switch_feed_promos", "--city", "lagos", "--cohort", "beta")
            #expect(
                scoped.output
                    == "disabled plugin_switch_feed_promos in cities lagos and cohorts beta (namespace rider is at version 3)\n"
            )

            let enabled = await server.flagctl("enable", "plugin_switch_feed_promos")
            #expect(
                enabled.output == """
                    enabled plugin_switch_feed_promos (namespace rider is at version 4)
                    note: still disabled in cities lagos and cohorts beta ('flagctl enable plugin_switch_feed_promos -n rider --city ...' clears one)

                    """)
            let cleared = await server.flagctl(
                "enable", "plugin_switch_feed_promos", "--cohort", "beta", "--city", "lagos")
            #expect(cleared.status == 0)
            #expect(
                await server.state().flagSet.flag("plugin_switch_feed_promos")?.pluginSwitch
                    == Fixtures.riderFlag("plugin_switch_feed_promos")?.pluginSwitch)
        }
    }

    @Test func enablingAScopeThatIsNotDisabledSaysWhichScopesAre() async throws {
        try await LiveServer.run { server in
            let result = await server.flagctl("enable", "plugin_switch_surge_notice", "--city", "paris")
            #expect(result.status == 1)
            #expect(
                result.error
                    == "error: plugin_switch_surge_notice has no scoped disable for cities paris (its scoped disables: cities berlin); name one of those, or leave --city/--cohort out to clear the global disable\n"
            )
        }
    }

    @Test func enableSaysWhenAKillSwitchStillKeepsTheSwitchOff() async throws {
        try await LiveServer.run { server in
            _ = await server.flagctl("disable", "plugin_switch_feed_promos")
            _ = await server.flagctl("kill", "kill_home_feed", "--reason", "feed down", "--yes")
            let result = await server.flagctl("enable", "plugin_switch_feed_promos")
            #expect(
                result.output.contains(
                    "note: plugin_switch_feed_promos stays off: kill switch kill_home_feed kills it everywhere ('flagctl revive kill_home_feed -n rider --reason ...' revives it)\n"
                ))
        }
    }

    @Test func disablingAnExperimentExplainsWhatToDoInstead() async throws {
        try await LiveServer.run { server in
            let result = await server.flagctl("disable", "confirmation_button_copy")
            #expect(result.status == 1)
            #expect(
                result.error.contains(
                    "'confirmation_button_copy' is an experiment flag; disable applies to plugin switches. Experiments are turned off with a kill switch ('flagctl kill')"
                ))
        }
    }

    @Test func changesAreRecordedWithTheCLIAsSourceAndTheTokenAsActor() async throws {
        try await LiveServer.run { server in
            _ = await server.flagctl("disable", "plugin_switch_feed_promos", "--reason", "INC-1", as: "bob")
            let change = try #require(await server.change(2))
            #expect(change.actor == "bob")
            #expect(change.source == .cli)
            #expect(change.reason == "INC-1")
        }
    }

    @Test func aChangeInJSONIsTheServersEnvelope() async throws {
        try await LiveServer.run { server in
            let result = await server.flagctl("disable", "plugin_switch_feed_promos", "-o", "json")
            let tree = try JSONValue.parse(result.output)
            #expect(tree["changed"] == .bool(true))
            #expect(tree["version"] == .int(2))
            #expect(tree["change"]?["actor"] == .string("amara"))
            #expect(tree["flag"]?["disabled"] == .bool(true))
            let yaml = await server.flagctl("enable", "plugin_switch_feed_promos", "-o", "yaml")
            #expect(yaml.output.contains("changed: true\n"))
            #expect(yaml.output.contains("version: 3\n"))
        }
    }

    // MARK: kill / revive

    @Test func killingInOneCityNeedsAReasonAndYesOffATerminal() async throws {
        try await LiveServer.run { server in
            let noReason = await server.flagctl("kill", "--city", "lagos", "--yes")
            #expect(noReason.status == 64)
            #expect(
                noReason.error
                    == "error: namespace 'rider' requires a reason to kill; add --reason \"why\" (an incident id helps) to kill the master kill switch in cities lagos\n"
            )
            let noYes = await server.flagctl("kill", "--city", "lagos", "--reason", "INC-4411")
            #expect(noYes.status == 64)
            #expect(
                noYes.error
                    == "error: not on a terminal, so flagctl cannot ask before it changes anything; add --yes to kill the master kill switch in cities lagos\n"
            )
            #expect(await server.state().record.version == 1)

            let killed = await server.flagctl("kill", "--city", "lagos", "--reason", "INC-4411", "--yes")
            #expect(killed.status == 0)
            #expect(
                killed.output == """
                    killed the master kill switch in cities lagos (namespace rider is at version 2)
                    undo with: flagctl revive --city lagos -n rider --reason "..."

                    """)
            #expect(
                await server.state().flagSet.master.entries == [
                    Scope(cohorts: ["core_only"]), Scope(cities: ["lagos"]),
                ])
        }
    }

    @Test func killOnATerminalShowsWhatItCoversAndAsks() async throws {
        try await LiveServer.run { server in
            let result = await server.flagctlOnTerminal(
                "kill", "kill_home_feed", "--reason", "feed API down", answering: "y")
            #expect(result.status == 0, "\(result.transcript)")
            #expect(
                result.transcript == """
                    kill_home_feed covers 3 flags: plugin_switch_feed_promos, plugin_switch_feed_trip_history, plugin_switch_feed_safety_tips
                    current entries: none
                    Kill kill_home_feed everywhere (namespace rider, version 1)? [y/N] y
                    killed kill_home_feed everywhere (namespace rider is at version 2)
                    undo with: flagctl revive kill_home_feed -n rider --reason "..."

                    """)
        }
    }

    /// The README passes `-n rider` with no namespace in the environment: the undo hint runs as shown.
    @Test func theUndoHintOfAKillRunsAsShown() async throws {
        try await LiveServer.run { server in
            let environment = server.environment(namespace: nil)
            let killed = await server.flagctl(
                ["kill", "-n", "rider", "--reason", "demo", "--yes"], environment: environment)
            #expect(killed.status == 0, "\(killed.error)")
            let hint = try #require(killed.output.split(separator: "\n").first { $0.hasPrefix("undo with: ") })
            #expect(hint == #"undo with: flagctl revive -n rider --reason "...""#)
            let words = hint.dropFirst("undo with: flagctl ".count).split(separator: " ").map {
                $0 == #""...""# ? "kill over" : String($0)
            }
            let revived = await server.flagctl(words + ["--yes"], environment: environment)
            #expect(revived.status == 0, "\(revived.error)")
            #expect(await server.state().flagSet.master.entries == [Scope(cohorts: ["core_only"])])

            // With --server given as an option, the hint names it too.
            var bare = environment
            bare["FLAGCTL_SERVER"] = nil
            let again = await server.flagctl(
                ["kill", "kill_home_feed", "-n", "rider", "--server", server.url, "--reason", "demo", "--yes"],
                environment: bare)
            #expect(
                again.output.contains(
                    #"undo with: flagctl revive kill_home_feed -n rider --server \#(server.url) --reason "...""#),
                "\(again.output)")
        }
    }

    @Test func answeringNoChangesNothing() async throws {
        try await LiveServer.run { server in
            for answer in ["n", "", "no", "nope"] {
                let result = await server.flagctlOnTerminal("kill", "--reason", "test", answering: answer)
                #expect(result.status == 1)
                #expect(result.error.hasSuffix("error: not confirmed; nothing was changed\n"))
            }
            #expect(await server.state().record.version == 1)
        }
    }

    @Test func reviveRemovesTheEntryOfAScopeOrEveryEntry() async throws {
        try await LiveServer.run { server in
            _ = await server.flagctl("kill", "kill_map_layers", "--city", "lagos", "--reason", "r", "--yes")
            _ = await server.flagctl("kill", "kill_map_layers", "--cohort", "beta", "--reason", "r", "--yes")
            let wrongScope = await server.flagctl("revive", "kill_map_layers", "--yes")
            #expect(wrongScope.status == 1)
            #expect(
                wrongScope.error
                    == "error: kill_map_layers has no entry for everywhere; its entries: cities lagos; cohorts beta. Pass the scope of one (e.g. --city lagos), or --all to remove every entry\n"
            )
            let one = await server.flagctl("revive", "kill_map_layers", "--city", "lagos", "--yes")
            #expect(
                one.output == """
                    revived kill_map_layers: removed the entry for cities lagos (namespace rider is at version 4)
                    kill_map_layers still has entries: cohorts beta

                    """)
            let all = await server.flagctl("revive", "kill_map_layers", "--all", "--yes", "-o", "json")
            let tree = try JSONValue.parse(all.output)
            #expect(tree["kill_switch"]?["entries"] == .array([]))
            let nothing = await server.flagctl("revive", "kill_map_layers", "--all")
            #expect(nothing.status == 0, "nothing to do needs no confirmation")
            #expect(
                nothing.output
                    == "kill_map_layers has no kill entries; nothing changed (namespace rider stays at version 5)\n")
        }
    }

    @Test func killOfAnUnknownGroupListsTheKillSwitches() async throws {
        try await LiveServer.run { server in
            let result = await server.flagctl("kill", "kill_home_fed", "--reason", "r", "--yes")
            #expect(result.status == 4)
            #expect(
                result.error
                    == "error: namespace 'rider' has no kill switch 'kill_home_fed'; did you mean 'kill_home_feed'?; its kill switches: master, kill_confirmation_addons, kill_home_feed, kill_map_layers, kill_preferences_hub\n"
            )
        }
    }

    // MARK: rollout / target

    @Test func rolloutByCityAppendsARuleAndThenEditsIt() async throws {
        try await LiveServer.run { server in
            let first = await server.flagctl("rollout", "plugin_switch_prefs_ride_pass", "1", "--city", "nairobi")
            #expect(first.status == 0, "\(first.error)")
            #expect(
                first.output == """
                    plugin_switch_prefs_ride_pass: added rule 1 (cities nairobi) at 1% (namespace rider is at version 2)
                    its units got the default rollout (0%) before; about 1% of them get it now

                    """)
            let second = await server.flagctl("rollout", "plugin_switch_prefs_ride_pass", "10%", "--city", "nairobi")
            #expect(
                second.output == """
                    plugin_switch_prefs_ride_pass rule 1 (cities nairobi): 1% → 10% (namespace rider is at version 3)
                    about 9% more of its units get it; units that had it keep it

                    """)
            let rules = try #require(
                await server.state().flagSet.flag("plugin_switch_prefs_ride_pass")?.pluginSwitch?.rules)
            try #require(rules.count == 2, "\(rules)")
            #expect(rules[1].conditions == Conditions(cities: ["nairobi"]))
            #expect(rules[1].rollout.basisPoints == 1000)
        }
    }

    @Test func rolloutOfTheDefaultAndOfANumberedRule() async throws {
        try await LiveServer.run { server in
            let byDefault = await server.flagctl("rollout", "plugin_switch_feed_safety_tips", "50")
            #expect(
                byDefault.output.hasPrefix(
                    "plugin_switch_feed_safety_tips units no rule matches: 33.33% → 50% (namespace rider is at version 2)\n"
                ))
            let byRule = await server.flagctl(
                "rollout", "plugin_switch_feed_promos", "0.05", "--rule", "1", "-o", "json")
            let tree = try JSONValue.parse(byRule.output)
            #expect(tree["rule"] == .int(1))
            let rules = try #require(tree["flag"]?["rules"]?.arrayValue, "\(byRule.output)\(byRule.error)")
            try #require(rules.count == 2, "\(rules)")
            #expect(rules[1]["rollout"] == .int(5))
            let same = await server.flagctl("rollout", "plugin_switch_feed_promos", "0.05", "--rule", "1")
            #expect(
                same.output
                    == "plugin_switch_feed_promos rule 1 is at 0.05% already; nothing changed (namespace rider stays at version 3)\n"
            )
        }
    }

    @Test func aNewCityRuleNamesTheEarlierRulesThatStillDecideFirst() async throws {
        try await LiveServer.run { server in
            let result = await server.flagctl("rollout", "plugin_switch_feed_promos", "5", "--city", "lagos")
            #expect(
                result.output.contains(
                    "note: rule 0 (units qa-rider-1, qa-rider-2, qa-rider-3) comes first and decides for the units it matches\n"
                ))
        }
    }

    @Test func rolloutRefusesBadPercentagesMissingRulesAndExperiments() async throws {
        try await LiveServer.run { server in
            let decimals = await server.flagctl("rollout", "plugin_switch_feed_promos", "12.345")
            #expect(decimals.status == 64)
            #expect(
                decimals.error.contains(
                    "Error: PERCENT 12.345 has more than two decimals (basis points are the finest step). Pass a percentage such as 12.5."
                ))
            let range = await server.flagctl("rollout", "plugin_switch_feed_promos", "101")
            #expect(range.status == 64)
            let both = await server.flagctl(
                "rollout", "plugin_switch_feed_promos", "5", "--rule", "0", "--city", "lagos")
            #expect(both.status == 64)
            let noRule = await server.flagctl("rollout", "plugin_switch_feed_promos", "5", "--rule", "7")
            #expect(noRule.status == 1)
            #expect(
                noRule.error
                    == "error: plugin_switch_feed_promos has no rule 7 (its rules: 0 to 1); 'flagctl get plugin_switch_feed_promos' lists them, or pass --city/--cohort to add one\n"
            )
            let experiment = await server.flagctl("rollout", "confirmation_button_copy", "5")
            #expect(experiment.status == 1)
        }
    }

    @Test func targetAddsAndRemovesValuesInOneRule() async throws {
        try await LiveServer.run { server in
            let result = await server.flagctl(
                "target", "plugin_switch_feed_promos", "--rule", "0", "--add-unit", "qa-rider-4", "--remove-unit",
                "qa-rider-1")
            #expect(result.status == 0, "\(result.error)")
            #expect(
                result.output
                    == "plugin_switch_feed_promos rule 0: units qa-rider-1, qa-rider-2, qa-rider-3 → units qa-rider-2, qa-rider-3, qa-rider-4 (namespace rider is at version 2)\n"
            )
            let only = await server.flagctl(
                "target", "plugin_switch_prefs_ride_pass", "--add-city", "nairobi", "--remove-city", "london", "-o",
                "json")
            let onlyTree = try JSONValue.parse(only.output)
            #expect(onlyTree["rule"] == .int(0))
            #expect(
                await server.state().flagSet.flag("plugin_switch_prefs_ride_pass")?.pluginSwitch?.rules[0].conditions
                    .cities == ["paris", "lagos", "sao_paulo", "nairobi"])
            let fresh = await server.flagctl("target", "plugin_switch_map_traffic", "--add-cohort", "beta")
            #expect(fresh.status == 64)
            #expect(
                fresh.error
                    == "error: plugin_switch_map_traffic has no rules yet; add --rollout PERCENT for the new rule 0, e.g. --rollout 100\n"
            )
            let created = await server.flagctl(
                "target", "plugin_switch_map_traffic", "--add-cohort", "beta", "--rollout", "100")
            #expect(
                created.output
                    == "plugin_switch_map_traffic rule 0 (new): every unit → cohorts beta, at 100% (namespace rider is at version 4)\n"
            )
        }
    }

    @Test func targetNeedsARuleWhenThereAreSeveralAndValuesToRemoveThatExist() async throws {
        try await LiveServer.run { server in
            let several = await server.flagctl("target", "plugin_switch_feed_promos", "--add-city", "lagos")
            #expect(several.status == 64)
            #expect(
                several.error
                    == "error: plugin_switch_feed_promos has 2 rules; pass --rule N to say which to edit (0 to 1; 'flagctl get plugin_switch_feed_promos' lists them)\n"
            )
            let missing = await server.flagctl(
                "target", "plugin_switch_feed_promos", "--rule", "1", "--remove-city", "lagos")
            #expect(missing.status == 1)
            #expect(
                missing.error == "error: 'lagos' is not in rule 1's cities (they are: nairobi); nothing was changed\n")
            let nothing = await server.flagctl("target", "plugin_switch_feed_promos")
            #expect(nothing.status == 64)
        }
    }

    // MARK: explain

    @Test func explainAgainstTheServerMatchesExplainFromTheFiles() async throws {
        try await LiveServer.run { server in
            let arguments = ["explain", "plugin_switch_feed_promos", "--unit", "rider-42", "--city", "nairobi"]
            let live = await server.flagctl(arguments, environment: server.environment())
            let offline = await server.flagctl(arguments + ["--flags", TestPaths.flags], environment: [:])
            #expect(live.status == 0, "\(live.error)")
            let withoutSource = { (text: String) in text.split(separator: "\n").filter { !$0.hasPrefix("namespace") } }
            #expect(withoutSource(live.output) == withoutSource(offline.output))
            #expect(live.output.contains("namespace      rider (version 1 on \(server.url))\n"))
            let liveJSON = await server.flagctl(arguments + ["-o", "json"], environment: server.environment())
            let offlineJSON = await server.flagctl(
                arguments + ["--flags", TestPaths.flags, "-o", "json"], environment: [:])
            #expect(liveJSON.output == offlineJSON.output)
        }
    }

    @Test func explainAgainstTheServerSeesAKillAtOnce() async throws {
        try await LiveServer.run { server in
            _ = await server.flagctl("kill", "--city", "lagos", "--reason", "INC-4411", "--yes")
            let result = await server.flagctl(
                "explain", "plugin_switch_feed_promos", "--unit", "rider-42", "--city", "lagos", "-o", "yaml")
            #expect(result.output.contains("reason: DISABLED\n"))
            #expect(result.output.contains("decided_by: master kill switch entry 1 (cities lagos)\n"))
        }
    }

    @Test func explainWorksWithAClientToken() async throws {
        try await LiveServer.run { server in
            let result = await server.flagctl("explain", "plugin_switch_map_traffic", "--unit", "u", as: "app")
            #expect(result.status == 0, "\(result.error)")
            #expect(result.output.contains("reason         STATIC\n"))
        }
    }

    @Test func explainWithoutFilesOrServerSaysHowToPointItAtOne() async throws {
        let console = Console.capturing(environment: ["FLAGCTL_CONFIG": "/nonexistent/flagctl.json"])
        let status = await Flagctl.execute(["explain", "plugin_switch_feed_promos", "--unit", "u"], console: console)
        #expect(status == 64)
        #expect(
            console.errorOutput
                == "error: pass --flags DIR to explain from flag files, or point flagctl at the flags service (--server URL, FLAGCTL_SERVER, or 'flagctl login')\n"
        )
    }

    // MARK: audit / revert

    @Test func auditShowsWhoDidWhatNewestFirstAndFilters() async throws {
        try await LiveServer.run { server in
            _ = await server.flagctl("kill", "--city", "lagos", "--reason", "INC-4411", "--yes", as: "amara")
            _ = await server.flagctl("rollout", "plugin_switch_prefs_ride_pass", "1", "--city", "nairobi", as: "bob")
            let all = await server.flagctl("audit")
            #expect(all.status == 0)
            let rows = all.output.split(separator: "\n").map { Self.withoutTime(String($0)) }
            #expect(
                rows == [
                    "TIME                  VERSION  ACTOR  SOURCE  WHAT                                                          REASON",
                    "<time>  3        bob    cli     roll out plugin_switch_prefs_ride_pass (targeted rule) to 1%  -",
                    "<time>  2        amara  cli     kill master in cities lagos                                   INC-4411",
                    "<time>  1        setup  apply   seeded namespace rider from Flags/rider.yaml                  test setup",
                ])
            let bob = await server.flagctl("audit", "--actor", "bob", "-o", "json")
            let entries = try #require(try JSONValue.parse(bob.output)["entries"]?.arrayValue)
            #expect(entries.map { $0["version"] } == [.int(3)])
            #expect(entries.first?["source"] == .string("cli"))
            let byKey = await server.flagctl("audit", "plugin_switch_prefs_ride_pass", "--since", "1h", "-o", "yaml")
            #expect(byKey.output.contains("summary: roll out plugin_switch_prefs_ride_pass (targeted rule) to 1%\n"))
            #expect(!byKey.output.contains("summary: kill master"))
            let future = await server.flagctl("audit", "--since", "2999-01-01")
            #expect(future.output == "no audit entries match in namespace rider\n")
            let badTime = await server.flagctl("audit", "--since", "yesterday")
            #expect(badTime.status == 64)
        }
    }

    @Test func auditNeedsAnEditorToken() async throws {
        try await LiveServer.run { server in
            let result = await server.flagctl("audit", as: "app")
            #expect(result.status == 5)
            #expect(
                result.error
                    == "error: this needs the editor role; token 'app' has the client role; ask an admin for a token with that role or namespace (flagctl tokens create)\n"
            )
        }
    }

    @Test func revertRestoresWhatAChangeTouched() async throws {
        try await LiveServer.run { server in
            _ = await server.flagctl("rollout", "plugin_switch_feed_safety_tips", "90")
            let result = await server.flagctl("revert", "2", "--reason", "90% was a typo")
            #expect(result.status == 0, "\(result.error)")
            #expect(
                result.output
                    == "reverted version 2 by amara (roll out plugin_switch_feed_safety_tips to 90%): restored flag plugin_switch_feed_safety_tips (namespace rider is at version 3)\n"
            )
            #expect(
                await server.state().flagSet.flag("plugin_switch_feed_safety_tips")?.pluginSwitch?.rollout.basisPoints
                    == 3333)
            let missing = await server.flagctl("revert", "42")
            #expect(missing.status == 4)
            #expect(
                missing.error
                    == "error: namespace 'rider' has no change with version 42; 'flagctl audit' lists its changes\n")
        }
    }

    // MARK: watch

    @Test func watchPrintsEachChangeAsItLands() async throws {
        try await LiveServer.run { server in
            let console = Console.capturing(environment: server.environment())
            let watchdog = Watchdog(console)
            defer { watchdog.cancel() }
            async let status = Flagctl.execute(["watch", "--count", "2", "--wait", "20"], console: console)
            // It says so once it has read the current version; every later change must be printed.
            try await waitUntil { console.errorOutput.contains("Ctrl-C stops") }
            #expect(console.errorOutput == "watching namespace rider after version 1 on \(server.url); Ctrl-C stops\n")
            _ = await server.flagctl("kill", "--city", "lagos", "--reason", "INC-4411", "--yes")
            try await waitUntil { console.output.contains("version 2") }
            _ = await server.flagctl("rollout", "plugin_switch_prefs_ride_pass", "1", "--city", "nairobi")
            #expect(await status == 0, "\(console.errorOutput)")
            #expect(
                Self.withoutTime(console.output) == """
                    version 2  <time>  amara (cli)  kill master in cities lagos
                      reason: INC-4411
                      kill switch master: entries [cohorts core_only] → [cohorts core_only; cities lagos]
                    version 3  <time>  amara (cli)  roll out plugin_switch_prefs_ride_pass (targeted rule) to 1%
                      flag plugin_switch_prefs_ride_pass: rules[1] none → cities [nairobi]; rollout 1%

                    """)
        }
    }

    /// A client token ships in every app: the feed shows it what snapshots show, and watch prints that, without who
    /// made a change or why.
    @Test func watchWithAClientTokenPrintsWhatChangedWithoutWhoOrWhy() async throws {
        try await LiveServer.run { server in
            _ = await server.flagctl("kill", "--city", "lagos", "--reason", "INC-4411", "--yes")
            let console = Console.capturing(environment: server.environment(token: "app"))
            let watchdog = Watchdog(console)
            defer { watchdog.cancel() }
            let status = await Flagctl.execute(["watch", "--from-version", "1", "--count", "1"], console: console)
            #expect(status == 0, "\(console.errorOutput)")
            #expect(
                Self.withoutTime(console.output) == """
                    version 2  <time>  kill switch master
                      kill switch master: entries [cohorts core_only] → [cohorts core_only; cities lagos]

                    """)
            #expect(!console.output.contains("amara") && !console.output.contains("INC-4411"))
        }
    }

    @Test func watchOfOneKeyInJSONPrintsOneObjectPerLine() async throws {
        try await LiveServer.run { server in
            _ = await server.flagctl("disable", "plugin_switch_feed_promos")
            _ = await server.flagctl("rollout", "plugin_switch_feed_safety_tips", "40")
            _ = await server.flagctl("enable", "plugin_switch_feed_promos")
            let console = Console.capturing(environment: server.environment())
            let watchdog = Watchdog(console)
            defer { watchdog.cancel() }
            let status = await Flagctl.execute(
                ["watch", "plugin_switch_feed_promos", "--from-version", "1", "--count", "2", "-o", "json"],
                console: console)
            #expect(status == 0)
            let lines = console.output.split(separator: "\n")
            #expect(lines.count == 2)
            let trees = try lines.map { try JSONValue.parse(String($0)) }
            #expect(trees.map { $0["version"] } == [.int(2), .int(4)])
            #expect(trees.first?["changes"]?.arrayValue?.first?["key"] == .string("plugin_switch_feed_promos"))
        }
    }

    @Test func ctrlCEndsWatchCleanlyWithStatusZero() async throws {
        try await LiveServer.run { server in
            let console = Console.capturing(environment: server.environment())
            let watchdog = Watchdog(console)
            defer { watchdog.cancel() }
            async let status = Flagctl.execute(["watch", "--wait", "30"], console: console)
            // Once it prints that it is watching it has installed its Ctrl-C handler.
            try await waitUntil { console.errorOutput.contains("Ctrl-C stops") }
            console.interrupt()
            #expect(await status == 0)
            #expect(console.output.isEmpty)
        }
    }

    @Test func watchOfAMissingNamespaceExitsWithFour() async throws {
        try await LiveServer.run { server in
            let result = await server.flagctl(
                ["watch", "--count", "1"], environment: server.environment(namespace: "nope"))
            #expect(result.status == 4)
        }
    }

    // MARK: namespaces / tokens / version

    @Test func namespacesCanBeCreatedListedAndDeleted() async throws {
        try await LiveServer.run { server in
            let created = await server.flagctl(
                "namespaces", "create", "rider-staging", "--description", "staging", "--reason-policy", "never",
                as: "admin")
            #expect(created.status == 0, "\(created.error)")
            #expect(
                created.output
                    == "created namespace rider-staging at version 1 (reason policy never); fill it with 'flagctl apply DIR' and a rider-staging.yaml\n"
            )
            let again = await server.flagctl("namespaces", "create", "rider-staging", as: "admin")
            #expect(again.status == 3)
            let list = await server.flagctl("namespaces", "list")
            #expect(list.output.contains("rider-staging  1        never"))
            let json = try JSONValue.parse(await server.flagctl("namespaces", "list", "-o", "json").output)
            #expect(
                json["namespaces"]?.arrayValue?.compactMap { $0["name"]?.stringValue } == ["rider", "rider-staging"])
            let asEditor = await server.flagctl("namespaces", "create", "other")
            #expect(asEditor.status == 5)
            let refused = await server.flagctl("namespaces", "delete", "rider-staging", as: "admin")
            #expect(refused.status == 64)
            let deleted = await server.flagctl("namespaces", "delete", "rider-staging", "--yes", as: "admin")
            #expect(
                deleted.output
                    == "deleted namespace rider-staging; its change log and audit entries stay ('flagctl audit --all-namespaces')\n"
            )
            let gone = await server.flagctl("namespaces", "delete", "rider-staging", "--yes", as: "admin")
            #expect(gone.status == 4)
        }
    }

    @Test func tokensCanBeCreatedListedAndRevokedAndTheSecretWorksOnce() async throws {
        try await LiveServer.run { server in
            let created = await server.flagctl(
                "tokens", "create", "ci", "--role", "client", "--allow", "rider", as: "admin")
            #expect(created.status == 0, "\(created.error)")
            let secret = created.output.trimmingCharacters(in: .newlines)
            #expect(secret.hasPrefix("sy_"))
            #expect(created.error.hasPrefix("created token ci (client, namespace rider), id tok_"))
            let explain = await server.flagctl(
                ["explain", "plugin_switch_map_traffic", "--unit", "u"], environment: server.environment(token: secret))
            #expect(explain.status == 0)
            let list = await server.flagctl("tokens", "list", as: "admin")
            #expect(list.output.contains(" ci "))
            #expect(!list.output.contains(secret))
            let listJSON = try JSONValue.parse(await server.flagctl("tokens", "list", "-o", "json", as: "admin").output)
            #expect(
                listJSON["tokens"]?.arrayValue?.contains {
                    $0["name"] == .string("ci") && $0["namespaces"] == .array([.string("rider")])
                } == true)
            let revoked = await server.flagctl("tokens", "revoke", "ci", "--reason", "rotated", as: "admin")
            #expect(revoked.output.hasPrefix("revoked token ci (tok_"))
            let after = await server.flagctl(
                ["explain", "plugin_switch_map_traffic", "--unit", "u"], environment: server.environment(token: secret))
            #expect(after.status == 5)
            #expect(after.error.contains("token 'ci' was revoked"))
            let missing = await server.flagctl("tokens", "revoke", "ci", as: "admin")
            #expect(missing.status == 4)
            let last = await server.flagctl("tokens", "revoke", "admin", as: "admin")
            #expect(last.status == 3)
            #expect(
                last.error.contains("'admin' is the last live admin token valid in every namespace"), "\(last.error)")
            #expect(await server.flagctl("tokens", "list", as: "admin").status == 0)
            let notAdmin = await server.flagctl("tokens", "list")
            #expect(notAdmin.status == 5)
        }
    }

    @Test func aTokenCanBeCreatedWithAnOFREPRequestRate() async throws {
        try await LiveServer.run { server in
            let created = await server.flagctl(
                "tokens", "create", "web", "--role", "client", "--allow", "rider", "--rate", "600", as: "admin")
            #expect(created.status == 0, "\(created.error)")
            #expect(
                created.error.hasPrefix(
                    "created token web (client, namespace rider, 600 OFREP requests per minute), id tok_"))
            let listJSON = try JSONValue.parse(await server.flagctl("tokens", "list", "-o", "json", as: "admin").output)
            let web = listJSON["tokens"]?.arrayValue?.first { $0["name"] == .string("web") }
            #expect(web?["rate_per_minute"] == .int(600))
        }
    }

    @Test func versionReportsTheServer() async throws {
        try await LiveServer.run { server in
            let result = await server.flagctl("version")
            #expect(result.output == "flagctl \(FlagctlVersion.current)\nserver \(server.url): up\n")
            let json = try JSONValue.parse(await server.flagctl("version", "-o", "json").output)
            #expect(json["server"]?["status"] == .string("ok"))
        }
    }

    /// Replaces RFC 3339 times (and the padding after them) with `<time>`.
    static func withoutTime(_ text: String) -> String {
        text.replacing(/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z/, with: "<time>")
    }
}

/// The rider flag file's definitions, for comparing with the server's state.
enum Fixtures {
    static let rider: FlagSet = FlagDirectory(reading: TestPaths.flags).file(namespace: "rider")!.flagSet

    static func riderFlag(_ key: String) -> FlagDefinition? {
        rider.flag(key)
    }
}

/// Ends a `watch` that runs longer than a generous deadline with a Ctrl-C, so a test that misses a change fails
/// instead of hanging (the test's own expectations then fail).
final class Watchdog: Sendable {
    private let task: Task<Void, Never>

    init(_ console: Console, deadline: Duration = .seconds(300)) {
        task = Task {
            guard (try? await Task.sleep(for: deadline)) != nil else { return }
            Issue.record("watch was still running after \(deadline); interrupting it")
            console.interrupt()
        }
    }

    func cancel() {
        task.cancel()
    }
}

/// Every command that prints a result prints it as JSON and as YAML, with the same top-level fields.
struct OutputFormatTests {
    /// Commands in an order that works on one server, each with a top-level field its answer must have.
    static let commands: [(arguments: [String], token: String, field: String)] = [
        (["get"], "amara", "flags"),
        (["get", "plugin_switch_feed_promos"], "amara", "flag"),
        (["get", "kill_home_feed"], "amara", "kill_switch"),
        (["disable", "plugin_switch_feed_promos"], "amara", "changed"),
        (["enable", "plugin_switch_feed_promos"], "amara", "changed"),
        (["kill", "kill_home_feed", "--reason", "r", "--yes"], "amara", "kill_switch"),
        (["revive", "kill_home_feed", "--yes"], "amara", "changed"),
        (["rollout", "plugin_switch_feed_safety_tips", "40"], "amara", "rule"),
        (["target", "plugin_switch_prefs_ride_pass", "--add-city", "nairobi"], "amara", "rule"),
        (["explain", "plugin_switch_feed_promos", "--unit", "u"], "amara", "decided_by"),
        (["audit"], "amara", "entries"),
        (["revert", "{revert}"], "amara", "change"),
        (["watch", "--from-version", "1", "--count", "1"], "amara", "summary"),
        (["diff", TestPaths.flags], "amara", "namespaces"),
        (["apply", TestPaths.flags, "--yes"], "amara", "namespaces"),
        (["lint", TestPaths.flags], "amara", "valid"),
        (["namespaces", "list"], "amara", "namespaces"),
        (["namespaces", "create", "rider-{format}"], "admin", "epoch"),
        (["namespaces", "delete", "rider-{format}", "--yes"], "admin", "deleted"),
        (["tokens", "create", "ci-{format}", "--role", "client", "--allow", "rider"], "admin", "token"),
        (["tokens", "list"], "admin", "tokens"),
        (["tokens", "revoke", "ci-{format}"], "admin", "revoked_at"),
        (["version"], "amara", "flagctl"),
    ]

    @Test func everyCommandAnswersInJSONAndYAML() async throws {
        try await LiveServer.run { server in
            for command in Self.commands {
                for format in ["json", "yaml"] {
                    // Rollout and target took versions 6 and 7; revert one in each format (a later change to the
                    // same flag would make flagctl refuse to revert).
                    let arguments =
                        command.arguments.map {
                            $0.replacingOccurrences(of: "{format}", with: format).replacingOccurrences(
                                of: "{revert}", with: format == "json" ? "6" : "7")
                        } + ["-o", format]
                    let result = await server.flagctl(arguments, environment: server.environment(token: command.token))
                    #expect(result.status == 0, "\(arguments): \(result.error)")
                    if format == "json" {
                        let firstLine =
                            command.arguments[0] == "watch"
                            ? String(result.output.split(separator: "\n").first ?? "") : result.output
                        let tree = try JSONValue.parse(firstLine)
                        #expect(
                            tree[command.field] != nil,
                            "\(arguments): no \(command.field) in \(result.output.prefix(300))")
                    } else {
                        #expect(
                            result.output.contains("\n\(command.field):")
                                || result.output.hasPrefix("\(command.field):")
                                || result.output.hasPrefix("---\n\(command.field):")
                                || result.output.contains("\n\(command.field):"),
                            "\(arguments): no \(command.field) in \(result.output.prefix(300))")
                    }
                }
            }
        }
    }
}
