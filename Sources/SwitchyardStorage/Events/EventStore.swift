public import Foundation
import SwitchyardCore

/// Where flagsd keeps what clients report: the ids of events already counted, and durable counters of
/// sessions, crashed sessions and exposures per namespace, minute, subject and dimension.
///
/// The crash guard reads crash rates from it (sessions with a plugin switch active, and those that crashed,
/// beside the namespace-wide baseline); experiment results read exposures, sessions and crashes per variant.
///
/// Implementation requirements (the conformance suite checks each):
/// - `ingestEvents` runs in one transaction and is durable when it returns, like a flag change: for each
///   event in order, record its id for the namespace unless recorded already (an id seen before, in an earlier
///   call, in this call, or before a restart, is a duplicate and counts nothing). Then admit the new events
///   with an ``EventAdmission/Plan`` over the namespace's admission windows (the counts of sessions each address
///   block and unit contributed, and of sessions per city and cohort with their ``EventAdmission/Reach``, per
///   window): while its `contributions` is not nil, add them and pass the totals after adding them to
///   `admit(totals:)` (one step each: address levels, then units); add the `frequencies` that leaves (sessions
///   summed, reach joined with `|`), writing a value without a row only while its window and kind hold fewer than
///   ``EventAdmission/maximumValuesPerWindow`` values; then pass the most frequent values of each window and kind
///   it names (`rankings`; most sessions first, then by value) to `counted(ranked:)`. Add the increments of the events it counts, computed with
///   ``EventAggregation/increments(of:)``, to the counters, and record their crashed sessions
///   (``EventAggregation/crashes(of:)``). Rows are written in the order these functions return them (a fixed
///   order, so concurrent batches cannot deadlock on the same rows). Then, for each of
///   ``ExperimentStep/steps(of:experiments:)`` over the counted events with `admission.experiments`, in order: for
///   each entry whose unit is not in the entry's experiment and phase yet, unless `admission.maximumUnitsPerArm` is
///   set and an arm of that phase holds that many units already, record the unit in the entry's arm with the step's
///   time, count it in the arm, and record the unit's current metric totals (those not 0) as its pre-exposure values
///   for that experiment and phase; then add the step's totals to the unit's metric totals. Nothing is counted when
///   the call throws.
/// - An unknown or deleted namespace throws `StorageError` `notFound` and records nothing.
/// - `eventCounts` sums counters over the buckets that start in `[from, until)` (bucket starts are
///   ``EventAggregation/bucketSize`` apart, from the Unix epoch, UTC), grouped by subject and dimension (and by
///   bucket when `perBucket` is set); counters that sum to zero are left out. Results are sorted by subject,
///   dimension, then bucket.
/// - `crashRecords` returns the recorded crashed sessions of a namespace whose bucket starts in `[from, until)`,
///   oldest bucket first, then by id.
/// - `scopeReach` joins the reach of each city and cohort written in the admission windows that start in
///   `[from, until)`.
/// - `experimentUnits(in:experiment:)` returns every unit recorded in an experiment (all phases), oldest entry first
///   (then by unit), each with its metric totals now and its pre-exposure values.
/// - `pruneExperimentRecords(before:)` forgets the phases of experiments whose newest unit entered before the date
///   (units, pre-exposure values, arm counts), then the metric totals last added to before the date of units no
///   experiment phase holds. A total records its last addition to within
///   ``ExperimentWrites/totalsTimeSlackMilliseconds`` (an hour): one added to since the date is never forgotten, one
///   quiet since then may be forgotten up to that much later.
/// - `pruneEventIDs(before:)` forgets the ids of events whose time is before the date, and never touches
///   counters. The server keeps ids for longer than it accepts old events, so a forgotten id can only come
///   back on an event that is refused as too old.
/// - `pruneEventRecords(before:)` forgets admission windows that start, and crashed sessions whose bucket
///   starts, before the date; it never touches counters or ids.
public protocol EventStore: Sendable {
    /// Counts new events and records their ids; duplicates count nothing.
    ///
    /// - Parameters:
    ///   - events: validated events, in the order they arrived.
    ///   - namespace: the namespace they were posted to.
    ///   - receivedAt: when the server received them.
    ///   - admission: how much each unit and address may contribute, and which cities and cohorts are counted on
    ///     their own.
    ///   - synced: when false, the commit may return before it is on disk, provided the next synced commit of
    ///     events makes it durable too (a write-ahead log synced up to that commit). Ingestion writes the parts of a
    ///     large batch this way, and only the last one synced, before acknowledging the batch.
    /// - Returns: which ids were recorded now and which had been before, which of the new ones a cap left out of
    ///   the counts, and the events as counted.
    func ingestEvents(
        _ events: [StoredEvent], in namespace: String, receivedAt: Date, admission: EventAdmission, synced: Bool
    )
        async throws -> EventIngestResult

