public import ArgumentParser
import Foundation
import SwitchyardCore
import SwitchyardWire

/// `flagctl guard status|trips|apply|dismiss`: what the crash guard sees, what it did, and its proposals.
public struct Guard: AsyncParsableCommand {
    public static let configuration = CommandConfiguration(
        abstract:
            "See what the crash guard sees (crash rates per plugin switch), what it turned off, and decide on its proposals.",
        discussion: """
            When clients report that sessions with a plugin switch active crash too often, flagsd turns the switch \
            off by itself: in the city or cohort where the crashes concentrate, else everywhere. It trips when the \
            Wilson lower bound of the crash rate is above the bound (max_crash_rate, or baseline_ratio times the \
            crash rate of sessions without the switch), with crashes from enough distinct units and source \
            addresses. A tripped switch stays off until a person enables it ('flagctl enable' shows the evidence \
            and asks). Past its budget (max_trips_per_hour) the guard proposes instead: 'guard status' lists the \
            proposals, 'guard apply' and 'guard dismiss' decide them. Policies live in the flag file (crash_guard:).

            Examples:

              flagctl guard status
              flagctl guard status plugin_switch_feed_promos
              flagctl guard trips --limit 5
              flagctl guard apply 1234 --reason "INC-4510: map layer crashes on 5.14"
              flagctl guard dismiss 1234 --reason "a device farm's crashes, not riders'"
              flagctl audit --source crash-guard
            """,
        subcommands: [GuardStatus.self, GuardTrips.self, GuardApply.self, GuardDismiss.self]
    )

    public init() {}

    /// `4.97%` from a fraction; `-` when there is none.
    static func percent(_ fraction: Double?) -> String {
        guard let fraction else { return "-" }
        let percent = fraction * 100
        let digits = percent == 0 ? 0 : percent >= 10 ? 1 : percent >= 1 ? 2 : 3
        var text = String(format: "%.\(digits)f", percent)
        while text.contains("."), text.hasSuffix("0") { text.removeLast() }
        if text.hasSuffix(".") { text.removeLast() }
        return text + "%"
    }

    /// `city lagos`, `cohort beta`, `everywhere`.
    static func scopeText(_ scope: Scope) -> String {
        var parts: [String] = []
        if !scope.cities.isEmpty {
            parts.append((scope.cities.count == 1 ? "city " : "cities ") + scope.cities.joined(separator: ", "))
        }
        if !scope.cohorts.isEmpty {
            parts.append((scope.cohorts.count == 1 ? "cohort " : "cohorts ") + scope.cohorts.joined(separator: ", "))
        }
        return parts.isEmpty ? "everywhere" : parts.joined(separator: " and ")
    }

    /// The evidence of a trip in a few lines, for `guard trips` and `enable`.
    static func evidenceLines(_ evidence: GuardEvidenceBody, indent: String = "  ") -> [String] {
        let check = evidence.check
        let scope = scopeText(evidence.scope)
        var lines = [
            "\(indent)crash rate \(percent(check.crashRate)) (\(check.crashes) of \(check.sessions) sessions) "
                + "\(scope == "everywhere" ? "everywhere" : "in " + scope) over \(evidence.window)",
            "\(indent)lower bound \(percent(check.lowerBound)) at \(percent(evidence.confidence)) confidence > bound \(percent(check.bound))"
                + (check.baselineRate != nil ? " (\(percent(check.baselineRate)) without the switch)" : ""),
        ]
        if !check.leftOut.isEmpty {
            lines.append(
                "\(indent)in the sessions without \(check.leftOut.joined(separator: ", ")) (shown to crash): the switch runs in nearly every session"
            )
        }
        if let complement = evidence.complement {
            lines.append(
                "\(indent)elsewhere \(percent(complement.crashRate)) (\(complement.crashes) of \(complement.sessions) sessions)"
            )
        }
        if let units = check.units {
            var text =
                "reported by \(evidence.source == "reporter" ? "reporters" : "clients"): crashes from \(units) unit\(units == 1 ? "" : "s")"
            if let addresses = check.addresses {
                text += " and \(addresses) source network\(addresses == 1 ? "" : "s")"
            }
            lines.append(indent + text)
        }
        return lines
    }

