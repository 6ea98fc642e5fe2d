public import Foundation
public import SwitchyardCore

/// Which new events count, and under which city and cohort: the bounds that keep one unit, one source address,
/// or a stream of made-up values from weighing more than they should. Shared by every backend, so they admit alike.
///
/// - **Caps per window**: a source address contributes at most `maximumSessionsPerAddress` sessions per window, at
///   each of its blocks (``AddressBlock``: an IPv6 /56 holds 4 times, a /48 16 times the cap), for sessions clients
///   report, and a unit at most `maximumSessionsPerUnit` (so at most that many to any one switch; reporters are trusted
///   servers: only their units are capped). Windows are fixed, aligned on the Unix epoch and decided by each event's
///   own time, so counts agree across processes. The caps are held one after another, the narrowest address block
///   first, then the wider ones, then the unit: a session takes a place of a key (one atomic count per key, which
///   processes sharing a store agree on) only when it is within the caps before it, so a session left out at its /64
///   costs its /56, its /48 and its unit nothing, and a forger's made-up units write no row. Sessions past a cap are
///   left out of the counts in arrival order, whatever they report, so the sessions left in are a fair sample.
/// - **Cities and cohorts**: counted on their own when the namespace declares them (`cities`, `cohorts`) or a person
///   names them in the flag set; otherwise when they are among the `maximumScopeValues` with the most admitted
///   sessions of their window so far, among at most ``maximumValuesPerWindow`` written per window; every other
///   value is counted as ``CrashGuardPolicy/otherValue``.

/// A backend drives a ``Plan`` inside its ingestion transaction (see ``EventStore``); ``Ledger`` drives one in
/// memory (for simulations and tests).
public struct EventAdmission: Sendable, Hashable {
    /// The length of the windows the caps and the value frequencies are counted over.
    public var window: Duration
    /// The most sessions a unit contributes per window; nil: no cap.
    public var maximumSessionsPerUnit: Int?
    /// The most sessions a source address contributes per window (client sessions only); nil: no cap.
    public var maximumSessionsPerAddress: Int?
    /// The cities counted on their own; nil: not declared.
    public var cities: Set<String>?
    /// The cohorts counted on their own; nil: not declared.
    public var cohorts: Set<String>?
    /// Undeclared values: how many of the most frequent per window are counted on their own; nil: all of them.
    public var maximumScopeValues: Int?
    /// Values a person named in the flag set (in rules, scoped disables, kill entries, release plans' stages): when
    /// the values are not declared, these are counted on their own whatever their frequency, and take no place of a
    /// window's bounded values (a flood of made-up ones cannot push them into `(other)`).
    public var namedCities: Set<String> = []
    public var namedCohorts: Set<String> = []
    /// The experiments units enter (``ExperimentDesign``), by flag key: sessions and metric events with a unit that
    /// name an arm of one enter their unit in it, and every admitted session and metric event of a unit adds to its
    /// metric totals.
    public var experiments: [String: ExperimentDesign] = [:]
    /// The most units an arm of an experiment's phase holds: once any arm holds this many, no new unit enters the
    /// phase (so the arms stay a fair split); nil: no bound.
    public var maximumUnitsPerArm: Int?

    public init(
        window: Duration, maximumSessionsPerUnit: Int?, maximumSessionsPerAddress: Int?, cities: Set<String>?,
        cohorts: Set<String>?, maximumScopeValues: Int?
    ) {
        self.window = window
        self.maximumSessionsPerUnit = maximumSessionsPerUnit
        self.maximumSessionsPerAddress = maximumSessionsPerAddress
        self.cities = cities
        self.cohorts = cohorts
        self.maximumScopeValues = maximumScopeValues
    }

    /// A namespace's admission, from its resolved crash guard policy (the namespace fields and window).
    public init(policy: ResolvedCrashGuardPolicy) {
        self.init(
            window: policy.window, maximumSessionsPerUnit: policy.maximumSessionsPerUnit,
            maximumSessionsPerAddress: policy.maximumSessionsPerAddress, cities: policy.cities.map(Set.init),
            cohorts: policy.cohorts.map(Set.init), maximumScopeValues: policy.maximumScopeValues)
    }

    /// A namespace's admission: its crash guard policy, and the values its flag set names.
    public init(flagSet: FlagSet) {
        self.init(policy: CrashGuardPolicy.resolved(namespace: flagSet.crashGuard, switch: nil))
        (namedCities, namedCohorts) = flagSet.namedScopes
        experiments = ExperimentDesign.designs(of: flagSet)
        maximumUnitsPerArm = Self.defaultMaximumUnitsPerArm
    }

