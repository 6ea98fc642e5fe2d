public import Foundation

/// Whether the database is reachable, as the store last found it: the decisions of degraded mode, without I/O.
///
/// Operations fail at once while the database is unreachable (instead of each waiting out a timeout), and the
/// store's background task probes it until it answers again.
package struct Availability: Sendable, Hashable {
    package enum Status: Sendable, Hashable {
        /// Not tried yet.
        case unknown
        case reachable
        /// Unreachable since a time, for a reason (the first failure's).
        case unreachable(since: Date, reason: String)
    }

    package private(set) var status: Status = .unknown

    package init() {}

    /// Whether operations should be refused at once.
    package var refusesOperations: Bool {
        if case .unreachable = status { return true }
        return false
    }

    /// Records a failure to reach the database.
    ///
    /// - Returns: true when this failure made the database unreachable (it was not already).
    package mutating func failed(_ reason: String, at time: Date) -> Bool {
        if case .unreachable = status { return false }
        status = .unreachable(since: time, reason: reason)
        return true
    }

    /// Records that the database answered.
    ///
    /// - Returns: how long it was unreachable, when it was; nil otherwise.
    package mutating func succeeded(at time: Date) -> TimeInterval? {
        defer { status = .reachable }
        if case .unreachable(let since, _) = status { return time.timeIntervalSince(since) }
        return nil
    }
}
