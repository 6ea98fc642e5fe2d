public import ArgumentParser
import Foundation
import SwitchyardCore
import SwitchyardFlagFiles

/// `flagctl lint DIR`: checks every flag file of a directory and reports every problem at once.
public struct Lint: FlagctlCommand {
    public static let configuration = CommandConfiguration(
        abstract: "Check flag files and report every problem, each with its file and field path.",
        discussion: """
            Reads every <namespace>.yaml in DIR and checks YAML syntax (with line and column), unknown fields \
            (with the nearest known name), duplicate keys, percentages (0 to 100, at most two decimals), \
            semantic versions, variants and weights, and every reference between plugin points, kill switches \
            and flags. A namespace must match its file name.

            Examples:

              flagctl lint Flags
              flagctl lint Flags -o json

            Each problem is one line, FILE: FIELD PATH: WHAT IS WRONG, for example:

              Flags/rider.yaml: flags.plugin_switch_feed_promos.rules[1].rollout: 120 is not between 0 and 100

            Exit status: 0 when every file is valid, 1 when there are problems, 64 when DIR is not a directory.
            With -o json the result is {"directory", "files", "namespaces", "problems": [{"file", "path", \
            "message"}], "valid"}.
            """
    )

    @Argument(help: ArgumentHelp("The directory of flag files, one <namespace>.yaml each.", valueName: "dir"))
    public var directory: String

    @OptionGroup public var outputOptions: OutputOptions

    public init() {}

    public func validate() throws {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory) else {
            throw ValidationError(
                "No directory '\(directory)'. Pass the folder that holds your flag files, e.g. 'flagctl lint Flags'.")
        }
        guard isDirectory.boolValue else {
            let parent = (directory as NSString).deletingLastPathComponent
            throw ValidationError(
                "'\(directory)' is a file. Pass its directory, e.g. 'flagctl lint \(parent.isEmpty ? "." : parent)'.")
        }
    }

    public func run(console: Console) async throws {
        let flags = FlagDirectory(reading: directory)
        let fileCount = flags.filePaths.count
        if let rendered = outputOptions.render(.object(Self.tree(flags))) {
            console.write(rendered)
        } else if flags.problems.isEmpty {
            let namespaces = flags.namespaces
            console.write(
                "\(directory): \(fileCount) file\(fileCount == 1 ? "" : "s"), "
                    + "namespace\(namespaces.count == 1 ? "" : "s") \(namespaces.joined(separator: ", ")): no problems\n"
            )
        } else {
            for problem in flags.problems { console.write("\(problem)\n") }
        }
        guard flags.problems.isEmpty else {
            let count = flags.problems.count
            let badFiles = Set(flags.problems.compactMap(\.file)).count
            throw CommandFailure(
                "\(count) problem\(count == 1 ? "" : "s") in \(badFiles) of \(fileCount) file\(fileCount == 1 ? "" : "s"); "
                    + "fix \(count == 1 ? "it" : "them") and run 'flagctl lint \(directory)' again")
        }
    }

    /// The machine-readable result.
    static func tree(_ flags: FlagDirectory) -> JSONObject {
        var tree = JSONObject()
        tree["directory"] = .string(flags.path)
        tree["files"] = .array(flags.filePaths.map(JSONValue.string))
        tree["namespaces"] = .array(flags.namespaces.map(JSONValue.string))
        tree["problems"] = .array(
            flags.problems.map { problem in
                .object(
                    JSONObject([
                        ("file", problem.file.map(JSONValue.string) ?? .null),
                        ("path", .string(problem.path.description)),
                        ("message", .string(problem.message)),
                    ]))
            })
        tree["valid"] = .bool(flags.problems.isEmpty)
        return tree
    }
}
