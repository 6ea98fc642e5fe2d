public import ArgumentParser
import Foundation
import SwitchyardCore
import SwitchyardWire

/// `flagctl target KEY --add-city C --remove-cohort K --add-unit U ...`: edits the conditions of one rule.
public struct Target: FlagctlCommand {
    public static let configuration = CommandConfiguration(
        abstract: "Add or remove cities, cohorts, units and platforms in one rule of a flag.",
        discussion: """
            Edits the conditions of one rule: --rule N (numbered from 0, as 'flagctl get KEY' shows), or the \
            flag's only rule when it has one. A plugin switch without rules gets its first rule, which needs \
            --rollout. --rollout also sets the edited rule's rollout. Values added are appended to the rule's \
            lists; a value removed must be in them.

            Examples:

              flagctl target plugin_switch_feed_promos --rule 0 \\
                  --add-unit qa-rider-4 --remove-unit qa-rider-1
              flagctl target plugin_switch_prefs_ride_pass --add-city nairobi
              flagctl target plugin_switch_map_scooters --add-platform ios
              flagctl target plugin_switch_map_traffic --add-cohort beta --rollout 100

            Exit status: 0 ok, 1 failure (a value to remove is not there), 3 changed since you read it, 4 no \
            such flag, 5 token refused, 64 usage (nothing to change, or several rules and no --rule).
            """
    )

    @Argument(help: ArgumentHelp("The flag, e.g. plugin_switch_feed_promos.", valueName: "key"))
    public var key: String
    @Option(help: ArgumentHelp("The rule to edit (numbered from 0); needed when the flag has several.", valueName: "n"))
    public var rule: Int?
    @Option(help: ArgumentHelp("Add a city to the rule; repeatable.", valueName: "city")) public var addCity: [String] =
        []
    @Option(help: ArgumentHelp("Remove a city from the rule; repeatable.", valueName: "city")) public var removeCity:
        [String] = []
    @Option(help: ArgumentHelp("Add a cohort; repeatable.", valueName: "cohort")) public var addCohort: [String] = []
    @Option(help: ArgumentHelp("Remove a cohort; repeatable.", valueName: "cohort")) public var removeCohort: [String] =
        []
    @Option(help: ArgumentHelp("Add a unit id to the allowlist; repeatable.", valueName: "unit")) public var addUnit:
        [String] = []
    @Option(help: ArgumentHelp("Remove a unit id; repeatable.", valueName: "unit")) public var removeUnit: [String] = []
    @Option(help: ArgumentHelp("Add a platform, e.g. ios; repeatable.", valueName: "platform")) public var addPlatform:
        [String] = []
    @Option(help: ArgumentHelp("Remove a platform; repeatable.", valueName: "platform")) public var removePlatform:
        [String] = []
    @Option(help: ArgumentHelp("Also set the rule's rollout, in percent (plugin switches).", valueName: "percent"))
    public var rollout: String?
    @OptionGroup public var change: ChangeOptions
    @OptionGroup public var server: ServerOptions
    @OptionGroup public var outputOptions: OutputOptions

    public init() {}

    var additions: Conditions {
        Conditions(cities: addCity, cohorts: addCohort, units: addUnit, platforms: addPlatform)
    }
    var removals: Conditions {
        Conditions(cities: removeCity, cohorts: removeCohort, units: removeUnit, platforms: removePlatform)
    }

    public func validate() throws {
        if additions.isEmpty && removals.isEmpty && rollout == nil {
            throw ValidationError(
                "Nothing to change. Pass --add-city, --remove-city, --add-cohort, --remove-cohort, --add-unit, --remove-unit, --add-platform, --remove-platform or --rollout, e.g. 'flagctl target \(key) --add-city lagos'."
            )
        }
        _ = try parsedRollout()
        if let rule, rule < 0 {
            throw ValidationError("--rule \(rule) is not a rule number; rules are numbered from 0.")
        }
    }

    func parsedRollout() throws -> Rollout? {
        try rollout.map { try Rollout.commandLine($0, what: "--rollout") }
    }

    /// The conditions after adding and removing values; throws when a value to remove is missing.
    static func edited(_ conditions: Conditions, add: Conditions, remove: Conditions, rule: Int) throws -> Conditions {
        var result = conditions
        for list in TargetingList.allCases {
            let name = list.field
            var values = result[list: list]
            for value in add[list: list] where !values.contains(value) { values.append(value) }
            for value in remove[list: list] {
                guard values.contains(value) else {
                    let current = conditions[list: list]
                    throw CommandFailure(
                        "'\(value)' is not in rule \(rule)'s \(name) (they are: \(current.isEmpty ? "none" : current.joined(separator: ", "))); nothing was changed"
                    )
                }
                values.removeAll { $0 == value }
            }
            result[list: list] = values
        }
        return result
    }

    public func run(console: Console) async throws {
        let flow = try ChangeFlow(server: server, options: change, console: console)
        let settings = flow.client.settings
        let key = self.key
        let rule = self.rule
        let add = additions
        let remove = removals
        let rollout = try parsedRollout()
        var edit: (index: Int, before: Conditions, after: Conditions, isNew: Bool) = (
            0, Conditions(), Conditions(), false
        )
        let outcome = try await flow.run { view in
            let flag = try view.flagSet.requireFlag(key, server: settings.serverText)
            let rules: [Conditions]
            switch flag.kind {
            case .pluginSwitch(let gate): rules = gate.rules.map(\.conditions)
            case .experiment(let experiment):
                rules = experiment.rules.map(\.conditions)
                if rollout != nil {
                    throw CommandFailure.usage(
                        "\(key) is an experiment; its rules have weights, not a rollout. Leave --rollout out, and change weights in the flag file ('flagctl apply')"
                    )
                }
            }
            let index: Int
            var isNew = false
            if let rule {
                guard rules.indices.contains(rule) else {
                    throw CommandFailure(
                        "\(key) has no rule \(rule) (its rules: \(rules.isEmpty ? "none" : "0 to \(rules.count - 1)")); 'flagctl get \(key)' lists them"
                    )
                }
                index = rule
            } else if rules.count == 1 {
                index = 0
            } else if rules.isEmpty {
                guard flag.pluginSwitch != nil else {
                    throw CommandFailure(
                        "experiment \(key) has no rules; add rules with their weights in the flag file and 'flagctl apply'"
                    )
                }
                guard rollout != nil else {
                    throw CommandFailure.usage(
                        "\(key) has no rules yet; add --rollout PERCENT for the new rule 0, e.g. --rollout 100")
                }
                index = 0
                isNew = true
            } else {
                throw CommandFailure.usage(
                    "\(key) has \(rules.count) rules; pass --rule N to say which to edit (0 to \(rules.count - 1); 'flagctl get \(key)' lists them)"
                )
            }
            let before = isNew ? Conditions() : rules[index]
            edit = (index, before, try Self.edited(before, add: add, remove: remove, rule: index), isNew)
            let body = TargetingRequest(rule: rule != nil ? index : nil, add: add, remove: remove, rollout: rollout)
                .object
            return PlannedChange(
                path: APIClient.path("v1", "namespaces", view.namespace, "flags", key, "targeting"), body: body,
                objects: [.flag(key)], action: "edit rule \(index) of \(key)")
        }
        var line =
            "\(key) rule \(edit.index)\(edit.isNew ? " (new)" : ""): \(edit.before.summary) → \(edit.after.summary)"
        if let rollout { line += ", at \(rollout)" }
        outputOptions.emit(
            outcome,
            [outcome.summaryLine(done: line, unchanged: "\(key) rule \(edit.index) has those conditions already")],
            console: console)
    }
}