    /// The units an arm holds at most unless flagsd is configured otherwise.
    public static let defaultMaximumUnitsPerArm = 50_000

    /// Whether a person named a value in the flag set.
    func pinned(_ value: String, _ kind: Kind) -> Bool {
        kind == .city ? namedCities.contains(value) : namedCohorts.contains(value)
    }

    /// Everything counts, every value on its own.
    public static let unlimited = EventAdmission(
        window: .seconds(600), maximumSessionsPerUnit: nil, maximumSessionsPerAddress: nil,
        cities: nil, cohorts: nil, maximumScopeValues: nil)

    /// What an admission window counts.
    public struct Kind: RawRepresentable, Sendable, Hashable, Comparable, CustomStringConvertible {
        public let rawValue: String

        public init?(rawValue: String) {
            guard
                ["unit", "reporter_unit", "address", "city", "cohort", "metric_unit", "metric_address"].contains(
                    rawValue)
            else { return nil }
            self.rawValue = rawValue
        }

        private init(_ rawValue: String) { self.rawValue = rawValue }

        /// Sessions of a unit that clients reported.
        public static let unit = Kind("unit")
        /// Sessions of a unit that reporters reported.
        public static let reporterUnit = Kind("reporter_unit")
        /// Sessions clients reported from a source address block (an IPv4 address; an IPv6 /64, /56 or /48).
        public static let address = Kind("address")
        /// Admitted sessions in a city, with their reach (when cities are not declared).
        public static let city = Kind("city")
        /// Admitted sessions in a cohort, with their reach (when cohorts are not declared).
        public static let cohort = Kind("cohort")
        /// Metric events of a unit (capped as its sessions are, apart from them: outcomes never crowd out crashes).
        public static let metricUnit = Kind("metric_unit")
        /// Metric events clients reported from a source address block.
        public static let metricAddress = Kind("metric_address")

        public var description: String { rawValue }
        public static func < (lhs: Kind, rhs: Kind) -> Bool { lhs.rawValue < rhs.rawValue }
    }

    /// One count of an admission window.
    public struct WindowKey: Sendable, Hashable, Comparable, CustomStringConvertible {
        /// The window's start, in milliseconds since 1970.
        public var window: Int64
        public var kind: Kind
        /// The unit key, address key, city or cohort.
        public var value: String

        public init(window: Int64, kind: Kind, value: String) {
            self.window = window
            self.kind = kind
            self.value = value
        }

        public static func < (lhs: WindowKey, rhs: WindowKey) -> Bool {
            (lhs.window, lhs.kind, lhs.value) < (rhs.window, rhs.kind, rhs.value)
        }

        public var description: String { "\(kind) \(value) in window \(window)" }
    }

    /// The values of one kind in one window whose frequencies decide which are counted on their own.
    public struct Ranking: Sendable, Hashable, Comparable {
        public var window: Int64
        public var kind: Kind

        public init(window: Int64, kind: Kind) {
            self.window = window
            self.kind = kind
        }

        public static func < (lhs: Ranking, rhs: Ranking) -> Bool { (lhs.window, lhs.kind) < (rhs.window, rhs.kind) }
    }

    /// The unit key an event counts under: its unit, or for a session that named none, one key per source address
    /// (every unitless session from an address is one unit).
    public static func unitKey(of event: StoredEvent) -> String {
        if let unit = event.unit { return unit }
        if let address = event.address { return "address:" + address }
        return "anonymous"
    }

    /// The start of the window holding a time, in milliseconds since 1970.
    public func windowStart(of time: Date) -> Int64 {
        let size = max(60_000, Int64(window.components.seconds) * 1000)
        let milliseconds = time.milliseconds
        let remainder = milliseconds % size
        return milliseconds - (remainder < 0 ? remainder + size : remainder)
    }

