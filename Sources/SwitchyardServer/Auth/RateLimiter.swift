import Synchronization

/// Request budgets per key: a token bucket for each key that refills at its rate (requests per minute) and
/// holds at most one minute's worth, so a token may spend a minute's requests in a burst, then its rate.
///
/// Plain state, no clock: callers pass the time, so tests drive it without waiting. Arithmetic is in integers
/// (one request costs the nanoseconds of a minute; each elapsed nanosecond adds `rate` to the credit), so a
/// decision never depends on rounding.
struct RateBuckets: Sendable {
    /// What to do with a request.
    enum Decision: Sendable, Hashable {
        case allowed
        /// Refused: the next request is allowed after this many whole seconds (at least 1).
        case limited(retryAfterSeconds: Int)
    }

    private struct Bucket: Sendable {
        var credit: Int64
        var updated: Duration
    }

    private static let minute: Int64 = 60_000_000_000
    private var buckets: [String: Bucket] = [:]

    /// Spends one request of a key's budget.
    ///
    /// - Parameters:
    ///   - key: whose budget (a token id).
    ///   - ratePerMinute: the key's rate, 1 or more; a changed rate applies from this request on.
    ///   - now: the time, as a duration since any fixed origin.
    /// - Returns: `.allowed`, or `.limited` with the whole seconds until a request is allowed again.
    mutating func spend(_ key: String, ratePerMinute: Int, now: Duration) -> Decision {
        let rate = Int64(max(ratePerMinute, 1))
        let capacity = rate * Self.minute
        var bucket = buckets[key] ?? Bucket(credit: capacity, updated: now)
        // Past a minute the bucket is full anyway; capping first keeps the product in range.
        let elapsed = min(max((now - bucket.updated).nanoseconds, 0), Self.minute)
        bucket.credit = min(bucket.credit + elapsed * rate, capacity)
        bucket.updated = now
        defer { buckets[key] = bucket }
        if bucket.credit >= Self.minute {
            bucket.credit -= Self.minute
            return .allowed
        }
        let nanoseconds = (Self.minute - bucket.credit + rate - 1) / rate
        let seconds = (nanoseconds + 999_999_999) / 1_000_000_000
        return .limited(retryAfterSeconds: Int(max(seconds, 1)))
    }

    /// The number of keys with a bucket.
    var count: Int { buckets.count }
}

/// `RateBuckets` shared by every request, on the continuous clock.
package final class RateLimiter: Sendable {
    private let buckets = Mutex(RateBuckets())
    private let clock = ContinuousClock()
    private let origin: ContinuousClock.Instant

    package init() {
        origin = clock.now
    }

    /// Spends one request of a token's budget at its rate (requests per minute).
    func spend(_ key: String, ratePerMinute: Int) -> RateBuckets.Decision {
        let now = origin.duration(to: clock.now)
        return buckets.withLock { $0.spend(key, ratePerMinute: ratePerMinute, now: now) }
    }
}
