import Foundation
import SwitchyardCore
import TestSupport
import Testing

/// docs/architecture.md's table of targets says what Package.swift says.
struct ArchitectureDocumentTests {
    /// A row's target and the words of its "depends on" column.
    static func rows() throws -> [String: Set<String>] {
        let text = try String(contentsOfFile: Repository.root + "/docs/architecture.md", encoding: .utf8)
        let table = try #require(
            text.components(separatedBy: "## Targets").dropFirst().first?.components(separatedBy: "\n## ").first)
        var rows: [String: Set<String>] = [:]
        for line in table.split(separator: "\n") where line.hasPrefix("| `") {
            let cells = line.split(separator: "|", omittingEmptySubsequences: false).map {
                $0.trimmingCharacters(in: .whitespaces)
            }
            guard cells.count > 3 else { continue }
            let words = Set(cells[2].split { $0 == "," || $0 == " " || $0 == "(" || $0 == ")" }.map(String.init))
            rows[cells[1].trimmingCharacters(in: CharacterSet(charactersIn: "`"))] = words
        }
        return rows
    }

    /// The name a table uses for a first-party target: `SwitchyardCore` is `Core`.
    static func shortName(_ target: String) -> String {
        target.hasPrefix("Switchyard") ? String(target.dropFirst("Switchyard".count)) : target
    }

    @Test func everyTargetIsInTheTableWithItsOwnDependencies() async throws {
        // A scratch folder of its own: `swift test` holds the lock of the package's `.build` while the tests run.
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("dump-package-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: scratch) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [
            "swift", "package", "--package-path", Repository.root, "--scratch-path", scratch.path, "dump-package",
        ]
        let dump = try await runToEnd(process, deadline: .seconds(300), separateError: true)
        try #require(dump.status == 0, "swift package dump-package: \(dump.error)")
        let package = try JSONValue.parse(Array(dump.output.utf8))
        let targets = try #require(package["targets"]?.arrayValue)
        let ours = targets.filter {
            $0["type"]?.stringValue != "test" && !($0["name"]?.stringValue ?? "").hasSuffix("Support")
        }
        let names = Set(ours.compactMap { $0["name"]?.stringValue })
        let rows = try Self.rows()
        #expect(Set(rows.keys) == names, "the table's targets differ from Package.swift's")
        for target in ours {
            let name = try #require(target["name"]?.stringValue)
            let firstParty = (target["dependencies"]?.arrayValue ?? []).compactMap { dependency -> String? in
                (dependency["byName"] ?? dependency["target"])?.arrayValue?.first?.stringValue
            }.filter(names.contains)
            let written = (rows[name] ?? []).filter { word in
                names.contains { Self.shortName($0) == word || $0 == word }
            }
            #expect(
                Set(written) == Set(firstParty.map(Self.shortName)),
                "\(name): the table says \(written.sorted()), Package.swift \(firstParty.sorted())")
        }
    }

    /// "Where a change goes" names real files: a path in backquotes (`SwitchyardCore/Model/FlagSet.swift`, from
    /// Sources/ or the repository) exists, unless it is a pattern (`API+<area>.swift`) or a URL path (`/openapi.yaml`).
    @Test func theFilesWhereAChangeGoesExist() throws {
        let text = try String(contentsOfFile: Repository.root + "/docs/architecture.md", encoding: .utf8)
        let section = try #require(
            text.components(separatedBy: "## Where a change goes").dropFirst().first?.components(separatedBy: "\n## ")
                .first)
        let quoted = section.components(separatedBy: "`").enumerated().filter { $0.offset % 2 == 1 }.map(\.element)
        let paths = quoted.filter {
            $0.contains("/") && $0.contains(".") && !$0.hasPrefix("/") && !$0.contains("<") && !$0.contains(" ")
        }
        #expect(paths.count >= 10, "found only \(paths)")
        for path in paths {
            let candidates = [Repository.root + "/" + path, Repository.root + "/Sources/" + path]
            #expect(
                candidates.contains { FileManager.default.fileExists(atPath: $0) },
                "docs/architecture.md names \(path), which is neither in the repository nor in Sources/")
        }
    }
}
