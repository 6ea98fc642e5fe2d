import ArgumentParser
import Foundation
import SwitchyardCore
import Testing

@testable import FlagctlCommands

/// Arguments parse into the commands and options they name, and bad ones are usage errors (status 64) before
/// anything is sent.
struct ParseTests {
    func parse<T: ParsableCommand>(_ arguments: [String], as type: T.Type = T.self) throws -> T {
        try #require(try Flagctl.parseAsRoot(arguments) as? T)
    }

    @Test func aClientTokenWithoutAllowIsAUsageErrorSayingHow() {
        do {
            _ = try parse(["tokens", "create", "rider-ios", "--role", "client"], as: TokensCreate.self)
            Issue.record("expected a usage error")
        } catch {
            #expect(Flagctl.exitCode(for: error).rawValue == 64)
            #expect(
                Flagctl.message(for: error).contains("'flagctl tokens create rider-ios --role client --allow rider'"),
                "\(Flagctl.message(for: error))")
        }
    }

    @Test func serverOptionsParseOnEveryServerCommand() throws {
        let get = try parse(
            [
                "get", "plugin_switch_feed_promos", "--server", "http://flags:8080", "--token", "t", "-n", "rider",
                "-o", "json",
            ], as: Get.self)
        #expect(get.key == "plugin_switch_feed_promos")
        #expect(get.server.connection.server == "http://flags:8080")
        #expect(get.server.connection.token == "t")
        #expect(get.server.namespace == "rider")
        #expect(get.outputOptions.output == .json)
        let list = try parse(["get"], as: Get.self)
        #expect(list.key == nil)
        #expect(list.outputOptions.output == .table)
    }

    @Test func enableAndDisableTakeAScope() throws {
        let disable = try parse(
            [
                "disable", "plugin_switch_x", "--city", "lagos", "--city", "accra", "--cohort", "beta", "--reason",
                "why",
            ], as: Disable.self)
        #expect(disable.scope.scope == Scope(cities: ["lagos", "accra"], cohorts: ["beta"]))
        #expect(disable.change.reason == "why")
        #expect(disable.change.yes == false)
        let enable = try parse(["enable", "plugin_switch_x", "-y"], as: Enable.self)
        #expect(enable.scope.scope.isEverywhere)
        #expect(enable.change.yes)
    }

    @Test func killWithoutAGroupIsTheMasterKillSwitch() throws {
        let master = try parse(["kill", "--city", "lagos", "--reason", "INC-1", "--yes"], as: Kill.self)
        #expect(master.group == nil)
        #expect(master.scope.cities == ["lagos"])
        let group = try parse(["kill", "kill_home_feed", "--if-version", "12"], as: Kill.self)
        #expect(group.group == "kill_home_feed")
        #expect(group.change.ifVersion == 12)
        let revive = try parse(["revive", "kill_home_feed", "--all"], as: Revive.self)
        #expect(revive.all)
    }

    @Test func rolloutTakesAPercentageWithAtMostTwoDecimals() throws {
        let rollout = try parse(["rollout", "plugin_switch_x", "12.5", "--city", "nairobi"], as: RolloutCommand.self)
        #expect(try rollout.rollout() == Rollout(basisPoints: 1250))
        #expect(rollout.scope.cities == ["nairobi"])
        #expect(
            try parse(["rollout", "plugin_switch_x", "0.07%"], as: RolloutCommand.self).rollout()
                == Rollout(basisPoints: 7))
        #expect(try parse(["rollout", "plugin_switch_x", "100", "--rule", "2"], as: RolloutCommand.self).rule == 2)
    }

    @Test func targetCollectsEveryListEdit() throws {
        let target = try parse(
            [
                "target", "plugin_switch_x", "--rule", "1", "--add-city", "a", "--add-city", "b", "--remove-cohort",
                "c",
                "--add-unit", "u1", "--remove-unit", "u2", "--add-platform", "ios", "--rollout", "5",
            ], as: Target.self)
        #expect(target.additions == Conditions(cities: ["a", "b"], units: ["u1"], platforms: ["ios"]))
        #expect(target.removals == Conditions(cohorts: ["c"], units: ["u2"]))
        #expect(try target.parsedRollout() == Rollout(basisPoints: 500))
    }

    @Test func explainTakesTheSameOptionsWithOrWithoutFlagFiles() throws {
        let live = try parse(
            [
                "explain", "k", "--unit", "u", "--city", "c", "--cohort", "a", "--cohort", "b", "--app-version",
                "5.12.0",
                "--platform", "ios", "--server", "http://s:1", "-n", "rider",
            ], as: Explain.self)
        #expect(live.flags.directory == nil)
        #expect(live.flags.namespace == "rider")
        #expect(live.connection.server == "http://s:1")
        #expect(
            live.context
                == EvaluationContext(
                    unitId: "u", city: "c", cohorts: ["a", "b"], appVersion: "5.12.0", platform: "ios"))
        let offline = try parse(["explain", "k", "--unit", "u", "--flags", TestPaths.flags], as: Explain.self)
        #expect(offline.flags.directory == TestPaths.flags)
    }

    @Test func auditWatchAndRevertOptions() throws {
        let audit = try parse(
            [
                "audit", "plugin_switch_x", "--since", "2h", "--actor", "amara", "--source", "cli", "--limit", "10",
                "--all-namespaces",
            ], as: Audit.self)
        #expect(audit.key == "plugin_switch_x")
        #expect(audit.actor == "amara")
        #expect(audit.limit == 10)
        #expect(audit.allNamespaces)
        let watch = try parse(
            ["watch", "kill_home_feed", "--from-version", "3", "--count", "2", "--wait", "5", "-o", "json"],
            as: Watch.self)
        #expect(watch.key == "kill_home_feed")
        #expect(watch.fromVersion == 3)
        #expect(watch.count == 2)
        #expect(watch.wait == 5)
        #expect(try parse(["revert", "14", "--reason", "r"], as: Revert.self).version == 14)
    }

    @Test func diffAndApplyOptions() throws {
        let apply = try parse(
            [
                "apply", TestPaths.flags, "--namespace", "rider", "--include-state", "--prune", "--dry-run", "--yes",
                "--reason", "r",
            ], as: Apply.self)
        #expect(apply.plan.directory == TestPaths.flags)
        #expect(apply.plan.namespace == "rider")
        #expect(apply.plan.includeState)
        #expect(apply.plan.prune)
        #expect(apply.dryRun)
        #expect(apply.change.yes)
        #expect(try parse(["diff", TestPaths.flags, "--exit-code"], as: Diff.self).exitCode)
    }

    @Test func namespaceTokenLoginAndVersionCommands() throws {
        let create = try parse(
            ["namespaces", "create", "rider-staging", "--description", "d", "--reason-policy", "never"],
            as: NamespacesCreate.self)
        #expect(create.name == "rider-staging")
        #expect(create.reasonPolicy == "never")
        _ = try parse(["namespaces", "list"], as: NamespacesList.self)
        #expect(try parse(["namespaces", "delete", "x", "--yes"], as: NamespacesDelete.self).change.yes)
        let token = try parse(
            ["tokens", "create", "ci", "--role", "client", "--allow", "rider", "--allow", "driver"],
            as: TokensCreate.self)
        #expect(token.allow == ["rider", "driver"])
        #expect(token.rate == nil)
        #expect(
            try parse(
                ["tokens", "create", "web", "--role", "client", "--allow", "rider", "--rate", "600"],
                as: TokensCreate.self
            ).rate == 600)
        #expect(throws: (any Error).self) {
            try parse(
                ["tokens", "create", "web", "--role", "client", "--allow", "rider", "--rate", "0"],
                as: TokensCreate.self)
        }
        #expect(
            try parse(["tokens", "create", "prometheus", "--role", "metrics"], as: TokensCreate.self).role == "metrics")
        #expect(throws: (any Error).self) {
            try parse(
                ["tokens", "create", "prometheus", "--role", "metrics", "--allow", "rider"], as: TokensCreate.self)
        }
        // flagsd's rule for a token's name, checked before anything is sent.
        for name in ["", String(repeating: "n", count: 65), "two\nlines"] {
            #expect {
                try parse(["tokens", "create", name, "--role", "editor"], as: TokensCreate.self)
            } throws: { error in
                Flagctl.message(for: error).contains("The token's name must be 1 to 64 characters on one line")
            }
        }
        #expect(
            try parse(
                ["tokens", "create", String(repeating: "n", count: 64), "--role", "editor"], as: TokensCreate.self
            )
            .name.count == 64)
        #expect(try parse(["tokens", "revoke", "tok_1"], as: TokensRevoke.self).idOrName == "tok_1")
        _ = try parse(["tokens", "list"], as: TokensList.self)
        let login = try parse(["login", "--server", "http://s:1", "-n", "rider", "--token-stdin"], as: Login.self)
        #expect(login.tokenStdin)
        _ = try parse(["version"], as: Version.self)
    }

    @Test(
        arguments: [
            (["rollout", "plugin_switch_x", "12.345"], "PERCENT 12.345 has more than two decimals"),
            (["rollout", "plugin_switch_x", "101"], "PERCENT 101 is not between 0 and 100"),
            (["rollout", "plugin_switch_x", "ten"], "PERCENT ten is not a percentage"),
            (
                ["rollout", "plugin_switch_x", "5", "--rule", "0", "--city", "a"],
                "Pass either --rule or --city/--cohort, not both."
            ),
            (["revive", "--all", "--city", "a"], "Pass either --all or --city/--cohort, not both"),
            (["kill", "--reason", "  "], "--reason is empty."),
            (["kill", "--if-version", "0"], "--if-version 0 is not a version"),
            (["disable", "plugin_switch_x", "--city", ""], "A --city or --cohort is empty."),
            (["target", "plugin_switch_x"], "Nothing to change."),
            (["audit", "--since", "last week"], "--since 'last week' is not a time."),
            (["audit", "--source", "email"], "--source 'email' is not a source"),
            (["audit", "--limit", "0"], "--limit 0 is not between 1 and 1000."),
            (["watch", "--count", "0"], "--count 0 must be 1 or more."),
            (["revert", "0"], "0 is not a version"),
            (["tokens", "create", "x", "--role", "root"], "--role 'root' is not a role"),
            (
                ["namespaces", "create", "x", "--reason-policy", "sometimes"],
                "--reason-policy 'sometimes' is not a policy"
            ),
            (["login", "--token", "a", "--token-stdin"], "Pass either --token or --token-stdin, not both."),
            (["apply", "/nonexistent/Flags"], "No directory '/nonexistent/Flags'."),
            (["explain", "k"], "Missing expected argument '--unit <id>'"),
            (
                ["get", "--output", "xml"],
                "The value 'xml' is invalid for '--output <format>'. Please provide one of 'table', 'json' or 'yaml'."
            ),
            (["frobnicate"], "Unexpected argument 'frobnicate'"),
        ] as [([String], String)])
    func badArgumentsAreUsageErrorsThatSayWhatToPass(_ arguments: [String], _ message: String) async {
        let console = Console.capturing(environment: ["FLAGCTL_CONFIG": "/nonexistent/config.json"])
        let status = await Flagctl.execute(arguments, console: console)
        #expect(status == 64, "\(arguments): \(console.errorOutput)")
        #expect(console.errorOutput.contains(message), "\(arguments): \(console.errorOutput)")
    }

    @Test func relativeTimesCountBackFromNow() throws {
        let now = try Date("2026-11-22T12:00:00Z", strategy: Date.ISO8601FormatStyle())
        #expect(Audit.time("2h", now: now) == "2026-11-22T10:00:00Z")
        #expect(Audit.time("30m", now: now) == "2026-11-22T11:30:00Z")
        #expect(Audit.time("7d", now: now) == "2026-11-15T12:00:00Z")
        #expect(Audit.time("2026-11-01", now: now) == "2026-11-01T00:00:00Z")
        #expect(Audit.time("2026-11-01T08:00:00.5Z", now: now) == "2026-11-01T08:00:00.5Z")
        #expect(Audit.time("soon", now: now) == nil)
    }

    @Test func aCityScopeEditsTheRuleWithExactlyThoseConditions() {
        let gate = PluginSwitchDefinition(rules: [
            SwitchRule(conditions: Conditions(units: ["qa"]), rollout: .full),
            SwitchRule(conditions: Conditions(cities: ["lagos", "accra"]), rollout: .off),
            SwitchRule(conditions: Conditions(cities: ["nairobi"], platforms: ["ios"]), rollout: .off),
            SwitchRule(conditions: Conditions(cities: ["nairobi"]), rollout: .off),
        ])
        #expect(RolloutCommand.target(rule: nil, cities: ["accra", "lagos"], cohorts: [], in: gate) == .rule(1))
        #expect(RolloutCommand.target(rule: nil, cities: ["nairobi"], cohorts: [], in: gate) == .rule(3))
        #expect(
            RolloutCommand.target(rule: nil, cities: ["lagos"], cohorts: [], in: gate)
                == .newRule(Conditions(cities: ["lagos"])))
        #expect(RolloutCommand.target(rule: nil, cities: [], cohorts: [], in: gate) == .defaultRollout)
        #expect(RolloutCommand.target(rule: 0, cities: [], cohorts: [], in: gate) == .rule(0))
        #expect(RolloutCommand.shadowingRules(for: Conditions(cities: ["lagos"]), in: gate) == [0, 1])
    }
}

