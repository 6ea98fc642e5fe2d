/// Exponential backoff with full jitter: after the n-th consecutive failure the client waits a random share of
/// `min(maximum, initial × 2ⁿ⁻¹)`, never less than a tenth of `initial`.
///
/// Full jitter spreads a fleet of clients that failed together (a server restart) across the whole window
/// instead of bringing them back in lockstep.
public struct Backoff: Sendable, Hashable {
    /// The window after the first failure.
    public var initial: Duration
    /// The largest window.
    public var maximum: Duration

    public init(initial: Duration = .seconds(1), maximum: Duration = .seconds(300)) {
        self.initial = initial
        self.maximum = max(initial, maximum)
    }

    /// The window after `failures` consecutive failures (1 for the first).
    public func ceiling(afterFailures failures: Int) -> Duration {
        let exponent = max(0, min(failures - 1, 40))
        let seconds = initial.secondsValue * Double(UInt64(1) << UInt64(exponent))
        return min(maximum, .clampedSeconds(seconds))
    }

    /// The delay after `failures` consecutive failures, for a random number in 0..<1.
    public func delay(afterFailures failures: Int, random: Double) -> Duration {
        let ceiling = ceiling(afterFailures: failures).secondsValue
        let floor = initial.secondsValue / 10
        return .clampedSeconds(max(floor, ceiling * min(max(random, 0), 1)))
    }
}
