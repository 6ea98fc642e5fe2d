import FlagctlCommands
import Foundation
import Testing

/// `flagctl matrix plan` and `flagctl matrix run`.
struct MatrixCommandTests {
    /// Every example between `<!-- matrix-examples:begin -->` and `<!-- matrix-examples:end -->` in
    /// docs/flagctl.md: a block whose first line is `$ flagctl ...`, followed by exactly what it prints.
    static func documentedExamples() throws -> [(command: [String], output: String)] {
        let text = try String(contentsOfFile: TestPaths.repository + "/docs/flagctl.md", encoding: .utf8)
        let start = try #require(text.range(of: "<!-- matrix-examples:begin -->"))
        let end = try #require(text.range(of: "<!-- matrix-examples:end -->"))
        var examples: [(command: [String], output: String)] = []
        var block: [String]?
        for line in text[start.upperBound..<end.lowerBound].split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("```") {
                if let lines = block, let first = lines.first, first.hasPrefix("$ flagctl ") {
                    let words = first.dropFirst("$ flagctl ".count).split(separator: " ").map(String.init)
                    examples.append((words, lines.dropFirst().map { $0 + "\n" }.joined()))
                }
                block = block == nil ? [] : nil
            } else if block != nil {
                block?.append(String(line))
            }
        }
        return examples
    }

    @Test func everyDocumentedExampleIsWhatFlagctlPrints() async throws {
        let examples = try Self.documentedExamples()
        #expect(examples.count == 5)
        for example in examples {
            let result = try await runBinary(example.command)
            #expect(result.status == 0, "flagctl \(example.command.joined(separator: " ")): \(result.error)")
            #expect(result.output == example.output, "flagctl \(example.command.joined(separator: " "))")
        }
    }

    @Test func thePlanAsJSONHasTheCountsPerPointAndTheShards() async throws {
        let result = await flagctl("matrix", "plan", TestPaths.flags, "--shards", "3", "-o", "json")
        #expect(result.status == 0)
        let tree = try JSONSerialization.jsonObject(with: Data(result.output.utf8)) as? [String: Any]
        #expect(tree?["mode"] as? String == "exhaustive")
        #expect(tree?["combinations"] as? Int == 131_072)
        let points = tree?["plugin_points"] as? [[String: Any]] ?? []
        #expect(
            points.map { $0["name"] as? String } == [
                "preferences_hub", "confirmation_addons", "home_feed", "map_layers",
            ])
        #expect(points.map { $0["combinations"] as? Int } == [32, 32, 32, 32])
        #expect(points.first?["kill_switches"] as? [String] == ["kill_preferences_hub", "master"])
        let shards = tree?["shards"] as? [[String: Any]] ?? []
        #expect(shards.map { $0["shard"] as? String } == ["1/3", "2/3", "3/3"])
        #expect(shards.map { $0["first"] as? Int } == [0, 43_690, 87_381])
        #expect(shards.compactMap { $0["combinations"] as? Int }.reduce(0, +) == 131_072)
    }

    /// A flag file whose matrix is past the planning budget: exit status 1 at once, with what to change (not a
    /// usage error, and not a plan running for hours).
    @Test func aMatrixTooLargeToPlanFailsSayingWhatToChange() async throws {
        let directory = try TestPaths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // 60 plugin points of 7 switches and a group each.
        var points = ""
        var kills = "  master: {}\n"
        var flags = ""
        for point in 0..<60 {
            let switches = (0..<7).map { "plugin_switch_\(point)_\($0)" }
            points += "  - name: point_\(point)\n    kill_switch: kill_\(point)\n"
            points += "    switches: [\(switches.joined(separator: ", "))]\n"
            kills += "  kill_\(point): {}\n"
            for key in switches { flags += "  \(key):\n    rollout: 50\n" }
        }
        let file = "namespace: wide\nplugin_points:\n\(points)kill_switches:\n\(kills)flags:\n\(flags)"
        try file.write(toFile: directory + "/wide.yaml", atomically: true, encoding: .utf8)
        #expect(await flagctl("lint", directory).status == 0)
        let result = await flagctl("matrix", "plan", directory)
        #expect(result.status == 1)
        #expect(result.error.contains("the matrix of 481 gates is too large to plan"), "\(result.error)")
        #expect(result.error.contains("give plugin points fewer switches"))
        #expect(!result.error.contains("Usage:"))
        // A budget of one's own: the rider file's covering plan (beyond a bound of 2^12) refused under a tiny one.
        let tiny = await flagctl("matrix", "plan", TestPaths.flags, "--bound", "4096", "--planning-budget", "10")
        #expect(tiny.status == 1)
        #expect(tiny.error.contains("past the planner's 10; "), "\(tiny.error)")
        #expect(await flagctl("matrix", "plan", TestPaths.flags, "--bound", "4096").status == 0)
        #expect(await flagctl("matrix", "plan", TestPaths.flags, "--planning-budget", "0").status == 64)
    }

    @Test func aCoveringPlanListsItsRowsAndFactors() async throws {
        let result = await flagctl(
            "matrix", "plan", TestPaths.flags, "--bound", "4096", "--strength", "3", "-o", "json")
        let tree = try JSONSerialization.jsonObject(with: Data(result.output.utf8)) as? [String: Any]
        #expect(tree?["mode"] as? String == "covering")
        #expect(tree?["covering_rows"] as? Int == 4096)
        #expect((tree?["factors"] as? [[String: Any]])?.map { $0["levels"] as? Int } == [16, 16, 16, 16, 2])
        #expect(tree?["combinations"] as? Int == 128 + 4096)
    }

    @Test(arguments: [
        (["matrix", "plan", "Nowhere"], "No directory 'Nowhere'"),
        (["matrix", "plan", "Flags", "--bound", "2^x"], "--bound 2^x is not a number of combinations"),
        (["matrix", "plan", "Flags", "--strength", "4"], "--strength must be 2 (pairwise) or 3 (three-wise), not 4."),
        (["matrix", "plan", "Flags", "--shards", "2", "--per-shard", "10"], "Pass --shards or --per-shard, not both."),
        (["matrix", "plan", "Flags", "--shards", "0"], "--shards must be at least 1, not 0."),
        (["matrix", "run", "--shards", "2"], "Pass --filter with the matrix test"),
        (["matrix", "run", "--filter", "X", "--jobs", "0"], "--jobs must be at least 1, not 0."),
    ])
    func badArgumentsAreUsageErrorsThatSayWhatToWrite(arguments: [String], message: String) async throws {
        let result = try await runBinary(arguments)
        #expect(result.status == 64)
        #expect(result.error.contains(message), "\(result.error)")
    }

    @Test func anUnknownNamespaceIsNotFound() async throws {
        let result = try await runBinary(["matrix", "plan", "Flags", "-n", "driver"])
        #expect(result.status == 4)
        #expect(result.error.contains("no namespace 'driver' in Flags"))
    }

    /// The matrix test of the shop (SwitchyardMatrixTests) in three shards, two at a time, through the test binary
    /// this test runs in.
    static func runShopShards(fault: String?) async throws -> (Outcome, String) {
        let logs = try TestPaths.temporaryDirectory()
        let testBinary = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
        var environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("SWITCHYARD_MATRIX_") }
        environment["SHOP_MATRIX_FAULT"] = fault
        let result = try await runBinary(
            [
                "matrix", "run", "--shards", "3", "--jobs", "2", "--logs", logs, "--", testBinary,
                "--testing-library", "swift-testing", "--filter", "^SwitchyardMatrixTests\\.ShardedShopTests/",
            ],
            environment: environment)
        return (result, logs)
    }

    @Test func runRunsEveryShardAndSaysEachPassed() async throws {
        let (result, logs) = try await Self.runShopShards(fault: nil)
        defer { try? FileManager.default.removeItem(atPath: logs) }
        #expect(result.status == 0, "\(result.output)\(result.error)")
        let lines = result.output.split(separator: "\n").map(String.init)
        let shardLines = lines.filter { $0.hasPrefix("shard ") }.sorted()
        #expect(shardLines.count == 3)
        for (line, expected) in zip(
            shardLines,
            [
                "shard 1/3  passed  170 combinations", "shard 2/3  passed  171 combinations",
                "shard 3/3  passed  171 combinations",
            ])
        {
            #expect(line.hasPrefix(expected), "\(line)")
        }
        #expect(lines.last?.hasPrefix("3 shards passed: 512 combinations in ") == true)
        #expect(result.error.contains("running 3 shards, 2 at a time; logs in \(logs)"))
        let log = try String(contentsOfFile: logs + "/shard-2-of-3.log", encoding: .utf8)
        #expect(log.contains("shard 2/3: combinations 170..<341 of 512"))
    }

    @Test func aFailingShardFailsTheRunAndItsSummaryIsPrinted() async throws {
        let (result, logs) = try await Self.runShopShards(fault: "order")
        defer { try? FileManager.default.removeItem(atPath: logs) }
        #expect(result.status == 1)
        #expect(result.output.contains("FAILED (exit status"))
        // Each shard's summary names the smallest failing combination and how to reproduce it.
        #expect(
            result.output.contains(
                "smallest failing combination: on plugin_switch_banner_sale, plugin_switch_banner_news"))
        #expect(
            result.output.contains(
                "reproduce: SWITCHYARD_MATRIX_COMBINATION='plugin_switch_banner_sale,plugin_switch_banner_news'"))
        #expect(result.error.contains("of 3 shards failed"))
    }

    @Test func runRefusesToStartInsideAShard() async throws {
        var environment = ProcessInfo.processInfo.environment
        environment["SWITCHYARD_MATRIX_SHARD"] = "1/2"
        let result = try await runBinary(["matrix", "run", "--filter", "X"], environment: environment)
        #expect(result.status == 64)
        #expect(result.error.contains("SWITCHYARD_MATRIX_SHARD is set: this is already a matrix shard"))
    }
}