/// Asking before kill, revive, apply and namespace deletion: the decision and the answers, as data.
struct ConfirmationTests {
    @Test func yesProceedsATerminalAsksAndAnythingElseRefuses() {
        #expect(Confirmation.decide(yes: true, isTerminal: false) == .proceed)
        #expect(Confirmation.decide(yes: true, isTerminal: true) == .proceed)
        #expect(Confirmation.decide(yes: false, isTerminal: true) == .ask)
        #expect(Confirmation.decide(yes: false, isTerminal: false) == .refuseWithoutTerminal)
    }

    @Test(arguments: [
        ("y", true), ("Y", true), ("yes", true), (" YES ", true), ("n", false), ("", false), ("no", false),
        ("yep", false), ("ja", false),
    ])
    func onlyYOrYesConfirms(_ answer: String, _ confirmed: Bool) {
        #expect(Confirmation.isYes(answer) == confirmed)
    }

    @Test func endOfInputDoesNotConfirm() {
        #expect(!Confirmation.isYes(nil))
    }

    @Test func thePromptShowsThePreviewThenAsks() async throws {
        let console = Console.capturing(terminal: true) { _ in "y" }
        try await Confirmation.confirm(
            "Kill everything?", action: "kill everything", preview: ["covers 13 flags"], yes: false, console: console)
        #expect(console.transcript == "covers 13 flags\nKill everything? [y/N] y\n")
    }

