// Release plans, by simulation through the runner's own check (SwitchyardGuard.ReleaseSimulation, ReleaseCheck) and
// the crash guard's rule: time from 1 % to everyone for a healthy plugin, the chance a worse plugin gets there and
// what it exposes on the way, the same plugins on a fixed timer with the guard alone, and the error rates of the
// default criteria. Deterministic: seeds 1...runs.
//
//   swift run --package-path Benchmarks -c release release-figures [runs]          # bench/release-simulation.sh
//   swift run --package-path Benchmarks -c release release-figures sweep [runs]    # error rates of other criteria
import Foundation
import SwitchyardCore
import SwitchyardGuard

let arguments = Array(CommandLine.arguments.dropFirst())
let sweep = arguments.first == "sweep"
let runs = arguments.compactMap(Int.init).first ?? 200
let criteria = ReleaseCriteria.defaults

/// Runs seeds 1...runs of a scenario on every core (each run is independent; the result does not depend on the order).
func outcomes(_ scenario: ReleaseSimulation.Scenario) -> [ReleaseSimulation.Outcome] {
    let results = UnsafeMutableBufferPointer<ReleaseSimulation.Outcome?>.allocate(capacity: runs)
    results.initialize(repeating: nil)
    defer { results.deallocate() }
    nonisolated(unsafe) let shared = results
    DispatchQueue.concurrentPerform(iterations: runs) { index in
        shared[index] = ReleaseSimulation.run(scenario, seed: UInt64(index + 1))
    }
    return results.compactMap { $0 }
}

func scenario(points: Double, perMinute: Int = 10_000, mode: ReleaseSimulation.Mode = .plan(criteria),
              baseline: Double = 0.01) -> ReleaseSimulation.Scenario {
    var scenario = ReleaseSimulation.Scenario(excessCrashRate: points / 100)
    scenario.sessionsPerMinute = perMinute
    scenario.mode = mode
    scenario.baselineCrashRate = baseline
    return scenario
}

func percentile(_ values: [Double], _ p: Double) -> Double? {
    guard !values.isEmpty else { return nil }
    let sorted = values.sorted()
    return sorted[min(sorted.count - 1, Int((Double(sorted.count - 1) * p).rounded()))]
}

func text(_ value: Double?, digits: Int = 0) -> String {
    guard let value else { return "-" }
    let formatter = NumberFormatter()
    formatter.numberStyle = .decimal
    formatter.minimumFractionDigits = digits
    formatter.maximumFractionDigits = digits
    return formatter.string(from: NSNumber(value: value)) ?? "\(value)"
}

func hours(_ minutes: Double?) -> String {
    minutes.map { String(format: "%.1f h", $0 / 60) } ?? "-"
}

func share(_ count: Int, of total: Int) -> String {
    "\(count) of \(total) (\(String(format: "%.1f", 100 * Double(count) / Double(max(1, total)))) %)"
}

func mean(_ values: [Double]) -> Double { values.reduce(0, +) / Double(max(1, values.count)) }

let started = Date()
let horizon = ReleaseSimulation.Scenario(excessCrashRate: 0).horizon
let stages = ReleaseSimulation.riderStages.map(\.description).joined(separator: " → ")

if arguments.first == "rollbacks" {
    // Where and on what evidence a healthy plugin was rolled back (to see which look fired).
    for (points, perMinute) in [(0.0, 10_000), (0.0, 2_000)] {
        for (seed, outcome) in outcomes(scenario(points: points, perMinute: perMinute)).enumerated() where outcome.rolledBack {
            print("+\(points) points, \(perMinute)/min, seed \(seed + 1): stage \(outcome.stageAtEnd), minute \(outcome.minutes): \(outcome.lastCheck?.summary ?? "")")
        }
    }
    exit(0)
}

