// Live plugin points' figures (release build): how long from a change arriving in the client to every live point
// settled, for the rider sample's 4 points and for 50 points, against references measured in the same run; and how
// many single-gate transitions the matrix checks per second, exhaustively for the sample (17 × 2^17).
//
//   swift run --package-path Benchmarks -c release plugin-figures                 # everything
//   swift run --package-path Benchmarks -c release plugin-figures settle 400      # settle figures, 400 changes each
//   swift run --package-path Benchmarks -c release plugin-figures transitions     # the exhaustive transition run
//
// Settle: a client holding a snapshot (bundled, no server), whose context flips between a rider and a rider in the
// `core_only` cohort, which the master kill switch covers: every plugin of every point is detached, then attached
// again, by each change. Time from just before `updateContext` (which builds the new state and publishes the
// change) to the end of the step that settled every point, on the main actor. References in the same run, the same
// way: a subscriber on the main actor that does nothing (the delivery floor), and one that routes every point
// afresh with `createPlugins`/`route` (what an app that re-routes on each change pays, without lifecycle).
import Foundation
import RiderApp
import SwitchyardCore
import SwitchyardClient
import SwitchyardMatrix
import SwitchyardPlugins

/// A live plugin that registers one resource, as a card or an overlay would.
final class Tile: LivePlugin {
    let name: String
    init(_ name: String) { self.name = name }

    func attach(to scope: PluginScope) throws {
        var shown = true
        scope.register(name) { shown = false }
        _ = shown
    }
}

/// 50 plugin points of 3 switches each (at 100 %), each with its group kill switch; the master kills the
/// `core_only` cohort.
enum Wide {
    static let pointCount = 50

    static func keys(_ point: Int) -> [String] { (0..<3).map { "plugin_switch_p\(point)_\($0)" } }

    static let flagSet: FlagSet = {
        var points: [PluginPointDefinition] = []
        var kills = [KillSwitch(key: KillSwitch.masterKey, entries: [Scope(cohorts: ["core_only"])])]
        var flags: [FlagDefinition] = []
        for point in 0..<pointCount {
            points.append(PluginPointDefinition(name: "point_\(point)", killSwitch: "kill_p\(point)", switches: keys(point)))
            kills.append(KillSwitch(key: "kill_p\(point)"))
            flags += keys(point).map { FlagDefinition(key: $0, kind: .pluginSwitch(PluginSwitchDefinition(rollout: .full))) }
        }
        return FlagSet(namespace: "wide", pluginPoints: points, killSwitches: kills, flags: flags)
    }()

    static func points(_ states: any SwitchStates) -> [PluginPoint<Int, any LivePlugin>] {
        (0..<pointCount).map { point in
            PluginPoint("point_\(point)", states: states, factories: keys(point).map { key in
                PluginFactoryOf<Int, any LivePlugin>(PluginSwitch(key)) { _ in Tile(key) }
            })
        }
    }
}

func makeClient(_ flagSet: FlagSet) -> FlagClient {
    var configuration = FlagClient.Configuration(serverURL: URL(string: "http://127.0.0.1:9")!, namespace: flagSet.namespace,
                                                 token: "unused", context: context(coreOnly: false))
    configuration.bundledSnapshot = SnapshotDocument.encode(Snapshot(epoch: "bench", version: 1, flagSet: flagSet))
    configuration.events.recordsExposures = false
    configuration.report = { _ in }
    return FlagClient(configuration: configuration)
}

func context(coreOnly: Bool) -> EvaluationContext {
    EvaluationContext(unitId: "rider-42", city: "lagos", cohorts: coreOnly ? ["core_only"] : [], appVersion: "5.12.0", platform: "ios")
}

/// What receives the client's changes on the main actor.
enum Mode: String, CaseIterable {
    case bare = "reference: bare subscriber"
    case reroute = "reference: re-route every point"
    case host = "plugin host"
}

/// The points of a setup, three ways.
@MainActor
protocol Setup {
    var name: String { get }
    var client: FlagClient { get }
    /// Routes every point afresh; returns how many plugins serve.
    func reroute() -> Int
    /// Adds the points to a host.
    func add(to host: PluginHost)
}

