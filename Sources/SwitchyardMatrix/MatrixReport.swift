import Foundation
public import SwitchyardMatrixPlan

/// What a matrix run checked and found.
public struct MatrixReport: Sendable, CustomStringConvertible {
    /// The namespace.
    public let namespace: String
    /// What the plan covers: exhaustive, or per point plus a covering array (``MatrixPlan/coverageDescription``).
    public let coverage: String
    /// Whether every combination of every gate was in the plan.
    public let isExhaustive: Bool
    /// Gates: plugin switches plus kill switches.
    public let gateCount: Int
    /// Combinations in the whole plan.
    public let planned: UInt64
    /// The shard run.
    public let shard: Shard
    /// The combination numbers the shard covers.
    public let range: Range<UInt64>
    /// Combinations checked.
    public let checked: UInt64
    public let elapsed: Duration
    /// Plugin points, inputs routed per combination, flows.
    public let pointCount: Int
    public let inputCount: Int
    public let flowCount: Int
    /// Every failing check.
    public let findings: [MatrixFinding]
    /// Plugins that never served in any combination checked, as `point/switch`: an input list that never makes
    /// them applicable leaves them unchecked.
    public let neverServed: [String]
    /// What else to know: a single combination run, the isolation used, flows no longer run after traps.
    public let notes: [String]
    /// Single-gate transitions checked with ``Matrix/Options/transitions``: out of each combination checked, each
    /// gate it does not set turned on (killed) and off again (0 without transitions). The moves into each
    /// combination are checked too, and not counted.
    public let transitionsChecked: UInt64
    /// True in a child process that ran no part of this report (nothing to record).
    let isChildPassThrough: Bool

    init(
        namespace: String, coverage: String, isExhaustive: Bool, gateCount: Int, planned: UInt64, shard: Shard,
        range: Range<UInt64>, checked: UInt64, elapsed: Duration, pointCount: Int, inputCount: Int, flowCount: Int,
        findings: [MatrixFinding], neverServed: [String], notes: [String], transitionsChecked: UInt64 = 0,
        isChildPassThrough: Bool = false
    ) {
        self.namespace = namespace
        self.coverage = coverage
        self.isExhaustive = isExhaustive
        self.gateCount = gateCount
        self.planned = planned
        self.shard = shard
        self.range = range
        self.checked = checked
        self.elapsed = elapsed
        self.pointCount = pointCount
        self.inputCount = inputCount
        self.flowCount = flowCount
        self.findings = findings
        self.neverServed = neverServed
        self.notes = notes
        self.transitionsChecked = transitionsChecked
        self.isChildPassThrough = isChildPassThrough
    }

    /// Whether every check passed.
    public var passed: Bool { findings.isEmpty }

    /// Combinations checked per second.
    public var combinationsPerSecond: Double {
        let seconds = elapsed.seconds
        return seconds > 0 ? Double(checked) / seconds : 0
    }

    /// The findings of one check.
    public func findings(_ check: MatrixFinding.Check) -> [MatrixFinding] {
        findings.filter { $0.check == check }
    }

    /// The summary the test kit prints:
    ///
    /// ```
    /// matrix rider: exhaustive: every one of the 2^17 = 131072 combinations of 17 gates
    ///   4 plugin points (6 inputs), 1 flow; shard 1/1: combinations 0..<131072
    ///   checked 131072 combinations in 3.12 s (42,010 combinations/s)
    ///   every plugin served in some combination
    ///   all checks passed
    /// ```
    public var summary: String {
        var lines = ["matrix \(namespace): \(coverage)"]
        let points =
            "\(pointCount) plugin point\(pointCount == 1 ? "" : "s") (\(inputCount) input\(inputCount == 1 ? "" : "s"))"
        let flows = "\(flowCount) flow\(flowCount == 1 ? "" : "s")"
        lines.append(
            "  \(points), \(flows); shard \(shard): combinations \(range.lowerBound)..<\(range.upperBound) of \(planned)"
        )
        lines.append(
            "  checked \(grouped(checked)) combination\(checked == 1 ? "" : "s") in "
                + String(format: "%.2f s", elapsed.seconds)
                + " (\(grouped(UInt64(combinationsPerSecond))) combinations/s)")
        if transitionsChecked > 0 {
            let perSecond = elapsed.seconds > 0 ? UInt64(Double(transitionsChecked) / elapsed.seconds) : 0
            lines.append(
                "  checked \(grouped(transitionsChecked)) single-gate transitions (\(grouped(perSecond))/s) with every point "
                    + "held live: each gate each combination leaves unset turned on and off again")
        }
        if pointCount > 0 {
            lines.append(
                neverServed.isEmpty
                    ? "  every plugin served in some combination"
                    : "  never served in any combination checked (no input made them applicable, or they fail): "
                        + neverServed.joined(separator: ", "))
        }
        for note in notes { lines.append("  note: \(note)") }
        if findings.isEmpty {
            lines.append("  all checks passed")
        } else {
            lines.append("  \(findings.count) check\(findings.count == 1 ? "" : "s") failed:")
            for finding in findings {
                lines.append(
                    finding.description.split(separator: "\n", omittingEmptySubsequences: false)
                        .map { "    " + $0 }.joined(separator: "\n"))
            }
        }
        return lines.joined(separator: "\n")
    }

    public var description: String { summary }
}

extension Duration {
    var seconds: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}
