// The combination matrix's figures, self-timed (release build): how many combinations the kit checks per second,
// against a reference measured in the same run, and the sample's full matrix time.
//
//   swift run --package-path Benchmarks -c release matrix-figures            # every figure, 3 runs each
//   swift run --package-path Benchmarks -c release matrix-figures rider 5    # one figure, 5 runs
//
// Figures: reference (effective switch states of every combination of a 20-gate namespace, each switch read once:
// the floor any matrix pays), kit (the same 2^20 combinations through four PluginPoints, checked by the kit),
// kit+flow (plus a flow that builds the app's points and routes them), rider-points and rider (the sample app's
// 2^17 combinations: its four points with both scenarios' inputs, then also both trips end to end).
import Foundation
import RiderApp
import SwitchyardCore
import SwitchyardMatrix
import SwitchyardPlugins

/// A 20-gate namespace: four points (4, 4, 4 and 3 switches), each with its group kill switch, and the master.
enum Wide {
    static let switchCounts = [4, 4, 4, 3]

    static func keys(_ point: Int) -> [String] {
        (0..<switchCounts[point]).map { "plugin_switch_w\(point)_\($0)" }
    }

    static let flagSet: FlagSet = {
        var points: [PluginPointDefinition] = []
        var kills = [KillSwitch(key: KillSwitch.masterKey)]
        var flags: [FlagDefinition] = []
        for point in switchCounts.indices {
            points.append(PluginPointDefinition(name: "point_\(point)", killSwitch: "kill_w\(point)", switches: keys(point)))
            kills.append(KillSwitch(key: "kill_w\(point)"))
            flags += keys(point).map { FlagDefinition(key: $0, kind: .pluginSwitch(PluginSwitchDefinition(rollout: .full))) }
        }
        return FlagSet(namespace: "wide", pluginPoints: points, killSwitches: kills, flags: flags)
    }()

    static let switches: [[PluginSwitch]] = switchCounts.indices.map { keys($0).map(PluginSwitch.init) }

    /// The app's points over some switch states: the first two serve one plugin, the others every eligible one.
    static func points(_ states: any SwitchStates) -> [PluginPoint<Int, String>] {
        switchCounts.indices.map { point in
            PluginPoint("point_\(point)", states: states, factories: switches[point].enumerated().map { index, pluginSwitch in
                PluginFactoryOf<Int, String>(pluginSwitch, isApplicable: { $0 % 4 != index }) { _ in pluginSwitch.key }
            })
        }
    }

    static func matrix(flow: Bool) -> Matrix {
        var matrix = Matrix(flags: flagSet, options: Matrix.Options(isolation: .inProcess))
        for (index, point) in points(SwitchAssignment.allOff).enumerated() {
            matrix.add(point, inputs: [1], serving: index < 2 ? .firstEligible : .everyEligible)
        }
        if flow {
            matrix.flow("screen") { combination in
                let points = Wide.points(combination.states)
                var shown = 0
                for (index, point) in points.enumerated() {
                    shown += index < 2 ? (point.createPlugin(for: 1) == nil ? 0 : 1) : point.createPlugins(for: 1).count
                }
                if shown > 15 { throw FlowFailure("more plugins than switches") }
            }
        }
        return matrix
    }
}

enum Rider {
    static func matrix(flows: Bool) throws -> Matrix {
        var matrix = try Matrix(flagFile: "Flags/rider.yaml", options: Matrix.Options(isolation: .inProcess))
        let app = RiderApp(states: SwitchAssignment.allOff)
        let scenarios = TripScenario.all
        matrix.add(app.preferencesHub, inputs: scenarios.map(\.rider), serving: .everyEligible)
        matrix.add(app.confirmationAddons, inputs: scenarios.map(\.confirmation))
        matrix.add(app.homeFeed, inputs: scenarios.map(\.rider), serving: .everyEligible)
        matrix.add(app.mapLayers, inputs: scenarios.map(\.mapScene), serving: .everyEligible)
        if flows {
            for scenario in scenarios {
                matrix.flow("the \(scenario.name) trip completes") { combination in
                    let outcome = try RiderApp(states: combination.states).runTrip(scenario)
                    guard outcome.completed else { throw FlowFailure("stopped") }
                }
            }
        }
        return matrix
    }
}

