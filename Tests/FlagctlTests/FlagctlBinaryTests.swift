import Foundation
import SwitchyardCore
import Testing

/// The built `flagctl` binary, run as a child process: what a release manager and CI see.
struct FlagctlBinaryTests {
    @Test func theBinaryIsBuiltNextToTheTests() {
        #expect(FileManager.default.isExecutableFile(atPath: TestPaths.flagctl.path), "\(TestPaths.flagctl.path)")
    }

    @Test func lintOfTheRiderFlagsSucceeds() throws {
        let result = try runBinary(["lint", "Flags"])
        #expect(result.status == 0)
        #expect(result.output == "Flags: 1 file, namespace rider: no problems\n")
    }

    @Test func lintOfBrokenFilesPrintsRelativePathsAndExitsWithOne() throws {
        let result = try runBinary(["lint", "broken"], in: TestPaths.broken + "/..")
        #expect(result.status == 1)
        #expect(result.output.contains("broken/rollout-out-of-range.yaml: flags.plugin_switch_feed_promos.rules[1].rollout: 120 is not between 0 and 100\n"))
        #expect(result.output.contains("broken/duplicate-key.yaml: flags: duplicate key 'plugin_switch_feed_promos' (lines 6 and 12); keep one\n"))
        #expect(result.error == "error: 26 problems in 10 of 10 files; fix them and run 'flagctl lint broken' again\n")
    }

    @Test func explainPrintsJSON() throws {
        let result = try runBinary(["explain", "plugin_switch_feed_promos", "--flags", "Flags", "--unit", "rider-42",
                                    "--city", "nairobi", "-o", "json"])
        #expect(result.status == 0)
        let tree = try JSONValue.parse(result.output)
        #expect(tree["key"] == .string("plugin_switch_feed_promos"))
        #expect(tree["variant"] == .string("off"))
        #expect(tree["bucket"] == .int(9038))
        #expect(tree["decided_by"] == .string("rule 1 'Nairobi ramp' at 12.5%"))
    }

    @Test func exitStatusesReachTheShell() throws {
        #expect(try runBinary(["explain", "plugin_switch_nope", "--flags", "Flags", "--unit", "u"]).status == 4)
        #expect(try runBinary(["explain", "plugin_switch_feed_promos", "--flags", "Flags"]).status == 64)
        #expect(try runBinary(["lint", "NoSuchDirectory"]).status == 64)
        let help = try runBinary(["--help"])
        #expect(help.status == 0)
        #expect(help.output.contains("USAGE: flagctl <subcommand>"))
    }
}

/// The examples in docs/flagctl.md are what flagctl prints.
struct FlagctlDocumentationTests {
    @Test func theExplainExampleIsTheRealOutput() throws {
        let text = try String(contentsOfFile: TestPaths.repository + "/docs/flagctl.md", encoding: .utf8)
        let command = "$ flagctl explain plugin_switch_feed_promos --flags Flags --unit rider-42 --city nairobi\n"
        let start = try #require(text.range(of: command))
        let end = try #require(text.range(of: "```", range: start.upperBound..<text.endIndex))
        let documented = String(text[start.upperBound..<end.lowerBound])
        let result = try runBinary(["explain", "plugin_switch_feed_promos", "--flags", "Flags", "--unit", "rider-42", "--city", "nairobi"])
        #expect(result.output == documented)
    }
}
