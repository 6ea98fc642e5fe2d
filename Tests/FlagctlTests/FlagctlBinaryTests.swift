import FlagctlCommands
import Foundation
import SwitchyardCore
import TestSupport
import Testing

/// The built `flagctl` binary, run as a child process: what a release manager and CI see.
struct FlagctlBinaryTests {
    @Test func theBinaryIsBuiltNextToTheTests() {
        #expect(FileManager.default.isExecutableFile(atPath: TestPaths.flagctl.path), "\(TestPaths.flagctl.path)")
    }

    @Test func lintOfTheRiderFlagsSucceeds() async throws {
        let result = try await runBinary(["lint", "Flags"])
        #expect(result.status == 0)
        #expect(result.output == "Flags: 1 file, namespace rider: no problems\n")
    }

    @Test func lintOfBrokenFilesPrintsRelativePathsAndExitsWithOne() async throws {
        let result = try await runBinary(["lint", "broken"], in: TestPaths.broken + "/..")
        #expect(result.status == 1)
        #expect(
            result.output.contains(
                "broken/rollout-out-of-range.yaml: flags.plugin_switch_feed_promos.rules[1].rollout: 120 is not between 0 and 100\n"
            ))
        #expect(
            result.output.contains(
                "broken/duplicate-key.yaml: flags: duplicate key 'plugin_switch_feed_promos' (lines 6 and 12); keep one\n"
            ))
        #expect(result.error == "error: 44 problems in 11 of 11 files; fix them and run 'flagctl lint broken' again\n")
    }

    @Test func explainPrintsJSON() async throws {
        let result = try await runBinary([
            "explain", "plugin_switch_feed_promos", "--flags", "Flags", "--unit", "rider-42",
            "--city", "nairobi", "-o", "json",
        ])
        #expect(result.status == 0)
        let tree = try JSONValue.parse(result.output)
        #expect(tree["key"] == .string("plugin_switch_feed_promos"))
        #expect(tree["variant"] == .string("off"))
        #expect(tree["bucket"] == .int(9038))
        #expect(tree["decided_by"] == .string("rule 1 'Nairobi ramp' at 12.5%"))
    }

    @Test func exitStatusesReachTheShell() async throws {
        #expect(try await runBinary(["explain", "plugin_switch_nope", "--flags", "Flags", "--unit", "u"]).status == 4)
        #expect(try await runBinary(["explain", "plugin_switch_feed_promos", "--flags", "Flags"]).status == 64)
        #expect(try await runBinary(["lint", "NoSuchDirectory"]).status == 64)
        let help = try await runBinary(["--help"])
        #expect(help.status == 0)
        #expect(help.output.contains("USAGE: flagctl <subcommand>"))
    }
}

/// The examples in docs/flagctl.md are what flagctl prints.
struct FlagctlDocumentationTests {
    @Test func theExplainExampleIsTheRealOutput() async throws {
        let text = try String(contentsOfFile: TestPaths.repository + "/docs/flagctl.md", encoding: .utf8)
        let command = "$ flagctl explain plugin_switch_feed_promos --flags Flags --unit rider-42 --city nairobi\n"
        let start = try #require(text.range(of: command))
        let end = try #require(text.range(of: "```", range: start.upperBound..<text.endIndex))
        let documented = String(text[start.upperBound..<end.lowerBound])
        let result = try await runBinary([
            "explain", "plugin_switch_feed_promos", "--flags", "Flags", "--unit", "rider-42", "--city", "nairobi",
        ])
        #expect(result.output == documented)
    }
}

/// The built binary against a live flagsd: exit statuses reach the shell, Ctrl-C ends watch cleanly.
struct FlagctlBinaryLiveTests {
    @Test func everyExitStatusReachesTheShell() async throws {
        try await LiveServer.run { server in
            let environment = server.environment().merging(["PATH": "/usr/bin:/bin"]) { $1 }
            func status(_ arguments: [String], token: String = "amara") async throws -> Int32 {
                var environment = environment
                environment["FLAGCTL_TOKEN"] = server.tokens[token]
                return try await runBinary(arguments, environment: environment).status
            }
            #expect(try await status(["get", "plugin_switch_feed_promos"]) == 0)
            #expect(try await status(["rollout", "confirmation_button_copy", "5"]) == 1)
            _ = try await status(["disable", "plugin_switch_map_traffic"], token: "bob")
            #expect(try await status(["disable", "plugin_switch_feed_promos", "--if-version", "1"]) == 3)
            #expect(try await status(["get", "plugin_switch_nope"]) == 4)
            #expect(try await status(["audit"], token: "app") == 5)
            #expect(try await status(["kill", "--reason", "r"]) == 64)
            #expect(try await status(["rollout", "plugin_switch_feed_promos", "1.234"]) == 64)
        }
    }

    @Test func ctrlCEndsWatchWithStatusZero() async throws {
        try await LiveServer.run { server in
            let scratch = try TestPaths.temporaryDirectory()
            defer { try? FileManager.default.removeItem(atPath: scratch) }
            let outputPath = scratch + "/stdout"
            let errorPath = scratch + "/stderr"
            _ = FileManager.default.createFile(atPath: outputPath, contents: nil)
            _ = FileManager.default.createFile(atPath: errorPath, contents: nil)
            let process = Process()
            process.executableURL = TestPaths.flagctl
            process.arguments = ["watch", "--wait", "30"]
            process.environment = server.environment()
            process.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: outputPath))
            process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: errorPath))
            let exit = ChildExit(process)
            try process.run()
            defer { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }
            let errors = { (try? String(contentsOfFile: errorPath, encoding: .utf8)) ?? "" }
            let output = { (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? "" }
            try await waitUntil { errors().contains("Ctrl-C stops") }
            _ = await server.flagctl("kill", "--city", "lagos", "--reason", "INC-4411", "--yes")
            try await waitUntil { output().contains("version 2") }
            process.interrupt()
            let ended = await exit.wait(within: .seconds(120))
            #expect(
                ended == ChildExit.Ended(reason: .exit, status: 0),
                "flagctl watch after Ctrl-C: \(ended.map { "\($0)" } ?? "still running after 120 s, killed"); it printed:\n\(output())\nand on standard error:\n\(errors())"
            )
            #expect(output().contains("kill master in cities lagos"), "\(output())\n\(errors())")
        }
    }

    @Test func completionScriptsComeFromTheBinary() async throws {
        let result = try await runBinary(["--generate-completion-script", "bash"])
        #expect(result.status == 0)
        #expect(result.output.contains("_flagctl"))
    }
}
