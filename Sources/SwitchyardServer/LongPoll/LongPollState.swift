package import SwitchyardCore
package import SwitchyardStorage

/// Why a parked long-poll request was answered.
package enum WakeReason: Sendable, Hashable {
    /// The namespace passed the version the request waited on (or its epoch changed).
    case changed
    /// The wait ended without a change.
    case timedOut
    /// The namespace was deleted.
    case gone
    /// The service is shutting down.
    case shutdown
    /// The request's task was cancelled.
    case cancelled
    /// Too many requests are waiting already.
    case overloaded
    /// Too many requests from the same source address are waiting already.
    case addressBusy
}

/// The decisions of the long-poll hub, without I/O or locks: which waiters to park, wake, expire or refuse.
///
/// Generic over the waiter (a continuation in the hub, a plain value in tests) and over time, so tests drive it
/// with their own instants.
package struct LongPollState<Waiter, Instant: Comparable> {
    package typealias Position = SnapshotVersion

    struct Entry {
        var after: Position
        var deadline: Instant
        var waiter: Waiter
    }

    /// What to do with a request that asks to wait.
    package enum RegisterAction {
        /// Parked; it will be answered by `publish`, `expire`, `cancel`, `remove` or `shutdown`.
        case parked
        /// Answer at once with this reason (the waiter was not kept); `overloaded` past the waiter cap,
        /// `addressBusy` past the cap per source address.
        case answerNow(WakeReason)
    }

    package let maximumWaiters: Int
    package let maximumWaitersPerAddress: Int
    /// Parked waiters per address block, and each waiter's blocks (waiters without an address are not counted).
    private var waitersOfAddress: [String: Int] = [:]
    private var addressOfWaiter: [Int: [AddressBlock]] = [:]
    private(set) var positions: [String: Position] = [:]
    private var waiters: [String: [Int: Entry]] = [:]
    private var namespaceOfWaiter: [Int: String] = [:]
    private var earliestDeadline: Instant?
    package private(set) var isShutDown = false

    package init(maximumWaiters: Int, maximumWaitersPerAddress: Int = .max) {
        self.maximumWaiters = maximumWaiters
        self.maximumWaitersPerAddress = maximumWaitersPerAddress
    }

    /// The number of parked waiters from an address block (a source address key, or a wider IPv6 prefix).
    package func count(from block: String) -> Int {
        waitersOfAddress[block] ?? 0
    }

    /// The number of parked waiters.
    package var count: Int { namespaceOfWaiter.count }

    /// The current position of a namespace, nil when unknown.
    package func position(of namespace: String) -> Position? {
        positions[namespace]
    }

    /// Parks a waiter until its namespace passes `after` (a version of the same epoch) or `deadline`.
    ///
    /// - Parameter address: the blocks of the request's source address (``IPAddress/blocks``), each counted against
    ///   its share of `maximumWaitersPerAddress`; empty when unknown (not counted).
    package mutating func register(
        id: Int, namespace: String, after: Position, deadline: Instant, waiter: Waiter,
        address: [AddressBlock] = []
    ) -> RegisterAction {
        if isShutDown { return .answerNow(.shutdown) }
        guard let current = positions[namespace] else { return .answerNow(.gone) }
        if current.epoch != after.epoch || current.version > after.version { return .answerNow(.changed) }
        if count >= maximumWaiters { return .answerNow(.overloaded) }
        if !address.isEmpty {
            for block in address
            where count(from: block.key) >= block.cap(maximumWaitersPerAddress, within: maximumWaiters) {
                return .answerNow(.addressBusy)
            }
            for block in address { waitersOfAddress[block.key, default: 0] += 1 }
            addressOfWaiter[id] = address
        }
        waiters[namespace, default: [:]][id] = Entry(after: after, deadline: deadline, waiter: waiter)
        namespaceOfWaiter[id] = namespace
        if earliestDeadline.map({ deadline < $0 }) ?? true { earliestDeadline = deadline }
        return .parked
    }

    /// Records a namespace's new position and returns the waiters it passes.
    package mutating func publish(_ namespace: String, _ position: Position) -> [Waiter] {
        if let current = positions[namespace], current.epoch == position.epoch, current.version >= position.version {
            return []
        }
        positions[namespace] = position
        guard let parked = waiters.removeValue(forKey: namespace) else { return [] }
        var woken: [Waiter] = []
        woken.reserveCapacity(parked.count)
        // The ones that stay go to a new dictionary: removing from the one being iterated would copy all of it.
        var staying: [Int: Entry] = [:]
        for (id, entry) in parked {
            if entry.after.epoch != position.epoch || entry.after.version < position.version {
                woken.append(entry.waiter)
                namespaceOfWaiter[id] = nil
                release(id)
            } else {
                staying[id] = entry
            }
        }
        if !staying.isEmpty { waiters[namespace] = staying }
        return woken
    }

    /// Forgets a deleted namespace and returns its waiters.
    package mutating func remove(_ namespace: String) -> [Waiter] {
        positions[namespace] = nil
        let parked = waiters.removeValue(forKey: namespace) ?? [:]
        for id in parked.keys {
            namespaceOfWaiter[id] = nil
            release(id)
        }
        return parked.values.map(\.waiter)
    }

    /// Returns the waiters whose deadline is at or before `now`.
    package mutating func expire(now: Instant) -> [Waiter] {
        guard let earliest = earliestDeadline, earliest <= now else { return [] }
        var expired: [Waiter] = []
        var next: Instant?
        for namespace in Array(waiters.keys) {
            // Taken out, so removing after the loop mutates it in place (removing while iterating would copy it).
            guard var parked = waiters.removeValue(forKey: namespace) else { continue }
            var expiredIDs: [Int] = []
            for (id, entry) in parked {
                if entry.deadline <= now {
                    expired.append(entry.waiter)
                    expiredIDs.append(id)
                } else if next.map({ entry.deadline < $0 }) ?? true {
                    next = entry.deadline
                }
            }
            for id in expiredIDs {
                parked[id] = nil
                namespaceOfWaiter[id] = nil
                release(id)
            }
            if !parked.isEmpty { waiters[namespace] = parked }
        }
        earliestDeadline = next
        return expired
    }

    /// Removes one waiter (its request was cancelled); nil when it was already answered.
    package mutating func cancel(id: Int) -> Waiter? {
        guard let namespace = namespaceOfWaiter.removeValue(forKey: id) else { return nil }
        release(id)
        let entry = waiters[namespace]?.removeValue(forKey: id)
        if waiters[namespace]?.isEmpty == true { waiters[namespace] = nil }
        return entry?.waiter
    }

    /// Refuses every later waiter and returns every parked one.
    package mutating func shutdown() -> [Waiter] {
        isShutDown = true
        let all = waiters.values.flatMap { $0.values.map(\.waiter) }
        waiters = [:]
        namespaceOfWaiter = [:]
        waitersOfAddress = [:]
        addressOfWaiter = [:]
        earliestDeadline = nil
        return all
    }

    /// Uncounts a waiter that leaves from its address.
    private mutating func release(_ id: Int) {
        guard !addressOfWaiter.isEmpty, let blocks = addressOfWaiter.removeValue(forKey: id) else { return }
        for block in blocks {
            let left = (waitersOfAddress[block.key] ?? 1) - 1
            waitersOfAddress[block.key] = left > 0 ? left : nil
        }
    }
}
