/// "Did you mean" suggestions for a mistyped name: one measure (Levenshtein distance), one rule for near enough and
/// one wording, for the flag-set readers, flagctl and the matrix planner alike.
public enum Suggestions {
    /// The candidates nearest to `word`, when near enough to be a typo (at most a third of its length away, and 2
    /// for short words): those at the smallest distance, alphabetically, at most `count`.
    public static func nearest(to word: String, among candidates: some Sequence<String>, count: Int = 3) -> [String] {
        let limit = max(2, word.count / 3)
        let scored = Set(candidates).map { ($0, distance(word, $0)) }.filter { $0.1 <= limit }
        guard let best = scored.map(\.1).min() else { return [] }
        return scored.filter { $0.1 == best }.map(\.0).sorted().prefix(count).map { $0 }
    }

    /// `; did you mean 'a' or 'b'?` for the nearest candidates, or "" when none is near enough.
    public static func didYouMean(_ word: String, among candidates: some Sequence<String>, count: Int = 3) -> String {
        didYouMean(nearest(to: word, among: candidates, count: count))
    }

    /// `; did you mean 'a' or 'b'?`, or "" for no suggestion.
    public static func didYouMean(_ suggestions: [String]) -> String {
        suggestions.isEmpty ? "" : "; did you mean \(suggestions.map { "'\($0)'" }.joined(separator: " or "))?"
    }

    /// The Levenshtein distance between two strings, over characters.
    public static func distance(_ a: String, _ b: String) -> Int {
        let a = Array(a)
        let b = Array(b)
        if a.isEmpty { return b.count }
        if b.isEmpty { return a.count }
        var previous = Array(0...b.count)
        var current = [Int](repeating: 0, count: b.count + 1)
        for i in 1...a.count {
            current[0] = i
            for j in 1...b.count {
                current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
            }
            swap(&previous, &current)
        }
        return previous[b.count]
    }
}
