/// Which combinations the matrix runs, in which order: every combination of every gate when there are at most
/// `bound` of them; otherwise every combination of each plugin point's gates, then a t-wise covering array
/// across points.
///
/// Combinations are numbered `0..<total`; ``combination(at:)`` gives any of them without building the others,
/// and a ``Shard`` is a contiguous range of numbers. `flagctl matrix plan` and the test kit build the same plan
/// from the same flag file and options, so their counts and shards agree.
///
/// ```swift
/// let plan = MatrixPlan(layout: MatrixLayout(flagSet: flags))
/// plan.total                      // 131072 for Flags/rider.yaml: 2^17, exhaustive
/// plan.combination(at: 5)         // gates 0 and 2 set
/// ```
public struct MatrixPlan: Sendable {
    /// How the plan chose its combinations.
    public enum Mode: Sendable, Hashable {
        /// Every combination of every gate.
        case exhaustive
        /// Every combination of each point's gates, plus a covering array of this strength across points.
        case covering(strength: Int)
    }

    /// A run of consecutive combination numbers.
    public enum Segment: Sendable, Hashable {
        /// Every combination of every gate: number `i` sets gate `g` when bit `g` of `i` is 1.
        case everyCombination(count: UInt64)
        /// Every combination of one plugin point's gates (its switches and their kill switches), all other gates
        /// unset: number `i` sets the point's `j`-th gate when bit `j` of `i` is 1.
        case point(index: Int, gates: [Int])
        /// The rows of the covering array across points.
        case covering(rows: [GateSet])

        /// How many combinations the segment holds.
        public var count: UInt64 {
            switch self {
            case .everyCombination(let count): count
            case .point(_, let gates): UInt64(1) << UInt64(gates.count)
            case .covering(let rows): UInt64(rows.count)
            }
        }
    }

    /// One factor of the covering array: a plugin point with the gates only it has, or a gate shared by points
    /// (the master kill switch, a group spanning points, a plugin switch of no point).
    public struct Factor: Sendable, Hashable, CustomStringConvertible {
        /// The point's name, or the shared gate's key.
        public let name: String
        /// The point's index, when the factor is a point.
        public let point: Int?
        /// The gates the factor sets: level `v` sets the `j`-th of them when bit `j` of `v` is 1.
        public let gates: [Int]

        /// 2^gates.
        public var levels: Int { 1 << gates.count }

        public var description: String { name }
    }

    /// The default bound: at most 2^20 combinations run exhaustively.
    public static let defaultBound: UInt64 = 1 << 20

    /// The most steps (``CoveringArray/estimatedSteps(levels:strength:)``, a lower bound) a covering array may take to
    /// build: plans under it took up to a few minutes here (docs/matrix.md). Past it a plan is refused with what to
    /// change, rather than run for hours: a namespace of 1,250 plugin points of 8 switches and a kill switch each
    /// (512 states per point) would need at least 262,144 rows and about 10^14 steps for a pairwise array across its
    /// points.
    public static let defaultPlanningBudget = 5e9

    public let layout: MatrixLayout
    /// The most combinations run exhaustively.
    public let bound: UInt64
    /// The covering array's strength when the matrix is beyond the bound (2 pairwise, 3 three-wise).
    public let strength: Int
    public let mode: Mode
    public let segments: [Segment]
    /// The covering array's factors (empty when exhaustive).
    public let factors: [Factor]
    /// How many interactions the covering array covers (0 when exhaustive).
    public let interactionCount: Int
    /// How many combinations the plan runs.
    public let total: UInt64
    private let segmentStarts: [UInt64]

