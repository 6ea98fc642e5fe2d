import Testing

@testable import SwitchyardServer

/// The per-token request budget, driven by explicit times: a minute's worth in a burst, then the rate.
struct RateBucketsTests {
    @Test func aFullBucketAllowsAMinutesWorthThenRefusesWithTheWaitForTheNextRequest() {
        var buckets = RateBuckets()
        for _ in 0..<6 {
            #expect(buckets.spend("tok", ratePerMinute: 6, now: .zero) == .allowed)
        }
        #expect(buckets.spend("tok", ratePerMinute: 6, now: .zero) == .limited(retryAfterSeconds: 10))
        #expect(buckets.spend("tok", ratePerMinute: 6, now: .seconds(4)) == .limited(retryAfterSeconds: 6))
        #expect(buckets.spend("tok", ratePerMinute: 6, now: .milliseconds(9_001)) == .limited(retryAfterSeconds: 1))
        #expect(buckets.spend("tok", ratePerMinute: 6, now: .seconds(10)) == .allowed)
        #expect(buckets.spend("tok", ratePerMinute: 6, now: .seconds(10)) == .limited(retryAfterSeconds: 10))
    }

    @Test func retryAfterIsRoundedUpToWholeSecondsAndIsAtLeastOne() {
        var buckets = RateBuckets()
        #expect(buckets.spend("tok", ratePerMinute: 7, now: .zero) == .allowed)
        for _ in 0..<6 { _ = buckets.spend("tok", ratePerMinute: 7, now: .zero) }
        // 60 / 7 = 8.57 s until the next request.
        #expect(buckets.spend("tok", ratePerMinute: 7, now: .zero) == .limited(retryAfterSeconds: 9))
        var fast = RateBuckets()
        for _ in 0..<600 { _ = fast.spend("tok", ratePerMinute: 600, now: .zero) }
        #expect(fast.spend("tok", ratePerMinute: 600, now: .zero) == .limited(retryAfterSeconds: 1))
    }

    @Test func anIdleBucketRefillsToAMinutesWorthAndNoMore() {
        var buckets = RateBuckets()
        for _ in 0..<2 { _ = buckets.spend("tok", ratePerMinute: 2, now: .zero) }
        var allowed = 0
        for _ in 0..<5 where buckets.spend("tok", ratePerMinute: 2, now: .seconds(3600)) == .allowed { allowed += 1 }
        #expect(allowed == 2)
    }

    @Test func eachKeyHasItsOwnBudget() {
        var buckets = RateBuckets()
        #expect(buckets.spend("a", ratePerMinute: 1, now: .zero) == .allowed)
        #expect(buckets.spend("a", ratePerMinute: 1, now: .zero) == .limited(retryAfterSeconds: 60))
        #expect(buckets.spend("b", ratePerMinute: 1, now: .zero) == .allowed)
        #expect(buckets.count == 2)
    }

    @Test func aLowerRateTakesEffectAtOnce() {
        var buckets = RateBuckets()
        #expect(buckets.spend("tok", ratePerMinute: 100, now: .zero) == .allowed)
        // The credit left is cut to a minute's worth of the new rate: one request.
        #expect(buckets.spend("tok", ratePerMinute: 1, now: .zero) == .allowed)
        #expect(buckets.spend("tok", ratePerMinute: 1, now: .zero) == .limited(retryAfterSeconds: 60))
    }

