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
    }
}
