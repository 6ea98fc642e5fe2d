/// A t-wise covering array: rows assigning a level to every factor so that, for any `strength` factors, every
/// combination of their levels appears in some row.
///
/// Built by in-parameter-order growth (IPOG, Lei et al. 2007): start from every combination of the `strength`
/// factors with the most levels, then add the other factors one at a time, first giving each existing row the
/// level that covers the most new interactions, then adding rows for what is left. Deterministic: the same
/// levels and strength give the same rows.
///
/// ```swift
/// let pairwise = CoveringArray(levels: [16, 16, 16, 16, 2], strength: 2)
/// pairwise.rows.count        // 256 or a little more, instead of 16⁴·2 = 131,072
/// ```
public struct CoveringArray: Sendable, Hashable {
    /// Levels per factor, in the caller's order.
    public let levels: [Int]
    /// The interaction strength `t` (2 is pairwise).
    public let strength: Int
    /// Each row gives a level (`0..<levels[f]`) for every factor `f`.
    public let rows: [[Int]]

    /// Builds the array.
    /// - Parameters:
    ///   - levels: how many levels each factor has (at least 1).
    ///   - strength: `t`; with `t` or fewer factors the array is their full product.
    ///   - progress: told after each factor how much of the work is done (0 to 1, by the steps of
    ///     ``estimatedSteps(levels:strength:)``: later factors take more), for a caller that reports long plans.
    public init(levels: [Int], strength: Int, progress: ((_ done: Double) -> Void)? = nil) {
        self.levels = levels
        self.strength = strength
        rows = Self.build(levels: levels, strength: max(1, strength), progress: progress)
    }

    /// About how many steps building an array of these levels takes: its horizontal growth, where each row tries
    /// each level of each factor after the first `strength` against each set of `strength - 1` factors before it,
    /// counted with the fewest rows the array can have (the product of the `strength` largest levels). The vertical
    /// growth and the interactions' bookkeeping grow alike. Worked out before building, so that a plan that would
    /// run for hours is refused at once (``MatrixPlan/defaultPlanningBudget``).
    public static func estimatedSteps(levels: [Int], strength: Int) -> Double {
        cost(levels: levels, strength: strength).steps.reduce(0, +)
    }

    /// The fewest rows an array of these levels can have, and the steps of `estimatedSteps(levels:strength:)` factor
    /// by factor, in the order the array is built (most levels first), for the factors after the first `strength`.
    static func cost(levels: [Int], strength: Int) -> (rows: Double, steps: [Double]) {
        let t = min(max(1, strength), levels.count)
        let sorted = levels.map { Double(max(1, $0)) }.sorted(by: >)
        let rows = sorted.prefix(t).reduce(1, *)
        let steps = (t..<sorted.count).map { factor in
            // The sets of t - 1 factors among the `factor` before it.
            let sets = t == 1 ? 1 : t == 2 ? Double(factor) : Double(factor) * Double(factor - 1) / 2
            return rows * sorted[factor] * sets * Double(max(1, t - 1))
        }
        return (rows, steps)
    }

    /// How many interactions of `strength` factors there are (each must appear in some row).
    public var interactionCount: Int {
        let t = min(strength, levels.count)
        return Self.subsets(of: Array(levels.indices), size: t).reduce(0) { total, subset in
            total + subset.reduce(1) { $0 * levels[$1] }
        }
    }

    /// How many interactions no row covers: 0 for a correct array (tests check it).
    public func missingInteractionCount() -> Int {
        let t = min(strength, levels.count)
        var missing = 0
        for subset in Self.subsets(of: Array(levels.indices), size: t) {
            var seen = Set<[Int]>()
            for row in rows { seen.insert(subset.map { row[$0] }) }
            missing += subset.reduce(1) { $0 * levels[$1] } - seen.count
        }
        return missing
    }

