import Foundation
import SwitchyardCore
import SwitchyardFlagFiles
import Testing

/// Each file in Fixtures/broken lists the problems it must produce, in order, as `# expect: <path>: <message>`
/// lines; the loader must report exactly those, each prefixed with the file's path.
struct BrokenFlagFileTests {
    static let fixtureNames = TestPaths.yamlFiles(in: TestPaths.broken)

    static func expectedProblems(in name: String) throws -> [String] {
        let path = TestPaths.broken + "/" + name
        let text = try String(contentsOfFile: path, encoding: .utf8)
        return text.split(separator: "\n").compactMap { line in
            line.hasPrefix("# expect: ") ? path + ": " + line.dropFirst("# expect: ".count) : nil
        }
    }

    @Test func thereAreBrokenFixturesForEveryKindOfMistake() {
        #expect(Self.fixtureNames.count >= 10)
    }

    @Test(arguments: fixtureNames)
    func brokenFileReportsExactlyTheProblemsItExpects(name: String) throws {
        let expected = try Self.expectedProblems(in: name)
        #expect(!expected.isEmpty, "\(name) lists no '# expect:' lines")
        let flags = FlagDirectory(reading: TestPaths.broken)
        let path = TestPaths.broken + "/" + name
        #expect(flags.problems(inFile: path).map(\.description) == expected)
        #expect(flags.file(namespace: String(name.dropLast(5))) == nil)
    }

    @Test func readingTheDirectoryReportsEveryProblemOfEveryFileAtOnce() throws {
        let flags = FlagDirectory(reading: TestPaths.broken)
        let expected = try Self.fixtureNames.flatMap(Self.expectedProblems(in:))
        #expect(flags.problems.map(\.description) == expected)
        #expect(flags.files.isEmpty)
        #expect(flags.filePaths.count == Self.fixtureNames.count)
    }

    @Test func aSingleFileThrowsEveryProblemWithItsPath() throws {
        let text = """
            namespace: rider
            flags:
              plugin_switch_feed_promos:
                rules:
                  - cities: [lagos]
                    rollout: 100
                  - cities: [nairobi]
                    rollout: 120
                rollot: 50

            """
        #expect {
            try FlagFile(yaml: text, path: "Flags/rider.yaml")
        } throws: { error in
            (error as? DefinitionError)?.problems.map(\.description) == [
                "Flags/rider.yaml: flags.plugin_switch_feed_promos.rules[1].rollout: 120 is not between 0 and 100",
                "Flags/rider.yaml: flags.plugin_switch_feed_promos.rollot: unknown field; did you mean 'rollout'?",
            ]
        }
    }
}