    /// Counter sums over a time range.
    func eventCounts(_ query: EventCountQuery) async throws -> [EventCount]

    /// The crashed sessions recorded for a namespace, over a time range.
    func crashRecords(in namespace: String, from: Date, until: Date) async throws -> [CrashRecord]

    /// Which units and networks reported each undeclared city and cohort, over the admission windows that start in
    /// a time range.
    func scopeReach(in namespace: String, from: Date, until: Date) async throws -> [EventDimension: EventAdmission
        .Reach]

    /// The units of an experiment (every phase), with their metric totals now and at entry.
    func experimentUnits(in namespace: String, experiment: String) async throws -> [ExperimentUnitRecord]

    /// Forgets experiment phases over before a date, and metric totals of units quiet since then and in no experiment.
    ///
    /// - Returns: how many rows were forgotten.
    @discardableResult
    func pruneExperimentRecords(before date: Date) async throws -> Int

    /// Forgets the ids of events older than a date.
    ///
    /// - Returns: how many ids were forgotten.
    @discardableResult
    func pruneEventIDs(before date: Date) async throws -> Int

    /// Forgets admission windows and crashed sessions older than a date.
    ///
    /// - Returns: how many rows were forgotten.
    @discardableResult
    func pruneEventRecords(before date: Date) async throws -> Int

    /// Keeps counters bounded: rolls the minute counters of each whole hour in `rollUp` into one counter per hour
    /// (at the hour's start), and deletes counters older than `deleteBefore`, in small transactions.
    ///
    /// Ranges past `rollUp`'s lower bound are counted per hour from then on: a sum over `[from, until)` counts an
    /// hour whose start is in it. Only hours entirely before `rollUp.upperBound` roll up.
    @discardableResult
    func compactEventCounts(rollUp: Range<Date>, deleteBefore: Date) async throws -> EventCompaction
}

/// What ``EventStore/compactEventCounts(rollUp:deleteBefore:)`` did.
public struct EventCompaction: Sendable, Hashable {
    /// Minute counters added into their hour's counter (and removed).
    public var rolledUp: Int
    /// Counters deleted as older than the retention.
    public var deleted: Int

    public init(rolledUp: Int = 0, deleted: Int = 0) {
        self.rolledUp = rolledUp
        self.deleted = deleted
    }

    /// The hour starts (milliseconds) whose minutes a compaction over `range` rolls up: whole hours in it.
    public static func hours(in range: Range<Date>) -> [Int64] {
        let hour = EventAggregation.hourMilliseconds
        let first = (max(0, range.lowerBound.milliseconds) + hour - 1) / hour * hour
        let end = max(0, range.upperBound.milliseconds) / hour * hour
        return Array(stride(from: first, to: end, by: Int(hour)))
    }
}

extension EventStore {
    /// Counts new events, synced (durable when this returns).
    public func ingestEvents(_ events: [StoredEvent], in namespace: String, receivedAt: Date, admission: EventAdmission)
        async throws -> EventIngestResult
    {
        try await ingestEvents(events, in: namespace, receivedAt: receivedAt, admission: admission, synced: true)
    }

    /// Counts new events with no caps and every city and cohort on its own.
    public func ingestEvents(_ events: [StoredEvent], in namespace: String, receivedAt: Date) async throws
        -> EventIngestResult
    {
        try await ingestEvents(events, in: namespace, receivedAt: receivedAt, admission: .unlimited)
    }
}

