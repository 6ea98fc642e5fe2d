import SwitchyardStorage
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
    ///   - ratePerMinute: the key's rate, from 1 to ``maximumRate`` (clamped); a changed rate applies from this
    ///     request on.
    ///   - now: the time, as a duration since any fixed origin.
    /// - Returns: `.allowed`, or `.limited` with the whole seconds until the request would be allowed.
    mutating func spend(_ key: String, cost: Int = 1, ratePerMinute: Int, now: Duration) -> Decision {
        guard let refusal = spend([Budget(key: key, ratePerMinute: ratePerMinute, cost: cost)], now: now) else {
            return .allowed
        }
        return .limited(retryAfterSeconds: refusal.retryAfterSeconds)
    }

    /// One budget a request spends from.
    struct Budget: Sendable, Hashable {
        /// Whose budget (`events:203.0.113.7`, `token:42`).
        var key: String
        /// Its rate, from 1 to ``maximumRate`` (clamped).
        var ratePerMinute: Int
        /// What the request costs of it, 1 or more; more than a minute's worth costs a minute's worth.
        var cost: Int = 1
    }

    /// A request refused by a budget.
    struct Refusal: Sendable, Hashable {
        /// The first budget (in the order given) that refused it.
        var index: Int
        /// The whole seconds until every budget would allow it, at least 1.
        var retryAfterSeconds: Int
    }

    /// Spends a request of several budgets at once, all or nothing: a request refused by one budget costs none of
    /// the others (the refused party's budget is the only one a refusal touches).
    ///
    /// - Parameters:
    ///   - budgets: distinct keys with their rates and costs.
    ///   - charge: false to only ask whether the request would be allowed (nothing is spent).
    ///   - now: the time, as a duration since any fixed origin.
    /// - Returns: nil when allowed (and spent), else which budget refused and when to come back.
    mutating func spend(_ budgets: [Budget], charge: Bool = true, now: Duration) -> Refusal? {
        var refilled: [(key: String, bucket: Bucket, price: Int64)] = []
        var refusal: Refusal?
        var wait: Int64 = 0
        for (index, budget) in budgets.enumerated() {
            let rate = Int64(min(max(budget.ratePerMinute, 1), Self.maximumRate))
            let capacity = rate * Self.minute
            let price = Int64(min(max(budget.cost, 1), Int(rate))) * Self.minute
            if buckets[budget.key] == nil, buckets.count >= forgetAbove { forgetFull(now: now) }
            var bucket = buckets[budget.key] ?? Bucket(credit: capacity, updated: now)
            // Past a minute the bucket is full anyway; capping first keeps the product in range (at most 6e18), and
            // the sum is compared with the room left rather than formed (credit plus refill can pass Int64.max).
            let elapsed = min(max((now - bucket.updated).nanoseconds, 0), Self.minute)
            let refill = elapsed * rate
            bucket.credit = refill >= capacity - bucket.credit ? capacity : bucket.credit + refill
            bucket.updated = now
            if bucket.credit < price {
                if refusal == nil { refusal = Refusal(index: index, retryAfterSeconds: 1) }
                wait = max(wait, (price - bucket.credit + rate - 1) / rate)
            }
            refilled.append((budget.key, bucket, price))
        }
        for (key, var bucket, price) in refilled {
            if refusal == nil, charge { bucket.credit -= price }
            buckets[key] = bucket
        }
        guard var refusal else { return nil }
        refusal.retryAfterSeconds = Int(max((wait + 999_999_999) / 1_000_000_000, 1))
        return refusal
    }

    /// Gives back what a request spent of its budgets when it was refused after all (by a cap the budgets do not
    /// know: the ingestion backlog, the cap of parked long-polls): a refusal costs nothing. A bucket never holds more
    /// than a minute's worth.
    mutating func refund(_ budgets: [Budget]) {
        for budget in budgets {
            guard var bucket = buckets[budget.key] else { continue }
            let rate = Int64(min(max(budget.ratePerMinute, 1), Self.maximumRate))
            let price = Int64(min(max(budget.cost, 1), Int(rate))) * Self.minute
            bucket.credit = min(rate * Self.minute, bucket.credit + price)
            buckets[budget.key] = bucket
        }
    }

    /// The highest rate a bucket holds (requests per minute); higher ones are clamped to it.
    static let maximumRate = 100_000_000

    /// The number of keys with a bucket.
    var count: Int { buckets.count }

    /// Forgets the buckets untouched for a minute (full again, so the same as none).
    private mutating func forgetFull(now: Duration) {
        buckets = buckets.filter { now - $0.value.updated < .nanoseconds(Self.minute) }
        forgetAbove = max(4096, buckets.count * 2)
    }
}

/// `RateBuckets` shared by every request, on the continuous clock (or one a test moves).
package final class RateLimiter: Sendable {
    private let buckets = Mutex(RateBuckets())
    private let clock: @Sendable () -> Duration

    /// - Parameter clock: the time since any fixed origin; nil: the continuous clock.
    package init(clock: (@Sendable () -> Duration)? = nil) {
        let origin = ContinuousClock.now
        self.clock = clock ?? { origin.duration(to: ContinuousClock.now) }
    }

    /// Spends a request of a key's budget at its rate (requests per minute).
    func spend(_ key: String, cost: Int = 1, ratePerMinute: Int) -> RateBuckets.Decision {
        let now = clock()
        return buckets.withLock { $0.spend(key, cost: cost, ratePerMinute: ratePerMinute, now: now) }
    }

    /// Gives back what a refused request spent (``RateBuckets/refund(_:)``).
    func refund(_ budgets: [RateBuckets.Budget]) {
        guard !budgets.isEmpty else { return }
        buckets.withLock { $0.refund(budgets) }
    }

    /// Spends a request of several budgets, all or nothing (``RateBuckets/spend(_:charge:now:)``).
    func spend(_ budgets: [RateBuckets.Budget], charge: Bool = true) -> RateBuckets.Refusal? {
        let now = clock()
        return buckets.withLock { $0.spend(budgets, charge: charge, now: now) }
    }
}

extension IPAddress {
    /// The budgets of a per-address rate for this address: one per block it counts under (``AddressBlock``), each at
    /// its share of the rate, keyed `<what>:<block>`.
    func budgets(_ what: String, ratePerMinute: Int, cost: Int = 1) -> [RateBuckets.Budget] {
        blocks.map { RateBuckets.Budget(key: "\(what):\($0.key)", ratePerMinute: $0.cap(ratePerMinute), cost: cost) }
    }
}

extension AddressBlock {
    /// Who a refusal at this block speaks of: `this source address`, or `this source's network 2001:db8:1::/48`.
    var sender: String {
        share == 1 ? "this source address" : "this source's network \(key)"
    }
}
