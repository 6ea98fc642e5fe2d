public import Foundation
import SwitchyardClient

/// A clock for tests, with a wall clock (``wallClock``) that moves with it. Records every sleep.
///
/// - Automatic (the default): a sleep returns at once, advancing the clock to its deadline, so backoffs and long
///   waits pass without wall time. Every sleeper moves time for everyone.
/// - Manual: a sleep waits until the test moves time past its deadline with ``advance(by:)``.
public final class TestClock: Clock, @unchecked Sendable {
    public struct Instant: InstantProtocol {
        public var offset: Duration
        public func advanced(by duration: Duration) -> Instant { Instant(offset: offset + duration) }
        public func duration(to other: Instant) -> Duration { other.offset - offset }
        public static func < (lhs: Instant, rhs: Instant) -> Bool { lhs.offset < rhs.offset }
    }

    private struct Sleeper {
        var deadline: Instant
        var continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var now = Instant(offset: .zero)
        var sleeps: [Duration] = []
        var sleepers: [Int: Sleeper] = [:]
        var nextSleeper = 0
    }

    private let state = LockedBox(State())
    /// The wall-clock time at offset zero.
    public let start: Date
    public let advancesAutomatically: Bool

    public init(start: Date = Date(timeIntervalSince1970: 1_795_000_000), advancesAutomatically: Bool = true) {
        self.start = start
        self.advancesAutomatically = advancesAutomatically
    }

    public var now: Instant { state.withLock { $0.now } }
    public var minimumResolution: Duration { .nanoseconds(1) }

    public func sleep(until deadline: Instant, tolerance: Duration?) async throws {
        try Task.checkCancellation()
        if advancesAutomatically {
            state.withLock { state in
                state.sleeps.append(state.now.duration(to: deadline))
                if deadline > state.now { state.now = deadline }
            }
            // A millisecond of real time, so a loop that keeps failing does not starve the machine.
            try await Task.sleep(for: .milliseconds(1))
            return
        }
        let id = state.withLock { state in
            state.sleeps.append(state.now.duration(to: deadline))
            state.nextSleeper += 1
            return state.nextSleeper
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let resumeNow = state.withLock { state -> Bool in
                    if deadline <= state.now || Task.isCancelled { return true }
                    state.sleepers[id] = Sleeper(deadline: deadline, continuation: continuation)
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            let sleeper = state.withLock { $0.sleepers.removeValue(forKey: id) }
            sleeper?.continuation.resume(throwing: CancellationError())
        }
        try Task.checkCancellation()
    }

    /// Moves time forward, waking the sleepers whose deadline has come.
    public func advance(by duration: Duration) {
        let due = state.withLock { state in
            state.now = state.now.advanced(by: duration)
            let now = state.now
            let due = state.sleepers.filter { $0.value.deadline <= now }
            for id in due.keys { state.sleepers[id] = nil }
            return Array(due.values)
        }
        for sleeper in due { sleeper.continuation.resume() }
    }

    /// How many tasks are sleeping on the clock (manual mode).
    public var sleeperCount: Int { state.withLock { $0.sleepers.count } }

    /// Every sleep asked for, in order.
    public var sleeps: [Duration] { state.withLock { $0.sleeps } }

    /// The wall-clock time of the clock's now.
    public var date: Date { start.addingTimeInterval(now.offset.secondsValue) }

    /// A wall-clock function moving with this clock.
    public var wallClock: @Sendable () -> Date { { [self] in date } }
}
