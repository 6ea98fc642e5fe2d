import SwitchyardCore
import Testing

/// Reading and validating flag sets: every problem at once, each with its field path and rule.
struct FlagSetValidationTests {
    static func problems(_ json: String, unit: RolloutUnit = .basisPoints, file: String? = nil) throws -> [String] {
        let tree = try JSONValue.parse(json)
        do {
            _ = try FlagSet(tree: tree, unit: unit, file: file)
            return []
        } catch {
            return error.problems.map(\.description)
        }
    }

    @Test(arguments: [
        (
            #"{"namespace": "n", "flags": {"plugin_switch_a": {"rollot": 50}}}"#,
            "flags.plugin_switch_a.rollot: unknown field; did you mean 'rollout'?"
        ),
        (
            #"{"namespace": "n", "flags": {"plugin_switch_a": {"rules": [{"citys": ["x"], "rollout": 1}]}}}"#,
            "flags.plugin_switch_a.rules[0].citys: unknown field; did you mean 'cities'?"
        ),
        (#"{"namespace": "n", "plugin_point": []}"#, "plugin_point: unknown field; did you mean 'plugin_points'?"),
        (
            #"{"namespace": "n", "flags": {"plugin_switch_a": {"disabled_scope": [{"cities": ["x"]}]}}}"#,
            "flags.plugin_switch_a.disabled_scope: unknown field; did you mean 'disabled_scopes'?"
        ),
        (
            #"{"namespace": "n", "kill_switches": {"master": {"entries": [{"citties": ["x"]}]}}}"#,
            "kill_switches.master.entries[0].citties: unknown field; did you mean 'cities'?"
        ),
        (
            #"{"namespace": "n", "flags": {"plugin_switch_a": {"rules": [{"app_version_atleast": "5.0.0", "rollout": 1}]}}}"#,
            "flags.plugin_switch_a.rules[0].app_version_atleast: unknown field; did you mean 'app_version_at_least'?"
        ),
        (
            #"{"namespace": "n", "flags": {"plugin_switch_a": {"zzzzzzzzzz": 1}}}"#,
            "flags.plugin_switch_a.zzzzzzzzzz: unknown field"
        ),
    ])
    func unknownFieldsAreReportedWithTheNearestKnownName(_ json: String, _ problem: String) throws {
        #expect(try Self.problems(json) == [problem])
    }

    @Test func experimentsReportUnknownFieldsToo() throws {
        let problems = try Self.problems(
            #"""
            {"namespace": "n", "flags": {"exp": {"type": "experiment", "value_type": "string",
              "variants": [{"key": "a", "value": "a", "weight": 1}], "default_variant": "a", "weights": {"a": 1},
              "wieghts": {"a": 1}, "rules": [{"cohort": ["x"], "weights": {"a": 1}}]}}}
            """#)
        #expect(
            problems == [
                "flags.exp.variants[0].weight: unknown field",
                "flags.exp.rules[0].cohort: unknown field; did you mean 'cohorts'?",
                "flags.exp.wieghts: unknown field; did you mean 'weights'?",
            ])
        // An experiment that cannot be read (its value type is wrong) still has its unknown fields reported.
        let unreadable = try Self.problems(
            #"""
            {"namespace": "n", "flags": {"exp": {"type": "experiment", "value_type": "text",
              "variants": [{"key": "a", "value": "a"}], "default_variant": "a", "weights": {"a": 1}, "wieghts": {}}}}
            """#)
        #expect(
            unreadable == [
                "flags.exp.value_type: 'text' is not a value type (boolean, string, integer, float or object)",
                "flags.exp.wieghts: unknown field; did you mean 'weights'?",
            ])
    }

    /// Problems in a document are all reported, in one error, each with the file, the path and the rule.
    @Test func everyProblemIsReportedAtOnce() throws {
        let problems = try Self.problems(
            #"""
            {"namespace": "rider", "flags": {
              "plugin_switch_feed_promos": {"rollout": 120, "rules": [
                {"cities": ["lagos"], "rollout": 10},
                {"cities": [], "rollout": 100.5},
                {"cohorts": ["beta", "beta"], "app_version_at_least": "6.0", "app_version_below": "5.0", "rollout": 1}
              ]},
              "plugin_switch_map": {"disabled": "yes", "disabled_scopes": [{}]},
              "exp": {"type": "experiment", "value_type": "strnig", "variants": [], "weights": {}}
            }}
            """#, unit: .percent, file: "Flags/rider.yaml")
        #expect(
            problems == [
                "Flags/rider.yaml: flags.plugin_switch_feed_promos.rules[1].cities: must not be empty (leave the field out instead)",
                "Flags/rider.yaml: flags.plugin_switch_feed_promos.rules[1].rollout: 100.5 is not between 0 and 100",
                "Flags/rider.yaml: flags.plugin_switch_feed_promos.rules[2].cohorts[1]: 'beta' is listed twice",
                "Flags/rider.yaml: flags.plugin_switch_feed_promos.rules[2].app_version_below: 5.0.0 must be above app_version_at_least 6.0.0, or no version can match",
                "Flags/rider.yaml: flags.plugin_switch_feed_promos.rollout: 120 is not between 0 and 100",
                "Flags/rider.yaml: flags.plugin_switch_map.disabled: must be true or false, not a string",
                "Flags/rider.yaml: flags.plugin_switch_map.disabled_scopes[0]: a scoped disable must name cities or cohorts (use disabled: true to disable everywhere)",
                "Flags/rider.yaml: flags.exp.value_type: 'strnig' is not a value type (boolean, string, integer, float or object)",
                "Flags/rider.yaml: flags.exp.variants: must list at least one variant",
                "Flags/rider.yaml: flags.exp.default_variant: is required",
            ])
    }

    @Test func crossReferencesAreValidated() throws {
        let problems = try Self.problems(
            #"""
            {"namespace": "n",
             "plugin_points": [
               {"name": "feed", "kill_switch": "kill_nothing", "switches": ["plugin_switch_a", "plugin_switch_ghost", "exp"]},
               {"name": "feed", "kill_switch": "master", "switches": ["plugin_switch_a"]}
             ],
             "kill_switches": {"master": {"members": ["plugin_switch_a"]}, "kill_team": {"members": ["plugin_switch_gone"]},
                               "plugin_switch_a": {}},
             "flags": {
               "plugin_switch_a": {"rollout": 1},
               "exp": {"type": "experiment", "value_type": "integer", "default_variant": "c",
                       "variants": [{"key": "a", "value": 1}, {"key": "b", "value": 2}],
                       "weights": {"a": 0, "z": 3}, "rules": [{"cities": ["x"], "weights": {"a": 0}}]},
               "switch_without_prefix": {"type": "plugin_switch"},
               "plugin_switch_named_experiment": {"type": "experiment", "value_type": "boolean",
                       "variants": [{"key": "on", "value": true}], "default_variant": "on", "weights": {"on": 1}}
             }}
            """#)
        let expected = [
            "flags.switch_without_prefix: a plugin switch key must start with 'plugin_switch_'",
            "flags.plugin_switch_named_experiment.type: 'plugin_switch_named_experiment' is named like a plugin switch; an experiment needs another key",
            "flags.exp.default_variant: 'c' is not one of the variants (a, b)",
            "flags.exp.weights.z: 'z' is not one of the variants (a, b)",
            "flags.exp.rules[0].weights: the weights must add up to more than 0",
            "kill_switches.master.members: the master kill switch covers every flag; it takes no member list",
            "kill_switches.kill_team.members[0]: 'plugin_switch_gone' is not a flag of this namespace",
            "kill_switches.plugin_switch_a: 'plugin_switch_a' is also a flag key; kill switches need their own keys",
            "plugin_points[0].kill_switch: 'kill_nothing' is not a kill switch of this namespace (declare it under kill_switches)",
            "plugin_points[0].switches[1]: 'plugin_switch_ghost' is not a flag of this namespace",
            "plugin_points[0].switches[2]: 'exp' is an experiment flag; plugin points list plugin switches",
            "plugin_points[1].name: plugin point 'feed' is declared twice",
            "plugin_points[1].kill_switch: name a group kill switch; the master already covers every plugin point",
            "plugin_points[1].switches[0]: 'plugin_switch_a' already belongs to plugin point 'feed'; a plugin switch gates one plugin at one point",
        ]
        for problem in expected {
            #expect(problems.contains(problem), "missing: \(problem)\nall: \(problems.joined(separator: "\n"))")
        }
        #expect(problems.count == expected.count, "\(problems.joined(separator: "\n"))")
    }

    @Test func namesAndValuesFollowTheirRules() throws {
        let problems = try Self.problems(
            #"""
            {"namespace": "has space", "flags": {
              "plugin_switch_bad key": {"rollout": 1},
              "plugin_switch_ok": {"rules": [{"cities": ["la\u0000gos", ""], "units": [7], "app_version_at_least": "five", "rollout": 1}]},
              "exp": {"type": "experiment", "value_type": "float", "variants": [{"key": "a", "value": "1.0"}, {"key": "b", "value": 1}, {"key": "b", "value": 2.5}], "default_variant": "a", "weights": {"a": 1, "b": -1}}
            }}
            """#)
        #expect(
            problems == [
                "namespace: 'has space' may only contain letters, digits, '.', '_' and '-'",
                "flags.plugin_switch_bad key: 'plugin_switch_bad key' may only contain letters, digits, '.', '_' and '-'",
                "flags.plugin_switch_ok.rules[0].cities[0]: 'la\u{0}gos' may only contain printable characters",
                "flags.plugin_switch_ok.rules[0].cities[1]: a value must not be empty",
                "flags.plugin_switch_ok.rules[0].units[0]: must be a string, not an integer",
                "flags.plugin_switch_ok.rules[0].app_version_at_least: 'five' is not a semantic version (e.g. 5.12.0)",
                "flags.exp.variants[0].value: \"1.0\" is not a valid float value",
                "flags.exp.variants[2].key: variant 'b' is declared twice",
                "flags.exp.weights.b: -1 is not between 0 and 1000000",
            ])
    }

    @Test func anIntegerLiteralIsAcceptedForAFloatAndStaysAFloat() throws {
        let flagSet = try FlagSet(
            tree: JSONValue.parse(
                #"""
                {"namespace": "n", "flags": {"exp": {"type": "experiment", "value_type": "float",
                  "variants": [{"key": "a", "value": 1}], "default_variant": "a", "weights": {"a": 1}}}}
                """#), unit: .basisPoints)
        #expect(flagSet.flag("exp")?.experiment?.variants[0].value == .float(1))
        #expect(JSONValue.object(flagSet.tree(unit: .basisPoints)).serializedString().contains("\"value\":1.0"))
    }

    @Test func problemsNameThePathAsTheLiteralForm() throws {
        let path: FieldPath = "flags.plugin_switch_feed_promos.rules[1].rollout"
        #expect(
            path.components == [
                .key("flags"), .key("plugin_switch_feed_promos"), .key("rules"), .index(1), .key("rollout"),
            ])
        #expect(path.description == "flags.plugin_switch_feed_promos.rules[1].rollout")
        #expect(
            ValidationProblem(file: "Flags/rider.yaml", path: path, message: "120 is not between 0 and 100").description
                == "Flags/rider.yaml: flags.plugin_switch_feed_promos.rules[1].rollout: 120 is not between 0 and 100")
        #expect(ValidationProblem(path: .root, message: "is not a flag set").description == "is not a flag set")
    }

    @Test func aDocumentThatIsNotAnObjectSaysSo() throws {
        #expect(try Self.problems("[]") == ["must be an object, not a list"])
        #expect(try Self.problems(#"{"flags": {}}"#) == ["namespace: is required"])
    }

    @Test func theSampleFlagSetIsValidAndKeepsEveryField() throws {
        let flagSet = try Samples.rider()
        #expect(flagSet.validate().isEmpty)
        let written = try FlagSet(tree: .object(flagSet.tree(unit: .basisPoints)), unit: .basisPoints)
        #expect(written == flagSet)
        #expect(flagSet.members(of: "kill_feed") == ["plugin_switch_feed_promos", "plugin_switch_feed_weather"])
        #expect(flagSet.members(of: "kill_growth") == ["plugin_switch_feed_promos", "checkout_button_color"])
        #expect(
            flagSet.killSwitchKeys(covering: "plugin_switch_feed_promos") == ["master", "kill_feed", "kill_growth"])
        #expect(flagSet.killSwitchKeys(covering: "checkout_button_color") == ["master", "kill_growth"])
    }

    // MARK: metrics

    @Test(arguments: [
        (#"{"kind": "value"}"#, "metrics.m.cap: is required for a value metric (the most one unit's sum counts for)"),
        (
            #"{"kind": "value", "cap": -0.5}"#,
            "metrics.m.cap: -0.5 must be above 0 (the most one unit's sum counts for)"
        ),
        (
            #"{"kind": "count", "cap": 0.5}"#,
            "metrics.m.cap: 0.5 must be a whole number of at least 1 (the most occurrences one unit counts for)"
        ),
        (
            #"{"kind": "conversion", "cap": 1}"#,
            "metrics.m.cap: a conversion metric takes no cap (a unit converts or not: 0 or 1)"
        ),
        (
            #"{"kind": "ratio", "numerator": "sessions", "denominator": "crashed_sessions", "cap": 2}"#,
            "metrics.m.cap: a ratio metric takes no cap (cap its numerator and denominator)"
        ),
        (
            #"{"kind": "ratio", "denominator": "sessions"}"#,
            "metrics.m.numerator: is required for a ratio metric (name a declared or built-in metric that is not a ratio)"
        ),
        (
            #"{"kind": "ratio", "numerator": "crash_rate", "denominator": "sessions"}"#,
            "metrics.m.numerator: 'crash_rate' is a ratio metric; a ratio's parts must be conversion, count or value metrics"
        ),
        (
            #"{"kind": "ratio", "numerator": "m", "denominator": "sessions"}"#,
            "metrics.m.numerator: 'm' is this metric; name another metric"
        ),
        (
            #"{"kind": "ratio", "numerator": "trips", "denominator": "sessions"}"#,
            "metrics.m.numerator: 'trips' is not a metric of this namespace (declared or built in: sessions, crashed_sessions)"
        ),
        (
            #"{"kind": "count", "numerator": "sessions"}"#,
            "metrics.m.numerator: only a ratio metric has a numerator (this one is a count metric)"
        ),
        (#"{"kind": "gauge"}"#, "metrics.m.kind: 'gauge' is not a metric kind (conversion, count, value or ratio)"),
        (#"{"kind": "count", "better": "more"}"#, "metrics.m.better: 'more' is not higher or lower"),
        (#"{"kind": "value", "cap": "200"}"#, "metrics.m.cap: must be a number, not a string"),
        (
            #"{"kind": "count", "numerator": "bad key"}"#,
            "metrics.m.numerator: 'bad key' may only contain letters, digits, '.', '_' and '-'"
        ),
        (#"{"description": "no kind"}"#, "metrics.m.kind: is required"),
        (#"{"kind": "count", "capp": 2}"#, "metrics.m.capp: unknown field; did you mean 'cap'?"),
    ])
    func eachMetricRuleIsReportedWithItsFieldPath(_ metric: String, _ problem: String) throws {
        #expect(try Self.problems(#"{"namespace": "n", "metrics": {"m": "# + metric + "}}") == [problem])
    }

    @Test func aRatioOfDeclaredAndBuiltInMetricsIsValid() throws {
        let flagSet = try FlagSet(
            tree: JSONValue.parse(
                #"""
                {"namespace": "n", "metrics": {
                  "fare": {"kind": "value", "cap": 200.5},
                  "per_session": {"kind": "ratio", "numerator": "fare", "denominator": "sessions", "better": "lower"},
                  "booked": {"kind": "conversion", "owner": "team-rider", "description": "Booked a trip."}}}
                """#), unit: .basisPoints)
        #expect(flagSet.metrics.map(\.name) == ["fare", "per_session", "booked"])
        #expect(
            flagSet.metric("per_session")
                == MetricDefinition(
                    name: "per_session", kind: .ratio, better: .lower,
                    numerator: "fare", denominator: "sessions"))
        #expect(flagSet.metric("crash_rate")?.numerator == MetricDefinition.crashedSessions)
        #expect(flagSet.allMetrics.count == 6)
        #expect(try FlagSet(tree: .object(flagSet.tree(unit: .basisPoints)), unit: .basisPoints) == flagSet)
    }

    @Test func validateChecksMetricsBuiltInCode() {
        var flagSet = FlagSet(
            namespace: "n",
            metrics: [
                MetricDefinition(name: "fare", kind: .value, cap: 10),
                MetricDefinition(name: "fare", kind: .count),
                MetricDefinition(name: "sessions", kind: .count),
                MetricDefinition(name: "infinite", kind: .value, cap: .infinity),
            ])
        #expect(
            flagSet.validate().map(\.description) == [
                "metrics.fare: 'fare' is declared twice",
                "metrics.sessions: 'sessions' is a built-in metric (sessions, crashed_sessions, crash_rate); every namespace has it, so it may not be declared",
                "metrics.infinite.cap: inf is not a finite number",
            ])
        flagSet.metrics = (1...65).map { MetricDefinition(name: "m\($0)", kind: .conversion) }
        #expect(
            flagSet.validate().map(\.description) == [
                "metrics: declares 65 metrics; a namespace may declare at most 64 (the built-in ones apart)"
            ])
        flagSet.metrics.removeLast()
        #expect(flagSet.validate().isEmpty)
    }
}