    /// Why the guard proposes, in words.
    static func proposedBecause(_ proposal: GuardProposalBody) -> String {
        switch proposal.proposedBecause {
        case "scoped_disables": "its scoped disables of this switch are at max_scoped_disables"
        case "scoped_budget": "its budget of automatic scoped disables (max_scoped_trips_per_hour) is spent"
        default: "its budget of automatic global disables (max_trips_per_hour) is spent"
        }
    }
}

/// `flagctl guard status [KEY]`
public struct GuardStatus: FlagctlCommand {
    public static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Per plugin switch: sessions, crashes, crash rate, lower bound, bound and state.",
        discussion: """
            Counts cover each switch's window (crash_guard.window, 10m by default), from the last time a person \
            re-enabled it if later, of the sessions of the source shown (clients', or a crash pipeline's when it \
            reports). States: watching; tripping (the guard is turning it off now); tripped (off by the guard until \
            a person enables it); proposed (past its budget, the guard proposes turning it off: see the proposals \
            below the table); disabled (off by a person); cooling_down (re-enabled; the guard waits for the \
            cool-down); off (the policy turns the guard off for it). NOTE says what keeps a switch from tripping, \
            or where it is off. Below the table: the trip budget of the last hour, and the open proposals.

            Examples:

              flagctl guard status
              flagctl guard status plugin_switch_feed_promos
              flagctl guard status -o json

            Exit status: 0 ok, 1 failure, 4 no such switch, 5 token refused (needs the editor role), 64 usage.
            """
    )

    @Argument(
        help: ArgumentHelp("Only this plugin switch, with its cities and cohorts above the bound.", valueName: "key"))
    public var key: String?
    @OptionGroup public var server: ServerOptions
    @OptionGroup public var outputOptions: OutputOptions

    public init() {}

    public func run(console: Console) async throws {
        let settings = try server.settings(console)
        let namespace = try settings.requireNamespace()
        var query: [(String, String)] = []
        if let key { query.append(("switch", key)) }
        let tree: JSONValue
        do {
            tree = try await APIClient(settings: settings).get(
                APIClient.path("v1", "namespaces", namespace, "guard"), query: query)
        } catch let failure as APIFailure where failure.status == 404 && key != nil {
            throw CommandFailure.notFound(
                "namespace '\(namespace)' has no plugin switch '\(key!)' ('flagctl guard status' lists them)")
        }
        if let rendered = outputOptions.render(tree) {
            console.write(rendered)
            return
        }
        let overview = try GuardOverviewBody(json: tree)
        var table = Table("SWITCH", "STATE", "SESSIONS", "CRASHES", "RATE", "LOWER BOUND", "BOUND", "NOTE")
        for entry in overview.switches {
            let style: Style =
                switch entry.state {
                case "tripped", "tripping": .red
                case "cooling_down", "disabled", "proposed": .yellow
                case "off": .dim
                default: .plain
                }
            table.add([
                .init(entry.key, .bold), .init(entry.state, style),
                .init(String(entry.check.sessions)), .init(String(entry.check.crashes)),
                .init(Guard.percent(entry.check.crashRate)), .init(Guard.percent(entry.check.lowerBound)),
                .init(Guard.percent(entry.check.bound)),
                .init(Self.note(entry)),
            ])
        }
        console.write(table)
        var summary = KeyValueTable()
        let limit = overview.maximumTripsPerHour
        summary.add(
            "trip budget",
            limit == 0
                ? "none: the guard only proposes global disables (max_trips_per_hour 0)"
                : "\(overview.tripsLastHour) of \(limit) automatic global disables used in the last hour")
        let scoped = overview.maximumScopedTripsPerHour
        summary.add(
            "scoped budget",
            scoped == 0
                ? "none: the guard only proposes scoped disables (max_scoped_trips_per_hour 0)"
                : "\(overview.scopedTripsLastHour) of \(scoped) automatic scoped disables used in the last hour")
        for proposal in overview.proposals {
            let id = proposal.id
            summary.add(
                "proposal \(id)",
                "turn \(proposal.key) off \(Self.whereText(proposal.scope)), proposed at "
                    + "\(Audit.shortTime(proposal.time)) as \(Guard.proposedBecause(proposal)): "
                    + "'\(settings.command("guard apply \(id)"))' or '\(settings.command("guard dismiss \(id)", "--reason …"))'"
            )
        }
        console.write("\n" + summary.text)
        guard key != nil, let entry = overview.switches.first else { return }
        let check = entry.check
        let policy = entry.policy
        var details = KeyValueTable()
        details.add("window", "\(entry.window) (from \(Audit.shortTime(entry.from)))")
        details.add(
            "threshold",
            "\(Guard.percent(check.threshold)) (max_crash_rate), at least \(policy.minimumSessions ?? 0) sessions and \(policy.minimumCrashes ?? 0) crashes, \(Guard.percent(policy.confidence.map { Double($0.basisPoints) / 10_000 })) confidence"
        )
        if let baseline = check.baselineRate {
            details.add(
                "baseline",
                "\(Guard.percent(baseline)) without the switch × \(policy.baselineRatio.map(RatioText.text) ?? "?")")
        }
        if !check.leftOut.isEmpty {
            details.add(
                "judged on",
                "the sessions without \(check.leftOut.joined(separator: ", ")) (shown to crash; it runs in nearly every session)"
            )
        }
        if let units = check.units {
            let source = entry.source == "reporter" ? "reporters'" : "clients'"
            var text = "from \(units) unit\(units == 1 ? "" : "s")"
            if let addresses = check.addresses {
                text += " and \(addresses) source network\(addresses == 1 ? "" : "s")"
            }
            text += " (\(source) sessions); a trip needs \(policy.minimumUnits ?? 0) units"
            if check.addresses != nil { text += " and \(policy.minimumAddresses ?? 0) networks (IPv4 /24s, IPv6 /48s)" }
            details.add("crashes", text)
        }
        for scope in entry.scopes {
            details.add(
                "above bound",
                "\(scope.kind) \(scope.value): \(Guard.percent(scope.check.crashRate)) (\(scope.check.crashes) of \(scope.check.sessions) sessions), lower bound \(Guard.percent(scope.check.lowerBound))"
            )
        }
        for trip in entry.openTrips {
            details.add(
                "tripped",
                "\(Guard.scopeText(trip.scope)) at \(Audit.shortTime(trip.time)) (version \(trip.version)); '\(settings.command("enable \(entry.key)\(Self.scopeOptions(trip.scope))"))' turns it back on"
            )
        }
        console.write("\n" + details.text)
    }

    /// What keeps a switch from tripping, or where it is off.
    static func note(_ entry: GuardSwitchStatusBody) -> String {
        switch entry.state {
        case "tripped":
            return "off "
                + entry.openTrips.map { "\(whereText($0.scope)) since version \($0.version)" }.joined(separator: "; ")
        case "tripping":
            return "turning off \(entry.wouldTrip?.scopeText ?? "")"
        case "proposed":
            return "proposal \(entry.openProposals.map(String.init).joined(separator: ", ")) waits for a person"
        case "cooling_down":
            return "re-enabled; the guard waits until \(Audit.shortTime(entry.coolingDownUntil ?? ""))"
        case "disabled":
            return "disabled by a person"
        case "off":
            return "crash_guard.enabled: false"
        default:
            return entry.check.shortfall?.first ?? ""
        }
    }

    /// `everywhere`, `in city lagos`.
    static func whereText(_ scope: Scope) -> String {
        let text = Guard.scopeText(scope)
        return text == "everywhere" ? text : "in " + text
    }

    /// ` --city lagos` for a scope.
    static func scopeOptions(_ scope: Scope) -> String {
        scope.cities.map { " --city \($0)" }.joined() + scope.cohorts.map { " --cohort \($0)" }.joined()
    }
}

