package import Foundation
import Logging
package import SwitchyardStorage
import Synchronization

/// Told after a batch of events has committed: where the crash guard (and anything else that reacts to client
/// events) plugs into ingestion.
///
/// ```swift
/// struct CrashGuard: EventObserver {
///     func eventsCommitted(_ batch: CommittedEvents) async {
///         guard batch.crashedSessions > 0 else { return }
///         // read counts for batch.switches with store.eventCounts(...), trip a switch through FlagService.change
///     }
/// }
/// app.eventObservers.add(CrashGuard(...))
/// ```
///
/// Implementation requirements: the server awaits every observer before it answers the batch, so return
/// quickly (hand long work to a task of your own); never throw (report failures yourself). Observers see only
/// events counted now, never duplicates, and are called once per committed batch, in commit order per request.
package protocol EventObserver: Sendable {
    func eventsCommitted(_ batch: CommittedEvents) async
}

/// A batch of events as committed: what it touched, for observers to decide whether to look closer.
package struct CommittedEvents: Sendable {
    /// The namespace the batch was posted to.
    package var namespace: String
    /// The events counted now (duplicates left out), in the batch's order.
    package var events: [StoredEvent]
    /// When the server received the batch.
    package var receivedAt: Date

    package init(namespace: String, events: [StoredEvent], receivedAt: Date) {
        self.namespace = namespace
        self.events = events
        self.receivedAt = receivedAt
    }

    /// Plugin switches named by the batch's sessions.
    package var switches: Set<String> {
        var keys = Set<String>()
        for event in events {
            if case .session(_, let switches, _) = event.payload { keys.formUnion(switches) }
        }
        return keys
    }

    /// Experiment flags named by the batch's exposures and sessions.
    package var flags: Set<String> {
        var keys = Set<String>()
        for event in events {
            switch event.payload {
            case .session(_, _, let variants): keys.formUnion(variants.keys)
            case .exposure(let flag, _): keys.insert(flag)
            case .metric: break
            }
        }
        return keys
    }

    /// Sessions in the batch.
    package var sessions: Int {
        events.count { if case .session = $0.payload { true } else { false } }
    }

    /// Crashed sessions in the batch.
    package var crashedSessions: Int {
        events.count { if case .session(true, _, _) = $0.payload { true } else { false } }
    }
}

/// The observers of committed event batches; add one at start-up.
///
/// An observer that keeps counts in memory and reloads them from the store now and then (the crash guard) reads
/// inside ``settled(_:_:)``: ingestion commits a batch and notifies the observers inside ``counting(_:_:)``, and
/// the two exclude each other per namespace, so every batch of this process is either in what the observer read
/// or told to it afterwards, never both and never neither.
package final class EventObservers: Sendable {
    private let observers = Mutex<[any EventObserver]>([])
    private let gate = NamespaceGate()

    package init() {}

    package func add(_ observer: any EventObserver) {
        observers.withLock { $0.append(observer) }
    }

    /// Commits a batch of a namespace and tells the observers (`body` calls ``notify(_:)``), outside any read of
    /// ``settled(_:_:)`` in that namespace. Batches of one namespace commit side by side.
    func counting<T: Sendable>(_ namespace: String, _ body: () async throws -> T) async throws -> T {
        await gate.enter(namespace, exclusive: false)
        do {
            let result = try await body()
            gate.leave(namespace, exclusive: false)
            return result
        } catch {
            gate.leave(namespace, exclusive: false)
            throw error
        }
    }

    /// Reads a namespace's counts from the store while no batch of it is between its commit and its notification.
    /// Batches wait meanwhile, so keep `body` to the reads.
    package func settled<T: Sendable>(_ namespace: String, _ body: () async throws -> T) async throws -> T {
        await gate.enter(namespace, exclusive: true)
        do {
            let result = try await body()
            gate.leave(namespace, exclusive: true)
            return result
        } catch {
            gate.leave(namespace, exclusive: true)
            throw error
        }
    }

    func notify(_ batch: CommittedEvents) async {
        let current = observers.withLock { $0 }
        for observer in current { await observer.eventsCommitted(batch) }
    }
}

/// A readers-writer gate per namespace for async code: many shared holders or one exclusive holder; a waiting
/// exclusive holder goes before shared holders that come after it (a flood of batches cannot starve a reload).
final class NamespaceGate: Sendable {
    private struct Waiter {
        var exclusive: Bool
        var continuation: CheckedContinuation<Void, Never>
    }

    private struct Gate {
        var shared = 0
        var exclusive = false
        var waiters: [Waiter] = []
        var idle: Bool { shared == 0 && !exclusive && waiters.isEmpty }
    }

