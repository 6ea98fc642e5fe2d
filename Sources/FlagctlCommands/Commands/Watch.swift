public import ArgumentParser
import Foundation
import SwitchyardCore
import SwitchyardWire
import Synchronization

/// `flagctl watch [KEY]`: follows a namespace's change feed and prints each change as it lands.
public struct Watch: FlagctlCommand {
    public static let configuration = CommandConfiguration(
        abstract: "Follow a namespace's changes live: version, flag, actor, reason and what changed, as each lands.",
        discussion: """
            Long-polls the change feed (GET /v1/namespaces/NS/changes?after=V&wait=30) and prints every change \
            after the current version as soon as it is committed, whoever made it (flagctl, the API, the \
            console, apply, or the crash guard). With KEY, only changes touching that flag or kill switch. \
            --from-version V first prints the changes after V. Ctrl-C stops it (exit status 0). A lost \
            connection is retried with backoff.

            Examples:

              flagctl watch
              flagctl watch plugin_switch_feed_promos
              flagctl watch --from-version 10 --count 3
              flagctl watch -o json | jq .summary

            Each change is printed as:

              version 14  2026-11-22T10:02:11Z  amara (cli)  kill the master kill switch in cities lagos
                reason: INC-4411: crash loop after 5.14 in Lagos
                kill switch master: entries [cohorts core_only] → [cohorts core_only; cities lagos]

            -o json prints one JSON object per line (version, time, actor, source, reason, summary, changes); \
            -o yaml one YAML document per change. With a client token (which ships in apps, so anyone may hold \
            one) flagsd shows only what snapshots show: the version, the time and what changed, without who, why \
            or the crash guard's and release plans' settings; use an editor token to see them.

            Exit status: 0 on Ctrl-C or after --count changes, 1 failure, 4 the namespace does not exist (or was \
            deleted), 5 token refused, 64 usage.
            """
    )

    @Argument(help: ArgumentHelp("Only changes touching this flag or kill switch.", valueName: "key"))
    public var key: String?
    @Option(help: ArgumentHelp("Start after this version (default: the current one).", valueName: "version"))
    public var fromVersion: Int64?
    @Option(help: ArgumentHelp("Stop after this many changes.", valueName: "n"))
    public var count: Int?
    @Option(
        help: ArgumentHelp(
            "Seconds each long-poll waits on the server (1 to 300; the server may cap it).", valueName: "seconds"))
    public var wait = 30
    @OptionGroup public var server: ServerOptions
    @OptionGroup public var outputOptions: OutputOptions

    public init() {}

    public func validate() throws {
        if let count, count < 1 { throw ValidationError("--count \(count) must be 1 or more.") }
        if let fromVersion, fromVersion < 0 {
            throw ValidationError("--from-version \(fromVersion) must be 0 or more.")
        }
        guard (1...300).contains(wait) else {
            throw ValidationError("--wait \(wait) must be between 1 and 300 seconds.")
        }
    }