/// `flagctl guard trips [KEY]`
public struct GuardTrips: FlagctlCommand {
    public static let configuration = CommandConfiguration(
        commandName: "trips",
        abstract: "The plugin switches the crash guard turned off, newest first, with the evidence.",
        discussion: """
            The last 8 days; 'flagctl audit --source crash-guard' has every change the guard ever made.

            Examples:

              flagctl guard trips
              flagctl guard trips plugin_switch_feed_promos --limit 5
              flagctl guard trips -o json

            Exit status: 0 ok, 1 failure, 5 token refused (needs the editor role), 64 usage.
            """
    )

    @Argument(help: ArgumentHelp("Only the trips of this plugin switch.", valueName: "key"))
    public var key: String?
    @Option(help: ArgumentHelp("At most this many trips (1 to 1000).", valueName: "n"))
    public var limit = 20
    @OptionGroup public var server: ServerOptions
    @OptionGroup public var outputOptions: OutputOptions

    public init() {}

    public func validate() throws {
        guard (1...1000).contains(limit) else { throw ValidationError("--limit \(limit) is not between 1 and 1000.") }
    }

    public func run(console: Console) async throws {
        let settings = try server.settings(console)
        let namespace = try settings.requireNamespace()
        var query: [(String, String)] = [("limit", String(limit))]
        if let key { query.append(("switch", key)) }
        let tree = try await APIClient(settings: settings).get(
            APIClient.path("v1", "namespaces", namespace, "guard", "trips"), query: query)
        if let rendered = outputOptions.render(tree) {
            console.write(rendered)
            return
        }
        let trips = try GuardTripsBody(json: tree).trips
        guard !trips.isEmpty else {
            console.write(
                "the crash guard has turned nothing off in namespace \(namespace)\(key.map { " for \($0)" } ?? "") in the last 8 days\n"
            )
            return
        }
        var text = ""
        for trip in trips {
            var status: String
            if let reenabled = trip.reenabled {
                status = reenabled.deleted ? "deleted" : "re-enabled"
                status += " by \(reenabled.actor) at \(Audit.shortTime(reenabled.time)) (version \(reenabled.version))"
            } else {
                status = trip.inForce == true ? "in force" : "no longer in force"
            }
            let style: Style = status == "in force" ? .red : .dim
            text +=
                "\(Style.dim.apply(Audit.shortTime(trip.time), colour: console.usesColour))  version \(trip.version)  "
                + "\(Style.bold.apply(trip.key, colour: console.usesColour)) off \(GuardStatus.whereText(trip.scope)): "
                + style.apply(status, colour: console.usesColour) + "\n"
            text += Guard.evidenceLines(trip.evidence).joined(separator: "\n") + "\n"
        }
        console.write(text)
    }
}

