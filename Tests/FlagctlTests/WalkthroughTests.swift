import FlagctlCommands
import Foundation
import Testing

/// The release manager's walkthrough in docs/flagctl.md, run command by command against a live flagsd seeded as
/// on its first start: what each command prints must be what the page shows.
///
/// The walkthrough sits between `<!-- walkthrough:begin -->` and `<!-- walkthrough:end -->`. In its ```sh
/// blocks, a line starting with `$ ` is a command (continued by a trailing `\`), and the lines up to the next
/// command are what a terminal shows: output, errors, prompts and the answer typed (`y`). Times, the server's
/// address and the repository's path are compared as placeholders.
struct WalkthroughTests {
    struct Step: CustomStringConvertible {
        var command: String
        var expected: String
        var description: String { command }
    }

    static let documentedServer = "https://flags.example.com"

    /// The steps of the walkthrough (or of another section of docs/flagctl.md between `<!-- NAME:begin -->` and
    /// `<!-- NAME:end -->`), in order.
    static func steps(section name: String = "walkthrough") throws -> [Step] {
        let text = try String(contentsOfFile: TestPaths.repository + "/docs/flagctl.md", encoding: .utf8)
        let start = try #require(text.range(of: "<!-- \(name):begin -->"))
        let end = try #require(text.range(of: "<!-- \(name):end -->"))
        let section = text[start.upperBound..<end.lowerBound]
        var steps: [Step] = []
        var inBlock = false
        var pendingCommand: String?
        for line in section.split(separator: "\n", omittingEmptySubsequences: false).map(String.init) {
            if line.hasPrefix("```") {
                inBlock = line == "```sh"
                continue
            }
            guard inBlock else { continue }
            if let command = pendingCommand {
                // A continuation line of a command ending in `\`.
                let joined = command + " " + line.trimmingCharacters(in: .whitespaces)
                if joined.hasSuffix("\\") {
                    pendingCommand = String(joined.dropLast()).trimmingCharacters(in: .whitespaces)
                } else {
                    steps.append(Step(command: joined, expected: ""))
                    pendingCommand = nil
                }
            } else if line.hasPrefix("$ ") {
                let command = String(line.dropFirst(2))
                if command.hasSuffix("\\") {
                    pendingCommand = String(command.dropLast()).trimmingCharacters(in: .whitespaces)
                } else {
                    steps.append(Step(command: command, expected: ""))
                }
            } else if !steps.isEmpty {
                steps[steps.count - 1].expected += line + "\n"
            }
        }
        return steps
    }

    @Test func theWalkthroughHasTheThreeStoriesTheIssueAsksFor() throws {
        let commands = try Self.steps().map(\.command)
        #expect(commands.contains { $0.hasPrefix("flagctl kill --city lagos") })
        for percent in ["1", "10", "50"] {
            #expect(
                commands.contains {
                    $0.hasPrefix("flagctl rollout plugin_switch_prefs_ride_pass \(percent) --city nairobi")
                })
        }
        #expect(commands.contains { $0.hasPrefix("flagctl audit") })
        #expect(commands.count >= 10)
    }

    @Test func everyWalkthroughCommandPrintsWhatTheDocumentationShows() async throws {
        let steps = try Self.steps()
        try await LiveServer.run(bootstrapped: true) { server in
            var environment = server.environment(token: "amara")
            environment["NO_COLOR"] = "1"
            // FLAGCTL_WALKTHROUGH_DUMP=FILE writes what each command printed, normalized, to paste into the page.
            let dump = ProcessInfo.processInfo.environment["FLAGCTL_WALKTHROUGH_DUMP"]
            var dumped = ""
            defer { if let dump { try? dumped.write(toFile: dump, atomically: true, encoding: .utf8) } }
            for step in steps {
                let words = try Self.words(step.command)
                try #require(words.first == "flagctl", "walkthrough commands start with flagctl: \(step.command)")
                let result = await server.flagctl(Array(words.dropFirst()), environment: environment, terminal: true) {
                    _ in "y"
                }
                #expect(result.status == 0, "\(step.command)\n\(result.transcript)")
                let actual = normalized(result.transcript, server: server)
                let expected = normalized(step.expected.trimmingTrailingBlankLines, server: server)
                dumped += "$ \(step.command)\n" + actual
                #expect(actual == expected, "\(step.command)")
            }
        }
    }

    func normalized(_ text: String, server: LiveServer) -> String {
        var text = text.replacingOccurrences(of: server.url, with: Self.documentedServer)
            .replacingOccurrences(of: TestPaths.repository + "/", with: "")
        text = text.replacing(/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z/, with: "<time>")
        return text.hasSuffix("\n") || text.isEmpty ? text : text + "\n"
    }

    /// Splits a command line as a POSIX shell would for plain words, '…' and "…" quoting and backslashes.
    static func words(_ line: String) throws -> [String] {
        var words: [String] = []
        var current = ""
        var inWord = false
        var quote: Character?
        var escaped = false
        for character in line {
            if escaped {
                current.append(character)
                escaped = false
            } else if let open = quote {
                if character == open {
                    quote = nil
                } else if character == "\\" && open == "\"" {
                    escaped = true
                } else {
                    current.append(character)
                }
            } else if character == "'" || character == "\"" {
                quote = character
                inWord = true
            } else if character == "\\" {
                escaped = true
                inWord = true
            } else if character == " " {
                if inWord { words.append(current) }
                current = ""
                inWord = false
            } else if character == "#" && !inWord {
                break
            } else {
                current.append(character)
                inWord = true
            }
        }
        if quote != nil { throw CommandLineError(line: line) }
        if inWord { words.append(current) }
        return words
    }

    struct CommandLineError: Error {
        var line: String
    }

    @Test func commandLinesSplitAsAShellSplitsThem() throws {
        #expect(
            try Self.words(#"flagctl kill --city lagos --reason "INC-4411: crash loop" -y"#)
                == ["flagctl", "kill", "--city", "lagos", "--reason", "INC-4411: crash loop", "-y"])
        #expect(try Self.words(#"a 'b c' d\ e "f \"g\"" # comment"#) == ["a", "b c", "d e", #"f "g""#])
    }
}

extension String {
    /// The text without blank lines at its end, ending with one newline.
    var trimmingTrailingBlankLines: String {
        var text = self
        while text.hasSuffix("\n\n") { text.removeLast() }
        return text
    }
}
