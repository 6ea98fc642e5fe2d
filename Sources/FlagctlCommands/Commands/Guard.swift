import Foundation
public import ArgumentParser
import SwitchyardCore

/// `flagctl guard status|trips|apply|dismiss`: what the crash guard sees, what it did, and its proposals.
public struct Guard: AsyncParsableCommand {
    public static let configuration = CommandConfiguration(
        abstract: "See what the crash guard sees (crash rates per plugin switch), what it turned off, and decide on its proposals.",
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
    static func percent(_ value: JSONValue?) -> String {
        guard case .number(let number)? = value, let fraction = number.doubleValue else { return "-" }
        let percent = fraction * 100
        let digits = percent == 0 ? 0 : percent >= 10 ? 1 : percent >= 1 ? 2 : 3
        var text = String(format: "%.\(digits)f", percent)
        while text.contains("."), text.hasSuffix("0") { text.removeLast() }
        if text.hasSuffix(".") { text.removeLast() }
        return text + "%"
    }

    /// The value unless it is missing or null.
    static func present(_ value: JSONValue?) -> JSONValue? {
        value == .null ? nil : value
    }

    /// `city lagos`, `cohort beta`, `everywhere`, from a scope tree.
    static func scopeText(_ scope: JSONValue?) -> String {
        let cities = scope?["cities"]?.arrayValue?.compactMap(\.stringValue) ?? []
        let cohorts = scope?["cohorts"]?.arrayValue?.compactMap(\.stringValue) ?? []
        var parts: [String] = []
        if !cities.isEmpty { parts.append((cities.count == 1 ? "city " : "cities ") + cities.joined(separator: ", ")) }
        if !cohorts.isEmpty { parts.append((cohorts.count == 1 ? "cohort " : "cohorts ") + cohorts.joined(separator: ", ")) }
        return parts.isEmpty ? "everywhere" : parts.joined(separator: " and ")
    }

    /// The evidence of a trip in a few lines, for `guard trips` and `enable`.
    static func evidenceLines(_ evidence: JSONValue?, indent: String = "  ") -> [String] {
        guard let evidence else { return [] }
        let confidence = evidence["confidence"].map { percent($0) } ?? "-"
        var lines = [
            "\(indent)crash rate \(percent(evidence["crash_rate"])) (\(evidence["crashes"]?.int64Value ?? 0) of \(evidence["sessions"]?.int64Value ?? 0) sessions) "
                + "\(scopeText(evidence["scope"]) == "everywhere" ? "everywhere" : "in " + scopeText(evidence["scope"])) over \(evidence["window"]?.stringValue ?? "?")",
            "\(indent)lower bound \(percent(evidence["lower_bound"])) at \(confidence) confidence > bound \(percent(evidence["bound"]))"
                + (present(evidence["baseline_rate"]) != nil ? " (\(percent(evidence["baseline_rate"])) without the switch)" : ""),
        ]
        if let leftOut = evidence["left_out"]?.arrayValue?.compactMap(\.stringValue), !leftOut.isEmpty {
            lines.append("\(indent)in the sessions without \(leftOut.joined(separator: ", ")) (shown to crash): the switch runs in nearly every session")
        }
        if let complement = present(evidence["complement"]) {
            lines.append("\(indent)elsewhere \(percent(complement["crash_rate"])) (\(complement["crashes"]?.int64Value ?? 0) of \(complement["sessions"]?.int64Value ?? 0) sessions)")
        }
        if let spread = spreadText(evidence) { lines.append(indent + spread) }
        return lines
    }

    /// `reported by clients: crashes from 300 units and 15 addresses`; nil when the evidence predates them.
    static func spreadText(_ tree: JSONValue) -> String? {
        guard let units = tree["units"]?.int64Value else { return nil }
        let source = tree["source"]?.stringValue == "reporter" ? "reporters" : "clients"
        var text = "reported by \(source): crashes from \(units) unit\(units == 1 ? "" : "s")"
        if let addresses = tree["addresses"]?.int64Value { text += " and \(addresses) source address\(addresses == 1 ? "" : "es")" }
        return text
    }

    /// Why the guard proposes, in words.
    static func proposedBecause(_ proposal: JSONValue) -> String {
        switch proposal["proposed_because"]?.stringValue {
        case "scoped_disables": "its scoped disables of this switch are at max_scoped_disables"
        default: "its budget of automatic disables (max_trips_per_hour) is spent"
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

    @Argument(help: ArgumentHelp("Only this plugin switch, with its cities and cohorts above the bound.", valueName: "key"))
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
            tree = try await APIClient(settings: settings).get(APIClient.path("v1", "namespaces", namespace, "guard"), query: query)
        } catch let failure as APIFailure where failure.status == 404 && key != nil {
            throw CommandFailure.notFound("namespace '\(namespace)' has no plugin switch '\(key!)' ('flagctl guard status' lists them)")
        }
        if let rendered = outputOptions.render(tree) {
            console.write(rendered)
            return
        }
        let switches = tree["switches"]?.arrayValue ?? []
        var table = Table("SWITCH", "STATE", "SESSIONS", "CRASHES", "RATE", "LOWER BOUND", "BOUND", "NOTE")
        for entry in switches {
            let state = entry["state"]?.stringValue ?? "?"
            let style: Style = switch state {
            case "tripped", "tripping": .red
            case "cooling_down", "disabled", "proposed": .yellow
            case "off": .dim
            default: .plain
            }
            table.add([
                .init(entry["key"]?.stringValue ?? "", .bold), .init(state, style),
                .init(String(entry["sessions"]?.int64Value ?? 0)), .init(String(entry["crashes"]?.int64Value ?? 0)),
                .init(Guard.percent(entry["crash_rate"])), .init(Guard.percent(entry["lower_bound"])), .init(Guard.percent(entry["bound"])),
                .init(Self.note(entry)),
            ])
        }
        console.write(table.render(colour: console.usesColour))
        var summary = KeyValueTable()
        if let budget = tree["budget"], let limit = budget["max_trips_per_hour"]?.int64Value {
            summary.add("trip budget", limit == 0 ? "none: the guard only proposes (max_trips_per_hour 0)"
                : "\(budget["trips_last_hour"]?.int64Value ?? 0) of \(limit) automatic disables used in the last hour")
        }
        for proposal in tree["proposals"]?.arrayValue ?? [] {
            let id = proposal["id"]?.int64Value ?? 0
            summary.add("proposal \(id)", "turn \(proposal["switch"]?.stringValue ?? "?") off \(Self.whereText(proposal["scope"])), proposed at "
                + "\(Audit.shortTime(proposal["time"]?.stringValue ?? "")) as \(Guard.proposedBecause(proposal)): "
                + "'flagctl guard apply \(id)' or 'flagctl guard dismiss \(id) --reason …'")
        }
        console.write("\n" + summary.text)
        guard key != nil, let entry = switches.first else { return }
        var details = KeyValueTable()
        details.add("window", "\(entry["window"]?.stringValue ?? "?") (from \(Audit.shortTime(entry["from"]?.stringValue ?? "")))")
        let policy = entry["policy"]
        details.add("threshold", "\(Guard.percent(entry["threshold"])) (max_crash_rate), at least \(policy?["min_sessions"]?.int64Value ?? 0) sessions and \(policy?["min_crashes"]?.int64Value ?? 0) crashes, \(Guard.percent(policy?["confidence"]?.int64Value.map { JSONValue.double(Double($0) / 10_000) })) confidence")
        if let baseline = Guard.present(entry["baseline_rate"]) {
            details.add("baseline", "\(Guard.percent(baseline)) without the switch × \(policy?["baseline_ratio"].map { $0.serializedString() } ?? "?")")
        }
        if let leftOut = entry["left_out"]?.arrayValue?.compactMap(\.stringValue), !leftOut.isEmpty {
            details.add("judged on", "the sessions without \(leftOut.joined(separator: ", ")) (shown to crash; it runs in nearly every session)")
        }
        if let units = entry["units"]?.int64Value {
            let source = entry["source"]?.stringValue == "reporter" ? "reporters'" : "clients'"
            var text = "from \(units) unit\(units == 1 ? "" : "s")"
            if let addresses = entry["addresses"]?.int64Value { text += " and \(addresses) source address\(addresses == 1 ? "" : "es")" }
            text += " (\(source) sessions); a trip needs \(policy?["min_units"]?.int64Value ?? 0) units"
            if entry["addresses"]?.int64Value != nil { text += " and \(policy?["min_addresses"]?.int64Value ?? 0) addresses" }
            details.add("crashes", text)
        }
        for scope in entry["scopes"]?.arrayValue ?? [] {
            details.add("above bound", "\(scope["kind"]?.stringValue ?? "") \(scope["value"]?.stringValue ?? ""): \(Guard.percent(scope["crash_rate"])) (\(scope["crashes"]?.int64Value ?? 0) of \(scope["sessions"]?.int64Value ?? 0) sessions), lower bound \(Guard.percent(scope["lower_bound"]))")
        }
        for trip in entry["open_trips"]?.arrayValue ?? [] {
            details.add("tripped", "\(Guard.scopeText(trip["scope"])) at \(Audit.shortTime(trip["time"]?.stringValue ?? "")) (version \(trip["version"]?.int64Value ?? 0)); 'flagctl enable \(entry["key"]?.stringValue ?? "")\(Self.scopeOptions(trip["scope"]))' turns it back on")
        }
        console.write("\n" + details.text)
    }

    /// What keeps a switch from tripping, or where it is off.
    static func note(_ entry: JSONValue) -> String {
        switch entry["state"]?.stringValue {
        case "tripped":
            let trips = entry["open_trips"]?.arrayValue ?? []
            return "off " + trips.map { "\(Guard.scopeText($0["scope"]) == "everywhere" ? "everywhere" : "in " + Guard.scopeText($0["scope"])) since version \($0["version"]?.int64Value ?? 0)" }
                .joined(separator: "; ")
        case "tripping":
            return "turning off \(entry["would_trip"]?["scope_text"]?.stringValue ?? "")"
        case "proposed":
            let ids = (entry["open_proposals"]?.arrayValue ?? []).compactMap(\.int64Value).map(String.init)
            return "proposal \(ids.joined(separator: ", ")) waits for a person"
        case "cooling_down":
            return "re-enabled; the guard waits until \(Audit.shortTime(entry["cooling_down_until"]?.stringValue ?? ""))"
        case "disabled":
            return "disabled by a person"
        case "off":
            return "crash_guard.enabled: false"
        default:
            return entry["shortfall"]?.arrayValue?.first?.stringValue ?? ""
        }
    }

    /// `everywhere`, `in city lagos`.
    static func whereText(_ scope: JSONValue?) -> String {
        let text = Guard.scopeText(scope)
        return text == "everywhere" ? text : "in " + text
    }

    /// ` --city lagos` for a scope tree.
    static func scopeOptions(_ scope: JSONValue?) -> String {
        let cities = scope?["cities"]?.arrayValue?.compactMap(\.stringValue) ?? []
        let cohorts = scope?["cohorts"]?.arrayValue?.compactMap(\.stringValue) ?? []
        return cities.map { " --city \($0)" }.joined() + cohorts.map { " --cohort \($0)" }.joined()
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
        let tree = try await APIClient(settings: settings).get(APIClient.path("v1", "namespaces", namespace, "guard", "trips"), query: query)
        if let rendered = outputOptions.render(tree) {
            console.write(rendered)
            return
        }
        let trips = tree["trips"]?.arrayValue ?? []
        guard !trips.isEmpty else {
            console.write("the crash guard has turned nothing off in namespace \(namespace)\(key.map { " for \($0)" } ?? "") in the last 8 days\n")
            return
        }
        var text = ""
        for trip in trips {
            let scope = Guard.scopeText(trip["scope"])
            var status: String
            if let reenabled = Guard.present(trip["reenabled"]) {
                status = reenabled["deleted"]?.boolValue == true ? "deleted" : "re-enabled"
                status += " by \(reenabled["actor"]?.stringValue ?? "?") at \(Audit.shortTime(reenabled["time"]?.stringValue ?? "")) (version \(reenabled["version"]?.int64Value ?? 0))"
            } else {
                status = trip["in_force"]?.boolValue == true ? "in force" : "no longer in force"
            }
            let style: Style = status == "in force" ? .red : .dim
            text += "\(Style.dim.apply(Audit.shortTime(trip["time"]?.stringValue ?? ""), colour: console.usesColour))  version \(trip["version"]?.int64Value ?? 0)  "
                + "\(Style.bold.apply(trip["switch"]?.stringValue ?? "", colour: console.usesColour)) off \(scope == "everywhere" ? "everywhere" : "in " + scope): "
                + style.apply(status, colour: console.usesColour) + "\n"
            text += Guard.evidenceLines(trip["evidence"]).joined(separator: "\n") + "\n"
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
    @Option(help: ArgumentHelp("Why: recorded in the audit log (default: 'applied crash guard proposal <id>').", valueName: "text"))
    public var reason: String?
    @Flag(name: [.customShort("y"), .long], help: "Do not ask for confirmation (needed when not on a terminal).")
    public var yes = false
    @OptionGroup public var server: ServerOptions
    @OptionGroup public var outputOptions: OutputOptions

    public init() {}

    public func validate() throws {
        try GuardDismiss.validate(id: id)
        if let reason, reason.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty {
            throw ValidationError("--reason is empty. Say why, e.g. --reason \"INC-4510: map layer crashes on 5.14\", or leave it out.")
        }
    }

    public func run(console: Console) async throws {
        let settings = try server.settings(console)
        let namespace = try settings.requireNamespace()
        let client = APIClient(settings: settings)
        let proposal = try await GuardDismiss.proposal(id, namespace: namespace, client: client)
        let key = proposal["switch"]?.stringValue ?? "?"
        let scope = GuardStatus.whereText(proposal["scope"])
        if proposal["state"]?.stringValue == "dismissed" {
            throw CommandFailure("proposal \(id) was dismissed by \(proposal["dismissed"]?["actor"]?.stringValue ?? "someone"); to turn \(key) off anyway, 'flagctl disable \(key)'")
        }
        try await Confirmation.confirm(
            "Turn \(key) off \(scope) (namespace \(namespace))?", action: "apply proposal \(id)",
            preview: ["the crash guard proposes turning \(key) off \(scope), as \(Guard.proposedBecause(proposal)):"]
                + Guard.evidenceLines(proposal["evidence"]),
            yes: yes, console: console)
        var body = JSONObject()
        if let reason = reason?.trimmingCharacters(in: .whitespacesAndNewlines) { body["reason"] = .string(reason) }
        let response = try await client.send("POST", APIClient.path("v1", "namespaces", namespace, "guard", "proposals", String(id), "apply"),
                                             body: .object(body)).json
        if let rendered = outputOptions.render(response) {
            console.write(rendered)
            return
        }
        let version = response["version"]?.int64Value ?? 0
        if response["changed"]?.boolValue == true {
            console.write("applied crash guard proposal \(id): turned \(key) off \(scope) (namespace \(namespace) is at version \(version))\n")
        } else {
            console.write("\(key) was off \(scope) already; nothing changed (namespace \(namespace) is at version \(version))\n")
        }
    }
}

/// `flagctl guard dismiss ID --reason …`
public struct GuardDismiss: FlagctlCommand {
    public static let configuration = CommandConfiguration(
        commandName: "dismiss",
        abstract: "Dismiss a crash guard proposal: the switch stays on, and the guard leaves it alone for its cool-down.",
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
    @Option(help: ArgumentHelp("Why the switch should stay on: recorded in the audit log (required).", valueName: "text"))
    public var reason: String
    @OptionGroup public var server: ServerOptions
    @OptionGroup public var outputOptions: OutputOptions

    public init() {}

    public func validate() throws {
        try Self.validate(id: id)
        guard !reason.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty else {
            throw ValidationError("--reason is empty. Say why the switch should stay on, e.g. --reason \"crashes from a test device farm\".")
        }
    }

    public func run(console: Console) async throws {
        let settings = try server.settings(console)
        let namespace = try settings.requireNamespace()
        let client = APIClient(settings: settings)
        let proposal = try await Self.proposal(id, namespace: namespace, client: client)
        let key = proposal["switch"]?.stringValue ?? "?"
        let response: JSONValue
        do {
            response = try await client.send("POST", APIClient.path("v1", "namespaces", namespace, "guard", "proposals", String(id), "dismiss"),
                                              body: .object(JSONObject([("reason", .string(reason))]))).json
        } catch let failure as APIFailure where failure.status == 409 {
            throw CommandFailure("proposal \(id) is settled: \(key) is off \(GuardStatus.whereText(proposal["scope"])) already; to turn it back on, 'flagctl enable \(key)'")
        }
        if let rendered = outputOptions.render(response) {
            console.write(rendered)
            return
        }
        if response["dismissed"]?.boolValue == true {
            console.write("dismissed crash guard proposal \(id): \(key) stays on \(GuardStatus.whereText(proposal["scope"])); the guard leaves it alone for its cool-down\n")
        } else {
            console.write("proposal \(id) was dismissed already; nothing changed\n")
        }
    }

    /// Refuses an id that cannot be a proposal's.
    static func validate(id: Int64) throws {
        guard id > 0 else { throw ValidationError("\(id) is not a proposal id; 'flagctl guard status' lists the open proposals with theirs.") }
    }

    /// A proposal of the last 8 days by id.
    static func proposal(_ id: Int64, namespace: String, client: APIClient) async throws -> JSONValue {
        let tree = try await client.get(APIClient.path("v1", "namespaces", namespace, "guard", "proposals"), query: [("limit", "1000")])
        guard let proposal = tree["proposals"]?.arrayValue?.first(where: { $0["id"]?.int64Value == id }) else {
            throw CommandFailure.notFound("namespace '\(namespace)' has no crash guard proposal \(id) in the last 8 days ('flagctl guard status' lists the open ones)")
        }
        return proposal
    }
}