    public func run(console: Console) async throws {
        let settings = try server.settings(console)
        let namespace = try settings.requireNamespace()
        // Its own session: the long-poll must never queue other requests behind it.
        let client = APIClient(settings: settings, timeout: TimeInterval(wait + 30))
        let interrupted = Mutex(false)
        let subscription = console.onInterrupt {
            interrupted.withLock { $0 = true }
            client.cancelAll()
        }
        defer { subscription.cancel() }

        var after: Int64
        do {
            if let fromVersion {
                after = fromVersion
            } else {
                // The feed's envelope carries the current version; a client token may read it.
                after = try ChangePageBody(
                    json: try await client.get(
                        APIClient.path("v1", "namespaces", namespace, "changes"),
                        query: [("after", "0"), ("limit", "1")])
                ).version
            }
        } catch let failure as APIFailure where failure.status == 404 {
            throw client.namespaceNotFound(namespace)
        } catch {
            if interrupted.withLock({ $0 }) { return }
            throw error
        }
        if outputOptions.output == .table {
            console.writeError(
                "watching namespace \(namespace)\(key.map { " for \($0)" } ?? "") after version \(after) on \(settings.serverText); Ctrl-C stops\n"
            )
        }
        var printed = 0
        var epoch: String?
        var failures = 0
        while !interrupted.withLock({ $0 }) {
            let page: ChangePageBody
            do {
                page = try ChangePageBody(
                    json: try await client.get(
                        APIClient.path("v1", "namespaces", namespace, "changes"),
                        query: [("after", String(after)), ("wait", String(wait))]))
                failures = 0
            } catch let failure as APIFailure where failure.status == 404 {
                throw CommandFailure.notFound(
                    "namespace '\(namespace)' does not exist (any more) on \(settings.serverText); 'flagctl namespaces list' shows the namespaces"
                )
            } catch let failure as APIFailure where failure.status == 401 || failure.status == 403 {
                throw failure.commandFailure
            } catch {
                if interrupted.withLock({ $0 }) { break }
                failures += 1
                // Exponential backoff with jitter, never sooner than the service's Retry-After.
                let backoff = Double(min(30, 1 << min(failures, 5))) * Double.random(in: 0.5...1.0)
                let delay = max(backoff, Double((error as? APIFailure)?.retryAfter ?? 0))
                console.writeError(
                    "lost the change feed (\(Self.reason(error))); retrying in \(Int(delay.rounded(.up))) s\n")
                // In short steps, so Ctrl-C during the wait ends it at once.
                let until = ContinuousClock.now + .seconds(delay)
                while ContinuousClock.now < until, !interrupted.withLock({ $0 }) {
                    try? await Task.sleep(for: .milliseconds(100))
                }
                continue
            }
            if let known = epoch, known != page.epoch {
                console.writeError(
                    "namespace \(namespace) was deleted and created again; following the new one from its start\n")
                after = 0
                epoch = page.epoch
                continue
            }
            epoch = page.epoch
            for (entry, json) in Self.entries(page) {
                after = max(after, entry.version)
                if let key, !entry.objects.contains(where: { $0.key == key }) { continue }
                console.write(render(entry, as: json, colour: console.usesColour))
                printed += 1
                if let count, printed >= count { return }
            }
            after = max(after, page.nextAfter)
        }
    }

    private static func reason(_ error: any Error) -> String {
        switch error {
        case let failure as CommandFailure: failure.message
        case let failure as APIFailure: "HTTP \(failure.status): \(failure.detail)"
        default: "\(error)"
        }
    }

    /// The changes of a page with their JSON: whole entries, or what a client token reads of them (version, time and
    /// what changed: no actor, source, reason or summary), read as entries whose actor is empty.
    static func entries(_ page: ChangePageBody) -> [(ChangeEntry, JSONValue)] {
        switch page.changes {
        case .full(let entries):
            return entries.map { ($0, $0.json) }
        case .client(let entries):
            return entries.map { client in
                var entry = ChangeEntry(
                    version: client.version, time: client.time, actor: "", source: "", reason: nil, summary: "",
                    changes: client.changes, evidence: nil)
                entry.summary = entry.objects.map { "\($0.kind.replacingOccurrences(of: "_", with: " ")) \($0.key)" }
                    .joined(separator: ", ")
                return (entry, client.json)
            }
        }
    }

    /// One change, in the chosen format (JSON and YAML as the feed sent it).
    func render(_ entry: ChangeEntry, as json: JSONValue, colour: Bool) -> String {
        switch outputOptions.output {
        case .json: return json.serializedString(.canonical) + "\n"
        case .yaml: return "---\n" + (outputOptions.render(json) ?? "")
        case .table: return Self.text(entry, colour: colour)
        }
    }

    /// The most lines of field changes shown per change.
    static let maximumLines = 8

    /// `version 14  TIME  actor (source)  summary`, the reason, and a line per field changed.
    static func text(_ entry: ChangeEntry, colour: Bool) -> String {
        let style: Style = entry.source == "crash-guard" ? .red : .plain
        // A client token's view has no actor: the objects touched stand in for the summary.
        let source = entry.actor.isEmpty ? "" : style.apply("\(entry.actor) (\(entry.source))", colour: colour) + "  "
        var text =
            "\(Style.bold.apply("version \(entry.version)", colour: colour))  \(Audit.shortTime(entry.time))  \(source)\(entry.summary)\n"
        if let reason = entry.reason { text += "  reason: \(reason)\n" }
        let lines = entry.objects.flatMap(ObjectDiff.lines)
        for line in lines.prefix(maximumLines) { text += "  \(line)\n" }
        if lines.count > maximumLines {
            text += "  ... and \(lines.count - maximumLines) more (-o json shows every field)\n"
        }
        return text
    }
}
