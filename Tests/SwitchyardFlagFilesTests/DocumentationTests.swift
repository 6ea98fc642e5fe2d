import Foundation
import SwitchyardCore
import SwitchyardFlagFiles
import Testing

/// The examples in docs/flag-files.md are real flag files.
struct DocumentationTests {
    @Test func theCompleteExampleInTheFormatGuideIsAValidFlagFile() throws {
        let text = try String(contentsOfFile: TestPaths.repository + "/docs/flag-files.md", encoding: .utf8)
        let start = try #require(text.range(of: "```yaml\n"))
        let end = try #require(text.range(of: "\n```", range: start.upperBound..<text.endIndex))
        let example = String(text[start.upperBound..<end.lowerBound])
        let file = try FlagFile(yaml: example, path: "docs/flag-files.md")
        #expect(file.namespace == "rider")
        #expect(file.flagSet.flags.count == 3)
        #expect(file.flagSet.metrics.map(\.name) == ["trip_booked", "fare", "time_to_book"])
    }

    /// The metrics example in docs/flag-files.md declares what Flags/rider.yaml declares.
    @Test func theMetricsExampleIsTheRiderFilesMetrics() throws {
        let text = try String(contentsOfFile: TestPaths.repository + "/docs/flag-files.md", encoding: .utf8)
        let section = try #require(text.range(of: "### `metrics`: outcome metrics"))
        let start = try #require(text.range(of: "```yaml\n", range: section.upperBound..<text.endIndex))
        let end = try #require(text.range(of: "\n```", range: start.upperBound..<text.endIndex))
        let example = "namespace: rider\n" + text[start.upperBound..<end.lowerBound]
        let documented = try FlagFile(yaml: example, path: "docs/flag-files.md").flagSet.metrics
        let rider = try FlagFile(contentsOf: TestPaths.riderFile).flagSet.metrics
        #expect(documented.map(\.name) == rider.map(\.name))
        for (shown, declared) in zip(documented, rider) {
            #expect(
                shown.kind == declared.kind && shown.better == declared.better && shown.cap == declared.cap
                    && shown.numerator == declared.numerator && shown.denominator == declared.denominator,
                "\(shown.name)")
        }
    }

    /// The policy example in docs/crash-guard.md is a valid flag file whose namespace defaults are the built-in ones.
    @Test func theCrashGuardPolicyExampleShowsTheBuiltInDefaults() throws {
        let text = try String(contentsOfFile: TestPaths.repository + "/docs/crash-guard.md", encoding: .utf8)
        let start = try #require(text.range(of: "```yaml\n"))
        let end = try #require(text.range(of: "\n```", range: start.upperBound..<text.endIndex))
        let file = try FlagFile(yaml: String(text[start.upperBound..<end.lowerBound]), path: "docs/crash-guard.md")
        let defaults = try #require(file.flagSet.crashGuard)
        #expect(CrashGuardPolicy.resolved(namespace: defaults, switch: nil) == CrashGuardPolicy.builtIn)
        #expect(CrashGuardPolicy.resolved(namespace: CrashGuardPolicy(), switch: nil) == CrashGuardPolicy.builtIn)
        let promos = try #require(file.flagSet.flags.first { $0.key == "plugin_switch_feed_promos" }?.pluginSwitch)
        #expect(
            CrashGuardPolicy.resolved(namespace: defaults, switch: promos.crashGuard).maximumCrashRate
                == Rollout(basisPoints: 50))
        let split = try #require(file.flagSet.flags.first { $0.key == "plugin_switch_split_fare" }?.pluginSwitch)
        #expect(CrashGuardPolicy.resolved(namespace: defaults, switch: split.crashGuard).enabled == false)
    }
}
