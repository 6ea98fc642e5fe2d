// The crash guard's statistics, measured by simulation through its own rule (SwitchyardGuard.GuardSimulation):
// false trips of healthy plugins, trips at and below the threshold, and the time and sessions a crashing plugin
// takes to be disabled. Deterministic: seeds 1...runs.
//
//   swift run --package-path Benchmarks -c release guard-figures [runs]     # bench/guard-false-trips.sh
import Foundation
import SwitchyardCore
import SwitchyardGuard

let runs = CommandLine.arguments.dropFirst().first.flatMap(Int.init) ?? 200

struct Row {
    var name: String
    var scenario: GuardSimulation.Scenario
    /// The switch whose trips are wanted (nil: every trip is a false one).
    var target: String?
    /// Other switches that really crash: their trips are not false either.
    var alsoCrashing: [String] = []
}

func healthy(_ count: Int, rate: Double, prefix: String = "plugin_switch_ok") -> [GuardSimulation.Switch] {
    (0..<count).map { GuardSimulation.Switch(key: "\(prefix)_\($0)", crashRate: rate) }
}

func scenario(_ switches: [GuardSimulation.Switch], perMinute: Int = 200, minutes: Int = 60,
              policy: CrashGuardPolicy? = nil) -> GuardSimulation.Scenario {
    var scenario = GuardSimulation.Scenario(switches: switches, policy: CrashGuardPolicy.resolved(namespace: policy, switch: nil))
    scenario.sessionsPerMinute = perMinute
    scenario.minutes = minutes
    return scenario
}

let crashing = GuardSimulation.Switch(key: "plugin_switch_crashing", crashRate: 0.05)

/// The fleet: an always-on plugin in every session, a map layer in half of them crashing 10 % (9 % of its
/// own beside the 1 % every session has), 80 sessions a minute (800 in the window) over 4 cities.
func alwaysOnFleet(_ extra: [GuardSimulation.Switch] = [], alwaysOnCrashRate: Double = 0, trafficRate: Double = 0.09) -> GuardSimulation.Scenario {
    var fleet = scenario([GuardSimulation.Switch(key: "plugin_switch_prefs_accessibility", crashRate: alwaysOnCrashRate, activeShare: 1),
                          GuardSimulation.Switch(key: "plugin_switch_map_traffic", crashRate: trafficRate)] + extra,
                         perMinute: 80, minutes: 30)
    fleet.cities = ["lagos", "paris", "lima", "pune"]
    fleet.baselineCrashRate = 0.01
    return fleet
}

let alwaysOnHealthy = [GuardSimulation.Switch(key: "plugin_switch_always_b", crashRate: 0, activeShare: 1),
                       GuardSimulation.Switch(key: "plugin_switch_always_c", crashRate: 0, activeShare: 1),
                       GuardSimulation.Switch(key: "plugin_switch_half", crashRate: 0.001)]

/// A fleet with forged crashed sessions naming one healthy switch.
func forged(addresses: Int, perMinute: Int = 300) -> GuardSimulation.Scenario {
    var fleet = scenario(healthy(6, rate: 0.001), minutes: 30)
    fleet.forgers = [GuardSimulation.Forger(key: "plugin_switch_ok_0", sessionsPerMinute: perMinute, addresses: addresses)]
    return fleet
}

