import Foundation
public import ArgumentParser
import SwitchyardCore

/// `flagctl enable KEY [--city C] [--cohort K]`: clears a plugin switch's disable, everywhere or in one scope.
public struct Enable: FlagctlCommand {
    public static let configuration = CommandConfiguration(
        abstract: "Clear a plugin switch's disable, everywhere or for one city or cohort.",
        discussion: """
            Without --city/--cohort it clears the switch's global disable (set by 'flagctl disable' or by the \
            crash guard); scoped disables stay. With --city/--cohort it removes the scoped disable with exactly \
            those cities and cohorts. Enabling does not change rollouts or rules, and does not revive kill \
            switches: flagctl tells you when a kill switch still keeps the switch off.

            Examples:

              flagctl enable plugin_switch_feed_promos --reason "crash fixed in 5.14.1"
              flagctl enable plugin_switch_surge_notice --city berlin

            Exit status: 0 ok (also when there was nothing to enable), 1 failure, 3 changed since you read it, \
            4 no such flag, 5 token refused, 64 usage.
            """
    )

    @Argument(help: ArgumentHelp("The plugin switch, e.g. plugin_switch_feed_promos.", valueName: "key"))
    public var key: String
    @OptionGroup public var scope: ScopeOptions
    @OptionGroup public var change: ChangeOptions
    @OptionGroup public var server: ServerOptions
    @OptionGroup public var outputOptions: OutputOptions

    public init() {}

    public func run(console: Console) async throws {
        let settings = try server.settings(console)
        let client = APIClient(settings: settings)
        let flow = ChangeFlow(client: client, console: console, namespace: try settings.requireNamespace(), options: change)
        let scope = self.scope
        let key = self.key
        let outcome = try await flow.run { view in
            let gate = try view.flagSet.requireSwitch(key, server: settings.serverText, for: "enable")
            if !scope.scope.isEverywhere, !gate.disabledScopes.contains(where: { Set($0.cities) == Set(scope.cities) && Set($0.cohorts) == Set(scope.cohorts) }) {
                let current = gate.disabledScopes.map(\.description).joined(separator: "; ")
                throw CommandFailure("\(key) has no scoped disable for \(scope.scope) (its scoped disables: \(current.isEmpty ? "none" : current)); name one of those, or leave --city/--cohort out to clear the global disable")
            }
            var body = JSONObject()
            if let tree = scope.scopeTree { body["scope"] = tree }
            return PlannedChange(path: APIClient.path("v1", "namespaces", view.namespace, "flags", key, "enable"), body: body,
                                 objects: [.flag(key)], action: "enable \(key)\(scope.inText)")
        }
        var lines = [outcome.summaryLine(done: "enabled \(key)\(scope.inText)",
                                         unchanged: scope.scope.isEverywhere ? "\(key) is not disabled" : "\(key) is not disabled\(scope.inText)")]
        if let flag = outcome.view.flagSet.flag(key) {
            let state = FlagState(flag, in: outcome.view.flagSet)
            if !state.killedBy.isEmpty {
                lines.append("note: \(key) stays off: kill switch \(state.killedBy.joined(separator: ", ")) kills it everywhere ('flagctl revive \(state.killedBy[0] == KillSwitch.masterKey ? "" : state.killedBy[0] + " ")--reason ...' revives it)")
            }
            let remaining = (flag.pluginSwitch?.disabledScopes ?? []).filter { $0 != scope.scope }
            if scope.scope.isEverywhere, !remaining.isEmpty {
                lines.append("note: still disabled in \(remaining.map(\.description).joined(separator: "; ")) ('flagctl enable \(key) --city ...' clears one)")
            }
        }
        outputOptions.emit(outcome, lines, console: console)
    }
}

/// `flagctl disable KEY [--city C] [--cohort K]`: turns a plugin switch off, everywhere or in one scope.
public struct Disable: FlagctlCommand {
    public static let configuration = CommandConfiguration(
        abstract: "Turn a plugin switch off, everywhere or for one city or cohort.",
        discussion: """
            A disabled switch is off whatever its rules and rollouts say; apps use the next plugin of the \
            plugin point, or the core flow. Without --city/--cohort it is off everywhere; with them it adds a \
            scoped disable (units matching every attribute named). 'flagctl enable' undoes either. To turn off a \
            whole plugin point or all optional code, use 'flagctl kill'.

            Examples:

              flagctl disable plugin_switch_feed_promos --reason "INC-4411"
              flagctl disable plugin_switch_feed_promos --city lagos --cohort beta

            Exit status: 0 ok (also when it was disabled already), 1 failure, 3 changed since you read it, \
            4 no such flag, 5 token refused, 64 usage.
            """
    )

    @Argument(help: ArgumentHelp("The plugin switch, e.g. plugin_switch_feed_promos.", valueName: "key"))
    public var key: String
    @OptionGroup public var scope: ScopeOptions
    @OptionGroup public var change: ChangeOptions
    @OptionGroup public var server: ServerOptions
    @OptionGroup public var outputOptions: OutputOptions

    public init() {}

    public func run(console: Console) async throws {
        let settings = try server.settings(console)
        let client = APIClient(settings: settings)
        let flow = ChangeFlow(client: client, console: console, namespace: try settings.requireNamespace(), options: change)
        let scope = self.scope
        let key = self.key
        let outcome = try await flow.run { view in
            _ = try view.flagSet.requireSwitch(key, server: settings.serverText, for: "disable")
            var body = JSONObject()
            if let tree = scope.scopeTree { body["scope"] = tree }
            return PlannedChange(path: APIClient.path("v1", "namespaces", view.namespace, "flags", key, "disable"), body: body,
                                 objects: [.flag(key)], action: "disable \(key)\(scope.inText)")
        }
        let lines = [outcome.summaryLine(done: "disabled \(key)\(scope.scope.isEverywhere ? " everywhere" : scope.inText)",
                                         unchanged: "\(key) is disabled\(scope.scope.isEverywhere ? " everywhere" : scope.inText) already")]
        outputOptions.emit(outcome, lines, console: console)
    }
}
