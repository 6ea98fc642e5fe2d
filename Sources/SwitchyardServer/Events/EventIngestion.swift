package import Metrics
package import SwitchyardStorage
import Synchronization

/// The decisions of event ingestion's queue, without I/O or locks: whether a batch may write now, waits its
/// turn, or is refused because the backlog is full; and, when a batch is written, whose turn comes next.
///
/// One batch writes at a time, in the order the batches arrived. The backlog is the number of events admitted and
/// not yet written (the one writing and those waiting); a batch that would take it past `capacity` is refused, so
/// ingestion's memory and delay stay bounded. A batch is always admitted into an empty backlog, however large.
///
/// Generic over the waiter (a continuation in `EventIngestor`, a plain value in tests).
package struct IngestQueue<Waiter> {
    /// What to do with a batch that asks to write.
    package enum Admission {
        /// Write now.
        case write
        /// Wait: the waiter is kept, and `finished` returns it when its turn comes.
        case wait
        /// The backlog is full: answer 429.
        case refuse
    }

    /// The most events admitted and not yet written.
    package let capacity: Int
    /// Events admitted and not yet written.
    package private(set) var backlog = 0
    private var writing = false
    private var waiting: [Waiter] = []
    private var next = 0

    package init(capacity: Int) {
        self.capacity = max(1, capacity)
    }

    /// Batches waiting for their turn.
    package var waitingCount: Int { waiting.count - next }

    /// Admits a batch of `events` events.
    package mutating func admit(events: Int, waiter: Waiter) -> Admission {
        guard backlog == 0 || backlog + events <= capacity else { return .refuse }
        backlog += events
        if !writing {
            writing = true
            return .write
        }
        waiting.append(waiter)
        return .wait
    }

    /// A batch of `events` events was written (or failed): releases its events and returns the waiter whose turn
    /// it is now, if any (it writes next).
    package mutating func finished(events: Int) -> Waiter? {
        backlog = max(0, backlog - events)
        guard next < waiting.count else {
            writing = false
            waiting.removeAll(keepingCapacity: waiting.capacity <= 1024)
            next = 0
            return nil
        }
        let waiter = waiting[next]
        next += 1
        // Forget the waiters already resumed now and then, so the array does not only grow.
        if next >= 256, next * 2 >= waiting.count {
            waiting.removeFirst(next)
            next = 0
        }
        return waiter
    }
}

