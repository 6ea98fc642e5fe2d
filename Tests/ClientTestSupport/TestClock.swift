public import Foundation
import SwitchyardClient

/// A clock whose sleeps return at once, advancing its time by the duration asked: backoffs and long waits
/// pass without wall time. Records every sleep. ``wallClock`` is a wall clock that moves with it.
public final class TestClock: Clock, @unchecked Sendable {
    public struct Instant: InstantProtocol {
        public var offset: Duration
        public func advanced(by duration: Duration) -> Instant { Instant(offset: offset + duration) }
        public func duration(to other: Instant) -> Duration { other.offset - offset }
        public static func < (lhs: Instant, rhs: Instant) -> Bool { lhs.offset < rhs.offset }
    }

    private struct State {
        var now = Instant(offset: .zero)
        var sleeps: [Duration] = []
    }

    private let state = LockedBox(State())
    /// The wall-clock time at offset zero.
    public let start: Date

    public init(start: Date = Date(timeIntervalSince1970: 1_795_000_000)) {
        self.start = start
    }

    public var now: Instant { state.withLock { $0.now } }
    public var minimumResolution: Duration { .nanoseconds(1) }

    /// Advances to the deadline at once. Yields briefly (about a millisecond) so a loop that keeps failing does
    /// not starve the machine. Throws when the task is cancelled.
    public func sleep(until deadline: Instant, tolerance: Duration?) async throws {
        try Task.checkCancellation()
        state.withLock { state in
            state.sleeps.append(state.now.duration(to: deadline))
            if deadline > state.now { state.now = deadline }
        }
        try await Task.sleep(for: .milliseconds(1))
    }

    /// Moves time forward without a sleep.
    public func advance(by duration: Duration) {
        state.withLock { $0.now = $0.now.advanced(by: duration) }
    }

    /// Every sleep asked for, in order.
    public var sleeps: [Duration] { state.withLock { $0.sleeps } }

    /// The wall-clock time of the clock's now.
    public var date: Date { start.addingTimeInterval(now.offset.secondsValue) }

    /// A wall-clock function moving with this clock.
    public var wallClock: @Sendable () -> Date { { [self] in date } }
}
