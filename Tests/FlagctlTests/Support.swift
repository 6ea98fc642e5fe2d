import FlagctlCommands
import Foundation

/// Paths of the repository's files, found from this source file's location.
enum TestPaths {
    static let repository: String = {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<3 { url.deleteLastPathComponent() }
        return url.path
    }()

    static let flags = repository + "/Flags"
    static let broken = repository + "/Tests/SwitchyardFlagFilesTests/Fixtures/broken"

    /// The directory the build put the test bundle in; `flagctl` is built next to it.
    static let products: URL = {
        #if os(macOS)
        for bundle in Bundle.allBundles where bundle.bundlePath.hasSuffix(".xctest") {
            return bundle.bundleURL.deletingLastPathComponent()
        }
        #endif
        return Bundle.main.bundleURL
    }()

    static let flagctl = products.appendingPathComponent("flagctl")

    static func temporaryDirectory() throws -> String {
        let path = NSTemporaryDirectory() + "switchyard-flagctl-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }
}

/// What a command printed and returned.
struct Outcome: Sendable {
    var status: Int32
    var output: String
    var error: String
    /// Output, errors and answers typed at prompts, in order, as a terminal shows them.
    var transcript: String = ""
}

/// Runs flagctl in-process, through the same entry point the binary uses.
func flagctl(_ arguments: String...) async -> Outcome {
    await flagctl(arguments)
}

func flagctl(_ arguments: [String]) async -> Outcome {
    let console = Console.capturing()
    let status = await Flagctl.execute(arguments, console: console)
    return Outcome(status: status, output: console.output, error: console.errorOutput)
}

/// Runs the built `flagctl` binary as a child process in a directory, its output going to temporary files.
func runBinary(_ arguments: [String], in directory: String = TestPaths.repository,
               environment: [String: String]? = nil) throws -> Outcome {
    let scratch = try TestPaths.temporaryDirectory()
    defer { try? FileManager.default.removeItem(atPath: scratch) }
    let outputPath = scratch + "/stdout", errorPath = scratch + "/stderr"
    _ = FileManager.default.createFile(atPath: outputPath, contents: nil)
    _ = FileManager.default.createFile(atPath: errorPath, contents: nil)
    let output = try FileHandle(forWritingTo: URL(fileURLWithPath: outputPath))
    let error = try FileHandle(forWritingTo: URL(fileURLWithPath: errorPath))
    defer {
        try? output.close()
        try? error.close()
    }
    let process = Process()
    process.executableURL = TestPaths.flagctl
    process.arguments = arguments
    process.currentDirectoryURL = URL(fileURLWithPath: directory)
    if let environment { process.environment = environment }
    process.standardOutput = output
    process.standardError = error
    try process.run()
    process.waitUntilExit()
    return Outcome(status: process.terminationStatus,
                   output: try String(contentsOfFile: outputPath, encoding: .utf8),
                   error: try String(contentsOfFile: errorPath, encoding: .utf8))
}
