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
}