    /// Plans a matrix.
    /// - Parameters:
    ///   - layout: the namespace's gates.
    ///   - bound: at most this many combinations run exhaustively (default 2^20).
    ///   - strength: 2 (pairwise) or 3 (three-wise), for the covering array beyond the bound.
    ///   - planningBudget: the most steps the covering array may take to build (``defaultPlanningBudget``).
    ///   - progress: told how much of the covering array is built (0 to 1) as it is, for a caller that reports long
    ///     plans (see ``CoveringArray/init(levels:strength:progress:)``); never called for an exhaustive plan.
    /// - Throws: ``MatrixPlanError`` for a bound of 0 or a strength other than 2 or 3, or a plan past
    ///   `planningBudget`.
    public init(
        layout: MatrixLayout, bound: UInt64 = defaultBound, strength: Int = 2,
        planningBudget: Double = defaultPlanningBudget, progress: ((_ done: Double) -> Void)? = nil
    ) throws(MatrixPlanError) {
        guard bound >= 1 else { throw .option("the bound must be at least 1 combination") }
        guard strength == 2 || strength == 3 else {
            throw .option("the covering strength must be 2 (pairwise) or 3 (three-wise), not \(strength)")
        }
        self.layout = layout
        self.bound = bound
        self.strength = strength
        let gateCount = layout.gateCount
        if gateCount < 63 && UInt64(1) << UInt64(gateCount) <= bound {
            mode = .exhaustive
            segments = [.everyCombination(count: UInt64(1) << UInt64(gateCount))]
            factors = []
            interactionCount = 0
        } else {
            mode = .covering(strength: strength)
            var segments: [Segment] = layout.points.enumerated().compactMap { index, point in
                point.gates.isEmpty ? nil : .point(index: index, gates: point.gates)
            }
            let factors = Self.factors(of: layout)
            try Self.checkBudget(factors, strength: strength, gates: gateCount, budget: planningBudget)
            let array = CoveringArray(levels: factors.map(\.levels), strength: strength, progress: progress)
            let rows = array.rows.map { row in
                var combination = GateSet(capacity: gateCount)
                for (factor, level) in zip(factors, row) {
                    for (bit, gate) in factor.gates.enumerated() where level & (1 << bit) != 0 {
                        combination.insert(gate)
                    }
                }
                return combination
            }
            segments.append(.covering(rows: rows))
            self.segments = segments
            self.factors = factors
            interactionCount = array.interactionCount
        }
        var starts: [UInt64] = []
        var running: UInt64 = 0
        for segment in segments {
            starts.append(running)
            running += segment.count
        }
        segmentStarts = starts
        total = running
    }

    /// Refuses a covering array past a planning budget, saying what it would take and what to change.
    static func checkBudget(_ factors: [Factor], strength: Int, gates: Int, budget: Double) throws(MatrixPlanError) {
        let (rows, perFactor) = CoveringArray.cost(levels: factors.map(\.levels), strength: strength)
        let steps = perFactor.reduce(0, +)
        guard steps > budget else { return }
        let largest = factors.max { $0.gates.count < $1.gates.count }
        /// `262144`, `3×10^10`, `10^14`: one significant digit past a million, rounded.
        func rounded(_ value: Double) -> String {
            guard value >= 1e6 else { return String(Int(value.rounded())) }
            var (exponent, power) = (0, 1.0)
            while power * 10 <= value { (exponent, power) = (exponent + 1, power * 10) }
            var digit = Int((value / power).rounded())
            if digit == 10 { (digit, exponent) = (1, exponent + 1) }
            return digit > 1 ? "\(digit)×10^\(exponent)" : "10^\(exponent)"
        }
        var advice = "give plugin points fewer switches (each point's gates multiply its states), or split the "
        advice += "namespace's plugin points between namespaces, or raise the budget to wait longer "
        advice += "(flagctl matrix plan --planning-budget, Matrix.Options.planningBudget)"
        if strength == 3 { advice = "use --strength 2 (pairwise), or " + advice }
        throw .tooLarge(
            "the matrix of \(gates) gates is too large to plan: a \(strengthName(strength)) covering array across "
                + "\(factors.count) factors (plugin points and shared gates"
                + (largest.map { ", the largest \($0.name) with \($0.gates.count) gates: 2^\($0.gates.count) states" }
                    ?? "")
                + ") needs at least \(rounded(rows)) rows and about \(rounded(steps)) steps to build, past the "
                + "planner's \(rounded(budget)); \(advice)")
    }

