import Foundation
public import ArgumentParser
import SwitchyardCore

/// `flagctl guard status|trips`: what the crash guard sees and what it did.
public struct Guard: AsyncParsableCommand {
    public static let configuration = CommandConfiguration(
        abstract: "See what the crash guard sees (crash rates per plugin switch) and the switches it turned off.",
        discussion: """
            When clients report that sessions with a plugin switch active crash too often, flagsd turns the switch \
            off by itself: in the city or cohort where the crashes concentrate, else everywhere. It trips when the \
            Wilson lower bound of the crash rate is above the bound (max_crash_rate, or baseline_ratio times the \
            crash rate of sessions without the switch). A tripped switch stays off until a person enables it \
            ('flagctl enable' shows the evidence and asks). Policies live in the flag file (crash_guard:).

            Examples:

              flagctl guard status
              flagctl guard status plugin_switch_feed_promos
              flagctl guard trips --since 7d
              flagctl audit --source crash-guard
            """,
        subcommands: [GuardStatus.self, GuardTrips.self]
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
        if let complement = present(evidence["complement"]) {
            lines.append("\(indent)elsewhere \(percent(complement["crash_rate"])) (\(complement["crashes"]?.int64Value ?? 0) of \(complement["sessions"]?.int64Value ?? 0) sessions)")
        }
        return lines
    }
}

/// `flagctl guard status [KEY]`
public struct GuardStatus: FlagctlCommand {
    public static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Per plugin switch: sessions, crashes, crash rate, lower bound, bound and state.",
        discussion: """
            Counts cover each switch's window (crash_guard.window, 10m by default), from the last time a person \
            re-enabled it if later. States: watching; tripping (the guard is turning it off now); tripped (off by \
            the guard until a person enables it); disabled (off by a person); cooling_down (re-enabled; the \
            guard waits for the cool-down); off (the policy turns the guard off for it). NOTE says what keeps a \
            switch from tripping, or where it is off.

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
            case "cooling_down", "disabled": .yellow
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
        guard key != nil, let entry = switches.first else { return }
        var details = KeyValueTable()
        details.add("window", "\(entry["window"]?.stringValue ?? "?") (from \(Audit.shortTime(entry["from"]?.stringValue ?? "")))")
        let policy = entry["policy"]
        details.add("threshold", "\(Guard.percent(entry["threshold"])) (max_crash_rate), at least \(policy?["min_sessions"]?.int64Value ?? 0) sessions and \(policy?["min_crashes"]?.int64Value ?? 0) crashes, \(Guard.percent(policy?["confidence"]?.int64Value.map { JSONValue.double(Double($0) / 10_000) })) confidence")
        if let baseline = Guard.present(entry["baseline_rate"]) {
            details.add("baseline", "\(Guard.percent(baseline)) without the switch × \(policy?["baseline_ratio"].map { $0.serializedString() } ?? "?")")
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