/// Writes client events so that they never hold up a flag change: batches write one at a time, each in small
/// transactions, with a bounded backlog.
///
/// On PostgreSQL a flag change and an event batch share the database; on SQLite events have a file and a writer of
/// their own (`SQLiteFlagStore`), and both backends count events on ``BackgroundThreads/events``, at a lower priority.
/// Before this, every event request opened its own write transaction, so a flood of batches queued dozens of
/// transactions, some holding the writer for a second, ahead of an editor's kill switch. Now:
/// - at most one event transaction is in the store at any moment: a change on PostgreSQL waits for one at most;
/// - each transaction holds at most about `rowBudget` rows (ids, counters, admission windows, crash records:
///   ``estimatedRows(of:)``), so that one is short; a large batch is written as several transactions in a row,
///   each recording the ids of its own events with their counts (a crash between two leaves the first counted and
///   its ids recorded, so the client's retry counts only the rest: nothing twice, nothing lost);
/// - the batch is acknowledged only after its last transaction committed, synced (durable as a flag change is);
///   the parts before it commit without waiting for the disk (on SQLite, `synchronous = NORMAL` for that
///   transaction), as syncing the write-ahead log at the last commit makes every frame before it durable too: a
///   batch costs one sync, however many parts it has;
/// - batches wait their turn in arrival order; past `capacity` events waiting, a batch is refused (429 with
///   `Retry-After`, counted in `flagsd_event_batches_refused_total{reason="backlog_full"}`), and clients retry it later.
package final class EventIngestor: Sendable {
    private let queue: Mutex<IngestQueue<CheckedContinuation<Void, Never>>>
    /// The most rows (estimated) one events transaction writes.
    package let rowBudget: Int
    private let backlogGauge: Gauge
    private let transactionTimer: Timer

    /// - Parameters:
    ///   - capacity: the most events admitted and not yet written.
    ///   - rowBudget: the most rows (estimated) one transaction writes.
    ///   - metricsFactory: where `flagsd_events_backlog` and the transaction latency go.
    package init(capacity: Int, rowBudget: Int, metricsFactory: any MetricsFactory) {
        queue = Mutex(IngestQueue(capacity: capacity))
        self.rowBudget = max(1, rowBudget)
        backlogGauge = Gauge(label: "flagsd_events_backlog", factory: metricsFactory)
        transactionTimer = Timer(label: "flagsd_events_transaction_duration_seconds", factory: metricsFactory)
        backlogGauge.record(0)
        Gauge(label: "flagsd_events_backlog_capacity", factory: metricsFactory).record(capacity)
    }

    /// Events admitted and not yet written.
    package var backlog: Int { queue.withLock { $0.backlog } }

    /// Why a batch was not written.
    package struct Refusal: Error, Sendable {
        /// Events admitted and not yet written when it was refused.
        package var backlog: Int
        package var capacity: Int
    }

    /// Counts a batch once its turn comes, in transactions of about `rowBudget` rows.
    ///
    /// - Parameters:
    ///   - events: validated events, known names only, each id once.
    ///   - write: writes one part of the batch (`EventStore.ingestEvents`), told whether it is the last; called once
    ///     per part, in order. Only the last part's commit need be synced: it makes the others durable too.
    ///   - section: runs the writing of every part (the closure it is given) once the batch's turn has come, and may
    ///     do more in the turn (the route tells the observers there, inside ``EventObservers/counting(_:_:)``).
    /// - Returns: the results of the parts, merged in the batch's order.
    /// - Throws: ``Refusal`` when the backlog is full (nothing written); the first error of `write` (the parts
    ///   before it are counted and their ids recorded: a retry of the batch counts only the rest).
    package func ingest(
        _ events: [StoredEvent],
        section: (_ writeParts: () async throws -> EventIngestResult) async throws -> EventIngestResult = {
            try await $0()
        },
        write: @escaping @Sendable (_ part: [StoredEvent], _ last: Bool) async throws -> EventIngestResult
    ) async throws -> EventIngestResult {
        try await admit(events.count)
        defer { release(events.count) }
        return try await section {
            var merged = EventIngestResult(counted: [], duplicates: [])
            let parts = Self.parts(of: events, rowBudget: rowBudget)
            for (index, part) in parts.enumerated() {
                let start = ContinuousClock.now
                let result = try await write(part, index == parts.count - 1)
                transactionTimer.recordNanoseconds((ContinuousClock.now - start).nanoseconds)
                merged.counted += result.counted
                merged.duplicates += result.duplicates
                merged.dropped += result.dropped
                merged.admitted += result.admitted
                merged.enteredUnits += result.enteredUnits
            }
            return merged
        }
    }

    /// Waits for the batch's turn.
    private func admit(_ count: Int) async throws(Refusal) {
        var refusal: Refusal?
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let (admission, backlog, capacity) = queue.withLock { queue in
                (queue.admit(events: count, waiter: continuation), queue.backlog, queue.capacity)
            }
            switch admission {
            case .write:
                backlogGauge.record(backlog)
                continuation.resume()
            case .wait:
                backlogGauge.record(backlog)
            case .refuse:
                refusal = Refusal(backlog: backlog, capacity: capacity)
                continuation.resume()
            }
        }
        if let refusal { throw refusal }
    }

    private func release(_ count: Int) {
        let (next, backlog) = queue.withLock { queue in (queue.finished(events: count), queue.backlog) }
        backlogGauge.record(backlog)
        next?.resume()
    }

    /// The batch cut into parts of at most `rowBudget` estimated rows each, in order (an event larger than the
    /// budget alone in its part).
    package static func parts(of events: [StoredEvent], rowBudget: Int) -> [[StoredEvent]] {
        var parts: [[StoredEvent]] = []
        var current: [StoredEvent] = []
        var rows = 0
        for event in events {
            let cost = estimatedRows(of: event)
            if !current.isEmpty, rows + cost > rowBudget {
                parts.append(current)
                current = []
                rows = 0
            }
            current.append(event)
            rows += cost
        }
        if !current.isEmpty { parts.append(current) }
        return parts
    }

    /// The rows counting one event may write, at most: its id, its crash record, its admission windows (unit,
    /// address, city, cohorts) and a counter per subject (all sessions, each switch, each variant) and dimension
    /// (all, its city, each cohort).
    package static func estimatedRows(of event: StoredEvent) -> Int {
        let dimensions = 1 + (event.city == nil ? 0 : 1) + event.cohorts.count
        // Admission windows: a session's address blocks (one, or three for IPv6), its unit, its cities and cohorts.
        let (subjects, windows) =
            switch event.payload {
            case .session(_, let switches, let variants):
                // An IPv6 key (it has colons) counts at three blocks; no parsing per event.
                (
                    1 + switches.count + variants.count,
                    (event.address.map { $0.contains(":") ? AddressBlock.ipv6Levels.count : 1 } ?? 0) + dimensions
                )
            case .exposure: (1, 0)
            case .metric:
                // No counter: its address blocks and unit window, the unit's total, and an entry (unit, arm count and
                // pre-exposure values) for each experiment it names.
                (
                    0,
                    (event.address.map { $0.contains(":") ? AddressBlock.ipv6Levels.count : 1 } ?? 0) + 2 + 3
                        * event.splits.count + 3 * event.variants.count
                )
            }
        return 2 + windows + subjects * dimensions
    }
}