    /// One batch's admission, step by step: a round trip to the admission windows per step, then one for the values.
    ///
    /// 1. While `contributions` is not nil, the backend adds them (the sessions each key of the current step adds) and
    ///    passes the totals after adding them to `admit(totals:)`. The steps: the sessions' source addresses (an IPv4
    ///    address, an IPv6 /64), then their IPv6 /56s, then their /48s, then their units; each step holds only the
    ///    sessions within their caps so far, so a session refused at its /64 takes no place of its /56 or /48, and one
    ///    refused at its address takes no place of its unit (a forger's made-up units cost no rows). Steps with
    ///    nothing to add are skipped.
    /// 2. It adds `frequencies` (the admitted sessions each undeclared city and cohort adds, with the reach of their
    ///    units and networks), writing a value that has no row yet only while its window and kind hold fewer than
    ///    ``EventAdmission/maximumValuesPerWindow`` values (the rest fold into `(other)`, writing nothing), and
    ///    passes the most frequent values of each of `rankings` (the windows and kinds of every admitted event's
    ///    undeclared values, exposures' too) to `counted(ranked:)`.
    public struct Plan: Sendable {
        public let admission: EventAdmission
        let events: [StoredEvent]
        /// Per step, per event: the key it counts against and that key's cap (nil when not counted at that step).
        let keys: [[(key: WindowKey, cap: Int)?]]
        /// The step `contributions` belongs to.
        private var step = 0
        /// The sessions each key of the current step adds, in key order; nil once every step is decided.
        public private(set) var contributions: [(key: WindowKey, count: Int64)]?
        /// Per event: nil when admitted, else why not.
        var refusals: [EventDropReason?]
        /// After the last step: the admitted sessions each undeclared city and cohort adds, in key order.
        public private(set) var frequencies: [Frequency] = []
        /// After the last step: the windows and kinds whose most frequent values `counted(ranked:)` needs.
        public private(set) var rankings: [Ranking] = []

        /// The steps: three address levels (the IPv6 ones), then units.
        static let steps = AddressBlock.ipv6Levels.count + 1

        /// Plans the admission of new events (duplicates already left out), in arrival order.
        public init(_ events: [StoredEvent], admission: EventAdmission) {
            self.admission = admission
            self.events = events
            var keys = Array(
                repeating: [(key: WindowKey, cap: Int)?](repeating: nil, count: events.count), count: Self.steps)
            var blocksOf: [String: [AddressBlock]] = [:]
            for (index, event) in events.enumerated() {
                // Sessions and metric events are capped alike, each kind in windows of its own.
                let isMetric: Bool
                switch event.payload {
                case .session: isMetric = false
                case .metric: isMetric = true
                case .exposure: continue
                }
                let window = admission.windowStart(of: event.time)
                if let cap = admission.maximumSessionsPerAddress, event.source == .client, let address = event.address {
                    // A batch has one address: its blocks are worked out once.
                    let blocks = blocksOf[address] ?? AddressBlock.blocks(ofKey: address)
                    blocksOf[address] = blocks
                    for (level, block) in blocks.enumerated() where level < Self.steps - 1 {
                        keys[level][index] = (
                            WindowKey(window: window, kind: isMetric ? .metricAddress : .address, value: block.key),
                            block.cap(cap)
                        )
                    }
                }
                if let cap = admission.maximumSessionsPerUnit {
                    let kind: Kind = isMetric ? .metricUnit : event.source == .reporter ? .reporterUnit : .unit
                    let unit = WindowKey(window: window, kind: kind, value: EventAdmission.unitKey(of: event))
                    keys[Self.steps - 1][index] = (unit, cap)
                }
            }
            self.keys = keys
            refusals = Array(repeating: nil, count: events.count)
            step = -1
            advance()
        }

        /// Moves to the next step with something to add, or past the last one (then works out the values).
        private mutating func advance() {
            while true {
                step += 1
                guard step < Self.steps else {
                    contributions = nil
                    rankValues()
                    return
                }
                var counts: [WindowKey: Int64] = [:]
                for (index, key) in keys[step].enumerated() where refusals[index] == nil {
                    if let key { counts[key.key, default: 0] += 1 }
                }
                if !counts.isEmpty {
                    contributions = counts.sorted { $0.key < $1.key }.map { (key: $0.key, count: $0.value) }
                    return
                }
            }
        }

        /// Places a batch's sessions of each key after the total before it: each key's sessions hold the last of its
        /// total's places, in batch order.
        struct Places {
            var next: [WindowKey: Int64] = [:]

            init(_ contributions: [(key: WindowKey, count: Int64)], totals: [WindowKey: Int64]) {
                for (key, count) in contributions { next[key] = (totals[key] ?? count) - count }
            }

            /// Takes the key's next place; whether it is within the cap.
            mutating func take(_ key: WindowKey, cap: Int) -> Bool {
                let index = next[key, default: 0]
                next[key] = index + 1
                return index < Int64(cap)
            }
        }