/// The floor: effective switch states of every combination, each switch read once.
func reference(_ layout: MatrixLayout) -> (UInt64, Int) {
    var on = 0
    let total = UInt64(1) << UInt64(layout.gateCount)
    for index in 0..<total {
        let effective = layout.effectiveSwitches(of: GateSet(words: [index]))
        for gate in 0..<layout.switchCount where effective.contains(gate) { on += 1 }
    }
    return (total, on)
}

struct Figure {
    let name: String
    let combinations: UInt64
    /// Wall-clock seconds per run.
    let seconds: [Double]
    /// CPU seconds of this process per run (less sensitive to other processes sharing the cores).
    let cpuSeconds: [Double]

    var median: Double { seconds.sorted()[seconds.count / 2] }
    var cpuMedian: Double { cpuSeconds.sorted()[cpuSeconds.count / 2] }
    var perSecond: Double { Double(combinations) / median }
    var microseconds: Double { median / Double(combinations) * 1e6 }
    var cpuMicroseconds: Double { cpuMedian / Double(combinations) * 1e6 }
}

/// CPU time of this process, in seconds.
func cpuTime() -> Double {
    var spec = timespec()
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &spec)
    return Double(spec.tv_sec) + Double(spec.tv_nsec) / 1e9
}

func time(_ body: () async throws -> UInt64) async rethrows -> (UInt64, Double, Double) {
    let start = ContinuousClock.now
    let cpuStart = cpuTime()
    let count = try await body()
    let elapsed = ContinuousClock.now - start
    return (count, Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18, cpuTime() - cpuStart)
}

func run(_ name: String, repeats: Int) async throws -> Figure {
    var seconds: [Double] = [], cpuSeconds: [Double] = []
    var combinations: UInt64 = 0
    for _ in 0..<repeats {
        let (count, elapsed, cpu): (UInt64, Double, Double)
        switch name {
        case "reference":
            (count, elapsed, cpu) = await time { reference(MatrixLayout(flagSet: Wide.flagSet)).0 }
        case "kit", "kit+flow":
            let matrix = Wide.matrix(flow: name == "kit+flow")
            (count, elapsed, cpu) = try await time {
                let report = await matrix.run(Matrix.RunSettings(environment: [:], progressBar: false))
                guard report.passed else { throw FigureError("\(report.summary)") }
                return report.checked
            }
        case "rider", "rider-points":
            let matrix = try Rider.matrix(flows: name == "rider")
            (count, elapsed, cpu) = try await time {
                let report = await matrix.run(Matrix.RunSettings(environment: [:], progressBar: false))
                guard report.passed else { throw FigureError("\(report.summary)") }
                return report.checked
            }
        default:
            throw FigureError("unknown figure \(name): reference, kit, kit+flow, rider-points, rider")
        }
        combinations = count
        seconds.append(elapsed)
        cpuSeconds.append(cpu)
    }
    return Figure(name: name, combinations: combinations, seconds: seconds, cpuSeconds: cpuSeconds)
}

struct FigureError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

let arguments = Array(CommandLine.arguments.dropFirst())
let everything = ["reference", "kit", "kit+flow", "rider-points", "rider"]
let names = arguments.first.map { $0 == "all" ? everything : [$0] } ?? everything
let repeats = arguments.count > 1 ? Int(arguments[1]) ?? 3 : 3
func loadAverage() -> String {
    (try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8))?.split(separator: " ").prefix(3).joined(separator: " ") ?? "?"
}
print("load before: \(loadAverage())  (\(ProcessInfo.processInfo.activeProcessorCount) cores)")
print("figure        combinations  wall s (median of \(repeats))  per second  µs each  cpu µs each  × reference (cpu)")
var referenceCost: Double?
do {
    for name in names {
        let figure = try await run(name, repeats: repeats)
        if name == "reference" { referenceCost = figure.cpuMicroseconds }
        let ratio = referenceCost.map { String(format: "%8.1f", figure.cpuMicroseconds / $0) } ?? "       -"
        let runs = figure.seconds.map { String(format: "%.2f", $0) }.joined(separator: " ")
        print(name.padding(toLength: 12, withPad: " ", startingAt: 0)
              + String(format: "  %12llu  %7.2f  ", figure.combinations, figure.median)
              + "(\(runs))".padding(toLength: 19, withPad: " ", startingAt: 0)
              + String(format: "  %10.0f  %7.2f  %11.2f  ", figure.perSecond, figure.microseconds, figure.cpuMicroseconds) + ratio)
    }
} catch {
    print("error: \(error)")
    exit(1)
}
print("load after: \(loadAverage())")