@MainActor
struct RiderSetup: Setup {
    let name = "rider sample, 4 points"
    let client: FlagClient
    let app: RiderApp

    init(flagSet: FlagSet) {
        client = makeClient(flagSet)
        app = RiderApp(states: client, experiments: client)
    }

    func reroute() -> Int {
        let scenario = TripScenario.standard()
        return app.preferencesHub.createPlugins(for: scenario.rider).count
            + (app.confirmationAddons.route(for: scenario.confirmation).isCoreFlow ? 0 : 1)
            + app.homeFeed.createPlugins(for: scenario.rider).count + app.mapLayers.createPlugins(for: scenario.mapScene).count
    }

    func add(to host: PluginHost) { _ = RiderLivePoints(app: app, scenario: .standard(), host: host) }
}

@MainActor
struct WideSetup: Setup {
    let name = "50 points, 3 plugins each"
    let client: FlagClient
    let points: [PluginPoint<Int, any LivePlugin>]

    init() {
        client = makeClient(Wide.flagSet)
        points = Wide.points(client)
    }

    func reroute() -> Int {
        points.enumerated().reduce(0) { total, point in
            total + (point.offset % 2 == 0 ? point.element.createPlugins(for: 0).count : (point.element.createPlugin(for: 0) == nil ? 0 : 1))
        }
    }

    func add(to host: PluginHost) {
        for (index, point) in points.enumerated() { host.add(point, input: 0, serving: index % 2 == 0 ? .everyEligible : .firstEligible) }
    }
}

/// Times `changes` context flips, each from just before `updateContext` to the end of its handling on the main actor.
@MainActor
func settle(_ setup: some Setup, mode: Mode, changes: Int) async -> [Double] {
    let (done, signal) = AsyncStream.makeStream(of: ContinuousClock.Instant.self)
    var iterator = done.makeAsyncIterator()
    let stream = setup.client.changes
    let host = PluginHost(states: setup.client)
    host.checksLeaks = false
    var served = 0
    let follower: Task<Void, Never>
    switch mode {
    case .bare:
        follower = Task { @MainActor in for await _ in stream { signal.yield(.now) } }
    case .reroute:
        follower = Task { @MainActor in
            for await _ in stream {
                served &+= setup.reroute()
                signal.yield(.now)
            }
        }
    case .host:
        setup.add(to: host)
        host.onStep = { step in if step.cause != "start" { signal.yield(.now) } }
        follower = Task { @MainActor in await host.run(changes: stream) }
    }
    // Let the follower subscribe and settle the first state.
    try? await Task.sleep(for: .milliseconds(50))
    var samples: [Double] = []
    var coreOnly = false
    for _ in 0..<changes {
        coreOnly.toggle()
        let start = ContinuousClock.now
        setup.client.updateContext(context(coreOnly: coreOnly))
        guard let end = await iterator.next() else { break }
        let elapsed = end - start
        samples.append(Double(elapsed.components.seconds) * 1e6 + Double(elapsed.components.attoseconds) / 1e12)
    }
    follower.cancel()
    if mode == .host { host.close() }
    if served < 0 { print(served) }
    return samples
}

func percentile(_ values: [Double], _ p: Double) -> Double {
    let sorted = values.sorted()
    return sorted.isEmpty ? .nan : sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]
}

func loadAverage() -> String {
    (try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8))?.split(separator: " ").prefix(3).joined(separator: " ") ?? "?"
}

