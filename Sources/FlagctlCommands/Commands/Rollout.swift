public import ArgumentParser
import Foundation
import SwitchyardCore
import SwitchyardWire

/// `flagctl rollout KEY PERCENT [--rule N | --city C --cohort K]`: sets the share of units a plugin switch is on for.
public struct RolloutCommand: FlagctlCommand {
    public static let configuration = CommandConfiguration(
        commandName: "rollout",
        abstract:
            "Set the share of units a plugin switch is on for: its default rollout, one rule's, or a city's or cohort's.",
        discussion: """
            PERCENT is a percentage with at most two decimals (12.5, 0.05, 100), converted exactly to basis \
            points. Raising a rollout only adds units: every unit that had the plugin keeps it.

            Which rollout is set: without options, the default rollout (units that no rule matches). With \
            --rule N, rule N (numbered from 0, as 'flagctl get KEY' shows). With --city and/or --cohort, the \
            first rule whose only conditions are exactly those cities and cohorts (in any order); if there is \
            none, a rule with those conditions is appended after the existing rules, so earlier rules still \
            decide for the units they match (flagctl names them).

            Examples:

              flagctl rollout plugin_switch_prefs_ride_pass 1 --city nairobi
              flagctl rollout plugin_switch_prefs_ride_pass 10 --city nairobi \\
                  --reason "no crashes at 1%"
              flagctl rollout plugin_switch_feed_safety_tips 50
              flagctl rollout plugin_switch_feed_promos 25 --rule 1

            Exit status: 0 ok, 1 failure (an experiment, no such rule), 3 changed since you read it, 4 no such \
            flag, 5 token refused, 64 usage (a bad percentage).
            """
    )

    @Argument(help: ArgumentHelp("The plugin switch, e.g. plugin_switch_prefs_ride_pass.", valueName: "key"))
    public var key: String
    @Argument(
        help: ArgumentHelp("The share of units, in percent with at most two decimals: 0 to 100.", valueName: "percent"))
    public var percent: String
    @Option(help: ArgumentHelp("Set the rollout of this rule (numbered from 0).", valueName: "n"))
    public var rule: Int?
    @OptionGroup public var scope: ScopeOptions
    @OptionGroup public var change: ChangeOptions
    @OptionGroup public var server: ServerOptions
    @OptionGroup public var outputOptions: OutputOptions

    public init() {}

    public func validate() throws {
        _ = try rollout()
        if rule != nil, !scope.scope.isEverywhere {
            throw ValidationError("Pass either --rule or --city/--cohort, not both.")
        }
        if let rule, rule < 0 {
            throw ValidationError(
                "--rule \(rule) is not a rule number; rules are numbered from 0 ('flagctl get \(key)' lists them).")
        }
    }

    func rollout() throws -> Rollout {
        try Rollout.commandLine(percent, what: "PERCENT")
    }

    /// Which rollout a command edits, worked out from a switch's rules.
    enum Target: Equatable {
        case defaultRollout
        case rule(Int)
        /// No rule has exactly these conditions: one is appended.
        case newRule(Conditions)
    }

    /// The rule a --city/--cohort scope edits: the first whose conditions are exactly those cities and cohorts.
    static func target(rule: Int?, cities: [String], cohorts: [String], in gate: PluginSwitchDefinition) -> Target {
        if let rule { return .rule(rule) }
        if cities.isEmpty && cohorts.isEmpty { return .defaultRollout }
        let wanted = Conditions(cities: cities, cohorts: cohorts)
        let index = gate.rules.firstIndex { rule in
            var others = rule.conditions
            others.cities = []
            others.cohorts = []
            return others.isEmpty && Set(rule.conditions.cities) == Set(cities)
                && Set(rule.conditions.cohorts) == Set(cohorts)
        }
        if let index { return .rule(index) }
        return .newRule(wanted)
    }

    /// Earlier rules that may match some of the units of a new rule, and so decide for them first.
    static func shadowingRules(for conditions: Conditions, in gate: PluginSwitchDefinition) -> [Int] {
        gate.rules.indices.filter { index in
            let other = gate.rules[index].conditions
            let sharesCities =
                other.cities.isEmpty || conditions.cities.isEmpty
                || !Set(other.cities).isDisjoint(with: conditions.cities)
            let excludesCities = !conditions.cities.isEmpty && Set(conditions.cities).isSubset(of: other.notCities)
            let sharesCohorts =
                other.cohorts.isEmpty || conditions.cohorts.isEmpty
                || !Set(other.cohorts).isDisjoint(with: conditions.cohorts)
            return sharesCities && !excludesCities && sharesCohorts
        }
    }