/// Who reported an event: an app with a client token (public, so possibly forged), or a server-side crash
/// pipeline with a reporter token (secret).
public struct EventSource: RawRepresentable, Sendable, Hashable, Comparable, CustomStringConvertible {
    public let rawValue: String

    public init?(rawValue: String) {
        guard ["client", "reporter"].contains(rawValue) else { return nil }
        self.rawValue = rawValue
    }

    private init(_ rawValue: String) { self.rawValue = rawValue }

    public static let client = EventSource("client")
    public static let reporter = EventSource("reporter")
    public static let all: [EventSource] = [.client, .reporter]

    public var description: String { rawValue }
    public static func < (lhs: EventSource, rhs: EventSource) -> Bool { lhs.rawValue < rhs.rawValue }
}

/// One validated event, as the store counts it.
public struct StoredEvent: Sendable, Hashable {
    /// What the event reports.
    public enum Payload: Sendable, Hashable {
        /// A finished session: whether it crashed, the plugin switches active in it, and the variant of each
        /// experiment flag served in it.
        case session(crashed: Bool, switches: [String], variants: [String: String])
        /// An experiment flag's variant served to a unit.
        case exposure(flag: String, variant: String)
        /// An outcome a unit reported (`FlagClient.track`): a declared metric and its value (1 for an occurrence),
        /// with the plugin switches active and the variants served in its session at that moment.
        case metric(name: String, value: Double, switches: [String], variants: [String: String])
    }

    /// The client-generated id, unique per namespace.
    public var id: String
    /// The event's time: it decides the bucket.
    public var time: Date
    public var city: String?
    public var cohorts: [String]
    public var payload: Payload
    /// Who reported it.
    public var source: EventSource
    /// The unit it belongs to, as a pseudonymous key (the server keeps a digest of what the client sent, never a
    /// raw id); nil when the event named none.
    public var unit: String?
    /// The source address of the batch, as a key (an IPv4 address, or the /64 of an IPv6 address); nil when
    /// unknown.
    public var address: String?
    /// The plugin switches whose state the unit's rollout split decided (true: bucketed in, false: out), as sessions
    /// and metric events report them: the arms of those switches' experiments the unit is in.
    public var splits: [String: Bool]

    public init(
        id: String, time: Date, city: String? = nil, cohorts: [String] = [], payload: Payload,
        source: EventSource = .client, unit: String? = nil, address: String? = nil, splits: [String: Bool] = [:]
    ) {
        self.id = id
        self.time = time
        self.city = city
        self.cohorts = cohorts
        self.payload = payload
        self.source = source
        self.unit = unit
        self.address = address
        self.splits = splits
    }

    /// The variants of experiment flags the event says were served to its unit.
    public var variants: [String: String] {
        switch payload {
        case .session(_, _, let variants), .metric(_, _, _, let variants): variants
        case .exposure(let flag, let variant): [flag: variant]
        }
    }
}

/// What `ingestEvents` did with a batch.
public struct EventIngestResult: Sendable, Hashable {
    /// Ids recorded now (counted, or left out of the counts by a cap: see `dropped`).
    public var counted: [String]
    /// Ids recorded before (a retried batch): nothing was added for them.
    public var duplicates: [String]
    /// New events a cap left out of the counts, in the batch's order (their ids are recorded: a retry is a duplicate).
    public var dropped: [EventDrop]
    /// The new events as counted (cities and cohorts not counted on their own folded into
    /// ``CrashGuardPolicy/otherValue``), in the batch's order.
    public var admitted: [StoredEvent]
    /// How many units the batch entered in an experiment's arm.
    public var enteredUnits: Int

    public init(
        counted: [String], duplicates: [String], dropped: [EventDrop] = [], admitted: [StoredEvent] = [],
        enteredUnits: Int = 0
    ) {
        self.counted = counted
        self.duplicates = duplicates
        self.dropped = dropped
        self.admitted = admitted
        self.enteredUnits = enteredUnits
    }
}

