import Foundation
public import SwitchyardCore
import SwitchyardStorage

/// A seeded fleet of sessions run through the crash guard's rule exactly as flagsd runs it (per-minute counters,
/// an assessment after every batch, disables applied as they trip), to measure false trips and time to trip.
///
/// ```swift
/// let scenario = GuardSimulation.Scenario(switches: [.init(key: "plugin_switch_bad", crashRate: 0.05),
///                                                    .init(key: "plugin_switch_ok", crashRate: 0.001)])
/// let outcome = GuardSimulation.run(scenario, seed: 7)
/// // outcome.trips: [(key: "plugin_switch_bad", scope: everywhere, minute: 3, sessions: 412)]
/// ```
///
/// Each session picks a city uniformly and has each switch active with its own probability; it crashes when any
/// active switch's plugin crashes (each with its own rate, in every city or only in `crashCity`), or with the
/// baseline rate of the core app. Once a switch trips in a scope, later sessions there run without it (clients
/// took the change), after `propagationBatches` batches.
public enum GuardSimulation {
    /// One plugin switch of the simulated app.
    public struct Switch: Sendable, Hashable {
        public var key: String
        /// The chance that a session with the switch active crashes because of its plugin.
        public var crashRate: Double
        /// When set, the plugin crashes only in this city (at `crashRate`); elsewhere it is healthy.
        public var crashCity: String?
        /// The chance that the switch is active in a session.
        public var activeShare: Double

        public init(key: String, crashRate: Double, crashCity: String? = nil, activeShare: Double = 0.5) {
            self.key = key
            self.crashRate = crashRate
            self.crashCity = crashCity
            self.activeShare = activeShare
        }
    }

    /// What to simulate.
    public struct Scenario: Sendable {
        public var switches: [Switch]
        public var cities = ["lagos", "nairobi", "paris", "lima", "pune"]
        /// Sessions reported per minute, in the whole fleet.
        public var sessionsPerMinute = 200
        public var minutes = 60
        /// Sessions per event batch (the guard assesses after each).
        public var batchSize = 25
        /// The chance that a session crashes whatever plugins it runs.
        public var baselineCrashRate = 0.001
        /// Batches between a trip and sessions running without the switch.
        public var propagationBatches = 1
        public var policy: ResolvedCrashGuardPolicy

        public init(switches: [Switch], policy: ResolvedCrashGuardPolicy = CrashGuardPolicy.resolved(namespace: nil, switch: nil)) {
            self.switches = switches
            self.policy = policy
        }
    }

    /// A trip the guard made.
    public struct Trip: Sendable, Hashable {
        public var key: String
        public var scope: Scope
        /// The simulated minute it happened in.
        public var minute: Int
        /// Sessions reported in the fleet before it (all switches).
        public var sessionsBefore: Int
        /// Sessions with the switch active in the trip's scope and window, as its evidence counts them.
        public var evidenceSessions: Int64
    }

    /// What one run did.
    public struct Outcome: Sendable {
        public var trips: [Trip]
        /// Sessions simulated.
        public var sessions: Int
        /// Sessions that crashed because of each switch's plugin.
        public var crashesBy: [String: Int]
    }

    static func disable(_ key: String, in scope: Scope, _ gates: inout [String: PluginSwitchDefinition]) {
        if scope.isEverywhere { gates[key]?.disabled = true } else { gates[key]?.disabledScopes.append(scope) }
    }

    /// Runs a scenario with a seed; the same seed gives the same outcome.
    public static func run(_ scenario: Scenario, seed: UInt64) -> Outcome {
        var random = SplitMix64(seed: seed)
        var window = WindowCounts()
        // What the guard sees (its disables commit at once) and what clients run (after the propagation delay).
        var guardGates = Dictionary(uniqueKeysWithValues: scenario.switches.map { ($0.key, PluginSwitchDefinition(rollout: .full)) })
        var clientGates = guardGates
        var pending: [(due: Int, key: String, scope: Scope)] = []
        var trips: [Trip] = []
        var crashesBy: [String: Int] = [:]
        var sessions = 0
        var batchIndex = 0
        let start = Date(timeIntervalSince1970: 1_800_000_000)
        let perMinute = max(1, scenario.sessionsPerMinute / scenario.batchSize)
        for minute in 0..<scenario.minutes {
            for slot in 0..<perMinute {
                let now = start + Double(minute * 60) + Double(slot) * 60 / Double(perMinute)
                for change in pending where change.due <= batchIndex {
                    Self.disable(change.key, in: change.scope, &clientGates)
                }
                pending.removeAll { $0.due <= batchIndex }
                var events: [StoredEvent] = []
                var named = Set<String>()
                for _ in 0..<scenario.batchSize {
                    let city = scenario.cities[Int(random.next() % UInt64(scenario.cities.count))]
                    var active: [String] = []
                    var crashed = random.uniform() < scenario.baselineCrashRate
                    var crashedBy: String?
                    for plugin in scenario.switches {
                        guard random.uniform() < plugin.activeShare else { continue }
                        if clientGates[plugin.key]?.isDisabled(in: Scope(cities: [city])) == true { continue }
                        active.append(plugin.key)
                        let rate = plugin.crashCity == nil || plugin.crashCity == city ? plugin.crashRate : scenario.baselineCrashRate
                        if random.uniform() < rate {
                            crashed = true
                            crashedBy = crashedBy ?? plugin.key
                        }
                    }
                    if let crashedBy { crashesBy[crashedBy, default: 0] += 1 }
                    named.formUnion(active)
                    sessions += 1
                    events.append(StoredEvent(id: "s\(sessions)", time: now, city: city, payload: .session(crashed: crashed, switches: active, variants: [:])))
                }
                window.add(EventAggregation.increments(of: events))
                batchIndex += 1
                let from = EventAggregation.bucketStart(of: now - scenario.policy.window.timeInterval)
                for key in named.sorted() {
                    guard let gate = guardGates[key] else { continue }
                    let assessment = GuardRule.assess(key: key, tallies: window.tallies(of: key, from: from, until: Int64.max),
                                                      policy: scenario.policy, gate: gate)
                    guard let trip = assessment.trip else { continue }
                    trips.append(Trip(key: key, scope: trip.scope, minute: minute, sessionsBefore: sessions, evidenceSessions: trip.check.sessions))
                    Self.disable(key, in: trip.scope, &guardGates)
                    pending.append((batchIndex + scenario.propagationBatches, key, trip.scope))
                }
            }
            window.prune(before: EventAggregation.bucketStart(of: start + Double(minute * 60) - scenario.policy.window.timeInterval) - 60_000)
        }
        return Outcome(trips: trips, sessions: sessions, crashesBy: crashesBy)
    }
}

/// SplitMix64: a small, fast, seedable generator (Steele, Lea and Flood 2014).
public struct SplitMix64: RandomNumberGenerator, Sendable {
    private var state: UInt64

    public init(seed: UInt64) {
        state = seed
    }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A uniform number in 0..<1.
    public mutating func uniform() -> Double {
        Double(next() >> 11) * 0x1.0p-53
    }
}

extension Duration {
    /// The duration in seconds, for `Date` arithmetic.
    var timeInterval: TimeInterval {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
