import SwitchyardCore
import Testing

/// The one "did you mean" of the project: the measure, the rule for near enough, the wording.
struct SuggestionsTests {
    @Test(arguments: [
        ("", "abc", 3), ("abc", "", 3), ("kitten", "sitting", 3), ("rollot", "rollout", 1), ("flags", "flags", 0),
        ("cohort", "cohorts", 1), ("ab", "ba", 2),
    ])
    func theDistanceIsLevenshteins(a: String, b: String, expected: Int) {
        #expect(Suggestions.distance(a, b) == expected)
        #expect(Suggestions.distance(b, a) == expected)
    }

    @Test func theNearestAreThoseAtTheSmallestDistanceAlphabeticallyAndOnlyWhenNearEnough() {
        let keys = [
            "plugin_switch_gift_wrap", "plugin_switch_surge_notice", "plugin_switch_gift_wrapper", "kill_banner",
        ]
        #expect(Suggestions.nearest(to: "plugin_switch_gift_warp", among: keys) == ["plugin_switch_gift_wrap"])
        // Ties come alphabetically and at most `count`; duplicates count once.
        #expect(Suggestions.nearest(to: "ab", among: ["ba", "aa", "ac", "ac"]) == ["aa", "ac"])
        #expect(Suggestions.nearest(to: "ab", among: ["ba", "aa", "ac"], count: 1) == ["aa"])
        // A third of the word's length away at most (2 for short words): nothing for a word unlike every candidate.
        #expect(Suggestions.nearest(to: "surge", among: keys).isEmpty)
    }

    @Test func theWordingIsOneSentenceOrNothing() {
        #expect(Suggestions.didYouMean("rollot", among: ["rollout", "rules"]) == "; did you mean 'rollout'?")
        #expect(Suggestions.didYouMean(["a_b", "a_c"]) == "; did you mean 'a_b' or 'a_c'?")
        #expect(Suggestions.didYouMean("zzzzzz", among: ["rollout"]) == "")
    }
}
