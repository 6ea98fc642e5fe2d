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
/// Each session belongs to a unit drawn from a fleet of `units` (each unit behind one of `addresses` source
/// addresses, shared like a carrier's NAT), picks a city uniformly and has each switch active with its own
/// probability (1 for an always-on plugin); it crashes when any active switch's plugin crashes (each with its
/// own rate, in every city or only in `crashCity`), or with the baseline rate of the core app. Forgers (`forgers`)
/// add made-up crashed sessions. Every batch goes through the same admission as flagsd's store (caps per unit and
/// per address), and every trip through the same budget (past it, the guard proposes: recorded, not applied).
/// Once a switch trips in a scope, later sessions there run without it (clients took the change), after
/// `propagationBatches` batches.
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

    /// Someone with a client token sending made-up crashed sessions that name a switch.
    public struct Forger: Sendable, Hashable {
        /// The switch the sessions name.
        public var key: String
        /// Made-up crashed sessions per minute, spread over the addresses.
        public var sessionsPerMinute: Int
        /// How many source addresses they come from.
        public var addresses: Int
        /// Whether every session names a new made-up unit (else one unit per address).
        public var newUnitEachSession: Bool

        public init(key: String, sessionsPerMinute: Int, addresses: Int, newUnitEachSession: Bool = true) {
            self.key = key
            self.sessionsPerMinute = sessionsPerMinute
            self.addresses = addresses
            self.newUnitEachSession = newUnitEachSession
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
        /// The units of the fleet (each session belongs to one at random).
        public var units = 3000
        /// The source addresses the units sit behind (unit `i` behind address `i % addresses`).
        public var addresses = 1500
        /// Forged crashed sessions, besides the fleet's.
        public var forgers: [Forger] = []
        public var policy: ResolvedCrashGuardPolicy

        public init(
            switches: [Switch],
            policy: ResolvedCrashGuardPolicy = CrashGuardPolicy.resolved(namespace: nil, switch: nil)
        ) {
            self.switches = switches
            self.policy = policy
        }
    }

    /// A trip the guard made (or, past its budget, proposed).
    public struct Trip: Sendable, Hashable {
        public var key: String
        public var scope: Scope
        /// The simulated minute it happened in.
        public var minute: Int
        /// Sessions reported in the fleet before it (all switches).
        public var sessionsBefore: Int
        /// Sessions with the switch active in the trip's scope and window, as its evidence counts them.
        public var evidenceSessions: Int64
        /// Switches left out of the evidence as shown to crash (attribution).
        public var leftOut: [String] = []
    }

    /// What one run did.
    public struct Outcome: Sendable {
        /// The disables the guard made by itself.
        public var trips: [Trip]
        /// The disables it proposed instead, past its budget (a person would decide; the simulation applies none).
        public var proposals: [Trip] = []
        /// Sessions simulated.
        public var sessions: Int
        /// Sessions that crashed because of each switch's plugin.
        public var crashesBy: [String: Int]
        /// Sessions the admission left out (caps per unit and per address).
        public var dropped = 0
    }

    static func disable(_ key: String, in scope: Scope, _ gates: inout [String: PluginSwitchDefinition]) {
        if scope.isEverywhere { gates[key]?.disabled = true } else { gates[key]?.disabledScopes.append(scope) }
    }

    /// Runs a scenario with a seed; the same seed gives the same outcome.
    public static func run(_ scenario: Scenario, seed: UInt64) -> Outcome {
        var random = SplitMix64(seed: seed)
        var window = WindowCounts()
        var ledger = EventAdmission.Ledger()
        let admission = EventAdmission(policy: scenario.policy)
        // What the guard sees (its disables commit at once) and what clients run (after the propagation delay).
        var guardGates = Dictionary(
            uniqueKeysWithValues: scenario.switches.map { ($0.key, PluginSwitchDefinition(rollout: .full)) })
        var clientGates = guardGates
        var pending: [(due: Int, key: String, scope: Scope)] = []
        var outcome = Outcome(trips: [], sessions: 0, crashesBy: [:])
        var proposed = Set<String>()
        var batchIndex = 0
        var forged = 0
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
                for _ in 0..<scenario.batchSize {
                    let city = scenario.cities[Int(random.next() % UInt64(scenario.cities.count))]
                    let unit = Int(random.next() % UInt64(max(1, scenario.units)))
                    var active: [String] = []
                    var crashed = random.uniform() < scenario.baselineCrashRate
                    var crashedBy: String?
                    for plugin in scenario.switches {
                        guard plugin.activeShare >= 1 || random.uniform() < plugin.activeShare else { continue }
                        if clientGates[plugin.key]?.isDisabled(in: Scope(cities: [city])) == true { continue }
                        active.append(plugin.key)
                        let rate =
                            plugin.crashCity == nil || plugin.crashCity == city
                            ? plugin.crashRate : scenario.baselineCrashRate
                        if random.uniform() < rate {
                            crashed = true
                            crashedBy = crashedBy ?? plugin.key
                        }
                    }
                    if let crashedBy { outcome.crashesBy[crashedBy, default: 0] += 1 }
                    outcome.sessions += 1
                    events.append(
                        StoredEvent(
                            id: "s\(outcome.sessions)", time: now, city: city,
                            payload: .session(crashed: crashed, switches: active, variants: [:]),
                            unit: "u\(unit)", address: "10.\(unit % max(1, scenario.addresses))"))
                }
                // Forgers spread their sessions of the minute over its batches, and over their addresses.
                for forger in scenario.forgers {
                    let share =
                        forger.sessionsPerMinute / perMinute + (slot < forger.sessionsPerMinute % perMinute ? 1 : 0)
                    for _ in 0..<share {
                        forged += 1
                        let address = forged % max(1, forger.addresses)
                        let city = scenario.cities[Int(random.next() % UInt64(scenario.cities.count))]
                        events.append(
                            StoredEvent(
                                id: "f\(forged)", time: now, city: city,
                                payload: .session(crashed: true, switches: [forger.key], variants: [:]),
                                unit: forger.newUnitEachSession ? "forged\(forged)" : "forger\(address)",
                                // A network of its own each (the guard counts /24s).
                                address: "198.18.\(address % 256).\(1 + address / 256)"))
                    }
                }
                let admitted = ledger.admit(events, admission: admission)
                outcome.dropped += admitted.dropped.count
                window.add(
                    EventAggregation.increments(of: admitted.events),
                    crashes: EventAggregation.crashes(of: admitted.events))
                batchIndex += 1
                let from = EventAggregation.bucketStart(of: now - scenario.policy.window.timeInterval)
                var named = Set<String>()
                for event in admitted.events {
                    if case .session(_, let switches, _) = event.payload { named.formUnion(switches) }
                }
                let counts = window.counts(from: from, until: Int64.max)
                for key in named.sorted() {
                    guard let gate = guardGates[key] else { continue }
                    let assessment = GuardRule.assess(key: key, counts: counts, policy: scenario.policy, gate: gate)
                    guard let trip = assessment.trip else { continue }
                    let record = Trip(
                        key: key, scope: trip.scope, minute: minute, sessionsBefore: outcome.sessions,
                        evidenceSessions: trip.check.sessions, leftOut: trip.check.leftOut)
                    let hourAgo = minute - 60
                    let recent = outcome.trips.filter { $0.minute > hourAgo }.count
                    let scoped = outcome.trips.filter { $0.key == key && !$0.scope.isEverywhere }.count
                    let proposal = "\(key) \(trip.scope)"
                    switch GuardBudget.decide(
                        trip, tripsInLastHour: recent, openScopedDisables: scoped, pending: proposed.contains(proposal))
                    {
                    case .trip:
                        outcome.trips.append(record)
                        Self.disable(key, in: trip.scope, &guardGates)
                        pending.append((batchIndex + scenario.propagationBatches, key, trip.scope))
                    case .propose:
                        outcome.proposals.append(record)
                        proposed.insert(proposal)
                    case .hold:
                        break
                    }
                }
            }
            let oldest =
                EventAggregation.bucketStart(of: start + Double(minute * 60) - scenario.policy.window.timeInterval)
                - 60_000
            window.prune(before: oldest)
            ledger.prune(before: admission.windowStart(of: Date(milliseconds: oldest)) - 1)
        }
        return outcome
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
