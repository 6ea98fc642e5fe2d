public import ArgumentParser
import Foundation
import SwitchyardCore
import SwitchyardWire

/// `flagctl enable KEY [--city C] [--cohort K]`: clears a plugin switch's disable, everywhere or in one scope.
public struct Enable: FlagctlCommand {
    public static let configuration = CommandConfiguration(
        abstract: "Clear a plugin switch's disable, everywhere or for one city or cohort.",
        discussion: """
            Without --city/--cohort it clears the switch's global disable (set by 'flagctl disable' or by the \
            crash guard); scoped disables stay. With --city/--cohort it removes the scoped disable with exactly \
            those cities and cohorts. Enabling does not change rollouts or rules, and does not revive kill \
            switches: flagctl tells you when a kill switch still keeps the switch off.

            When the crash guard turned the switch off there, flagctl shows its evidence and asks before \
            enabling (--yes skips the question; scripts need it); the guard then leaves the switch alone for \
            its cool-down and counts only sessions reported afterwards.

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
        let (client, namespace) = try server.namespaceClient(console)
        var flow = ChangeFlow(client: client, console: console, namespace: namespace, options: change)
        let scope = self.scope
        let key = self.key
        // A trip of the crash guard in force for exactly this scope: show its evidence and ask first.
        let trip = try await Self.tripInForce(key, scope: scope.scope, namespace: namespace, client: client)
        flow.confirms = trip != nil
        let outcome = try await flow.run { view in
            let gate = try view.flagSet.requireSwitch(key, server: client.settings.serverText, for: "enable")
            if !scope.scope.isEverywhere, !gate.disabledScopes.contains(where: { $0.sameScope(as: scope.scope) }) {
                let current = gate.disabledScopes.map(\.description).joined(separator: "; ")
                throw CommandFailure(
                    "\(key) has no scoped disable for \(scope.scope) (its scoped disables: \(current.isEmpty ? "none" : current)); name one of those, or leave --city/--cohort out to clear the global disable"
                )
            }
            let body = SwitchStateRequest(scope: scope.scope).object
            var planned = PlannedChange(
                path: APIClient.path("v1", "namespaces", view.namespace, "flags", key, "enable"), body: body,
                objects: [.flag(key)], action: "enable \(key)\(scope.inText)")
            if let trip {
                planned.preview = Self.tripLines(trip, key: key)
                let cooldown = trip.evidence.policy.cooldown.map(GuardDurationText.text) ?? "its cool-down"
                planned.preview.append(
                    "  if it still crashes, the guard turns it off again once \(cooldown) has passed")
            }
            return planned
        }
        var lines = [
            outcome.summaryLine(
                done: "enabled \(key)\(scope.inText)",
                unchanged: scope.scope.isEverywhere ? "\(key) is not disabled" : "\(key) is not disabled\(scope.inText)"
            )
        ]
        if let trip, outcome.changed, change.yes {
            lines.append("note: " + Self.tripLines(trip, key: key).joined(separator: "\n"))
        }
        if let flag = outcome.view.flagSet.flag(key) {
            let state = FlagState(flag, in: outcome.view.flagSet)
            if !state.killedBy.isEmpty {
                lines.append(
                    "note: \(key) stays off: kill switch \(state.killedBy.joined(separator: ", ")) kills it everywhere ('\(client.settings.command("revive\(state.killedBy[0] == KillSwitch.masterKey ? "" : " " + state.killedBy[0])", "--reason ..."))' revives it)"
                )
            }
            let remaining = (flag.pluginSwitch?.disabledScopes ?? []).filter { $0 != scope.scope }
            if scope.scope.isEverywhere, !remaining.isEmpty {
                lines.append(
                    "note: still disabled in \(remaining.map(\.description).joined(separator: "; ")) ('\(client.settings.command("enable \(key)", "--city ..."))' clears one)"
                )
            }
        }
        outputOptions.emit(outcome, lines, console: console)
    }
}

extension Enable {
    /// The crash guard's latest trip of a switch still in force for exactly a scope; nil when there is none (or
    /// the server has no crash guard).
    static func tripInForce(_ key: String, scope: Scope, namespace: String, client: APIClient) async throws
        -> GuardTripBody?
    {
        let tree: JSONValue
        do {
            tree = try await client.get(
                APIClient.path("v1", "namespaces", namespace, "guard", "trips"),
                query: [("switch", key), ("limit", "100")])
        } catch let failure as APIFailure where failure.status == 404 || failure.status == 503 {
            return nil
        }
        return try GuardTripsBody(json: tree).trips.first { trip in
            trip.inForce == true && Set(trip.scope.cities) == Set(scope.cities)
                && Set(trip.scope.cohorts) == Set(scope.cohorts)
        }
    }

    /// `the crash guard turned … off …` and its evidence.
    static func tripLines(_ trip: GuardTripBody, key: String) -> [String] {
        [
            "the crash guard turned \(key) off \(GuardStatus.whereText(trip.scope)) at \(Audit.shortTime(trip.time)) (version \(trip.version)):"
        ]
            + Guard.evidenceLines(trip.evidence)
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
        let flow = try ChangeFlow(server: server, options: change, console: console)
        let settings = flow.client.settings
        let scope = self.scope
        let key = self.key
        let outcome = try await flow.run { view in
            _ = try view.flagSet.requireSwitch(key, server: settings.serverText, for: "disable")
            let body = SwitchStateRequest(scope: scope.scope).object
            return PlannedChange(
                path: APIClient.path("v1", "namespaces", view.namespace, "flags", key, "disable"), body: body,
                objects: [.flag(key)], action: "disable \(key)\(scope.inText)")
        }
        let lines = [
            outcome.summaryLine(
                done: "disabled \(key)\(scope.scope.isEverywhere ? " everywhere" : scope.inText)",
                unchanged: "\(key) is disabled\(scope.scope.isEverywhere ? " everywhere" : scope.inText) already")
        ]
        outputOptions.emit(outcome, lines, console: console)
    }
}
