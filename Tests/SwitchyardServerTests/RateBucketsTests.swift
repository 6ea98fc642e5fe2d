@testable import SwitchyardServer
import Testing

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
        #expect(buckets.spend("big", cost: 1000, ratePerMinute: 60, now: .seconds(30)) == .limited(retryAfterSeconds: 30))
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
}
