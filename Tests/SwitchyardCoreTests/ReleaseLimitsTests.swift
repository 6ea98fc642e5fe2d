import SwitchyardCore
import Testing

/// A release plan's stages act within the switch's standing limits (docs/release-plans.md, "Limits"): one case per
/// kind of limit, walked through start, advance, roll back, resume and complete, with a unit outside the limit off at
/// every step and one inside it getting what the stage says.
struct ReleaseLimitsTests {
    static let key = "plugin_switch_map_scooters"

    /// One kind of limit: the switch's fields and kill switches, a unit the limit keeps off, and one in Lagos it
    /// lets through (nil when nobody may get the switch).
    struct LimitCase: Sendable, CustomTestStringConvertible {
        var name: String
        /// Members of the switch's definition besides its type, as JSON (basis points).
        var gate: String
        /// The namespace's kill switches, as JSON.
        var kills = #"{"master": {}}"#
        var outside: EvaluationContext
        var inside: EvaluationContext?
        /// The rules a completed plan leaves: one per limit at 100 % (rollout 0), or none (rollout 100).
        var completedRules: Int

        var testDescription: String { name }

        static let all: [LimitCase] = [
            LimitCase(
                name: "app version",
                gate:
                    #""rules": [{"name": "scooter cities", "cities": ["paris"], "app_version_at_least": "5.10.0", "rollout": 10000}], "rollout": 0"#,
                outside: context(version: "5.9.0"), inside: context(), completedRules: 1),
            LimitCase(
                name: "platform",
                gate:
                    #""rules": [{"cities": ["paris"], "platforms": ["ios", "android"], "rollout": 10000}], "rollout": 0"#,
                outside: context(platform: "web"), inside: context(), completedRules: 1),
            LimitCase(
                name: "units",
                gate: #""rules": [{"name": "QA", "units": ["qa-1", "qa-2"], "rollout": 10000}], "rollout": 0"#,
                outside: context(unit: "rider-7"), inside: context(unit: "qa-1"), completedRules: 1),
            LimitCase(
                name: "a rule at 0 %",
                gate:
                    #""rules": [{"name": "no web", "platforms": ["web"], "rollout": 0}, {"cities": ["paris"], "rollout": 10000}], "rollout": 0"#,
                outside: context(platform: "web"), inside: context(), completedRules: 1),
            LimitCase(
                name: "disabled scope",
                gate:
                    #""disabled_scopes": [{"cohorts": ["churn_risk"]}], "rules": [{"cities": ["paris"], "rollout": 10000}], "rollout": 0"#,
                outside: context(cohorts: ["churn_risk"]), inside: context(), completedRules: 0),
            LimitCase(
                name: "disabled",
                gate: #""disabled": true, "rollout": 0"#,
                outside: context(), inside: nil, completedRules: 0),
            LimitCase(
                name: "kill entry",
                gate: #""rules": [{"cities": ["paris"], "rollout": 10000}], "rollout": 0"#,
                kills: #"{"master": {"entries": [{"cohorts": ["core_only"]}]}}"#,
                outside: context(cohorts: ["core_only"]), inside: context(), completedRules: 0),
        ]
    }

    /// A rider in Lagos on iOS 5.10.0 unless told otherwise.
    static func context(
        unit: String = "rider-42", cohorts: [String] = [], version: String = "5.10.0", platform: String = "ios"
    ) -> EvaluationContext {
        EvaluationContext(unitId: unit, city: "lagos", cohorts: cohorts, appVersion: version, platform: platform)
    }

    static func flagSet(_ limit: LimitCase) throws -> FlagSet {
        let text = """
            {"namespace": "rider", "kill_switches": \(limit.kills),
             "flags": {"\(key)": {"type": "plugin_switch", \(limit.gate)}}}
            """
        return try FlagSet(tree: JSONValue.parse(Array(text.utf8)), unit: .basisPoints)
    }

    /// Lagos at 100 %, then everyone at 100 %.
    static let plan = ReleasePlan(stages: [
        ReleaseStage(scope: Scope(cities: ["lagos"]), rollout: .full), ReleaseStage(rollout: .full),
    ])

    static func isOn(_ flagSet: FlagSet, _ context: EvaluationContext) -> Bool {
        let compiled = CompiledSnapshot(Snapshot(epoch: "e", version: 1, flagSet: flagSet))
        guard let handle = compiled.handle(for: key) else { return false }
        return compiled.evaluator(for: context).isEnabled(handle)
    }