    private static func build(levels original: [Int], strength: Int, progress: ((Double) -> Void)?) -> [[Int]] {
        let factorCount = original.count
        guard factorCount > 0 else { return [[]] }
        // Work with factors sorted by levels, most first; map back at the end.
        let order = original.indices.sorted { original[$0] > original[$1] || (original[$0] == original[$1] && $0 < $1) }
        let levels = order.map { max(1, original[$0]) }
        let t = min(strength, factorCount)

        var rows: [[Int]] = [[]]
        for factor in 0..<t {
            rows = rows.flatMap { row in (0..<levels[factor]).map { row + [$0] } }
        }
        rows = rows.map { $0 + Array(repeating: -1, count: factorCount - t) }

        let steps = cost(levels: levels, strength: t).steps
        let total = steps.reduce(0, +)
        var done = 0.0
        for factor in t..<factorCount {
            defer {
                done += steps[factor - t]
                if let progress, total > 0 { progress(min(1, done / total)) }
            }
            let subsets = Self.subsets(of: Array(0..<factor), size: t - 1)
            let width = levels[factor]
            // The interactions of every subset with the new factor in one array: subset `p`'s start at offsets[p].
            var offsets: [Int] = []
            offsets.reserveCapacity(subsets.count + 1)
            var end = 0
            for subset in subsets {
                offsets.append(end)
                end += subset.reduce(width) { $0 * levels[$1] }
            }
            offsets.append(end)
            var covered = [Bool](repeating: false, count: end)

            /// A row's levels on each subset as one number (its interaction with the new factor's level `v` is
            /// `base * width + v`), or -1 where the row has a don't-care on the subset.
            func bases(of row: [Int]) -> [Int] {
                subsets.map { subset in
                    var base = 0
                    for column in subset {
                        let level = row[column]
                        if level < 0 { return -1 }
                        base = base * levels[column] + level
                    }
                    return base
                }
            }

            /// Marks the interactions of a row (its `bases`) with the new factor's level `value` as covered.
            func markCovered(_ rowBases: [Int], _ value: Int) {
                guard value >= 0 else { return }
                for (position, base) in rowBases.enumerated() where base >= 0 {
                    covered[offsets[position] + base * width + value] = true
                }
            }

            // Horizontal growth: each row takes the level that covers the most uncovered interactions (the lowest
            // such level).
            var gains = [Int](repeating: 0, count: width)
            for rowIndex in rows.indices {
                let rowBases = bases(of: rows[rowIndex])
                for value in 0..<width { gains[value] = 0 }
                for (position, base) in rowBases.enumerated() where base >= 0 {
                    let start = offsets[position] + base * width
                    for value in 0..<width where !covered[start + value] { gains[value] += 1 }
                }
                var best = 0
                for value in 1..<width where gains[value] > gains[best] { best = value }
                rows[rowIndex][factor] = best
                markCovered(rowBases, best)
            }

            // Vertical growth: put every interaction still uncovered into a row with room for it, or a new row.
            var openRows = rows.indices.filter { index in rows[index][0...factor].contains(-1) }
            for (position, subset) in subsets.enumerated() {
                let first = offsets[position]
                for tuple in 0..<(offsets[position + 1] - first) where !covered[first + tuple] {
                    // Decode the tuple: the subset's levels, then the new factor's.
                    var values = [Int](repeating: 0, count: subset.count)
                    var rest = tuple / width
                    let value = tuple % width
                    for slot in stride(from: subset.count - 1, through: 0, by: -1) {
                        values[slot] = rest % levels[subset[slot]]
                        rest /= levels[subset[slot]]
                    }
                    let fits = openRows.first { rowIndex in
                        let row = rows[rowIndex]
                        guard row[factor] == -1 || row[factor] == value else { return false }
                        return zip(subset, values).allSatisfy { row[$0] == -1 || row[$0] == $1 }
                    }
                    let rowIndex: Int
                    if let fits {
                        rowIndex = fits
                    } else {
                        rows.append(Array(repeating: -1, count: factorCount))
                        rowIndex = rows.count - 1
                        openRows.append(rowIndex)
                    }
                    for (column, level) in zip(subset, values) { rows[rowIndex][column] = level }
                    rows[rowIndex][factor] = value
                    markCovered(bases(of: rows[rowIndex]), rows[rowIndex][factor])
                    if !rows[rowIndex][0...factor].contains(-1) { openRows.removeAll { $0 == rowIndex } }
                }
            }
        }

        // Don't-cares take level 0; columns go back to the caller's order.
        return rows.map { row in
            var result = [Int](repeating: 0, count: factorCount)
            for (position, factor) in order.enumerated() { result[factor] = max(0, row[position]) }
            return result
        }
    }

    /// Every subset of `size` elements, in lexicographic order.
    static func subsets(of elements: [Int], size: Int) -> [[Int]] {
        guard size > 0 else { return [[]] }
        guard size <= elements.count else { return [] }
        var result: [[Int]] = []
        var chosen: [Int] = []
        func extend(from start: Int) {
            if chosen.count == size {
                result.append(chosen.map { elements[$0] })
                return
            }
            guard start < elements.count else { return }
            for next in start..<elements.count where elements.count - next >= size - chosen.count {
                chosen.append(next)
                extend(from: next + 1)
                chosen.removeLast()
            }
        }
        extend(from: 0)
        return result
    }
}
