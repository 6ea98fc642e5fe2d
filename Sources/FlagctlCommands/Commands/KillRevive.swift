public import ArgumentParser
import Foundation
import SwitchyardCore
import SwitchyardWire

/// `flagctl kill [GROUP] [--city C] [--cohort K]`: adds a kill entry; no GROUP means the master kill switch.
public struct Kill: FlagctlCommand {
    public static let configuration = CommandConfiguration(
        abstract:
            "Turn optional code off: all of it (the master kill switch) or a group, everywhere or in one city or cohort.",
        discussion: """
            Adds a kill entry to a kill switch. Without GROUP it is the master kill switch: every plugin switch \
            and experiment of the namespace is off, and apps run their core flow. A group kill switch covers one \
            plugin point's switches (and the flags it lists). With --city/--cohort the entry applies only to \
            units matching every attribute named; without them, everywhere. Clients pick the change up within \
            a second.

            On a terminal flagctl shows what the kill switch covers and asks first; elsewhere pass --yes. \
            Namespaces require a --reason to kill unless their reason policy is 'never'.

            Examples:

              flagctl kill --city lagos --reason "INC-4411: crash loop after 5.14 in Lagos"
              flagctl kill kill_home_feed --reason "INC-4412: feed API down" --yes
              flagctl kill kill_map_layers --cohort beta --reason "map stutter"

            'flagctl revive' removes the entry again.

            Exit status: 0 ok (also when the entry existed), 1 failure or not confirmed, 3 changed since you \
            read it, 4 no such kill switch, 5 token refused, 64 usage (no --reason where required, no --yes off \
            a terminal).
            """
    )

    @Argument(
        help: ArgumentHelp(
            "The group kill switch, e.g. kill_home_feed; leave out for the master kill switch.", valueName: "group"))
    public var group: String?
    @OptionGroup public var scope: ScopeOptions
    @OptionGroup public var change: ChangeOptions
    @OptionGroup public var server: ServerOptions
    @OptionGroup public var outputOptions: OutputOptions

    public init() {}

    public func run(console: Console) async throws {
        let flow = try ChangeFlow(server: server, options: change, console: console, confirms: true)
        let settings = flow.client.settings
        let key = group ?? KillSwitch.masterKey
        let scope = self.scope
        let name = Kill.name(key)
        let outcome = try await flow.run { view in
            let kill = try view.flagSet.requireKillSwitch(key)
            let members = view.flagSet.members(of: key)
            var planned = PlannedChange(
                path: APIClient.path("v1", "namespaces", view.namespace, "kill-switches", key, "kill"),
                objects: [.killSwitch(key)],
                action: "kill \(name)\(scope.scope.isEverywhere ? " everywhere" : scope.inText)",
                addsKillEntry: true)
            planned.body = KillStateRequest(scope: scope.scope).object
            if kill.entries.contains(where: { $0.sameScope(as: scope.scope) }) {
                planned.nothingToDo = "\(name) has an entry for \(scope.scope) already"
            }
            planned.preview = [
                Kill.covers(kill, members: members, namespace: view.namespace), "current entries: \(kill.entriesText)",
            ]
            return planned
        }
        var lines = [
            outcome.summaryLine(
                done: "killed \(name)\(scope.scope.isEverywhere ? " everywhere" : scope.inText)", unchanged: "")
        ]
        if outcome.changed {
            lines.append(
                "undo with: \(settings.command("revive\(group.map { " \($0)" } ?? "")\(Kill.flags(scope))", "--reason \"...\""))"
            )
        }
        outputOptions.emit(outcome, lines, console: console)
    }

    /// `the master kill switch` or `kill_home_feed`.
    static func name(_ key: String) -> String {
        key == KillSwitch.masterKey ? "the master kill switch" : key
    }

    /// What a kill switch covers, for the confirmation.
    static func covers(_ kill: KillSwitch, members: [String], namespace: String) -> String {
        if kill.isMaster {
            return
                "the master kill switch covers every flag of namespace \(namespace) (\(members.count)): apps run their core flow where it applies"
        }
        return "\(kill.key) covers \(members.count) flag\(members.count == 1 ? "" : "s"): \(list(members))"
    }

    /// The first few keys and how many more.
    static func list(_ keys: [String], limit: Int = 6) -> String {
        guard !keys.isEmpty else { return "none" }
        let shown = keys.prefix(limit).joined(separator: ", ")
        return keys.count > limit ? "\(shown) and \(keys.count - limit) more" : shown
    }

    /// ` --city lagos --cohort beta`.
    static func flags(_ scope: ScopeOptions) -> String {
        scope.cities.map { " --city \($0)" }.joined() + scope.cohorts.map { " --cohort \($0)" }.joined()
    }
}

