import Synchronization

/// Request budgets per key: a token bucket for each key that refills at its rate (requests per minute) and
/// holds at most one minute's worth, so a token may spend a minute's requests in a burst, then its rate.
///
/// A request may cost more than one (an event batch costs its events). Buckets left alone for a minute are full,
/// the same as no bucket, so they are forgotten once there are many: keys made up by clients (source addresses)
/// cannot grow memory without bound.
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
    /// Past this many buckets, full ones are forgotten (then it doubles from what is left).
    private var forgetAbove = 4096

    /// Spends one request of a key's budget.
    ///
    /// - Parameters:
    ///   - key: whose budget (a token id, a source address).
    ///   - cost: what the request costs, 1 or more; more than a minute's worth costs a minute's worth.
    ///   - ratePerMinute: the key's rate, from 1 to 100,000,000 (clamped, so the arithmetic stays in range); a
    ///     changed rate applies from this request on.
    ///   - now: the time, as a duration since any fixed origin.
    /// - Returns: `.allowed`, or `.limited` with the whole seconds until the request would be allowed.
    mutating func spend(_ key: String, cost: Int = 1, ratePerMinute: Int, now: Duration) -> Decision {
        let rate = Int64(min(max(ratePerMinute, 1), 100_000_000))
        let capacity = rate * Self.minute
        let price = Int64(min(max(cost, 1), Int(rate))) * Self.minute
        if buckets[key] == nil, buckets.count >= forgetAbove { forgetFull(now: now) }
        var bucket = buckets[key] ?? Bucket(credit: capacity, updated: now)
        // Past a minute the bucket is full anyway; capping first keeps the product in range.
        let elapsed = min(max((now - bucket.updated).nanoseconds, 0), Self.minute)
        bucket.credit = min(bucket.credit + elapsed * rate, capacity)
        bucket.updated = now
        defer { buckets[key] = bucket }
        if bucket.credit >= price {
            bucket.credit -= price
            return .allowed
        }
        let nanoseconds = (price - bucket.credit + rate - 1) / rate
        let seconds = (nanoseconds + 999_999_999) / 1_000_000_000
        return .limited(retryAfterSeconds: Int(max(seconds, 1)))
    }

    /// The number of keys with a bucket.
    var count: Int { buckets.count }

    /// Forgets the buckets untouched for a minute (full again, so the same as none).
    private mutating func forgetFull(now: Duration) {
        buckets = buckets.filter { now - $0.value.updated < .nanoseconds(Self.minute) }
        forgetAbove = max(4096, buckets.count * 2)
    }
}

/// `RateBuckets` shared by every request, on the continuous clock.
package final class RateLimiter: Sendable {
    private let buckets = Mutex(RateBuckets())
    private let clock = ContinuousClock()
    private let origin: ContinuousClock.Instant

    package init() {
        origin = clock.now
    }

    /// Spends a request of a key's budget at its rate (requests per minute).
    func spend(_ key: String, cost: Int = 1, ratePerMinute: Int) -> RateBuckets.Decision {
        let now = origin.duration(to: clock.now)
        return buckets.withLock { $0.spend(key, cost: cost, ratePerMinute: ratePerMinute, now: now) }
    }
}