/// An event received but left out of the counts, and why.
public struct EventDrop: Sendable, Hashable {
    public var id: String
    public var reason: EventDropReason

    public init(id: String, reason: EventDropReason) {
        self.id = id
        self.reason = reason
    }
}

/// Why an event was left out of the counts: a metric label, so a fixed vocabulary.
public struct EventDropReason: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    public let rawValue: String

    public init(rawValue: String) { self.rawValue = rawValue }

    /// Its unit had contributed its most sessions of the window already.
    public static let unitCap = EventDropReason(rawValue: "unit_cap")
    /// Its source address had contributed its most sessions of the window already.
    public static let addressCap = EventDropReason(rawValue: "address_cap")
    /// It names a plugin switch the namespace does not have.
    public static let unknownSwitch = EventDropReason(rawValue: "unknown_switch")
    /// It names an experiment flag the namespace does not have.
    public static let unknownFlag = EventDropReason(rawValue: "unknown_flag")
    /// It names a variant its experiment flag does not have.
    public static let unknownVariant = EventDropReason(rawValue: "unknown_variant")
    /// It reports a metric the namespace does not declare (or one apps do not report: a ratio, a built-in).
    public static let unknownMetric = EventDropReason(rawValue: "unknown_metric")

    /// Every reason, for metrics that exist at 0 for each.
    public static let all: [EventDropReason] = [
        .unitCap, .addressCap, .unknownSwitch, .unknownFlag, .unknownVariant, .unknownMetric,
    ]

    public var description: String { rawValue }
}

/// A crashed session as recorded for the crash guard: who reported it, from where, and what ran in it, so the
/// guard can count distinct units and addresses and tell which switches a crash may be blamed on.
public struct CrashRecord: Sendable, Hashable {
    public var id: String
    public var source: EventSource
    /// The start of its minute bucket, in milliseconds since 1970.
    public var bucket: Int64
    /// Its unit key (for a session that named none: one key per source address).
    public var unit: String
    public var address: String?
    /// As counted (folded).
    public var city: String?
    public var cohorts: [String]
    public var switches: [String]

    public init(
        id: String, source: EventSource, bucket: Int64, unit: String, address: String?, city: String?,
        cohorts: [String], switches: [String]
    ) {
        self.id = id
        self.source = source
        self.bucket = bucket
        self.unit = unit
        self.address = address
        self.city = city
        self.cohorts = cohorts
        self.switches = switches
    }

    /// A list of strings (cohorts, switches) as backends store it: a JSON array.
    public static func storedList(_ values: [String]) -> String {
        JSONValue.array(values.map(JSONValue.string)).serializedString()
    }

    /// A list stored with ``storedList(_:)``.
    ///
    /// - Throws: `StorageError` `corrupt` when it is not a JSON array.
    public static func list(stored text: String) throws(StorageError) -> [String] {
        guard let values = (try? JSONValue.parse(text))?.arrayValue else {
            throw StorageError(.corrupt, "a stored list is not a JSON array")
        }
        return values.compactMap(\.stringValue)
    }

    /// Whether the session counts in a dimension: every one in `all`, its city's, each of its cohorts'.
    public func counts(in dimension: EventDimension) -> Bool {
        switch dimension.kind {
        case .city: city == dimension.value
        case .cohort: cohorts.contains(dimension.value)
        default: true
        }
    }
}

