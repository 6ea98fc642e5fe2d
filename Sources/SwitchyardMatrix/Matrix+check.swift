import Foundation
public import Testing

extension Matrix {
    /// Runs the matrix in a Swift Testing test: prints the summary, and records an issue per failing check, with
    /// its smallest failing combination and the command that reproduces it.
    ///
    /// ```swift
    /// @Test func everySwitchCombinationKeepsTheTripWorking() async throws {
    ///     var matrix = try Matrix(flagFile: "Flags/rider.yaml")
    ///     matrix.add(app.confirmationAddons, inputs: [.standard])
    ///     await matrix.check()
    /// }
    /// ```
    ///
    /// `SWITCHYARD_MATRIX_SHARD=i/n` runs one shard (CI); `SWITCHYARD_MATRIX_COMBINATION=...` runs one
    /// combination and says what each point served (debugging). Combinations run in a child process, so a plugin
    /// that traps is reported instead of ending the test run.
    ///
    /// - Parameters:
    ///   - settings: the shard, a pinned combination, the environment; all read from the environment by default.
    ///   - sourceLocation: where issues are recorded (the caller).
    /// - Returns: the report, for further expectations.
    @discardableResult
    public func check(_ settings: RunSettings = RunSettings(), sourceLocation: SourceLocation = #_sourceLocation) async
        -> MatrixReport
    {
        let report = await run(settings)
        guard !report.isChildPassThrough else { return report }
        print(report.summary)
        for finding in report.findings {
            Issue.record(
                Comment(rawValue: "\(finding.scope): \(finding.check.rawValue)\n\(finding)"),
                sourceLocation: sourceLocation)
        }
        return report
    }
}
