import FlagctlCommands
import Foundation
import SwitchyardCore
import Testing

/// `flagctl lint DIR`, run in-process.
struct LintCommandTests {
    @Test func riderFlagsLintCleanWithExitStatusZero() async {
        let result = await flagctl("lint", TestPaths.flags)
        #expect(result.status == 0)
        #expect(result.output == "\(TestPaths.flags): 1 file, namespace rider: no problems\n")
        #expect(result.error == "")
    }

    @Test func brokenFilesPrintEveryProblemAndExitWithStatusOne() async throws {
        let result = await flagctl("lint", TestPaths.broken)
        #expect(result.status == 1)
        let lines = result.output.split(separator: "\n").map(String.init)
        #expect(lines.count == 44)
        #expect(
            lines.contains(
                "\(TestPaths.broken)/rollout-out-of-range.yaml: flags.plugin_switch_feed_promos.rules[1].rollout: 120 is not between 0 and 100"
            ))
        #expect(
            lines.contains(
                "\(TestPaths.broken)/unknown-field.yaml: flags.plugin_switch_feed_promos.rollot: unknown field; did you mean 'rollout'?"
            ))
        #expect(
            lines.contains(
                "\(TestPaths.broken)/metrics-invalid.yaml: metrics.fare.cap: is required for a value metric (the most one unit's sum counts for)"
            ))
        #expect(
            lines.contains(
                "\(TestPaths.broken)/syntax-error.yaml: line 5, column 37: YAML syntax error: mapping values are not allowed in this context"
            ))
        #expect(
            result.error
                == "error: 44 problems in 11 of 11 files; fix them and run 'flagctl lint \(TestPaths.broken)' again\n")
    }

    @Test func jsonOutputListsProblemsWithFilePathAndMessage() async throws {
        let result = await flagctl("lint", TestPaths.broken, "-o", "json")
        #expect(result.status == 1)
        let tree = try JSONValue.parse(result.output)
        #expect(tree["valid"] == .bool(false))
        #expect(tree["files"]?.arrayValue?.count == 11)
        let problems = try #require(tree["problems"]?.arrayValue)
        #expect(problems.count == 44)
        #expect(
            problems.contains(
                .object(
                    JSONObject([
                        ("file", .string("\(TestPaths.broken)/rollout-three-decimals.yaml")),
                        ("path", .string("flags.plugin_switch_feed_promos.rollout")),
                        ("message", .string("12.345 has more than two decimals (basis points are the finest step)")),
                    ]))))
    }

    @Test func jsonOutputOfACleanDirectorySaysValid() async throws {
        let result = await flagctl("lint", TestPaths.flags, "--output", "json")
        #expect(result.status == 0)
        let tree = try JSONValue.parse(result.output)
        #expect(tree["valid"] == .bool(true))
        #expect(tree["namespaces"] == .array([.string("rider")]))
        #expect(tree["problems"] == .array([]))
    }

    @Test func aMissingDirectoryIsAUsageErrorThatSaysWhatToPass() async {
        let result = await flagctl("lint", TestPaths.flags + "/nope")
        #expect(result.status == 64)
        #expect(
            result.error.hasPrefix(
                "Error: No directory '\(TestPaths.flags)/nope'. Pass the folder that holds your flag files, e.g. 'flagctl lint Flags'.\n"
            ))
    }

    @Test func aFileInsteadOfADirectoryNamesItsDirectory() async {
        let result = await flagctl("lint", TestPaths.flags + "/rider.yaml")
        #expect(result.status == 64)
        #expect(result.error.contains("is a file. Pass its directory, e.g. 'flagctl lint \(TestPaths.flags)'."))
    }

    @Test func helpTeachesWithAnExample() async {
        let result = await flagctl("lint", "--help")
        #expect(result.status == 0)
        #expect(result.output.contains("flagctl lint Flags"))
        #expect(result.output.contains("Exit status: 0 when every file is valid, 1 when there are problems"))
    }

    @Test func theRootCommandListsItsSubcommands() async {
        let result = await flagctl()
        #expect(result.status == 0)
        #expect(result.output.contains("lint"))
        #expect(result.output.contains("explain"))
        let unknown = await flagctl("frobnicate")
        #expect(unknown.status == 64)
    }
}