/// `flagctl revive [GROUP] [--city C] [--cohort K] [--all]`: removes kill entries.
public struct Revive: FlagctlCommand {
    public static let configuration = CommandConfiguration(
        abstract: "Turn optional code back on: remove a kill entry from the master or a group kill switch.",
        discussion: """
            Removes the kill entry with exactly the cities and cohorts given (without --city/--cohort: the entry \
            that kills everywhere), or every entry with --all. No GROUP means the master kill switch. Switches \
            that are disabled stay off; 'flagctl get' shows what still keeps a switch off.

            On a terminal flagctl asks first; elsewhere pass --yes.

            Examples:

              flagctl revive --city lagos --reason "INC-4411 resolved in 5.14.1"
              flagctl revive kill_home_feed --yes
              flagctl revive kill_map_layers --all --reason "beta builds fixed"

            Exit status: 0 ok (also when there was nothing to revive), 1 failure or not confirmed (or no entry \
            for that scope), 3 changed since you read it, 4 no such kill switch, 5 token refused, 64 usage.
            """
    )

    @Argument(
        help: ArgumentHelp(
            "The group kill switch, e.g. kill_home_feed; leave out for the master kill switch.", valueName: "group"))
    public var group: String?
    @OptionGroup public var scope: ScopeOptions
    @Flag(help: "Remove every entry of the kill switch, whatever its scope.")
    public var all = false
    @OptionGroup public var change: ChangeOptions
    @OptionGroup public var server: ServerOptions
    @OptionGroup public var outputOptions: OutputOptions

    public init() {}

    public func validate() throws {
        if all, !scope.scope.isEverywhere {
            throw ValidationError("Pass either --all or --city/--cohort, not both: --all removes every entry.")
        }
    }

    public func run(console: Console) async throws {
        let flow = try ChangeFlow(server: server, options: change, console: console, confirms: true)
        let key = group ?? KillSwitch.masterKey
        let scope = self.scope
        let all = self.all
        let name = Kill.name(key)
        let what =
            all ? "every entry" : scope.scope.isEverywhere ? "the everywhere entry" : "the entry for \(scope.scope)"
        let outcome = try await flow.run { view in
            let kill = try view.flagSet.requireKillSwitch(key)
            var planned = PlannedChange(
                path: APIClient.path("v1", "namespaces", view.namespace, "kill-switches", key, "revive"),
                objects: [.killSwitch(key)], action: "revive \(name): remove \(what)")
            if all {
                planned.body = KillStateRequest(scope: nil, all: true).object
                if kill.entries.isEmpty { planned.nothingToDo = "\(name) has no kill entries" }
            } else if kill.entries.contains(where: { $0.sameScope(as: scope.scope) }) {
                planned.body = KillStateRequest(scope: scope.scope).object
            } else if kill.entries.isEmpty {
                planned.nothingToDo = "\(name) has no kill entries"
            } else {
                let hint =
                    kill.entries.first.map { entry in
                        entry.isEverywhere
                            ? "leave --city/--cohort out"
                            : entry.cities.map { "--city \($0)" }.joined(separator: " ")
                                + (entry.cohorts.isEmpty ? "" : " ")
                                + entry.cohorts.map { "--cohort \($0)" }.joined(separator: " ")
                    } ?? ""
                throw CommandFailure(
                    "\(name) has no entry for \(scope.scope); its entries: \(kill.entriesText). Pass the scope of one (e.g. \(hint)), or --all to remove every entry"
                )
            }
            planned.preview = [
                Kill.covers(kill, members: view.flagSet.members(of: key), namespace: view.namespace),
                "current entries: \(kill.entriesText)",
            ]
            return planned
        }
        var lines = [outcome.summaryLine(done: "revived \(name): removed \(what)", unchanged: "")]
        if outcome.changed, let entries = outcome.answer.killSwitch?.killSwitch.entries, !entries.isEmpty {
            lines.append("\(name) still has entries: \(entries.map(\.description).joined(separator: "; "))")
        }
        outputOptions.emit(outcome, lines, console: console)
    }
}
