import SwitchyardCore
import Testing

/// The edits every writer makes (the API, flagctl's planning, the crash guard), with their typed errors.
struct FlagSetEditsTests {
    static let promos = "plugin_switch_feed_promos"

    @Test func disablingInAScopeAddsItOnceAndEnablingRemovesItInAnyOrder() throws {
        let rider = try Samples.rider()
        let scope = Scope(cities: ["lagos", "abuja"], cohorts: ["beta"])
        let disabled = try rider.disabling(Self.promos, scope: scope).disabling(Self.promos, scope: scope)
        #expect(disabled.flag(Self.promos)?.pluginSwitch?.disabledScopes.count == 3)
        #expect(
            disabled.flag(Self.promos)?.pluginSwitch?.isDisabled(in: Scope(cities: ["lagos"], cohorts: ["beta"]))
                == true)
        let enabled = try disabled.enabling(Self.promos, scope: Scope(cities: ["abuja", "lagos"], cohorts: ["beta"]))
        #expect(enabled == rider)
        let everywhere = try rider.disabling(Self.promos, scope: nil)
        #expect(everywhere.flag(Self.promos)?.pluginSwitch?.disabled == true)
        #expect(try everywhere.enabling(Self.promos, scope: .everywhere) == rider)
    }

    @Test func errorsSayWhatIsWrongAndWhichFieldIsAtFault() throws {
        let rider = try Samples.rider()
        let unknown = #expect(throws: FlagEditError.self) { try rider.disabling("plugin_switch_nope", scope: nil) }
        #expect(unknown?.kind == .notFound)
        #expect(unknown?.message.contains("has no flag 'plugin_switch_nope'") == true)
        let experiment = #expect(throws: FlagEditError.self) {
            try rider.disabling("checkout_button_color", scope: nil)
        }
        #expect(experiment?.kind == .invalid)
        #expect(experiment?.message.contains("is an experiment flag; disable applies to plugin switches") == true)
        let noSuchScope = #expect(throws: FlagEditError.self) {
            try rider.enabling(Self.promos, scope: Scope(cities: ["rome"]))
        }
        #expect(noSuchScope?.problems.map(\.path.description) == ["scope"])
        #expect(
            noSuchScope?.message.contains("its scoped disables: cities paris; cities lyon") == true,
            "\(noSuchScope?.message ?? "")")
        let noRule = #expect(throws: FlagEditError.self) {
            try rider.settingRollout(Self.promos, .full, rule: 7, conditions: nil)
        }
        #expect(noRule?.problems.map(\.path.description) == ["rule"])
        let kill = #expect(throws: FlagEditError.self) { try rider.killing("kill_nope", scope: .everywhere) }
        #expect(kill?.kind == .notFound)
    }

    @Test func targetingReportsEveryValueItCannotRemove() throws {
        let rider = try Samples.rider()
        let error = #expect(throws: FlagEditError.self) {
            try rider.targeting(
                Self.promos, rule: 1, add: Conditions(),
                remove: Conditions(cities: ["rome", "lagos"], cohorts: ["staff"]), rollout: nil)
        }
        #expect(error?.problems.map(\.path.description) == ["remove.cities[0]", "remove.cohorts[0]"])
        #expect(error?.message.hasSuffix("(and 1 more problems)") == true)
        let (edited, rule) = try rider.targeting(
            Self.promos, rule: 1, add: Conditions(cities: ["abuja"]), remove: Conditions(cities: ["lagos"]),
            rollout: nil)
        #expect(rule == 1)
        #expect(edited.flag(Self.promos)?.pluginSwitch?.rules[1].conditions.cities == ["abuja"])
    }

    @Test func aReasonIsRequiredAsThePolicySays() throws {
        let rider = try Samples.rider()
        let killed = try rider.killing("kill_feed", scope: Scope(cities: ["lagos"]))
        #expect(killed.addsKillEntry(comparedTo: rider))
        #expect(!rider.addsKillEntry(comparedTo: killed))
        // The same entry with its lists in another order is not a new one.
        let reordered = try rider.killing("kill_feed", scope: Scope(cities: ["nairobi"], cohorts: ["beta"]))
        #expect(!reordered.addsKillEntry(comparedTo: rider))
        #expect(ReasonPolicy.always.requiresReason(addsKillEntry: false))
        #expect(ReasonPolicy.kills.requiresReason(addsKillEntry: true))
        #expect(!ReasonPolicy.kills.requiresReason(addsKillEntry: false))
        #expect(!ReasonPolicy.never.requiresReason(addsKillEntry: true))
    }
}
