import SwitchyardMatrixPlan

/// A failing check of one scope (a point or a flow), as a number: `scope × checks + check`.
typealias KindID = Int

extension KindID {
    static func of(scope: Int, _ check: MatrixFinding.Check) -> KindID {
        scope * MatrixFinding.Check.allCases.count + check.index
    }

    var scope: Int { self / MatrixFinding.Check.allCases.count }
    var check: MatrixFinding.Check { MatrixFinding.Check.allCases[self % MatrixFinding.Check.allCases.count] }
}

/// One failure of one check in one combination.
struct Occurrence: Codable, Sendable, Hashable {
    /// The combination's number in the plan (or the candidate's position while shrinking).
    var index: UInt64
    /// The combination's gate words.
    var gates: [UInt64]
    /// How many gates it sets.
    var size: Int
    var message: String

    var combination: GateSet { GateSet(words: gates) }

    /// Whether this occurrence is a smaller example than another: fewer gates set, then earlier.
    func isSmaller(than other: Occurrence) -> Bool {
        size < other.size || (size == other.size && index < other.index)
    }
}

/// What a run found: per failing check, how many combinations failed it and the smallest that did; how many
/// combinations were checked; which plugins served at least once.
struct Tally: Sendable {
    struct Record: Sendable {
        var count: UInt64
        var smallest: Occurrence
    }

    var records: [KindID: Record] = [:]
    /// Combinations checked.
    var checked: UInt64 = 0
    /// Per point, a bit per switch (in the declared order) that served at least once.
    var served: [UInt64]
    /// Combinations whose flows did not run because a plugin point traps in them.
    var flowsSkipped: UInt64 = 0
    /// Flows no longer run after too many distinct trapping states.
    var disabledFlows: Set<Int> = []

    init(pointCount: Int) {
        served = Array(repeating: 0, count: pointCount)
    }

    /// Counts a failure; keeps it when it is the smallest so far.
    /// - Returns: whether it became the smallest.
    @discardableResult
    mutating func record(
        _ kind: KindID, _ occurrence: @autoclosure () -> Occurrence, size: Int, index: UInt64,
        count: UInt64 = 1
    ) -> Bool {
        if var record = records[kind] {
            record.count += count
            let better = size < record.smallest.size
            if better { record.smallest = occurrence() }
            records[kind] = record
            return better
        }
        records[kind] = Record(count: count, smallest: occurrence())
        return true
    }

    /// Adds another run's tally (another child process, another shard of the same process).
    mutating func merge(_ other: Tally) {
        for (kind, record) in other.records {
            if var mine = records[kind] {
                mine.count += record.count
                if record.smallest.isSmaller(than: mine.smallest) { mine.smallest = record.smallest }
                records[kind] = mine
            } else {
                records[kind] = record
            }
        }
        checked += other.checked
        for index in served.indices where index < other.served.count { served[index] |= other.served[index] }
        flowsSkipped += other.flowsSkipped
        disabledFlows.formUnion(other.disabledFlows)
    }
}

/// What a crashed child leaves to skip when the run goes on: states known to trap.
struct TrapSkips: Codable, Sendable, Hashable {
    /// A point routing one input with these switches on (bits over the point's switches in code order) traps.
    struct PointState: Codable, Sendable, Hashable {
        var point: Int
        var input: Int
        var local: UInt64
    }

    /// A flow traps with these switches effectively on.
    struct FlowState: Codable, Sendable, Hashable {
        var flow: Int
        var effective: [UInt64]
    }

    var points: Set<PointState> = []
    var flows: Set<FlowState> = []
    var disabledFlows: Set<Int> = []
    /// Trap messages by kind, for the findings.
    var messages: [KindID: String] = [:]

    var isEmpty: Bool { points.isEmpty && flows.isEmpty && disabledFlows.isEmpty }
}
