public import Foundation
public import SwitchyardCore

/// Which new events count, and under which city and cohort: the bounds that keep one unit, one source address,
/// or a stream of made-up values from weighing more than they should. Shared by every backend, so they admit alike.
///
/// - **Caps per window**: a unit contributes at most `maximumSessionsPerUnit` sessions per window (so at most that
///   many to any one switch), and a source address at most `maximumSessionsPerAddress` sessions per window, for
///   sessions clients report (reporters are trusted servers: only their units are capped). Windows are fixed,
///   aligned on the Unix epoch and decided by each event's own time, so counts agree across processes. A session
///   is admitted when it is among the first sessions offered in the window for its unit and for its address
///   (every session offered takes a place, admitted or not: one atomic count per key, which processes sharing a
///   store agree on); the rest are left out of the counts, in arrival order whatever they report, so the sessions
///   left in are a fair sample.
/// - **Cities and cohorts**: counted on their own when the namespace declares them (`cities`, `cohorts`), or,
///   when it does not, when they are among the `maximumScopeValues` most frequent of their window so far; every
///   other value is counted as ``CrashGuardPolicy/otherValue``.
///
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

    public init(window: Duration, maximumSessionsPerUnit: Int?, maximumSessionsPerAddress: Int?, cities: Set<String>?,
                cohorts: Set<String>?, maximumScopeValues: Int?) {
        self.window = window
        self.maximumSessionsPerUnit = maximumSessionsPerUnit
        self.maximumSessionsPerAddress = maximumSessionsPerAddress
        self.cities = cities
        self.cohorts = cohorts
        self.maximumScopeValues = maximumScopeValues
    }

    /// A namespace's admission, from its resolved crash guard policy (the namespace fields and window).
    public init(policy: ResolvedCrashGuardPolicy) {
        self.init(window: policy.window, maximumSessionsPerUnit: policy.maximumSessionsPerUnit,
                  maximumSessionsPerAddress: policy.maximumSessionsPerAddress, cities: policy.cities.map(Set.init),
                  cohorts: policy.cohorts.map(Set.init), maximumScopeValues: policy.maximumScopeValues)
    }

    /// Everything counts, every value on its own.
    public static let unlimited = EventAdmission(window: .seconds(600), maximumSessionsPerUnit: nil, maximumSessionsPerAddress: nil,
                                                 cities: nil, cohorts: nil, maximumScopeValues: nil)

    /// What an admission window counts.
    public struct Kind: RawRepresentable, Sendable, Hashable, Comparable, CustomStringConvertible {
        public let rawValue: String

        public init?(rawValue: String) {
            guard ["unit", "reporter_unit", "address", "city", "cohort"].contains(rawValue) else { return nil }
            self.rawValue = rawValue
        }

        private init(_ rawValue: String) { self.rawValue = rawValue }

        /// Sessions of a unit that clients reported.
        public static let unit = Kind("unit")
        /// Sessions of a unit that reporters reported.
        public static let reporterUnit = Kind("reporter_unit")
        /// Sessions clients reported from a source address.
        public static let address = Kind("address")
        /// Events in a city (when cities are not declared).
        public static let city = Kind("city")
        /// Events in a cohort (when cohorts are not declared).
        public static let cohort = Kind("cohort")

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

    /// One batch's admission, step by step: the backend adds `contributions` and passes the totals to
    /// `admit(totals:)`, adds `frequencies` and passes the most frequent values of each of `rankings` to
    /// `counted(ranked:)`.
    public struct Plan: Sendable {
        public let admission: EventAdmission
        let events: [StoredEvent]
        /// Per event: the unit and address keys it counts against (nil when not capped).
        let keys: [(unit: WindowKey?, address: WindowKey?)]
        /// The sessions each unit and address adds, in key order.
        public let contributions: [(key: WindowKey, count: Int64)]
        /// Per event: nil when admitted, else why not (after `admit`).
        var refusals: [EventDropReason?]
        /// The events each undeclared city and cohort adds, in key order (after `admit`).
        public private(set) var frequencies: [(key: WindowKey, count: Int64)] = []
        /// The windows and kinds whose most frequent values `counted(ranked:)` needs (after `admit`).
        public private(set) var rankings: [Ranking] = []

        /// Plans the admission of new events (duplicates already left out), in arrival order.
        public init(_ events: [StoredEvent], admission: EventAdmission) {
            self.admission = admission
            self.events = events
            var keys: [(unit: WindowKey?, address: WindowKey?)] = []
            var counts: [WindowKey: Int64] = [:]
            for event in events {
                guard case .session = event.payload else {
                    keys.append((nil, nil))
                    continue
                }
                let window = admission.windowStart(of: event.time)
                var unit: WindowKey?
                var address: WindowKey?
                if admission.maximumSessionsPerUnit != nil {
                    unit = WindowKey(window: window, kind: event.source == .reporter ? .reporterUnit : .unit,
                                     value: EventAdmission.unitKey(of: event))
                }
                if admission.maximumSessionsPerAddress != nil, event.source == .client, let value = event.address {
                    address = WindowKey(window: window, kind: .address, value: value)
                }
                for key in [unit, address].compactMap({ $0 }) { counts[key, default: 0] += 1 }
                keys.append((unit, address))
            }
            self.keys = keys
            contributions = counts.sorted { $0.key < $1.key }.map { (key: $0.key, count: $0.value) }
            refusals = Array(repeating: nil, count: events.count)
        }

        /// Decides which sessions count, from each key's total after this batch's contributions were added.
        ///
        /// The batch's sessions of a key hold the last of its total's places, in batch order; a session is
        /// admitted when its places for its unit and its address are within their caps.
        public mutating func admit(totals: [WindowKey: Int64]) {
            var next: [WindowKey: Int64] = [:]
            for (key, count) in contributions { next[key] = (totals[key] ?? count) - count }
            func place(_ key: WindowKey?, cap: Int?) -> Bool {
                guard let key, let cap else { return true }
                let index = next[key, default: 0]
                next[key] = index + 1
                return index < Int64(cap)
            }
            var values: [WindowKey: Int64] = [:]
            for (index, event) in events.enumerated() {
                let unitFits = place(keys[index].unit, cap: admission.maximumSessionsPerUnit)
                let addressFits = place(keys[index].address, cap: admission.maximumSessionsPerAddress)
                if !unitFits {
                    refusals[index] = .unitCap
                } else if !addressFits {
                    refusals[index] = .addressCap
                }
                guard refusals[index] == nil, let limit = admission.maximumScopeValues, limit > 0 else { continue }
                let window = admission.windowStart(of: event.time)
                if admission.cities == nil, let city = event.city, city != CrashGuardPolicy.otherValue {
                    values[WindowKey(window: window, kind: .city, value: city), default: 0] += 1
                }
                if admission.cohorts == nil {
                    for cohort in Set(event.cohorts) where cohort != CrashGuardPolicy.otherValue {
                        values[WindowKey(window: window, kind: .cohort, value: cohort), default: 0] += 1
                    }
                }
            }
            frequencies = values.sorted { $0.key < $1.key }.map { (key: $0.key, count: $0.value) }
            rankings = Set(frequencies.map { Ranking(window: $0.key.window, kind: $0.key.kind) }).sorted()
        }

        /// The events that count, with their cities and cohorts as counted, and those a cap left out.
        ///
        /// - Parameter ranked: for each of `rankings`, the `maximumScopeValues` values with the most events in
        ///   the window (this batch's included).
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
                event.city = event.city.map { fold($0, declared: admission.cities, ranked: ranked[Ranking(window: window, kind: .city)]) }
                var cohorts: [String] = []
                for cohort in event.cohorts {
                    let value = fold(cohort, declared: admission.cohorts, ranked: ranked[Ranking(window: window, kind: .cohort)])
                    if !cohorts.contains(value) { cohorts.append(value) }
                }
                event.cohorts = cohorts
                counted.append(event)
            }
            return (counted, dropped)
        }

        func fold(_ value: String, declared: Set<String>?, ranked: Set<String>?) -> String {
            if value == CrashGuardPolicy.otherValue { return value }
            if let declared { return declared.contains(value) ? value : CrashGuardPolicy.otherValue }
            guard admission.maximumScopeValues != nil else { return value }
            return ranked?.contains(value) == true ? value : CrashGuardPolicy.otherValue
        }
    }

    /// Admission windows kept in memory: the same decisions as a backend's, for simulations and tests.
    public struct Ledger: Sendable {
        private var totals: [WindowKey: Int64] = [:]
        private var frequencies: [Ranking: [String: Int64]] = [:]

        public init() {}

        /// Admits a batch of new events.
        public mutating func admit(_ events: [StoredEvent], admission: EventAdmission) -> (events: [StoredEvent], dropped: [EventDrop]) {
            var plan = Plan(events, admission: admission)
            var after: [WindowKey: Int64] = [:]
            for (key, count) in plan.contributions {
                totals[key, default: 0] += count
                after[key] = totals[key]
            }
            plan.admit(totals: after)
            for (key, count) in plan.frequencies {
                frequencies[Ranking(window: key.window, kind: key.kind), default: [:]][key.value, default: 0] += count
            }
            var ranked: [Ranking: Set<String>] = [:]
            for ranking in plan.rankings {
                let values = frequencies[ranking] ?? [:]
                let top = values.sorted { ($1.value, $0.key) < ($0.value, $1.key) }.prefix(admission.maximumScopeValues ?? values.count)
                ranked[ranking] = Set(top.map(\.key))
            }
            return plan.counted(ranked: ranked)
        }

        /// Forgets windows starting before a time (milliseconds).
        public mutating func prune(before window: Int64) {
            totals = totals.filter { $0.key.window >= window }
            frequencies = frequencies.filter { $0.key.window >= window }
        }
    }
}