/// What a counter counts: every session of the namespace (the baseline), the sessions with one plugin switch
/// active, or one variant of an experiment flag.
public struct EventSubject: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The kind of subject; stored as its raw value.
    public struct Kind: Sendable, Hashable, Comparable, CustomStringConvertible {
        public let rawValue: String

        public init?(rawValue: String) {
            guard ["baseline", "switch", "variant"].contains(rawValue) else { return nil }
            self.rawValue = rawValue
        }

        private init(_ rawValue: String) { self.rawValue = rawValue }

        /// Every session of the namespace.
        public static let baseline = Kind("baseline")
        /// Sessions with a plugin switch active.
        public static let pluginSwitch = Kind("switch")
        /// A variant of an experiment flag: exposures, and the sessions it was served in.
        public static let variant = Kind("variant")

        public var description: String { rawValue }
        public static func < (lhs: Kind, rhs: Kind) -> Bool { lhs.rawValue < rhs.rawValue }
    }

    public var kind: Kind
    /// The switch or experiment flag key; empty for the baseline.
    public var key: String
    /// The variant key; empty unless `kind` is `variant`.
    public var variant: String

    public init(kind: Kind, key: String, variant: String = "") {
        self.kind = kind
        self.key = key
        self.variant = variant
    }

    public static let baseline = EventSubject(kind: .baseline, key: "")

    public static func pluginSwitch(_ key: String) -> EventSubject {
        EventSubject(kind: .pluginSwitch, key: key)
    }

    public static func variant(_ variant: String, of flag: String) -> EventSubject {
        EventSubject(kind: .variant, key: flag, variant: variant)
    }

    public var description: String {
        switch kind {
        case .baseline: "all sessions"
        case .variant: "\(key)=\(variant)"
        default: key
        }
    }

    public static func < (lhs: EventSubject, rhs: EventSubject) -> Bool {
        (lhs.kind, lhs.key, lhs.variant) < (rhs.kind, rhs.key, rhs.variant)
    }
}

/// Which units a counter covers: all of them, those of one city, or those in one cohort.
public struct EventDimension: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The kind of dimension; stored as its raw value.
    public struct Kind: Sendable, Hashable, Comparable, CustomStringConvertible {
        public let rawValue: String

        public init?(rawValue: String) {
            guard ["all", "city", "cohort"].contains(rawValue) else { return nil }
            self.rawValue = rawValue
        }

        private init(_ rawValue: String) { self.rawValue = rawValue }

        public static let all = Kind("all")
        public static let city = Kind("city")
        public static let cohort = Kind("cohort")

        public var description: String { rawValue }
        public static func < (lhs: Kind, rhs: Kind) -> Bool { lhs.rawValue < rhs.rawValue }
    }

    public var kind: Kind
    /// The city or cohort; empty for `all`.
    public var value: String

    public init(kind: Kind, value: String = "") {
        self.kind = kind
        self.value = value
    }

    public static let all = EventDimension(kind: .all)

    public static func city(_ city: String) -> EventDimension {
        EventDimension(kind: .city, value: city)
    }

    public static func cohort(_ cohort: String) -> EventDimension {
        EventDimension(kind: .cohort, value: cohort)
    }

    public var description: String { kind == .all ? "all" : "\(kind)=\(value)" }

    public static func < (lhs: EventDimension, rhs: EventDimension) -> Bool {
        (lhs.kind, lhs.value) < (rhs.kind, rhs.value)
    }
}

/// The values of one counter.
public struct EventTally: Sendable, Hashable, CustomStringConvertible {
    /// Sessions reported.
    public var sessions: Int64
    /// Of those, sessions that crashed.
    public var crashedSessions: Int64
    /// Exposures reported (variants only).
    public var exposures: Int64

    public init(sessions: Int64 = 0, crashedSessions: Int64 = 0, exposures: Int64 = 0) {
        self.sessions = sessions
        self.crashedSessions = crashedSessions
        self.exposures = exposures
    }

    public static let zero = EventTally()

    public var isZero: Bool { self == .zero }

    /// Crashed sessions per session; nil without sessions.
    public var crashRate: Double? {
        sessions > 0 ? Double(crashedSessions) / Double(sessions) : nil
    }

    public static func + (lhs: EventTally, rhs: EventTally) -> EventTally {
        EventTally(
            sessions: lhs.sessions + rhs.sessions, crashedSessions: lhs.crashedSessions + rhs.crashedSessions,
            exposures: lhs.exposures + rhs.exposures)
    }

    public static func += (lhs: inout EventTally, rhs: EventTally) { lhs = lhs + rhs }

    public var description: String {
        "\(sessions) sessions, \(crashedSessions) crashed, \(exposures) exposures"
    }
}