        /// Decides the current step from each of its keys' totals after this batch's contributions were added: the
        /// batch's sessions of a key hold the last of its total's places, in batch order; those past the cap are left
        /// out (`address_cap` at an address step, `unit_cap` at the units'). Then moves to the next step.
        public mutating func admit(totals: [WindowKey: Int64]) {
            guard let contributions else { return }
            var places = Places(contributions, totals: totals)
            for (index, key) in keys[step].enumerated() where refusals[index] == nil {
                guard let key, !places.take(key.key, cap: key.cap) else { continue }
                refusals[index] = step < Self.steps - 1 ? .addressCap : .unitCap
            }
            advance()
        }

        /// What the admitted sessions add to their cities' and cohorts' frequencies, and which windows and kinds every
        /// admitted event's undeclared values are ranked in.
        private mutating func rankValues() {
            guard let limit = admission.maximumScopeValues, limit > 0 else { return }
            var values: [WindowKey: Frequency] = [:]
            var rankings = Set<Ranking>()
            var networks: [String: String] = [:]
            for (index, event) in events.enumerated() where refusals[index] == nil {
                let window = admission.windowStart(of: event.time)
                var undeclared: [WindowKey] = []
                if admission.cities == nil, let city = event.city, city != CrashGuardPolicy.otherValue,
                    !admission.pinned(city, .city)
                {
                    undeclared.append(WindowKey(window: window, kind: .city, value: city))
                }
                if admission.cohorts == nil {
                    for cohort in Set(event.cohorts)
                    where cohort != CrashGuardPolicy.otherValue && !admission.pinned(cohort, .cohort) {
                        undeclared.append(WindowKey(window: window, kind: .cohort, value: cohort))
                    }
                }
                for key in undeclared { rankings.insert(Ranking(window: key.window, kind: key.kind)) }
                // Only sessions rank values: they are capped per unit and address, exposures are not.
                guard case .session = event.payload, !undeclared.isEmpty else { continue }
                let network = event.address.map { address in
                    let network = networks[address] ?? AddressBlock.network(ofKey: address)
                    networks[address] = network
                    return network
                }
                let reach = Reach(unit: EventAdmission.unitKey(of: event), network: network)
                for key in undeclared { values[key, default: Frequency(key: key)].add(reach) }
            }
            frequencies = values.values.sorted { $0.key < $1.key }
            self.rankings = rankings.sorted()
        }

        /// The events that count, with their cities and cohorts as counted, and those a cap left out.
        ///
        /// - Parameter ranked: for each of `rankings`, the `maximumScopeValues` values with the most sessions in
        ///   the window (this batch's included) among those written.
        public func counted(ranked: [Ranking: Set<String>]) -> (events: [StoredEvent], dropped: [EventDrop]) {
            var counted: [StoredEvent] = []
            var dropped: [EventDrop] = []
            for (index, event) in events.enumerated() {
                if let reason = refusals[index] {
                    dropped.append(EventDrop(id: event.id, reason: reason))
                    continue
                }
                let window = admission.windowStart(of: event.time)
                var event = event
                event.city = event.city.map {
                    fold(
                        $0, declared: admission.cities, named: admission.namedCities,
                        ranked: ranked[Ranking(window: window, kind: .city)])
                }
                var cohorts: [String] = []
                for cohort in event.cohorts {
                    let value = fold(
                        cohort, declared: admission.cohorts, named: admission.namedCohorts,
                        ranked: ranked[Ranking(window: window, kind: .cohort)])
                    if !cohorts.contains(value) { cohorts.append(value) }
                }
                event.cohorts = cohorts
                counted.append(event)
            }
            return (counted, dropped)
        }

        func fold(_ value: String, declared: Set<String>?, named: Set<String>, ranked: Set<String>?) -> String {
            if value == CrashGuardPolicy.otherValue { return value }
            if let declared { return declared.contains(value) ? value : CrashGuardPolicy.otherValue }
            if named.contains(value) { return value }
            guard admission.maximumScopeValues != nil else { return value }
            return ranked?.contains(value) == true ? value : CrashGuardPolicy.otherValue
        }
    }

    /// What the admitted sessions of one undeclared city or cohort add in a window: their number, and which units
    /// and networks reported them (``Reach``).
    public struct Frequency: Sendable, Hashable {
        public var key: WindowKey
        public var sessions: Int64 = 0
        public var reach = Reach()