    /// `about 9% more of those units get it (everyone who had it keeps it)`.
    static func shareText(from before: Rollout, to after: Rollout) -> String {
        let difference = Rollout(basisPoints: abs(Int(after.basisPoints) - Int(before.basisPoints)))!
        if after > before {
            return "about \(difference) more of its units get it; units that had it keep it"
        } else if after < before {
            return "about \(difference) of its units lose it"
        }
        return "no unit changes"
    }

    public func run(console: Console) async throws {
        let flow = try ChangeFlow(server: server, options: change, console: console)
        let settings = flow.client.settings
        let rollout = try self.rollout()
        let key = self.key
        let rule = self.rule
        let cities = scope.cities
        let cohorts = scope.cohorts
        var description: (target: Target, before: Rollout, scope: String, shadowed: [Int]) = (
            .defaultRollout, .off, "", []
        )
        let outcome = try await flow.run { view in
            let gate = try view.flagSet.requireSwitch(key, server: settings.serverText, for: "a rollout")
            var planned = PlannedChange(
                path: APIClient.path("v1", "namespaces", view.namespace, "flags", key, "rollout"),
                body: RolloutRequest(rollout: rollout).object, objects: [.flag(key)],
                action: "roll out \(key) to \(rollout)")
            let target = Self.target(rule: rule, cities: cities, cohorts: cohorts, in: gate)
            switch target {
            case .defaultRollout:
                description = (target, gate.rollout, gate.rules.isEmpty ? "every unit" : "units no rule matches", [])
            case .rule(let index):
                guard gate.rules.indices.contains(index) else {
                    let numbers = gate.rules.isEmpty ? "none" : "0 to \(gate.rules.count - 1)"
                    throw CommandFailure(
                        "\(key) has no rule \(index) (its rules: \(numbers)); 'flagctl get \(key)' lists them, or pass --city/--cohort to add one"
                    )
                }
                planned.body = RolloutRequest(rollout: rollout, rule: index).object
                let rule = gate.rules[index]
                description = (target, rule.rollout, "rule \(index) (\(rule.conditions.summary))", [])
                if rule.rollout == rollout { planned.nothingToDo = "\(key) rule \(index) is at \(rollout) already" }
                planned.unchangedRule = .rule(index)
            case .newRule(let conditions):
                planned.body = RolloutRequest(rollout: rollout, conditions: conditions).object
                description = (
                    target, gate.rollout, "rule \(gate.rules.count) (\(conditions.summary))",
                    Self.shadowingRules(for: conditions, in: gate)
                )
            }
            if target == .defaultRollout, gate.rollout == rollout {
                planned.nothingToDo = "\(key)'s default rollout is \(rollout) already"
                planned.unchangedRule = .defaultRollout
            }
            planned.action = "roll out \(key) to \(rollout) for \(description.scope)"
            return planned
        }
        var lines: [String] = []
        switch description.target {
        case .newRule:
            lines.append(
                outcome.summaryLine(
                    done: "\(key): added \(description.scope) at \(rollout)",
                    unchanged: "\(key) is at \(rollout) already"))
            if outcome.changed {
                let difference = Rollout(
                    basisPoints: abs(Int(rollout.basisPoints) - Int(description.before.basisPoints)))!
                let verb = rollout > description.before ? "get it now" : "lose it"
                lines.append(
                    "its units got the default rollout (\(description.before)) before; about \(difference) of them \(verb)"
                )
                if !description.shadowed.isEmpty {
                    let rules = outcome.view.flagSet.flag(key)?.pluginSwitch?.rules ?? []
                    let names = description.shadowed.map { index in
                        "rule \(index) (\(rules.indices.contains(index) ? rules[index].conditions.summary : "?"))"
                    }
                    let verbs =
                        names.count == 1
                        ? "comes first and decides for the units it matches"
                        : "come first and decide for the units they match"
                    lines.append("note: \(names.joined(separator: ", ")) \(verbs)")
                }
            }
        default:
            lines.append(
                outcome.summaryLine(
                    done: "\(key) \(description.scope): \(description.before) → \(rollout)",
                    unchanged: "\(key) \(description.scope) is at \(rollout) already"))
            if outcome.changed { lines.append(Self.shareText(from: description.before, to: rollout)) }
        }
        outputOptions.emit(outcome, lines, console: console)
    }
}
