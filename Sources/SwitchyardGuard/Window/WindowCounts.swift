public import SwitchyardStorage

/// Counters of one namespace kept in memory per minute, so the crash guard can sum a window without reading the
/// store on the ingestion path.
///
/// Fed with the same increments the store adds (``EventAggregation/increments(of:)``), loaded from the store's
/// counters at start and refreshed from them now and then (other flagsd processes count events too), and
/// pruned to the longest window in use. Only plugin switches and the baseline are kept.
public struct WindowCounts: Sendable {
    /// Per subject, per dimension, per bucket start (milliseconds).
    private var counters: [EventSubject: [EventDimension: [Int64: EventTally]]] = [:]

    public init() {}

    /// Counters read from the store (`eventCounts` with `perBucket`).
    public init(_ counts: [EventCount]) {
        for count in counts where count.subject.kind == .pluginSwitch || count.subject.kind == .baseline {
            guard let bucket = count.bucket else { continue }
            counters[count.subject, default: [:]][count.dimension, default: [:]][EventAggregation.bucketStart(of: bucket), default: .zero] += count.tally
        }
    }

    /// Adds committed increments.
    public mutating func add(_ increments: [(key: EventAggregation.CounterKey, tally: EventTally)]) {
        for (key, tally) in increments where key.subject.kind == .pluginSwitch || key.subject.kind == .baseline {
            counters[key.subject, default: [:]][key.dimension, default: [:]][key.bucket, default: .zero] += tally
        }
    }

    /// Forgets buckets starting before a time (milliseconds).
    public mutating func prune(before bucket: Int64) {
        for (subject, dimensions) in counters {
            var kept: [EventDimension: [Int64: EventTally]] = [:]
            for (dimension, buckets) in dimensions {
                let remaining = buckets.filter { $0.key >= bucket }
                if !remaining.isEmpty { kept[dimension] = remaining }
            }
            counters[subject] = kept.isEmpty ? nil : kept
        }
    }

    /// The sum of a counter over the buckets starting in `[from, until)` (milliseconds).
    public func sum(_ subject: EventSubject, _ dimension: EventDimension, from: Int64, until: Int64) -> EventTally {
        guard let buckets = counters[subject]?[dimension] else { return .zero }
        var total = EventTally.zero
        for (bucket, tally) in buckets where bucket >= from && bucket < until { total += tally }
        return total
    }

    /// Every dimension a subject has counts in.
    public func dimensions(of subject: EventSubject) -> [EventDimension] {
        counters[subject].map { Array($0.keys) } ?? []
    }

    /// The plugin switches with counts.
    public var switches: [String] {
        counters.keys.filter { $0.kind == .pluginSwitch }.map(\.key)
    }

    /// The counts one switch's assessment needs, over `[from, until)`.
    public func tallies(of key: String, from: Int64, until: Int64) -> SwitchTallies {
        let subject = EventSubject.pluginSwitch(key)
        var tallies = SwitchTallies()
        for dimension in dimensions(of: subject) {
            let tally = sum(subject, dimension, from: from, until: until)
            guard !tally.isZero else { continue }
            tallies.withSwitch[dimension] = tally
            tallies.all[dimension] = sum(.baseline, dimension, from: from, until: until)
        }
        if tallies.all[.all] == nil { tallies.all[.all] = sum(.baseline, .all, from: from, until: until) }
        return tallies
    }
}

/// Sessions with a switch active, and all sessions, per dimension, over a window: what one assessment reads.
public struct SwitchTallies: Sendable, Hashable {
    /// Sessions with the switch active (and of those, crashed), per dimension (`all`, each city and cohort).
    public var withSwitch: [EventDimension: EventTally] = [:]
    /// Every session of the namespace (the baseline), per dimension.
    public var all: [EventDimension: EventTally] = [:]

    public init(withSwitch: [EventDimension: EventTally] = [:], all: [EventDimension: EventTally] = [:]) {
        self.withSwitch = withSwitch
        self.all = all
    }

    /// Tallies from the store's sums (`eventCounts` without `perBucket`) for one switch.
    public init(_ counts: [EventCount], of key: String) {
        for count in counts {
            if count.subject == .pluginSwitch(key) { withSwitch[count.dimension, default: .zero] += count.tally }
            if count.subject == .baseline { all[count.dimension, default: .zero] += count.tally }
        }
    }
}
