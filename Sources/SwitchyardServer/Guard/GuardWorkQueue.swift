import Foundation

/// The crash guard's work, without I/O, locks or clocks: which namespace loads and which switch confirmation runs
/// next, and which confirmations wait because their switch was confirmed less than `interval` ago.
///
/// Each piece of work is queued once: asking again for work already queued adds nothing. A confirmation leaves the
/// queue as it starts, so a batch told while it reads the store asks for another, which reads what the first may have
/// missed. A confirmation asked for within `interval` of the last start of its switch's is deferred to the interval's
/// end, never dropped: the batch that asked may be the one that completes the evidence, and none may follow. A load
/// stays queued until it is ``finished(_:)``: every batch until the counts are loaded would queue another.
///
/// Generic over time (`ContinuousClock.Instant` in ``CrashGuard``), so tests drive it with their own instants.
struct GuardWorkQueue<Instant: InstantProtocol>: Sendable where Instant.Duration == Duration {
    enum Work: Hashable, Sendable {
        /// Load a namespace's counts and history from the store.
        case load(String)
        /// Confirm on the store's counts whether a switch of a namespace trips (namespace, switch).
        case confirm(String, String)
    }

    /// The least time between two starts of the same switch's confirmation.
    let interval: Duration
    private var queue: [Work] = []
    private var queued = Set<Work>()
    /// Confirmations asked for too soon, and when they are due.
    private var deferred: [Work: Instant] = [:]
    /// When each switch's confirmation last started.
    private var lastStarted: [Work: Instant] = [:]
    /// When the batch that first asked for a confirmation since its last start was received, for the trip latency.
    private var askedAt: [Work: Date] = [:]

    init(interval: Duration) {
        self.interval = interval
    }

    /// Asks for a namespace's first load.
    ///
    /// - Returns: whether it was queued now (wake the worker).
    mutating func load(_ namespace: String) -> Bool {
        enqueue(.load(namespace))
    }

    /// Asks for a switch's confirmation: a batch made it look like it trips.
    ///
    /// - Parameters:
    ///   - receivedAt: when that batch was received; the trip latency counts from the first such batch since the
    ///     confirmation last started.
    ///   - now: the time, to compare with the confirmation's last start.
    /// - Returns: whether it was queued now (wake the worker); false when it was queued already or is deferred.
    mutating func confirm(_ namespace: String, _ key: String, receivedAt: Date, now: Instant) -> Bool {
        let work = Work.confirm(namespace, key)
        if askedAt[work] == nil { askedAt[work] = receivedAt }
        if let last = lastStarted[work], last.duration(to: now) < interval {
            let due = last.advanced(by: interval)
            deferred[work] = min(deferred[work] ?? due, due)
            return false
        }
        return enqueue(work)
    }

    /// The next work to do at `now`: the deferred confirmations that fell due join the queue's end first (earliest
    /// due first). A confirmation leaves the queued set as it is taken; a load when it is ``finished(_:)``.
    mutating func next(now: Instant) -> Work? {
        for (work, _) in deferred.filter({ $0.value <= now }).sorted(by: { $0.value < $1.value }) {
            deferred[work] = nil
            _ = enqueue(work)
        }
        guard !queue.isEmpty else { return nil }
        let work = queue.removeFirst()
        if case .confirm = work { queued.remove(work) }
        return work
    }

    /// A confirmation starts now: it is the last start of its switch's from now on.
    ///
    /// - Returns: when the batch that asked for it was received (nil when none did: a direct call).
    mutating func starting(_ namespace: String, _ key: String, now: Instant) -> Date? {
        let work = Work.confirm(namespace, key)
        lastStarted[work] = now
        return askedAt.removeValue(forKey: work)
    }

    /// A load is done: a later batch may ask for another.
    mutating func finished(_ work: Work) {
        queued.remove(work)
    }

    /// Whether confirmations wait for their interval's end (the worker looks again then).
    var hasDeferred: Bool { !deferred.isEmpty }

    /// Forgets the confirmation times of a namespace that was deleted.
    mutating func forget(_ namespace: String) {
        func belongs(_ work: Work) -> Bool {
            if case .confirm(namespace, _) = work { return true }
            return false
        }
        lastStarted = lastStarted.filter { !belongs($0.key) }
        askedAt = askedAt.filter { !belongs($0.key) }
    }

    private mutating func enqueue(_ work: Work) -> Bool {
        guard queued.insert(work).inserted else { return false }
        queue.append(work)
        return true
    }
}