if sweep {
    // The error rates of candidate criteria: healthy plugins rolled back, plugins at the margin advancing, by the
    // sequences' N* and the roll-back confidence (and one cell without the counting delay).
    print("runs per cell: \(runs) (healthy: \(runs) at 10,000 and \(runs) at 2,000 sessions/min); 10,000 sessions/min over 5 equal cities; baseline 1 %; plan \(stages); min_sessions, soak, margin and confidence 97.5 % as the defaults")
    print("")
    print("| N* (advance) | rollback confidence | N* (rollback) | counting delay | healthy: rolled back | healthy: everyone, p50 | +margin: advanced a stage | +margin: reached everyone | +0.5: reached everyone | +2: sessions exposed, mean |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    var cells: [(Int, Double, Int, Int)] = []
    for planned in [3_000, 10_000, 30_000] {
        for rollbackConfidence in [0.999, 0.9999] { cells.append((planned, rollbackConfidence, 1_000, 10)) }
    }
    cells.append((10_000, 0.999, 300, 10))
    cells.append((10_000, 0.999, 1_000, 0))
    for (planned, rollbackConfidence, rollbackPlanned, delay) in cells {
        var candidate = criteria
        candidate.plannedSessions = planned
        candidate.rollbackConfidence = rollbackConfidence
        candidate.rollbackPlannedSessions = rollbackPlanned
        func cell(_ points: Double, perMinute: Int = 10_000) -> [ReleaseSimulation.Outcome] {
            var scenario = scenario(points: points, perMinute: perMinute, mode: .plan(candidate))
            scenario.countingDelay = delay
            return outcomes(scenario)
        }
        let healthy = cell(0) + cell(0, perMinute: 2_000)
        let atMargin = cell(candidate.margin * 100)
        let half = cell(0.5)
        let bad = cell(2)
        print("| \(text(Double(planned))) | \(rollbackConfidence) | \(text(Double(rollbackPlanned))) | \(delay) min | \(share(healthy.count(where: \.rolledBack), of: healthy.count)) | "
              + "\(hours(percentile(healthy.prefix(runs).compactMap(\.minutesToEveryone).map(Double.init), 0.5))) | "
              + "\(share(atMargin.count { $0.stageStarts.count > 1 }, of: runs)) | \(share(atMargin.count(where: \.reachedEveryone), of: runs)) | "
              + "\(share(half.count(where: \.reachedEveryone), of: runs)) | \(text(mean(bad.map { Double($0.sessionsExposed) }))) |")
    }
    print("")
    print(String(format: "simulated in %.1f s", Date().timeIntervalSince(started)))
    exit(0)
}

print("runs per scenario: \(runs) (seeds 1...\(runs)); sessions spread over 5 cities with equal shares (lagos, nairobi, paris, lima, pune);")
print("every session crashes at the baseline rate (1 % unless named), sessions with the plugin at the baseline + its excess;")
print("plan: \(stages);")
print("criteria: min_sessions \(criteria.minimumSessions), soak \(GuardDurationText.text(criteria.soak)), margin \(ReleaseCheck.points(criteria.margin)), "
      + "confidence \(criteria.confidence) (N* \(criteria.plannedSessions)), rollback at \(criteria.rollbackConfidence) (N* \(criteria.rollbackPlannedSessions)) after \(criteria.rollbackMinimumSessions) sessions,")
print("both over every look (confidence sequences); a stage counts from 10 minutes after it began; the runner looks every minute;")
print("the crash guard's built-in policy watches throughout (its trip aborts a plan); runs last \(horizon / 60) hours unless they end earlier.")
print("")

// 1. A healthy plugin: time from 1 % to everyone, by traffic.
print("### A healthy plugin, by traffic")
print("")
print("| sessions/min (Lagos: a fifth) | reached everyone | rolled back | hours to everyone p50 / p95 | hours per stage p50 (first 6 stages) |")
print("|---:|---:|---:|---:|---|")
for perMinute in [2_000, 10_000, 50_000] {
    let results = outcomes(scenario(points: 0, perMinute: perMinute))
    let times = results.compactMap(\.minutesToEveryone).map(Double.init)
    var perStage: [String] = []
    for stage in 0..<(ReleaseSimulation.riderStages.count - 1) {
        let spans = results.filter { $0.stageStarts.count > stage + 1 }.map { Double($0.stageStarts[stage + 1] - $0.stageStarts[stage]) }
        perStage.append(percentile(spans, 0.5).map { String(format: "%.1f", $0 / 60) } ?? "-")
    }
    print("| \(text(Double(perMinute))) | \(share(results.count(where: \.reachedEveryone), of: runs)) | \(results.count(where: \.rolledBack)) | "
          + "\(hours(percentile(times, 0.5))) / \(hours(percentile(times, 0.95))) | \(perStage.joined(separator: " · ")) |")
}
print("")

// 2. Worse plugins: the plan (with the guard) against the same stages on a timer with the guard alone.
let timer = Int(criteria.soak.components.seconds / 60) * 2
print("### Plugins worse than the baseline: the plan, and the same stages every \(timer) minutes with the guard alone (10,000 sessions/min)")
print("")
print("| plugin | advanced by | reached everyone | rolled back | guard tripped | first rollback or trip, p50 | sessions exposed, mean | crashes caused, mean |")
print("|---|---|---:|---:|---:|---:|---:|---:|")
for points in [0.0, criteria.margin * 100, 0.5, 1, 2] {
    for (name, mode) in [("plan", ReleaseSimulation.Mode.plan(criteria)), ("timer + guard", .timer(minutes: timer))] {
        let results = outcomes(scenario(points: points, mode: mode))
        // The first stop: the plan's rollback, or the guard's first trip (a city's, or everywhere).
        let stopped = results.compactMap { outcome in
            outcome.rolledBack ? Double(outcome.minutes) : outcome.trips.first.map { Double($0.minute + 1) }
        }
        print("| +\(text(points, digits: 2)) points | \(name) | \(share(results.count(where: \.reachedEveryone), of: runs)) | "
              + "\(results.count(where: \.rolledBack)) | \(results.count { !$0.trips.isEmpty }) | \(hours(percentile(stopped, 0.5))) | "
              + "\(text(mean(results.map { Double($0.sessionsExposed) }))) | \(text(mean(results.map { Double($0.crashesCaused) }))) |")
    }
}
print("")

// 3. The error rates of the defaults.
print("### Error rates of the default criteria")
print("")
print("| scenario | runs | rolled back | advanced past the first stage | reached everyone |")
print("|---|---:|---:|---:|---:|")
for (name, points, perMinute, baseline) in [("healthy, 10,000 sessions/min, baseline 1 %", 0.0, 10_000, 0.01),
                                            ("healthy, 2,000 sessions/min, baseline 1 %", 0.0, 2_000, 0.01),
                                            ("healthy, 10,000 sessions/min, baseline 0.2 %", 0.0, 10_000, 0.002),
                                            ("at the margin (+\(text(criteria.margin * 100, digits: 2)) points), 10,000 sessions/min", criteria.margin * 100, 10_000, 0.01),
                                            ("at the margin, 2,000 sessions/min", criteria.margin * 100, 2_000, 0.01),
                                            ("at the margin, baseline 0.2 %", criteria.margin * 100, 10_000, 0.002)] {
    let results = outcomes(scenario(points: points, perMinute: perMinute, baseline: baseline))
    print("| \(name) | \(runs) | \(share(results.count(where: \.rolledBack), of: runs)) | "
          + "\(share(results.count { $0.stageStarts.count > 1 }, of: runs)) | \(share(results.count(where: \.reachedEveryone), of: runs)) |")
}
print("")
print(String(format: "simulated in %.1f s", Date().timeIntervalSince(started)))
