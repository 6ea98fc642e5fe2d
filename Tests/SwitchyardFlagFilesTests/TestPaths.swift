import Foundation

/// Paths of the repository's files, found from this source file's location.
enum TestPaths {
    /// The repository root.
    static let repository: String = {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<3 { url.deleteLastPathComponent() }
        return url.path
    }()

    static let flags = repository + "/Flags"
    static let riderFile = flags + "/rider.yaml"
    static let fixtures = repository + "/Tests/SwitchyardFlagFilesTests/Fixtures"
    static let broken = fixtures + "/broken"
    static let valid = fixtures + "/valid"
    static let schema = repository + "/docs/schemas/flag-file.schema.json"

    /// The file names of a fixture directory's `.yaml` files, sorted.
    static func yamlFiles(in directory: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? [])
            .filter { $0.hasSuffix(".yaml") }.sorted()
    }

    /// The problems a fixture lists as `# expect: <path>: <message>` lines, each prefixed with the file's path as
    /// problems are described.
    static func expectedProblems(in path: String) throws -> [String] {
        try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n").compactMap { line in
            line.hasPrefix("# expect: ") ? path + ": " + line.dropFirst("# expect: ".count) : nil
        }
    }

    /// A new empty directory under the system's temporary directory; remove it when done.
    static func temporaryDirectory() throws -> String {
        let path = NSTemporaryDirectory() + "switchyard-flagfiles-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    static func write(_ text: String, to path: String) throws {
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
    }
}