    @Test func aRequestMayCostSeveralAndNeverMoreThanAMinutesWorth() {
        var buckets = RateBuckets()
        #expect(buckets.spend("tok", cost: 40, ratePerMinute: 60, now: .zero) == .allowed)
        // 20 left; 30 more come in 10 s at one a second.
        #expect(buckets.spend("tok", cost: 30, ratePerMinute: 60, now: .zero) == .limited(retryAfterSeconds: 10))
        #expect(buckets.spend("tok", cost: 30, ratePerMinute: 60, now: .seconds(10)) == .allowed)
        // A batch larger than a minute's worth costs a minute's worth: it passes once the bucket is full.
        #expect(buckets.spend("big", cost: 1000, ratePerMinute: 60, now: .zero) == .allowed)
        #expect(
            buckets.spend("big", cost: 1000, ratePerMinute: 60, now: .seconds(30)) == .limited(retryAfterSeconds: 30))
    }

    @Test func bucketsLeftAloneForAMinuteAreForgottenSoMadeUpKeysCannotGrowMemory() {
        var buckets = RateBuckets()
        for index in 0..<4096 { _ = buckets.spend("address-\(index)", ratePerMinute: 10, now: .zero) }
        #expect(buckets.count == 4096)
        // A minute on, the next new key finds them all full again, the same as none.
        #expect(buckets.spend("late", cost: 10, ratePerMinute: 10, now: .seconds(61)) == .allowed)
        #expect(buckets.count == 1)
        // A spent bucket is kept, so forgetting never gives a key back its budget early.
        for index in 0..<5000 { _ = buckets.spend("other-\(index)", ratePerMinute: 10, now: .seconds(62)) }
        #expect(buckets.spend("late", ratePerMinute: 10, now: .seconds(62)) == .limited(retryAfterSeconds: 5))
    }

    /// A request spending several budgets spends all or none: the refused party's budget is the only one it touches.
    @Test func severalBudgetsAreSpentAllOrNothingNamingTheFirstThatRefuses() {
        var buckets = RateBuckets()
        let budgets = [
            RateBuckets.Budget(key: "address", ratePerMinute: 2, cost: 1),
            RateBuckets.Budget(key: "token", ratePerMinute: 10, cost: 3),
        ]
        #expect(buckets.spend(budgets, now: .zero) == nil)
        #expect(buckets.spend(budgets, now: .zero) == nil)
        // The address is spent (2 a minute): refused, and the token keeps its 4.
        #expect(buckets.spend(budgets, now: .zero) == RateBuckets.Refusal(index: 0, retryAfterSeconds: 30))
        #expect(buckets.spend([RateBuckets.Budget(key: "token", ratePerMinute: 10, cost: 4)], now: .zero) == nil)
        // 30 s on, the address has one again and the token five, which another request spends: now the token
        // refuses, and the address is not charged.
        #expect(buckets.spend([RateBuckets.Budget(key: "token", ratePerMinute: 10, cost: 5)], now: .seconds(30)) == nil)
        #expect(buckets.spend(budgets, now: .seconds(30)) == RateBuckets.Refusal(index: 1, retryAfterSeconds: 18))
        #expect(
            buckets.spend([RateBuckets.Budget(key: "address", ratePerMinute: 2, cost: 1)], now: .seconds(30)) == nil)
        // Asking without charging spends nothing.
        var asked = RateBuckets()
        for _ in 0..<5 {
            #expect(asked.spend([RateBuckets.Budget(key: "a", ratePerMinute: 1)], charge: false, now: .zero) == nil)
        }
        #expect(asked.spend("a", ratePerMinute: 1, now: .zero) == .allowed)
    }

    /// Rates up to the most flagsd accepts (100,000,000 a minute) hold: the refill of an idle minute no longer
    /// overflows (it did past about 77,000,000), and higher rates are clamped to it.
    @Test func theHighestRatesHoldWithoutOverflow() {
        var buckets = RateBuckets()
        for rate in [76_000_000, 77_000_000, 100_000_000, 200_000_000] {
            let key = "r\(rate)"
            #expect(buckets.spend(key, cost: 1_000, ratePerMinute: rate, now: .zero) == .allowed)
            // A minute and more later the bucket is full again, without trapping.
            #expect(buckets.spend(key, cost: 1_000, ratePerMinute: rate, now: .seconds(59)) == .allowed)
            #expect(buckets.spend(key, cost: 1_000, ratePerMinute: rate, now: .seconds(3600)) == .allowed)
        }
        #expect(buckets.spend("max", cost: 100_000_000, ratePerMinute: 200_000_000, now: .zero) == .allowed)
        #expect(buckets.spend("max", cost: 1, ratePerMinute: 200_000_000, now: .zero) == .limited(retryAfterSeconds: 1))
    }
}