    @Test func aNoAnswerFailsWithStatusOne() async {
        let console = Console.capturing(terminal: true) { _ in "n" }
        await #expect(throws: CommandFailure.self) {
            try await Confirmation.confirm("Kill everything?", action: "kill everything", yes: false, console: console)
        }
    }

    @Test func offATerminalWithoutYesNothingIsAsked() async {
        let console = Console.capturing(terminal: false) { _ in
            Issue.record("asked off a terminal")
            return "y"
        }
        do {
            try await Confirmation.confirm("Kill everything?", action: "kill everything", yes: false, console: console)
            Issue.record("went ahead without --yes")
        } catch let failure as CommandFailure {
            #expect(failure.exitStatus == 64)
            #expect(
                failure.message
                    == "not on a terminal, so flagctl cannot ask before it changes anything; add --yes to kill everything"
            )
        } catch {
            Issue.record("\(error)")
        }
        #expect(console.transcript.isEmpty)
    }
}

/// Every command's help teaches with an example, and shell completions are installable.
struct HelpTests {
    static let commands: [[String]] = [
        ["get"], ["enable"], ["disable"], ["kill"], ["revive"], ["rollout"], ["target"], ["explain"], ["audit"],
        ["revert"],
        ["watch"], ["diff"], ["apply"], ["lint"], ["namespaces"], ["namespaces", "list"], ["namespaces", "create"],
        ["namespaces", "delete"], ["tokens"], ["tokens", "list"], ["tokens", "create"], ["tokens", "revoke"], ["login"],
        ["version"],
    ]