@MainActor
func settleFigures(changes: Int) async throws {
    let riderFlags = try Matrix(flagFile: "Flags/rider.yaml").flagSet
    let setups: [any Setup] = [RiderSetup(flagSet: riderFlags), WideSetup()]
    print("settle: \(changes) changes per row, each detaching or attaching every plugin (master kill of the core_only cohort)")
    print("setup                       receiver                          p50 µs    p90 µs    max µs   p50 × bare")
    for setup in setups {
        var bare = Double.nan
        // Interleaved rounds, so a burst of load on the shared machine hits every mode alike.
        var samples: [Mode: [Double]] = [:]
        for _ in 0..<3 {
            for mode in Mode.allCases {
                samples[mode, default: []] += await settle(setup, mode: mode, changes: changes / 3)
            }
        }
        for mode in Mode.allCases {
            let values = samples[mode] ?? []
            let p50 = percentile(values, 0.5)
            if mode == .bare { bare = p50 }
            print(setup.name.padding(toLength: 28, withPad: " ", startingAt: 0) + mode.rawValue.padding(toLength: 32, withPad: " ", startingAt: 0)
                  + String(format: "  %8.1f  %8.1f  %8.1f  %8.1f×", p50, percentile(values, 0.9), values.max() ?? .nan, p50 / bare))
        }
    }
}

/// CPU time of this process, in seconds.
func cpuTime() -> Double {
    var spec = timespec()
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &spec)
    return Double(spec.tv_sec) + Double(spec.tv_nsec) / 1e9
}

/// The sample's matrix, exhaustively, with and without transitions: transitions per second, and the combination
/// run as the reference.
func transitionFigures() async throws {
    print("transitions: the rider sample's 2^17 combinations, its 4 points with both scenarios' inputs and both trips")
    print("run                           combinations  transitions   wall s    cpu s   transitions/s (cpu)   µs (cpu) per transition")
    var reference = Double.nan
    for transitions in [false, true] {
        var matrix = try Matrix(flagFile: "Flags/rider.yaml", options: Matrix.Options(isolation: .inProcess, transitions: transitions))
        let app = RiderApp(states: SwitchAssignment.allOff)
        let scenarios = TripScenario.all
        matrix.add(app.preferencesHub, inputs: scenarios.map(\.rider), serving: .everyEligible)
        matrix.add(app.confirmationAddons, inputs: scenarios.map(\.confirmation))
        matrix.add(app.homeFeed, inputs: scenarios.map(\.rider), serving: .everyEligible)
        matrix.add(app.mapLayers, inputs: scenarios.map(\.mapScene), serving: .everyEligible)
        for scenario in scenarios {
            matrix.flow("the \(scenario.name) trip completes") { combination in
                guard try RiderApp(states: combination.states).runTrip(scenario).completed else { throw FlowFailure("stopped") }
            }
        }
        let cpuStart = cpuTime()
        let report = await matrix.run(Matrix.RunSettings(environment: [:], progressBar: false))
        let cpu = cpuTime() - cpuStart
        guard report.passed else { throw FigureError(report.summary) }
        let wall = report.elapsed.seconds
        if !transitions {
            reference = cpu
            print("combinations only (reference)".padding(toLength: 30, withPad: " ", startingAt: 0)
                  + String(format: "%12llu  %11d  %7.2f  %7.2f", report.checked, 0, wall, cpu))
        } else {
            let extra = max(cpu - reference, 1e-9)
            print("with transitions".padding(toLength: 30, withPad: " ", startingAt: 0)
                  + String(format: "%12llu  %11llu  %7.2f  %7.2f  %20.0f  %8.2f", report.checked, report.transitionsChecked, wall, cpu,
                           Double(report.transitionsChecked) / cpu, extra / Double(report.transitionsChecked) * 1e6))
            print("  all \(report.transitionsChecked) single-gate transitions passed; the run costs \(String(format: "%.1f", cpu / reference))× the combinations alone")
        }
    }
}

extension Duration {
    var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}

struct FigureError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

let arguments = Array(CommandLine.arguments.dropFirst())
let what = arguments.first ?? "all"
let changes = arguments.count > 1 ? Int(arguments[1]) ?? 300 : 300
print("load before: \(loadAverage())  (\(ProcessInfo.processInfo.activeProcessorCount) cores)")
do {
    if what == "all" || what == "settle" { try await settleFigures(changes: changes) }
    if what == "all" || what == "transitions" { try await transitionFigures() }
} catch {
    print("error: \(error)")
    exit(1)
}
print("load after: \(loadAverage())")