    /// The covering array's factors: each point with the gates that belong to it alone (its switches, groups
    /// covering only them), then each remaining gate on its own.
    static func factors(of layout: MatrixLayout) -> [Factor] {
        var owned = Set<Int>()
        var factors: [Factor] = []
        for (index, point) in layout.points.enumerated() {
            let switches = Set(point.switches)
            let ownKills = point.killSwitches.filter { kill in
                layout.covers[kill - layout.switchCount].allSatisfy(switches.contains)
            }
            let gates = point.switches + ownKills
            guard !gates.isEmpty else { continue }
            owned.formUnion(gates)
            factors.append(Factor(name: point.name, point: index, gates: gates))
        }
        for gate in 0..<layout.gateCount where !owned.contains(gate) {
            factors.append(Factor(name: layout.gates[gate].key, point: nil, gates: [gate]))
        }
        return factors
    }

    /// Where combination `index` lies: its segment and the offset in it.
    public func segment(containing index: UInt64) -> (segment: Int, offset: UInt64) {
        var low = 0
        var high = segmentStarts.count - 1
        while low < high {
            let middle = (low + high + 1) / 2
            if segmentStarts[middle] <= index { low = middle } else { high = middle - 1 }
        }
        return (low, index - segmentStarts[low])
    }

    /// The first combination number of a segment.
    public func start(of segment: Int) -> UInt64 {
        segmentStarts[segment]
    }

    /// Combination number `index` (`0..<total`).
    public func combination(at index: UInt64) -> GateSet {
        let (segment, offset) = segment(containing: index)
        var combination = GateSet(capacity: layout.gateCount)
        switch segments[segment] {
        case .everyCombination:
            combination.setWord(0, offset)
        case .point(_, let gates):
            for (bit, gate) in gates.enumerated() where offset & (UInt64(1) << UInt64(bit)) != 0 {
                combination.insert(gate)
            }
        case .covering(let rows):
            combination = rows[Int(offset)]
        }
        return combination
    }

    /// Whether every combination of every gate runs.
    public var isExhaustive: Bool { mode == .exhaustive }

    /// 2^gates, the size of the full matrix (saturating at `UInt64.max`).
    public var fullSize: UInt64 {
        layout.gateCount >= 64 ? .max : UInt64(1) << UInt64(layout.gateCount)
    }

    /// `pairwise` or `three-wise`.
    public static func strengthName(_ strength: Int) -> String {
        strength == 2 ? "pairwise" : strength == 3 ? "three-wise" : "\(strength)-wise"
    }

    /// One line saying what the plan covers, for summaries: `exhaustive: every one of the 2^17 = 131072
    /// combinations of 17 gates` or `beyond the bound of 2^20: every combination of each plugin point's gates
    /// (4 points, 128 combinations) plus a pairwise covering array across 5 factors (262 rows covering all
    /// 1,412 2-way interactions): 390 of 2^33 combinations`.
    public var coverageDescription: String {
        let gates = layout.gateCount
        switch mode {
        case .exhaustive:
            return "exhaustive: every one of the 2^\(gates) = \(total) combinations of \(gates) gates"
        case .covering(let strength):
            let pointCombinations = segments.reduce(UInt64(0)) { total, segment in
                if case .point = segment { return total + segment.count }
                return total
            }
            let pointCount = segments.filter { if case .point = $0 { return true } else { return false } }.count
            let rows = segments.last.map(\.count) ?? 0
            return
                "beyond the bound of \(Self.power(bound)) combinations: every combination of each plugin point's gates "
                + "(\(pointCount) point\(pointCount == 1 ? "" : "s"), \(pointCombinations) combinations) plus a "
                + "\(Self.strengthName(strength)) covering array across \(factors.count) factors (\(rows) rows covering all "
                + "\(interactionCount) \(strength)-way interactions of their states): \(total) of 2^\(gates) combinations"
        }
    }

    /// `2^20` for powers of two, the number otherwise.
    public static func power(_ value: UInt64) -> String {
        value.nonzeroBitCount == 1 ? "2^\(value.trailingZeroBitCount)" : "\(value)"
    }
}