        public init(key: WindowKey, sessions: Int64 = 0, reach: Reach = Reach()) {
            self.key = key
            self.sessions = sessions
            self.reach = reach
        }

        mutating func add(_ other: Reach) {
            sessions += 1
            reach.formUnion(other)
        }
    }

    /// Which units and which networks (an IPv4 /24, an IPv6 /48: ``IPAddress/network``) reported a value: a bit of
    /// a 64-bit sketch per unit and per network, set by a hash of it. Bits only ever join (`|`), so the sketch of a
    /// window is the same whatever order its sessions came in, and on every backend; and the number of bits set is
    /// at most the number of distinct units (networks) that reported the value: a lower bound, so a forger from
    /// few networks can never look like many.
    public struct Reach: Sendable, Hashable {
        /// One bit per unit seen (by hash).
        public var units: Int64 = 0
        /// One bit per network seen (by hash).
        public var networks: Int64 = 0

        public init(units: Int64 = 0, networks: Int64 = 0) {
            self.units = units
            self.networks = networks
        }

        /// The reach of one session: its unit's bit, and its source network's bit when it has an address.
        public init(_ event: StoredEvent) {
            self.init(unit: EventAdmission.unitKey(of: event), network: event.address.map(AddressBlock.network(ofKey:)))
        }

        init(unit: String, network: String?) {
            units = Self.bit(unit)
            networks = network.map(Self.bit) ?? 0
        }

        static func bit(_ text: String) -> Int64 {
            Int64(bitPattern: 1 << UInt64(Murmur3Hasher.hash(Array(text.utf8), seed: 0x5243_4831) % 64))
        }

        public mutating func formUnion(_ other: Reach) {
            units |= other.units
            networks |= other.networks
        }

        /// At least this many distinct units reported the value.
        public var unitCount: Int { units.nonzeroBitCount }
        /// At least this many distinct networks reported the value.
        public var networkCount: Int { networks.nonzeroBitCount }
    }

    /// The most undeclared cities (and, apart, cohorts) an admission window writes: ten times `maximumScopeValues`.
    /// A value first seen once the window holds that many is counted as `(other)` and writes nothing, so a stream of
    /// made-up values costs the store a bounded number of rows per window, however many it makes up.
    public var maximumValuesPerWindow: Int {
        guard let values = maximumScopeValues else { return .max }
        let (product, overflow) = values.multipliedReportingOverflow(by: 10)
        return overflow ? .max : product
    }

    /// Admission windows kept in memory: the same decisions as a backend's, for simulations and tests.
    public struct Ledger: Sendable {
        private var totals: [WindowKey: Int64] = [:]
        private var frequencies: [Ranking: [String: Int64]] = [:]

        public init() {}

        /// Admits a batch of new events.
        public mutating func admit(_ events: [StoredEvent], admission: EventAdmission) -> (
            events: [StoredEvent], dropped: [EventDrop]
        ) {
            var plan = Plan(events, admission: admission)
            while let contributions = plan.contributions { plan.admit(totals: add(contributions)) }
            for frequency in plan.frequencies {
                let ranking = Ranking(window: frequency.key.window, kind: frequency.key.kind)
                var values = frequencies[ranking] ?? [:]
                if values[frequency.key.value] == nil, values.count >= admission.maximumValuesPerWindow { continue }
                values[frequency.key.value, default: 0] += frequency.sessions
                frequencies[ranking] = values
            }
            var ranked: [Ranking: Set<String>] = [:]
            for ranking in plan.rankings {
                let values = frequencies[ranking] ?? [:]
                let top = values.sorted { ($1.value, $0.key) < ($0.value, $1.key) }.prefix(
                    admission.maximumScopeValues ?? values.count)
                ranked[ranking] = Set(top.map(\.key))
            }
            return plan.counted(ranked: ranked)
        }

        private mutating func add(_ contributions: [(key: WindowKey, count: Int64)]) -> [WindowKey: Int64] {
            var after: [WindowKey: Int64] = [:]
            for (key, count) in contributions {
                totals[key, default: 0] += count
                after[key] = totals[key]
            }
            return after
        }

        /// The values written for a window and kind (for tests: bounded by `maximumValuesPerWindow`).
        public func values(in ranking: Ranking) -> Int { frequencies[ranking]?.count ?? 0 }

        /// Forgets windows starting before a time (milliseconds).
        public mutating func prune(before window: Int64) {
            totals = totals.filter { $0.key.window >= window }
            frequencies = frequencies.filter { $0.key.window >= window }
        }
    }
}