/// A counter sum: the events one source reported for one subject in one dimension, over a query's range (or one
/// bucket of it).
public struct EventCount: Sendable, Hashable, CustomStringConvertible {
    public var source: EventSource
    public var subject: EventSubject
    public var dimension: EventDimension
    /// The bucket's start, when the query asked for buckets.
    public var bucket: Date?
    public var tally: EventTally

    public init(
        source: EventSource = .client, subject: EventSubject, dimension: EventDimension, bucket: Date? = nil,
        tally: EventTally
    ) {
        self.source = source
        self.subject = subject
        self.dimension = dimension
        self.bucket = bucket
        self.tally = tally
    }

    /// A counter as the stores keep it: source, subject kind and dimension kind by their stored names.
    ///
    /// - Throws: `StorageError.corrupt` when a name is not one this version knows.
    public init(
        stored source: String, subjectKind: String, subject: String, variant: String, dimensionKind: String,
        dimension: String, bucket: Date?, tally: EventTally
    ) throws {
        guard let kind = EventSubject.Kind(rawValue: subjectKind),
            let dimensionKindValue = EventDimension.Kind(rawValue: dimensionKind),
            let sourceValue = EventSource(rawValue: source)
        else {
            throw StorageError(
                .corrupt,
                "an event counter has an unknown source '\(source)', subject '\(subjectKind)' or dimension '\(dimensionKind)'"
            )
        }
        self.init(
            source: sourceValue, subject: EventSubject(kind: kind, key: subject, variant: variant),
            dimension: EventDimension(kind: dimensionKindValue, value: dimension), bucket: bucket, tally: tally)
    }

    public var description: String { "\(source == .client ? "" : "\(source): ")\(subject) [\(dimension)]: \(tally)" }

    /// The order `eventCounts` returns: by source, subject, dimension, then bucket.
    public static func ordered(_ lhs: EventCount, _ rhs: EventCount) -> Bool {
        if lhs.source != rhs.source { return lhs.source < rhs.source }
        if lhs.subject != rhs.subject { return lhs.subject < rhs.subject }
        if lhs.dimension != rhs.dimension { return lhs.dimension < rhs.dimension }
        return (lhs.bucket ?? .distantPast) < (rhs.bucket ?? .distantPast)
    }
}

/// Which counters to sum, over which time range.
///
/// ```swift
/// // Crash counts of every plugin switch in the last 10 minutes, per city, beside the baseline:
/// let now = Date()
/// let counts = try await store.eventCounts(EventCountQuery(namespace: "rider", from: now - 600, until: now,
///                                                          subjects: [.pluginSwitch, .baseline], dimensions: [.city]))
/// ```
public struct EventCountQuery: Sendable, Hashable {
    public var namespace: String
    /// Buckets starting at or after this (rounded down to a bucket start).
    public var from: Date
    /// Buckets starting before this.
    public var until: Date
    /// Subject kinds to include; nil for every kind.
    public var subjects: Set<EventSubject.Kind>?
    /// Switch or flag keys to include; nil for every key (the baseline's key is empty).
    public var keys: Set<String>?
    /// Dimension kinds to include; nil for every kind.
    public var dimensions: Set<EventDimension.Kind>?
    /// Sources to include; nil for every source. Results are per source either way.
    public var sources: Set<EventSource>?
    /// One result per bucket instead of sums over the range.
    public var perBucket: Bool

    public init(
        namespace: String, from: Date, until: Date, subjects: Set<EventSubject.Kind>? = nil, keys: Set<String>? = nil,
        dimensions: Set<EventDimension.Kind>? = nil, sources: Set<EventSource>? = nil, perBucket: Bool = false
    ) {
        self.namespace = namespace
        self.from = from
        self.until = until
        self.subjects = subjects
        self.keys = keys
        self.dimensions = dimensions
        self.sources = sources
        self.perBucket = perBucket
    }

    /// The first bucket start included, in milliseconds.
    public var fromBucket: Int64 { EventAggregation.bucketStart(of: from) }

    /// Bucket starts below this are included, in milliseconds.
    public var untilMilliseconds: Int64 { until.milliseconds }
}
