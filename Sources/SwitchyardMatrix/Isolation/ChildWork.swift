import Foundation
import SwitchyardClient
import SwitchyardCore
import SwitchyardMatrixPlan

/// What a child process is asked to do, written to `work.json` in its directory.
struct ChildWork: Codable, Sendable {
    /// Which matrix of the test function (the child runs only the matching one).
    var fingerprint: String
    /// Combination numbers to check, when not shrinking.
    var start: UInt64 = 0
    var end: UInt64 = 0
    /// Candidate combinations (gate words) to check one by one, when shrinking.
    var candidates: [[UInt64]]?
    var skips: TrapSkips
}

/// One line the child appends to `findings.jsonl`: a new smallest occurrence of a kind, or a candidate's result.
struct ChildLine: Codable, Sendable {
    var kind: Int?
    var occurrence: Occurrence?
    var candidate: Int?
    var kinds: [Int]?
    var messages: [String]?

    var encoded: String? {
        guard let data = try? JSONEncoder().encode(self), let text = String(data: data, encoding: .utf8) else {
            return nil
        }
        return text + "\n"
    }
}

typealias FindingLine = ChildLine

extension ChildLine {
    init(kind: KindID, occurrence: Occurrence) {
        self.kind = kind
        self.occurrence = occurrence
    }
}

extension Matrix {
    /// What identifies this matrix among the calls of one test function: everything that shapes its work.
    func fingerprint(plan: MatrixPlan) -> String {
        var parts = [options.name ?? "", source, flagSet.namespace, "\(plan.bound)", "\(plan.strength)"]
        parts.append(plan.layout.gates.map(\.key).joined(separator: ","))
        for point in points {
            parts.append(
                "\(point.name):\(point.serving):\(point.switches.map(\.key).joined(separator: ",")):"
                    + point.inputDescriptions.joined(separator: "|"))
        }
        parts.append(flows.map(\.name).joined(separator: "|"))
        return parts.joined(separator: "\n")
    }

    /// The number of failure kinds the shared state counts: every check of every point and flow.
    var kindCount: Int {
        (points.count + flows.count) * MatrixFinding.Check.allCases.count
    }
}
