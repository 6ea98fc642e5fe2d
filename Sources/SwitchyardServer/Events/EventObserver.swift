package import Foundation
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
/// service.eventObservers.add(CrashGuard(...))
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
package final class EventObservers: Sendable {
    private let observers = Mutex<[any EventObserver]>([])

    package init() {}

    package func add(_ observer: any EventObserver) {
        observers.withLock { $0.append(observer) }
    }

    func notify(_ batch: CommittedEvents) async {
        let current = observers.withLock { $0 }
        for observer in current { await observer.eventsCommitted(batch) }
    }
}

/// Forgets event ids past their retention, at most once an hour, on the ingestion path.
package final class EventIDPruner: Sendable {
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
}
