package import Foundation

/// Whether the database is reachable, as the store last found it: the decisions of degraded mode, without I/O.
///
/// Operations fail at once while the database is unreachable (instead of each waiting out a timeout), and the
/// store's background task probes it until it answers again.
///
/// Reachability is about connections, not about speed. A connection that fails (refused, reset, closed, a
/// server shutting down) makes the database unreachable at once. A slow answer does not: an operation that runs
/// out of time fails alone and asks for a probe, and only a database that leaves `silenceLimit` probes in a row
/// without an answer (a network partition, a server that hangs) counts as unreachable. A busy or CPU-starved
/// flagsd, whose answers arrive late, thus never takes a healthy database for a gone one.
package struct Availability: Sendable, Hashable {
    package enum Status: Sendable, Hashable {
        /// Not tried yet.
        case unknown
        case reachable
        /// Unreachable since a time, for a reason (the first failure's).
        case unreachable(since: Date, reason: String)
    }

    package private(set) var status: Status = .unknown
    /// Probes in a row that got no answer within their time, since the database last answered.
    package private(set) var unansweredProbes = 0
    /// How many probes in a row must go unanswered before a silent database counts as unreachable.
    package let silenceLimit: Int

    package init(silenceLimit: Int = 3) {
        self.silenceLimit = max(1, silenceLimit)
    }

    /// Whether operations should be refused at once.
    package var refusesOperations: Bool {
        if case .unreachable = status { return true }
        return false
    }

    /// Records a failure to connect to the database (refused, reset, closed): it is unreachable now.
    ///
    /// - Returns: true when this failure made the database unreachable (it was not already).
    package mutating func failed(_ reason: String, at time: Date) -> Bool {
        if case .unreachable = status { return false }
        status = .unreachable(since: time, reason: reason)
        return true
    }

    /// Records a probe that got no answer within its time. The database counts as unreachable once
    /// `silenceLimit` probes in a row went unanswered.
    ///
    /// - Returns: true when this probe made the database unreachable (it was not already).
    package mutating func probeUnanswered(_ reason: String, at time: Date) -> Bool {
        unansweredProbes += 1
        guard unansweredProbes >= silenceLimit else { return false }
        return failed("\(reason) (\(unansweredProbes) probes in a row without an answer)", at: time)
    }

    /// Whether the store should probe again soon: a probe went unanswered and the verdict is still open.
    package var awaitsAnswer: Bool {
        unansweredProbes > 0 && !refusesOperations
    }

    /// Records that the database answered.
    ///
    /// - Returns: how long it was unreachable, when it was; nil otherwise.
    package mutating func succeeded(at time: Date) -> TimeInterval? {
        defer {
            status = .reachable
            unansweredProbes = 0
        }
        if case .unreachable(let since, _) = status { return time.timeIntervalSince(since) }
        return nil
    }
}
