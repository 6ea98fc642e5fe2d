/// A set of gates of a ``MatrixLayout``, by index: the plugin switches that are on and the kill switches that are
/// killed in one combination (or, for effective states, the switches a plugin point sees on).
///
/// A bitset over as many 64-bit words as the layout needs; equal sets compare equal whatever their history.
public struct GateSet: Sendable, Hashable, CustomStringConvertible {
    /// Bit `i % 64` of word `i / 64` is gate `i`.
    public internal(set) var words: [UInt64]

    /// The empty set, sized for `capacity` gates.
    public init(capacity: Int) {
        words = Array(repeating: 0, count: max(1, (capacity + 63) / 64))
    }

    /// A set from its words.
    public init(words: [UInt64]) {
        self.words = words.isEmpty ? [0] : words
    }

    /// A set holding these gate indices.
    public init(capacity: Int, _ members: some Sequence<Int>) {
        self.init(capacity: capacity)
        for member in members { insert(member) }
    }

    public func contains(_ gate: Int) -> Bool {
        let word = gate >> 6
        return word < words.count && words[word] & (1 << UInt64(gate & 63)) != 0
    }

    public mutating func insert(_ gate: Int) {
        let word = gate >> 6
        while words.count <= word { words.append(0) }
        words[word] |= 1 << UInt64(gate & 63)
    }

    public mutating func remove(_ gate: Int) {
        let word = gate >> 6
        guard word < words.count else { return }
        words[word] &= ~(1 << UInt64(gate & 63))
    }

    /// How many gates are set: the size the matrix minimises when it shrinks a failing combination.
    public var count: Int {
        words.reduce(0) { $0 + $1.nonzeroBitCount }
    }

    public var isEmpty: Bool { words.allSatisfy { $0 == 0 } }

    /// The gate indices, ascending.
    public var members: [Int] {
        var result: [Int] = []
        for (index, word) in words.enumerated() {
            var remaining = word
            while remaining != 0 {
                result.append(index * 64 + remaining.trailingZeroBitCount)
                remaining &= remaining - 1
            }
        }
        return result
    }

    public static func == (lhs: GateSet, rhs: GateSet) -> Bool {
        let count = max(lhs.words.count, rhs.words.count)
        for index in 0..<count where lhs.word(index) != rhs.word(index) { return false }
        return true
    }

    public func hash(into hasher: inout Hasher) {
        var last = words.count - 1
        while last > 0 && words[last] == 0 { last -= 1 }
        for index in 0...last { hasher.combine(words[index]) }
    }

    /// `{0, 3, 17}`.
    public var description: String {
        "{" + members.map(String.init).joined(separator: ", ") + "}"
    }

    func word(_ index: Int) -> UInt64 {
        index < words.count ? words[index] : 0
    }
}