    @Test(arguments: commands)
    func helpOfEveryCommandHasAnExample(_ command: [String]) async {
        let console = Console.capturing()
        let status = await Flagctl.execute(["help"] + command, console: console)
        #expect(status == 0)
        #expect(console.output.contains("Example"), "\(command)")
        #expect(console.output.contains("flagctl \(command.joined(separator: " "))"), "\(command)")
    }

    @Test(arguments: commands)
    func noExampleIsWrappedOnAnEightyColumnTerminal(_ command: [String]) async {
        let console = Console.capturing()
        _ = await Flagctl.execute(["help"] + command, console: console)
        let discussion = console.output.components(separatedBy: "USAGE:")[0].split(
            separator: "\n", omittingEmptySubsequences: false)
        for (line, next) in zip(discussion, discussion.dropFirst())
        where line.hasPrefix("  ") && line.contains("flagctl ") {
            // A wrapped example continues on a line that is neither indented nor blank.
            #expect(next.isEmpty || next.hasPrefix(" "), "\(command): '\(line)' wraps to '\(next)'")
        }
    }

    @Test func everyCommandWithExitStatusesDocumentsThem() async {
        for command in Self.commands where !(command.count == 1 && ["namespaces", "tokens"].contains(command[0])) {
            let console = Console.capturing()
            _ = await Flagctl.execute(command + ["--help"], console: console)
            #expect(console.output.contains("Exit status:"), "\(command)")
        }
    }

    @Test(arguments: ["bash", "zsh", "fish"])
    func completionScriptsAreGenerated(_ shell: String) async {
        let console = Console.capturing()
        let status = await Flagctl.execute(["--generate-completion-script", shell], console: console)
        #expect(status == 0)
        #expect(console.output.contains("flagctl"))
        for command in ["rollout", "kill", "apply", "watch"] {
            #expect(console.output.contains(command), "\(shell): \(command)")
        }
    }

    @Test func versionFlagPrintsTheVersion() async {
        let console = Console.capturing()
        #expect(await Flagctl.execute(["--version"], console: console) == 0)
        #expect(console.output == FlagctlVersion.current + "\n")
    }
}