let rows = [
    Row(name: "6 healthy plugins at 0.1 %, 200 sessions/min", scenario: scenario(healthy(6, rate: 0.001))),
    Row(name: "6 healthy plugins at 0.1 %, 2,000 sessions/min", scenario: scenario(healthy(6, rate: 0.001), perMinute: 2000, minutes: 30)),
    Row(name: "6 plugins at 1 % (half the threshold)", scenario: scenario(healthy(6, rate: 0.01))),
    Row(name: "6 plugins at 2 % (the threshold)", scenario: scenario(healthy(6, rate: 0.02))),
    Row(name: "6 plugins at 2 %, baseline_ratio 1", scenario: scenario(healthy(6, rate: 0.02), policy: CrashGuardPolicy(baselineRatio: 100))),
    Row(name: "1 plugin at 5 % + 5 healthy at 0.1 %", scenario: scenario([crashing] + healthy(5, rate: 0.001), minutes: 30),
        target: crashing.key),
    Row(name: "same, baseline_ratio 1 (threshold alone)",
        scenario: scenario([crashing] + healthy(5, rate: 0.001), minutes: 30, policy: CrashGuardPolicy(baselineRatio: 100)),
        target: crashing.key),
    Row(name: "1 plugin at 8 % in Lagos only + 5 healthy",
        scenario: scenario([GuardSimulation.Switch(key: "plugin_switch_lagos", crashRate: 0.08, crashCity: "lagos")] + healthy(5, rate: 0.001),
                           minutes: 30), target: "plugin_switch_lagos"),
    Row(name: "the issue's fleet: always-on plugin + map layer crashing 10 % in half the sessions, 1 % baseline",
        scenario: alwaysOnFleet(), target: "plugin_switch_map_traffic"),
    Row(name: "same + 2 more always-on plugins + 1 healthy at half", scenario: alwaysOnFleet(alwaysOnHealthy), target: "plugin_switch_map_traffic"),
    Row(name: "always-on plugin crashing 5 % + map layer crashing 10 % + 1 healthy", scenario: alwaysOnFleet([alwaysOnHealthy[2]], alwaysOnCrashRate: 0.05),
        target: "plugin_switch_prefs_accessibility", alsoCrashing: ["plugin_switch_map_traffic"]),
    Row(name: "always-on plugin crashing 5 % beside 2 healthy always-on ones (they run in the same sessions)",
        scenario: alwaysOnFleet(alwaysOnHealthy, alwaysOnCrashRate: 0.05, trafficRate: 0.001), target: "plugin_switch_prefs_accessibility"),
    Row(name: "forger: 300 made-up crashed sessions/min from 1 address + 6 healthy", scenario: forged(addresses: 1)),
    Row(name: "forger: 300/min from 3 addresses", scenario: forged(addresses: 3)),
    Row(name: "forger: 300/min from 10 addresses", scenario: forged(addresses: 10)),
]

func percentile(_ values: [Double], _ p: Double) -> Double? {
    guard !values.isEmpty else { return nil }
    let sorted = values.sorted()
    return sorted[min(sorted.count - 1, Int((Double(sorted.count - 1) * p).rounded()))]
}

func text(_ value: Double?, digits: Int = 1) -> String {
    value.map { String(format: "%.\(digits)f", $0) } ?? "-"
}

print("runs per scenario: \(runs) (seeds 1...\(runs)); 5 cities; baseline crash rate 0.1 %; each plugin active in half the sessions;")
print("built-in policy (window 10m, 200 sessions, 10 crashes, 2 %, 99.9 % confidence, baseline_ratio 2, crashes from 5 units and 3")
print("addresses, 5 sessions per unit and 100 per address per window, 3 automatic disables an hour) unless named; 3,000 units behind")
print("1,500 addresses; the guard assesses after every batch of 25 sessions; a trip reaches clients one batch later. Past the budget")
print("the guard proposes (a person would decide; the simulation applies nothing): proposals are counted apart from trips.")
print("")
print("| scenario | switch-hours | false trips | false trips per 1,000 switch-hours | false proposals | runs where the target tripped | scope right | minutes to trip p50 / p95 | evidence sessions p50 |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
let started = Date()
for row in rows {
    var falseTrips = 0
    var falseProposals = 0
    var tripped = 0
    var scopeRight = 0
    var minutes: [Double] = []
    var evidence: [Double] = []
    for seed in 1...runs {
        let outcome = GuardSimulation.run(row.scenario, seed: UInt64(seed))
        let real = Set([row.target].compactMap { $0 } + row.alsoCrashing)
        falseTrips += outcome.trips.filter { !real.contains($0.key) }.count
        falseProposals += outcome.proposals.filter { !real.contains($0.key) }.count
        if let target = row.target, let trip = outcome.trips.first(where: { $0.key == target }) {
            tripped += 1
            minutes.append(Double(trip.minute) + 0.5)
            evidence.append(Double(trip.evidenceSessions))
            let expected = row.scenario.switches.first { $0.key == target }?.crashCity.map { Scope(cities: [$0]) } ?? .everywhere
            if trip.scope == expected { scopeRight += 1 }
        }
    }
    let healthySwitches = row.scenario.switches.filter { $0.key != row.target && !row.alsoCrashing.contains($0.key) }.count
    let switchHours = Double(runs * healthySwitches * row.scenario.minutes) / 60
    let rate = Double(falseTrips) / switchHours * 1000
    let target = row.target == nil ? "-" : "\(tripped) of \(runs)"
    let scope = row.target == nil ? "-" : "\(scopeRight) of \(tripped)"
    print("| \(row.name) | \(Int(switchHours)) | \(falseTrips) | \(text(rate, digits: 2)) | \(falseProposals) | \(target) | \(scope) | "
          + "\(text(percentile(minutes, 0.5))) / \(text(percentile(minutes, 0.95))) | \(text(percentile(evidence, 0.5), digits: 0)) |")
}
print("")
print(String(format: "simulated in %.1f s", Date().timeIntervalSince(started)))
