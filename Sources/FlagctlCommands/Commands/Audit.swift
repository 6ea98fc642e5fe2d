public import ArgumentParser
import Foundation
import SwitchyardCore
import SwitchyardWire

/// `flagctl audit [KEY] [--since T] [--actor A]`: who changed what, when and why, newest first.
public struct Audit: FlagctlCommand {
    public static let configuration = CommandConfiguration(
        abstract: "Read the audit log: who changed what, when, through what and why, newest first.",
        discussion: """
            Every change is in the audit log: flag changes (with the namespace version they took), namespace \
            and token changes, whether made with flagctl (source cli), flagctl apply (apply), the API (api), \
            the web console (console), the crash guard (crash-guard) or a release plan's runner (release-plan).

            --since and --until take an RFC 3339 time (2026-11-22T10:00:00Z), a date (2026-11-22, midnight \
            UTC) or a duration back from now (30m, 2h, 7d).

            Examples:

              flagctl audit
              flagctl audit plugin_switch_feed_promos --since 24h
              flagctl audit --actor amara --source cli
              flagctl audit --all-namespaces --since 2026-11-01 -o json

            -o json gives {"entries": [{"id", "time", "actor", "source", "action", "namespace", "version", \
            "reason", "summary", "changes": [{"kind", "key", "before", "after"}]}], "next_cursor"}.

            Exit status: 0 ok, 1 failure, 5 token refused (reading the audit log needs the editor role), 64 usage.
            """
    )

    @Argument(
        help: ArgumentHelp("Only entries touching this flag, kill switch, plugin point or token.", valueName: "key"))
    public var key: String?
    @Option(
        help: ArgumentHelp(
            "Only entries at or after this time (RFC 3339, a date, or 30m / 2h / 7d ago).", valueName: "time"))
    public var since: String?
    @Option(help: ArgumentHelp("Only entries before this time.", valueName: "time"))
    public var until: String?
    @Option(
        help: ArgumentHelp(
            "Only changes by this actor (a token's name, crash-guard or release-plan).", valueName: "actor"))
    public var actor: String?
    @Option(
        help: ArgumentHelp(
            "Only changes made through api, cli, console, apply, crash-guard or release-plan.", valueName: "source"))
    public var source: String?
    @Option(help: ArgumentHelp("At most this many entries (1 to 1000).", valueName: "n"))
    public var limit = 50
    @Flag(help: "Entries of every namespace your token may read, not only the current namespace.")
    public var allNamespaces = false
    @OptionGroup public var server: ServerOptions
    @OptionGroup public var outputOptions: OutputOptions

    public init() {}

    public func validate() throws {
        for (name, value) in [("--since", since), ("--until", until)] {
            if let value, Self.time(value, now: Date()) == nil {
                throw ValidationError(
                    "\(name) '\(value)' is not a time. Pass an RFC 3339 time (2026-11-22T10:00:00Z), a date (2026-11-22) or a duration back from now (30m, 2h, 7d)."
                )
            }
        }
        guard (1...1000).contains(limit) else { throw ValidationError("--limit \(limit) is not between 1 and 1000.") }
        if let source, !AuditEntryBody.sources.contains(source) {
            throw ValidationError(
                "--source '\(source)' is not a source; pass \(AuditEntryBody.sources.dropLast().joined(separator: ", ")) or \(AuditEntryBody.sources.last!)."
            )
        }
    }

    /// An RFC 3339 time, a date, or a duration back from `now`, as RFC 3339 text.
    static func time(_ text: String, now: Date) -> String? {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        if let unit = trimmed.last, let amount = Int(trimmed.dropLast()), amount >= 0 {
            let seconds: Int? =
                switch unit {
                case "s": amount
                case "m": amount * 60
                case "h": amount * 3600
                case "d": amount * 86400
                case "w": amount * 7 * 86400
                default: nil
                }
            if let seconds { return now.addingTimeInterval(-Double(seconds)).formatted(Date.ISO8601FormatStyle()) }
        }
        if (try? Date(trimmed, strategy: Date.ISO8601FormatStyle(includingFractionalSeconds: true))) != nil
            || (try? Date(trimmed, strategy: Date.ISO8601FormatStyle())) != nil
        {
            return trimmed
        }
        if trimmed.count == 10, (try? Date(trimmed + "T00:00:00Z", strategy: Date.ISO8601FormatStyle())) != nil {
            return trimmed + "T00:00:00Z"
        }
        return nil
    }

    /// `2026-11-22T10:02:11Z` from the server's `2026-11-22T10:02:11.123Z`.
    static func shortTime(_ text: String) -> String {
        guard let dot = text.firstIndex(of: "."), text.hasSuffix("Z") else { return text }
        return String(text[..<dot]) + "Z"
    }

    public func run(console: Console) async throws {
        let settings = try server.settings(console)
        let client = APIClient(settings: settings)
        var query: [(String, String)] = [("limit", String(limit))]
        if !allNamespaces, let namespace = settings.namespace { query.append(("namespace", namespace)) }
        if let key { query.append(("flag", key)) }
        if let actor { query.append(("actor", actor)) }
        if let source { query.append(("source", source)) }
        let now = Date()
        if let since, let time = Self.time(since, now: now) { query.append(("since", time)) }
        if let until, let time = Self.time(until, now: now) { query.append(("until", time)) }
        let page = try await client.get(APIClient.path("v1", "audit"), query: query)
        if let rendered = outputOptions.render(page) {
            console.write(rendered)
            return
        }
        let read = try AuditPageBody(json: page)
        let entries = read.entries
        guard !entries.isEmpty else {
            console.write(
                "no audit entries match\(key.map { " for \($0)" } ?? "")\(settings.namespace.map { allNamespaces ? "" : " in namespace \($0)" } ?? "")\n"
            )
            return
        }
        var table =
            allNamespaces || settings.namespace == nil
            ? Table("TIME", "NAMESPACE", "VERSION", "ACTOR", "SOURCE", "WHAT", "REASON")
            : Table("TIME", "VERSION", "ACTOR", "SOURCE", "WHAT", "REASON")
        for entry in entries {
            var cells: [Table.Cell] = [.init(Self.shortTime(entry.time), .dim)]
            if allNamespaces || settings.namespace == nil { cells.append(.init(entry.namespace ?? "-")) }
            cells += [
                .init(entry.version.map(String.init) ?? "-"),
                .init(entry.actor, .bold),
                .init(
                    entry.source, entry.source == "crash-guard" ? .red : entry.source == "release-plan" ? .bold : .plain
                ),
                .init(entry.summary),
                .init(entry.reason ?? "-"),
            ]
            table.add(cells)
        }
        console.write(table)
        if read.nextCursor != nil {
            console.writeError("note: older entries exist; raise --limit (up to 1000) or narrow with --since/--until\n")
        }
    }
}
