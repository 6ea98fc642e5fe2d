public import SwitchyardStorage

/// Counters of one namespace kept in memory per minute, and its recorded crashed sessions, so the crash guard can
/// sum a window without reading the store on the ingestion path.
///
/// Fed with the same increments the store adds (``EventAggregation/increments(of:)``) and the same crash records
/// (``EventAggregation/crashes(of:)``), loaded from the store at start and refreshed from it now and then (other
/// flagsd processes count events too), and pruned to the longest window in use. Only plugin switches and the
/// baseline are kept.
public struct WindowCounts: Sendable {
    /// Per source, subject, dimension and bucket start (milliseconds).
    private var counters: [EventSource: [EventSubject: [EventDimension: [Int64: EventTally]]]] = [:]
    /// Crashed sessions by bucket start.
    private var crashes: [Int64: [CrashRecord]] = [:]

    public init() {}

    /// Counters read from the store (`eventCounts` with `perBucket`) and its crash records.
    public init(_ counts: [EventCount], crashes records: [CrashRecord] = []) {
        for count in counts where count.subject.kind == .pluginSwitch || count.subject.kind == .baseline {
            guard let bucket = count.bucket else { continue }
            counters[count.source, default: [:]][count.subject, default: [:]][count.dimension, default: [:]][
                EventAggregation.bucketStart(of: bucket), default: .zero] += count.tally
        }
        add(crashes: records)
    }

    /// Adds committed increments and crash records.
    public mutating func add(
        _ increments: [(key: EventAggregation.CounterKey, tally: EventTally)], crashes records: [CrashRecord] = []
    ) {
        for (key, tally) in increments where key.subject.kind == .pluginSwitch || key.subject.kind == .baseline {
            counters[key.source, default: [:]][key.subject, default: [:]][key.dimension, default: [:]][
                key.bucket, default: .zero] += tally
        }
        add(crashes: records)
    }

    private mutating func add(crashes records: [CrashRecord]) {
        for record in records { crashes[record.bucket, default: []].append(record) }
    }

    /// Forgets buckets starting before a time (milliseconds).
    public mutating func prune(before bucket: Int64) {
        for (source, subjects) in counters {
            var keptSubjects: [EventSubject: [EventDimension: [Int64: EventTally]]] = [:]
            for (subject, dimensions) in subjects {
                var kept: [EventDimension: [Int64: EventTally]] = [:]
                for (dimension, buckets) in dimensions {
                    let remaining = buckets.filter { $0.key >= bucket }
                    if !remaining.isEmpty { kept[dimension] = remaining }
                }
                if !kept.isEmpty { keptSubjects[subject] = kept }
            }
            counters[source] = keptSubjects.isEmpty ? nil : keptSubjects
        }
        crashes = crashes.filter { $0.key >= bucket }
    }

    /// The sum of a counter over the buckets starting in `[from, until)` (milliseconds).
    public func sum(
        _ source: EventSource, _ subject: EventSubject, _ dimension: EventDimension, from: Int64, until: Int64
    ) -> EventTally {
        guard let buckets = counters[source]?[subject]?[dimension] else { return .zero }
        var total = EventTally.zero
        for (bucket, tally) in buckets where bucket >= from && bucket < until { total += tally }
        return total
    }

    /// The plugin switches with counts, from any source.
    public var switches: [String] {
        Array(Set(counters.values.flatMap { $0.keys.filter { $0.kind == .pluginSwitch }.map(\.key) }))
    }

    /// Everything an assessment reads, summed over the buckets starting in `[from, until)` (milliseconds).
    public func counts(from: Int64, until: Int64) -> GuardCounts {
        var sums: [EventSource: [EventSubject: [EventDimension: EventTally]]] = [:]
        for (source, subjects) in counters {
            for (subject, dimensions) in subjects {
                for (dimension, buckets) in dimensions {
                    var total = EventTally.zero
                    for (bucket, tally) in buckets where bucket >= from && bucket < until { total += tally }
                    if !total.isZero { sums[source, default: [:]][subject, default: [:]][dimension] = total }
                }
            }
        }
        var records: [CrashRecord] = []
        for (bucket, list) in crashes where bucket >= from && bucket < until { records += list }
        return GuardCounts(sums: sums, crashes: records)
    }

    /// The counts one switch's assessment needs from one source, over `[from, until)`.
    public func tallies(of key: String, source: EventSource = .client, from: Int64, until: Int64) -> SwitchTallies {
        counts(from: from, until: until).tallies(of: key, source: source)
    }
}

/// A namespace's counts over one span: sessions (and crashed ones) per source, subject and dimension, and the
/// crashed sessions recorded in it. What ``GuardRule`` reads.
public struct GuardCounts: Sendable {
    private var sums: [EventSource: [EventSubject: [EventDimension: EventTally]]]
    /// The crashed sessions of the span, of every source.
    public private(set) var crashes: [CrashRecord]
    /// Which cities and cohorts a trip on clients' evidence may be scoped to; nil: any counted on its own (counts held
    /// in memory, which the worker confirms on the store's with this set).
    public var scopes: ScopeEligibility?

    init(sums: [EventSource: [EventSubject: [EventDimension: EventTally]]], crashes: [CrashRecord]) {
        self.sums = sums
        self.crashes = crashes
    }

    /// Counts from the store's sums (`eventCounts` without `perBucket`) and crash records.
    public init(_ counts: [EventCount], crashes records: [CrashRecord]) {
        var sums: [EventSource: [EventSubject: [EventDimension: EventTally]]] = [:]
        for count in counts where count.subject.kind == .pluginSwitch || count.subject.kind == .baseline {
            sums[count.source, default: [:]][count.subject, default: [:]][count.dimension, default: .zero] +=
                count.tally
        }
        self.init(sums: sums, crashes: records)
    }

    /// Sessions with a switch active and all sessions, per dimension, from one source.
    public func tallies(of key: String, source: EventSource) -> SwitchTallies {
        var tallies = SwitchTallies()
        let baseline = sums[source]?[.baseline] ?? [:]
        for (dimension, tally) in sums[source]?[.pluginSwitch(key)] ?? [:] where !tally.isZero {
            tallies.withSwitch[dimension] = tally
            tallies.all[dimension] = baseline[dimension] ?? .zero
        }
        if tallies.all[.all] == nil { tallies.all[.all] = baseline[.all] ?? .zero }
        return tallies
    }

    /// Sessions with a switch active in one dimension, from one source.
    public func sessions(of key: String, source: EventSource, in dimension: EventDimension) -> EventTally {
        sums[source]?[.pluginSwitch(key)]?[dimension] ?? .zero
    }

    /// All sessions of one dimension, from one source.
    public func baseline(source: EventSource, in dimension: EventDimension) -> EventTally {
        sums[source]?[.baseline]?[dimension] ?? .zero
    }

    /// The plugin switches with sessions from a source.
    public func switches(source: EventSource) -> [String] {
        (sums[source] ?? [:]).keys.filter { $0.kind == .pluginSwitch }.map(\.key).sorted()
    }

    /// Whether a source reported sessions with a switch.
    public func hasSessions(of key: String, source: EventSource) -> Bool {
        (sums[source]?[.pluginSwitch(key)]?[.all]?.sessions ?? 0) > 0
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
}
