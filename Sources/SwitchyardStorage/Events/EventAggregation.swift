public import Foundation

/// How events become counter increments: shared by every backend, so they count alike.
///
/// A `session` event adds one session (and one crashed session when it crashed) to the baseline, to each
/// plugin switch active in it, and to each experiment variant served in it; an `exposure` adds one exposure to
/// its variant. Each in the event's minute and under its source, once for all units, once for its city (if any),
/// and once per cohort.
public enum EventAggregation {
    /// The width of a time bucket: one minute, aligned on the Unix epoch (UTC).
    public static let bucketSize: Duration = .seconds(60)
    static let bucketMilliseconds: Int64 = 60_000
    /// The width of a rolled-up bucket (``EventStore/compactEventCounts(rollUp:deleteBefore:)``): one hour.
    package static let hourMilliseconds: Int64 = 3_600_000

    /// The start of the bucket holding a time, in milliseconds since 1970.
    public static func bucketStart(of time: Date) -> Int64 {
        let milliseconds = time.milliseconds
        let remainder = milliseconds % bucketMilliseconds
        return milliseconds - (remainder < 0 ? remainder + bucketMilliseconds : remainder)
    }

    /// One counter: a source's events for a subject in a dimension in a bucket.
    public struct CounterKey: Sendable, Hashable, Comparable {
        public var source: EventSource
        public var subject: EventSubject
        public var dimension: EventDimension
        /// The bucket's start, in milliseconds since 1970.
        public var bucket: Int64

        public init(source: EventSource = .client, subject: EventSubject, dimension: EventDimension, bucket: Int64) {
            self.source = source
            self.subject = subject
            self.dimension = dimension
            self.bucket = bucket
        }

        public static func < (lhs: CounterKey, rhs: CounterKey) -> Bool {
            if lhs.source != rhs.source { return lhs.source < rhs.source }
            if lhs.subject != rhs.subject { return lhs.subject < rhs.subject }
            if lhs.dimension != rhs.dimension { return lhs.dimension < rhs.dimension }
            return lhs.bucket < rhs.bucket
        }
    }

    /// The increments of some events, summed per counter, in counter order (apply them in this order).
    public static func increments(of events: some Sequence<StoredEvent>) -> [(key: CounterKey, tally: EventTally)] {
        var sums: [CounterKey: EventTally] = [:]
        for event in events {
            let bucket = bucketStart(of: event.time)
            var dimensions = [EventDimension.all]
            if let city = event.city { dimensions.append(.city(city)) }
            for cohort in Set(event.cohorts) { dimensions.append(.cohort(cohort)) }
            let subjects: [EventSubject]
            let tally: EventTally
            switch event.payload {
            case .session(let crashed, let switches, let variants):
                tally = EventTally(sessions: 1, crashedSessions: crashed ? 1 : 0)
                var seen = Set<String>()
                subjects =
                    [.baseline] + switches.filter { seen.insert($0).inserted }.map(EventSubject.pluginSwitch)
                    + variants.map { EventSubject.variant($0.value, of: $0.key) }
            case .exposure(let flag, let variant):
                tally = EventTally(exposures: 1)
                subjects = [.variant(variant, of: flag)]
            case .metric:
                // Outcomes are kept per unit (ExperimentStep), not in the counters.
                continue
            }
            for subject in subjects {
                for dimension in dimensions {
                    sums[
                        CounterKey(source: event.source, subject: subject, dimension: dimension, bucket: bucket),
                        default: .zero] += tally
                }
            }
        }
        return sums.sorted { $0.key < $1.key }.map { (key: $0.key, tally: $0.value) }
    }

    /// The crashed sessions among some events, as the store records them for the crash guard (sorted by id, the
    /// order to write them in).
    public static func crashes(of events: some Sequence<StoredEvent>) -> [CrashRecord] {
        var records: [CrashRecord] = []
        for event in events {
            guard case .session(true, let switches, _) = event.payload else { continue }
            var seen = Set<String>()
            records.append(
                CrashRecord(
                    id: event.id, source: event.source, bucket: bucketStart(of: event.time),
                    unit: EventAdmission.unitKey(of: event), address: event.address, city: event.city,
                    cohorts: Array(Set(event.cohorts)).sorted(), switches: switches.filter { seen.insert($0).inserted })
            )
        }
        return records.sorted { $0.id < $1.id }
    }

    /// Sums counters the way `eventCounts` must: over the query's buckets, per subject and dimension (and per
    /// bucket when asked), leaving out zero sums, sorted. For backends that read raw counters, and for tests.
    public static func sum(_ counters: some Sequence<(key: CounterKey, tally: EventTally)>, for query: EventCountQuery)
        -> [EventCount]
    {
        var sums: [CounterKey: EventTally] = [:]
        for (key, tally) in counters {
            guard key.bucket >= query.fromBucket, key.bucket < query.untilMilliseconds,
                query.subjects?.contains(key.subject.kind) ?? true, query.keys?.contains(key.subject.key) ?? true,
                query.dimensions?.contains(key.dimension.kind) ?? true, query.sources?.contains(key.source) ?? true
            else { continue }
            var grouped = key
            if !query.perBucket { grouped.bucket = 0 }
            sums[grouped, default: .zero] += tally
        }
        return sums.filter { !$0.value.isZero }.sorted { $0.key < $1.key }.map { key, tally in
            EventCount(
                source: key.source, subject: key.subject, dimension: key.dimension,
                bucket: query.perBucket ? Date(milliseconds: key.bucket) : nil, tally: tally)
        }
    }
}
