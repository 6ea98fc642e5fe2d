import Foundation
import SwitchyardCore
import SwitchyardFlagFiles
import Testing

/// Release plans in flag files: read exactly (percentages as basis points), and every mistake reported with its path.
struct ReleasePlanFileTests {
    /// Fixtures/release/release-invalid.yaml lists the problems it must produce as `# expect:` lines.
    @Test func everyMistakeInAPlanIsReportedWithItsPath() throws {
        let directory = TestPaths.fixtures + "/release"
        let path = directory + "/release-invalid.yaml"
        let expected = try TestPaths.expectedProblems(in: path)
        #expect(expected.count == 8)
        #expect(FlagDirectory(reading: directory).problems(inFile: path).map(\.description) == expected)
    }

    @Test func aDeclaredPlanReadsWithPercentagesAsBasisPointsAndNoState() throws {
        let file = try FlagFile(contentsOf: TestPaths.valid + "/kitchen-sink.yaml")
        let plan = try #require(file.flagSet.flag("plugin_switch_map_traffic")?.pluginSwitch?.release)
        #expect(plan.soak == .seconds(2700) && plan.minimumSessions == 500)
        #expect(plan.margin?.basisPoints == 50 && plan.confidence?.basisPoints == 9750)
        #expect(plan.onBadSignal == .off && plan.state == nil)
        #expect(plan.stages.map(\.rollout.basisPoints) == [500, 10_000, 5000, 10_000])
        #expect(plan.stages[1].soak == .seconds(7200) && plan.stages[2].minimumSessions == 200)
        #expect(plan.stages[2].scope == Scope(cohorts: ["beta"]) && plan.stages[3].scope.isEverywhere)
    }
}