/// `flagctl guard apply ID`
public struct GuardApply: FlagctlCommand {
    public static let configuration = CommandConfiguration(
        commandName: "apply",
        abstract: "Apply a crash guard proposal: turn its switch off in its scope, as your change.",
        discussion: """
            Past its budget (max_trips_per_hour) or a switch's max_scoped_disables, the crash guard proposes a \
            disable instead of making it; 'flagctl guard status' lists the open proposals with their ids. Applying \
            one disables the switch where the proposal says, as your change with the guard's evidence (source \
            crash-guard, actor you): the guard then treats it as one of its trips, so it stays off until a person \
            enables it. flagctl shows the evidence and asks first (--yes skips the question; scripts need it).

            Examples:

              flagctl guard apply 1234 --reason "INC-4510: map layer crashes on 5.14"
              flagctl guard apply 1234 --yes -o json

            Exit status: 0 ok (also when the switch was off there already), 1 failure (a dismissed proposal), \
            4 no such proposal, 5 token refused (needs the editor role), 64 usage.
            """
    )

    @Argument(help: ArgumentHelp("The proposal's id, as 'flagctl guard status' lists it.", valueName: "id"))
    public var id: Int64
    @Option(
        help: ArgumentHelp(
            "Why: recorded in the audit log (default: 'applied crash guard proposal <id>').", valueName: "text"))
    public var reason: String?
    @Flag(name: [.customShort("y"), .long], help: "Do not ask for confirmation (needed when not on a terminal).")
    public var yes = false
    @OptionGroup public var server: ServerOptions
    @OptionGroup public var outputOptions: OutputOptions

    public init() {}

    public func validate() throws {
        try GuardDismiss.validate(id: id)
        try ChangeOptions.refuseBlank(
            reason: reason, example: "INC-4510: map layer crashes on 5.14", optional: true)
    }