    private let gates = Mutex<[String: Gate]>([:])

    func enter(_ namespace: String, exclusive: Bool) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let admitted = gates.withLock { gates -> Bool in
                var gate = gates[namespace] ?? Gate()
                defer { gates[namespace] = gate }
                let free = exclusive ? gate.shared == 0 && !gate.exclusive : !gate.exclusive
                if free && gate.waiters.isEmpty {
                    if exclusive { gate.exclusive = true } else { gate.shared += 1 }
                    return true
                }
                gate.waiters.append(Waiter(exclusive: exclusive, continuation: continuation))
                return false
            }
            if admitted { continuation.resume() }
        }
    }

    /// Holders waiting to enter a namespace's gate.
    func waiting(in namespace: String) -> Int {
        gates.withLock { $0[namespace]?.waiters.count ?? 0 }
    }

    func leave(_ namespace: String, exclusive: Bool) {
        let admitted = gates.withLock { gates -> [CheckedContinuation<Void, Never>] in
            guard var gate = gates[namespace] else { return [] }
            if exclusive { gate.exclusive = false } else { gate.shared -= 1 }
            var admitted: [CheckedContinuation<Void, Never>] = []
            // Admit waiters in order: shared ones together, an exclusive one alone once nobody holds the gate.
            while let next = gate.waiters.first {
                if next.exclusive {
                    guard gate.shared == 0 && !gate.exclusive else { break }
                    gate.exclusive = true
                } else {
                    guard !gate.exclusive else { break }
                    gate.shared += 1
                }
                admitted.append(gate.waiters.removeFirst().continuation)
                if next.exclusive { break }
            }
            gates[namespace] = gate.idle ? nil : gate
            return admitted
        }
        for continuation in admitted { continuation.resume() }
    }
}

/// Keeps what events leave in the store bounded, at most once an hour, on the ingestion path (the batch that claims
/// it answers after it): forgets
/// event ids past their retention, admission windows and crash records past the longest guard window, rolls minute
/// counters up into hours past it, and deletes counters past `--events-retention`.
package final class EventIDPruner: Sendable {
    /// Minute counters older than this roll up into hours: the longest crash guard window (a day) and a day more.
    package static let rollUpAfter: Duration = .seconds(2 * 86_400)

    private let lastRun = Mutex<Date?>(nil)
    private let interval: TimeInterval

    package init(interval: TimeInterval = 3600) {
        self.interval = interval
    }

    /// Whether a prune is due now; claims it when it is.
    func claim(now: Date) -> Bool {
        lastRun.withLock { last in
            guard last.map({ now.timeIntervalSince($0) >= interval }) ?? true else { return false }
            last = now
            return true
        }
    }

    /// Does the pruning and compaction due at `now`, in small transactions: on PostgreSQL a flag change waits for one
    /// at most; on SQLite they are in the events file. Failures are logged and tried again an hour later.
    static func maintain(
        _ store: any FlagStore, now: Date, idRetention: Duration, countRetention: Duration, logger: Logger
    ) async {
        do {
            let forgotten = try await store.pruneEventIDs(before: now - idRetention.seconds)
            if forgotten > 0 { logger.info("forgot old event ids", metadata: ["count": .stringConvertible(forgotten)]) }
            // Admission windows and crash records outlive the longest guard window (a day) by a day.
            let records = try await store.pruneEventRecords(before: now - rollUpAfter.seconds)
            if records > 0 {
                logger.info(
                    "forgot old admission windows and crash records", metadata: ["count": .stringConvertible(records)])
            }
            let deleteBefore = now - countRetention.seconds
            // Experiment phases and metric totals live as long as counters do.
            let experiments = try await store.pruneExperimentRecords(before: deleteBefore)
            if experiments > 0 {
                logger.info(
                    "forgot experiment phases and metric totals past the retention",
                    metadata: ["count": .stringConvertible(experiments)])
            }
            let compaction = try await store.compactEventCounts(
                rollUp: deleteBefore..<max(deleteBefore, now - rollUpAfter.seconds),
                deleteBefore: deleteBefore)
            if compaction != EventCompaction() {
                logger.info(
                    "rolled old event counters up into hours and deleted those past the retention",
                    metadata: [
                        "rolled_up": .stringConvertible(compaction.rolledUp),
                        "deleted": .stringConvertible(compaction.deleted),
                    ])
            }
        } catch {
            logger.warning(
                "could not prune or compact event records; will try again in an hour", metadata: ["error": "\(error)"])
        }
    }
}
