import ArgumentParser
import Foundation
import RiderApp
import SwitchyardPlugins

/// `rider-sample`: the sample rider app against a live flagsd.
@main
struct RiderSample: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rider-sample",
        abstract:
            "The sample rider app: a core trip flow and the plugin points of Flags/rider.yaml, following flagsd live.",
        discussion: """
            Connects to flagsd as one rider (a unit in a city and cohorts), prints which plugin serves each plugin \
            point (or 'core flow'), runs a trip through the core flow (request → confirm → dispatch → on trip → \
            complete), and re-routes whenever a switch flips, until Ctrl-C. The four points are held live: each \
            change prints the attach and detach calls of their plugins (a kill detaches all of them at once), then \
            how long the points took to settle.

            Start a server and get a client token first:
              swift run flagsd        # prints an admin token on first start
              export FLAGCTL_SERVER=http://127.0.0.1:8080
              export FLAGCTL_TOKEN=<the admin token>
              export SWITCHYARD_TOKEN=$(flagctl tokens create rider-sample \\
                  --role client --allow rider)

            Follow the server live as a rider in Lagos, then flip a switch in \
            another terminal; the sample re-routes home_feed at once:
              rider-sample --unit rider-42 --city lagos
              flagctl disable plugin_switch_feed_promos -n rider --reason demo

            One assignment as JSON, for scripts:
              rider-sample --once -o json | jq .points

            Crash in a plugin (exit status 134, session left open); the next \
            launch reports the crash to flagsd, and after 3 crashes in a row \
            the on-device crash-loop guard holds the switch off:
              rider-sample --crash-in plugin_switch_feed_promos

            The launch trip books: the core flow reports the outcomes trip_booked, trips, fare (what the rider \
            pays) and time_to_book (seconds since the launch) through FlagClient.track, attributed to the \
            rider's plugin switches, variants and rollout splits; re-routes after a change book nothing.

            The sample keeps its state (last known good snapshot, session record, crash-loop guard, queued events) \
            in --state-dir, so a second launch starts from the cached snapshot even with the server down, and \
            reports the previous session (crashed or not) to flagsd. Launches may share --state-dir while one \
            runs: each keeps its own session record under a lock, and a session still running is never reported.
            """)

    @Option(
        help: ArgumentHelp("The flagsd URL (or SWITCHYARD_SERVER; default http://127.0.0.1:8080).", valueName: "url"))
    var server: String?

    @Option(
        help: ArgumentHelp(
            "A client-role token (or SWITCHYARD_TOKEN, which keeps it out of the process list).", valueName: "token"))
    var token: String?

    @Option(name: [.customShort("n"), .long], help: ArgumentHelp("The namespace to follow.", valueName: "ns"))
    var namespace = "rider"

    @Option(help: ArgumentHelp("The rider's unit id (the bucketing key).", valueName: "id"))
    var unit = "rider-42"

    @Option(help: ArgumentHelp("The rider's city, e.g. lagos, paris, nairobi.", valueName: "city"))
    var city: String?

    @Option(help: ArgumentHelp("A cohort of the rider, e.g. beta (repeatable).", valueName: "cohort"))
    var cohort: [String] = []

    @Option(help: ArgumentHelp("The app version, for version rules.", valueName: "semver"))
    var appVersion = "5.12.0"

    @Option(help: ArgumentHelp("The platform, for platform rules.", valueName: "name"))
    var platform = "ios"

    @Option(
        help: ArgumentHelp(
            "Where the client keeps its files (default: .switchyard/rider-sample/<namespace>-<unit>).", valueName: "dir"
        ))
    var stateDir: String?

    @Flag(help: "Print the assignment once, as soon as the server answered (or failed to), and exit.")
    var once = false

    @Option(
        help: ArgumentHelp(
            "How long to wait for the server, in seconds: the deadline of each request (beyond a long-poll's wait), and with --once, of the wait for the server's snapshot, then for queued events to be sent. Raise it on a slow machine or network.",
            valueName: "seconds"))
    var timeout: Double = 15

    @Option(
        name: [.customShort("o"), .long],
        help: ArgumentHelp("Output format: text, or json (one JSON object per line).", valueName: "format"))
    var output: OutputFormat = .text

    @Option(
        help: ArgumentHelp(
            "Simulate a crash when the plugin behind this switch is used (the process exits with status 134 without ending its session).",
            valueName: "switch"))
    var crashIn: String?

    @Option(
        help: ArgumentHelp(
            "Make the factory of this switch throw (repeatable): the plugin point skips it.", valueName: "switch"))
    var failFactory: [String] = []

    func validate() throws {
        for key in [crashIn].compactMap({ $0 }) + failFactory where RiderSwitches.named(key) == nil {
            throw ValidationError(
                "'\(key)' is not a plugin switch of the rider app. Pick one of: \(RiderSwitches.all.map(\.key).joined(separator: ", "))."
            )
        }
        guard timeout > 0 else { throw ValidationError("--timeout must be more than 0 seconds, e.g. --timeout 10.") }
        guard !unit.isEmpty else { throw ValidationError("--unit is empty. Pass a unit id, e.g. --unit rider-42.") }
        let serverText = serverText
        guard let url = URL(string: serverText), ["http", "https"].contains(url.scheme?.lowercased() ?? ""),
            url.host?.isEmpty == false
        else {
            throw ValidationError("'\(serverText)' is not a server URL. Pass one like --server http://127.0.0.1:8080.")
        }
        guard !tokenText.isEmpty else {
            throw ValidationError(
                "No token. Pass a client token with --token, or set SWITCHYARD_TOKEN (create one with 'flagctl tokens create rider-sample --role client --allow \(namespace)')."
            )
        }
    }

    private var serverText: String {
        server ?? ProcessInfo.processInfo.environment["SWITCHYARD_SERVER"] ?? "http://127.0.0.1:8080"
    }

    private var tokenText: String {
        token ?? ProcessInfo.processInfo.environment["SWITCHYARD_TOKEN"] ?? ""
    }

    func run() async throws {
        var trimmed = serverText
        while trimmed.hasSuffix("/") { trimmed.removeLast() }
        let settings = SampleSettings(
            server: URL(string: trimmed)!, token: tokenText, namespace: namespace,
            context: EvaluationContext(
                unitId: unit, city: city, cohorts: cohort, appVersion: appVersion, platform: platform),
            directory: URL(fileURLWithPath: stateDir ?? ".switchyard/rider-sample/\(namespace)-\(unit)"),
            faults: Faults(crashIn: Set([crashIn].compactMap { $0 }), failingFactories: Set(failFactory)),
            output: output, once: once, timeout: .milliseconds(Int64(timeout * 1000)))
        let status = await SampleRunner(settings).run()
        if status != 0 { throw ExitCode(status) }
    }
}

enum OutputFormat: String, ExpressibleByArgument, CaseIterable, Sendable {
    case text, json
}