    public func run(console: Console) async throws {
        let (client, namespace) = try server.namespaceClient(console)
        let proposal = try await GuardDismiss.proposal(id, namespace: namespace, client: client)
        let key = proposal.key
        let scope = GuardStatus.whereText(proposal.scope)
        if proposal.state == "dismissed" {
            throw CommandFailure(
                "proposal \(id) was dismissed by \(proposal.dismissed?.actor ?? "someone"); to turn \(key) off anyway, '\(client.settings.command("disable \(key)"))'"
            )
        }
        try await Confirmation.confirm(
            "Turn \(key) off \(scope) (namespace \(namespace))?", action: "apply proposal \(id)",
            preview: ["the crash guard proposes turning \(key) off \(scope), as \(Guard.proposedBecause(proposal)):"]
                + Guard.evidenceLines(proposal.evidence),
            yes: yes, console: console)
        let response = try await client.send(
            "POST", APIClient.path("v1", "namespaces", namespace, "guard", "proposals", String(id), "apply"),
            body: ReasonRequest(reason: reason?.trimmingCharacters(in: .whitespacesAndNewlines)).sent
        ).json
        if let rendered = outputOptions.render(response) {
            console.write(rendered)
            return
        }
        let committed = try CommittedBody(json: response)
        let version = committed.version.version
        if committed.changed {
            console.write(
                "applied crash guard proposal \(id): turned \(key) off \(scope) (namespace \(namespace) is at version \(version))\n"
            )
        } else {
            console.write(
                "\(key) was off \(scope) already; nothing changed (namespace \(namespace) is at version \(version))\n")
        }
    }
}

/// `flagctl guard dismiss ID --reason …`
public struct GuardDismiss: FlagctlCommand {
    public static let configuration = CommandConfiguration(
        commandName: "dismiss",
        abstract:
            "Dismiss a crash guard proposal: the switch stays on, and the guard leaves it alone for its cool-down.",
        discussion: """
            The dismissal is recorded in the audit log with your reason, which is required. It settles every open \
            proposal of the same switch and scope; the guard proposes again only after the policy's cool-down, if \
            the crashes go on.

            Examples:

              flagctl guard dismiss 1234 --reason "a device farm's crashes, not riders'"

            Exit status: 0 ok (also when it was dismissed already), 1 failure (an applied proposal), 4 no such \
            proposal, 5 token refused (needs the editor role), 64 usage.
            """
    )

    @Argument(help: ArgumentHelp("The proposal's id, as 'flagctl guard status' lists it.", valueName: "id"))
    public var id: Int64
    @Option(
        help: ArgumentHelp("Why the switch should stay on: recorded in the audit log (required).", valueName: "text"))
    public var reason: String
    @OptionGroup public var server: ServerOptions
    @OptionGroup public var outputOptions: OutputOptions

    public init() {}

    public func validate() throws {
        try Self.validate(id: id)
        try ChangeOptions.refuseBlank(
            reason: reason, why: " the switch should stay on", example: "crashes from a test device farm")
    }

    public func run(console: Console) async throws {
        let (client, namespace) = try server.namespaceClient(console)
        let proposal = try await Self.proposal(id, namespace: namespace, client: client)
        let key = proposal.key
        let response: JSONValue
        do {
            response = try await client.send(
                "POST", APIClient.path("v1", "namespaces", namespace, "guard", "proposals", String(id), "dismiss"),
                body: ReasonRequest(reason: reason).sent
            ).json
        } catch let failure as APIFailure where failure.status == 409 {
            throw CommandFailure(
                "proposal \(id) is settled: \(key) is off \(GuardStatus.whereText(proposal.scope)) already; to turn it back on, '\(client.settings.command("enable \(key)"))'"
            )
        }
        if let rendered = outputOptions.render(response) {
            console.write(rendered)
            return
        }
        if try GuardDismissalBody(json: response).dismissed {
            console.write(
                "dismissed crash guard proposal \(id): \(key) stays on \(GuardStatus.whereText(proposal.scope)); the guard leaves it alone for its cool-down\n"
            )
        } else {
            console.write("proposal \(id) was dismissed already; nothing changed\n")
        }
    }

    /// Refuses an id that cannot be a proposal's.
    static func validate(id: Int64) throws {
        guard id > 0 else {
            throw ValidationError(
                "\(id) is not a proposal id; 'flagctl guard status' lists the open proposals with theirs.")
        }
    }

    /// A proposal of the last 8 days by id.
    static func proposal(_ id: Int64, namespace: String, client: APIClient) async throws -> GuardProposalBody {
        let tree = try await client.get(
            APIClient.path("v1", "namespaces", namespace, "guard", "proposals"), query: [("limit", "1000")])
        guard let proposal = try GuardProposalsBody(json: tree).proposals.first(where: { $0.id == id }) else {
            throw CommandFailure.notFound(
                "namespace '\(namespace)' has no crash guard proposal \(id) in the last 8 days ('flagctl guard status' lists the open ones)"
            )
        }
        return proposal
    }
}