    @Test(arguments: LimitCase.all)
    func stagesNeverWidenWhoMayGetThePlugin(_ limit: LimitCase) throws {
        let original = try Self.flagSet(limit)
        let gate = try #require(original.flag(Self.key)?.pluginSwitch)
        let started = try original.startingRelease(Self.key, plan: Self.plan, at: 0)
        let steps: [(String, FlagSet)] = try [
            ("start", started),
            ("advance", started.advancingRelease(Self.key, at: 1, note: nil)),
            (
                "roll back",
                started.advancingRelease(Self.key, at: 1, note: nil).rollingBackRelease(Self.key, at: 2, note: nil)
            ),
            (
                "resume",
                started.advancingRelease(Self.key, at: 1, note: nil).rollingBackRelease(Self.key, at: 2, note: nil)
                    .resumingRelease(Self.key, at: 3, note: nil)
            ),
            (
                "complete",
                started.advancingRelease(Self.key, at: 1, note: nil).advancingRelease(Self.key, at: 4, note: nil)
            ),
        ]
        for (step, flagSet) in steps {
            #expect(
                !Self.isOn(flagSet, limit.outside), "\(limit.name), \(step): a unit outside the limit gets the switch")
            if let inside = limit.inside {
                #expect(Self.isOn(flagSet, inside), "\(limit.name), \(step): Lagos is at 100 % at every stage")
            }
            // A step sets rules and rollout only: disables and kill entries stay as they are.
            let after = try #require(flagSet.flag(Self.key)?.pluginSwitch)
            #expect(
                after.disabled == gate.disabled && after.disabledScopes == gate.disabledScopes, "\(limit.name), \(step)"
            )
            #expect(flagSet.killSwitches == original.killSwitches, "\(limit.name), \(step)")
        }
        // Completed: the stages' rules fold away; what stays is the limits at 100 %, or rollout 100 without them.
        let completed = try #require(steps.last?.1.flag(Self.key)?.pluginSwitch)
        #expect(completed.release?.state?.status == .completed)
        #expect(completed.rules.count == limit.completedRules, "\(completed.rules)")
        #expect(!completed.rules.contains { $0.name?.hasPrefix("release: ") == true }, "\(completed.rules)")
        #expect(completed.rollout == (completed.rules.contains { $0.rollout == .full } ? .off : .full))
    }

    @Test func limitsAreEachDistinctClauseOfTheRulesAndNoneWhenAnyRuleOrTheDefaultReachesEveryone() {
        let mobile = Conditions(
            platforms: ["ios", "android"], versions: [.app: VersionRange(atLeast: SemanticVersion("5.10.0"))])
        let rules = [
            SwitchRule(
                name: "scooter cities",
                conditions: Conditions(
                    cities: ["paris", "berlin"], platforms: ["ios", "android"],
                    versions: [.app: VersionRange(atLeast: SemanticVersion("5.10.0"))]), rollout: .full),
            SwitchRule(
                conditions: Conditions(
                    cities: ["lisbon"], platforms: ["ios", "android"],
                    versions: [.app: VersionRange(atLeast: SemanticVersion("5.10.0"))]),
                rollout: Rollout(basisPoints: 5000)!),
            SwitchRule(conditions: Conditions(units: ["qa-1"]), rollout: .full),
        ]
        #expect(ReleaseLimits(rules: rules, rollout: .off).clauses == [mobile, Conditions(units: ["qa-1"])])
        #expect(
            ReleaseLimits(rules: rules, rollout: Rollout(basisPoints: 100)!).isNone, "a default rollout reaches anyone")
        #expect(
            ReleaseLimits(
                rules: rules + [SwitchRule(conditions: Conditions(cities: ["rome"]), rollout: .full)], rollout: .off
            ).clauses.isEmpty,
            "a rule of cities only reaches anyone there: the stages choose cities")
        #expect(ReleaseLimits(rules: [], rollout: .off).isNone, "a switch off everywhere: a plan turns it on")
    }

    @Test func withLimitsEveryoneIsARuleWithinThemAndCompletionFoldsTheStagesAway() throws {
        var plan = ReleasePlan(stages: [
            ReleaseStage(scope: Scope(cities: ["paris", "berlin", "lisbon"]), rollout: .full),
            ReleaseStage(scope: Scope(cities: ["lagos"]), rollout: Rollout(basisPoints: 5000)!),
            ReleaseStage(rollout: Rollout(basisPoints: 1000)!),
            ReleaseStage(rollout: .full),
        ])
        let mobile = Conditions(
            platforms: ["ios", "android"], versions: [.app: VersionRange(atLeast: SemanticVersion("5.10.0"))])
        plan.state = ReleaseState(status: .running, stage: 2, since: 0, limits: ReleaseLimits(clauses: [mobile]))
        let third = plan.targeting(at: 2)
        #expect(third.rollout == .off, "within limits the default rollout stays 0")
        #expect(
            third.rules.map(\.name) == [
                "release: cities paris, berlin, lisbon", "release: cities lagos", "release: everyone",
            ])
        #expect(third.rules.map(\.rollout) == [.full, Rollout(basisPoints: 5000)!, Rollout(basisPoints: 1000)!])
        #expect(third.rules.allSatisfy { ReleaseLimits.clause(of: $0.conditions) == mobile })
        let completed = plan.completedTargeting
        #expect(completed.rollout == .off)
        #expect(completed.rules == [SwitchRule(name: "release completed", conditions: mobile, rollout: .full)])
        // Without limits: no rules, rollout 100; a plan ending on cities keeps their rules.
        plan.state?.limits = .none
        #expect(plan.completedTargeting.rules.isEmpty && plan.completedTargeting.rollout == .full)
        plan.stages.removeLast(2)
        #expect(
            plan.completedTargeting.rules.map(\.name) == [
                "release: cities paris, berlin, lisbon", "release: cities lagos",
            ])
    }

    @Test func limitsSurviveTheStoredFormAndAnOlderStateWithoutThemStillLoads() throws {
        let original = try Self.flagSet(LimitCase.all[0])
        let started = try original.startingRelease(Self.key, plan: Self.plan, at: 1_795_680_000)
        #expect(started.flag(Self.key)?.pluginSwitch?.release?.state?.limits.clauses.count == 1)
        for unit in [RolloutUnit.percent, .basisPoints] {
            #expect(try FlagSet(tree: .object(started.tree(unit: unit)), unit: unit) == started)
        }
        let state = try #require(started.tree(unit: .percent)["flags"]?[Self.key]?["release"]?["state"])
        #expect(state["limits"] == .array([.object(JSONObject([("app_version_at_least", .string("5.10.0"))]))]))
        // A plan stored before flagsd kept limits: it loads, and its steps act as they did (no limits).
        var older = started.tree(unit: .basisPoints)
        var flags = try #require(older["flags"]?.objectValue)
        var flag = try #require(flags[Self.key]?.objectValue)
        var release = try #require(flag["release"]?.objectValue)
        var stateObject = try #require(release["state"]?.objectValue)
        stateObject["limits"] = nil
        release["state"] = .object(stateObject)
        flag["release"] = .object(release)
        flags[Self.key] = .object(flag)
        older["flags"] = .object(flags)
        let loaded = try FlagSet(tree: .object(older), unit: .basisPoints)
        #expect(loaded.flag(Self.key)?.pluginSwitch?.release?.state?.limits == ReleaseLimits.none)
        let advanced = try loaded.advancingRelease(Self.key, at: 1, note: nil)
        #expect(
            advanced.flag(Self.key)?.pluginSwitch?.rollout == .full, "without limits, everyone is the default rollout")
    }

    @Test func badLimitsNameTheFieldAtFault() throws {
        let tree = try JSONValue.parse(
            Array(
                """
                {"stages": [{"rollout": 100}],
                 "state": {"status": "running", "stage": 0, "since": "2026-11-26T08:30:00Z",
                           "limits": [{"cities": ["lagos"], "platforms": ["ios"]}, {}, {"app_version_at_least": "five"}, {"platforms": ["ios"]}, {"platforms": ["ios"]}],
                           "exclusions": [{"platforms": ["web"], "rollout": 0}]}}
                """.utf8))
        let error = #expect(throws: DefinitionError.self) { try ReleasePlan(tree: tree, unit: .percent, at: "release") }
        let problems = Dictionary(
            (error?.problems ?? []).map { ($0.path.description, $0.message) }, uniquingKeysWith: { $0 + "; " + $1 })
        #expect(problems["release.state.limits[0].cities"]?.contains("the stages choose them") == true, "\(problems)")
        #expect(problems["release.state.limits[1]"]?.contains("names no condition") == true, "\(problems)")
        #expect(
            problems["release.state.limits[2].app_version_at_least"]?.contains("not a semantic version") == true,
            "\(problems)")
        #expect(problems["release.state.limits[4]"] == "is listed twice", "\(problems)")
        #expect(problems["release.state.exclusions[0].rollout"]?.contains("unknown field") == true, "\(problems)")
    }

    @Test func aSwitchItsLastPlanLeftOffKeepsThatPlansLimitsWhenStartedAgain() throws {
        var offPlan = Self.plan
        offPlan.onBadSignal = .off
        let original = try Self.flagSet(LimitCase.all[0])
        let off = try original.startingRelease(Self.key, plan: offPlan, at: 0).rollingBackRelease(
            Self.key, at: 1, note: nil
        )
        .abortingRelease(Self.key, at: 2, note: nil)
        #expect(off.flag(Self.key)?.pluginSwitch?.rules.isEmpty == true)
        let again = try off.startingRelease(Self.key, plan: Self.plan, at: 3).advancingRelease(
            Self.key, at: 4, note: nil)
        #expect(!Self.isOn(again, Self.context(version: "5.9.0")), "the limits of the plan that left it off still hold")
        #expect(Self.isOn(again, Self.context()))
    }
}
