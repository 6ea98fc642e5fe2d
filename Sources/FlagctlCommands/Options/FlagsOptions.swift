public import ArgumentParser
import Foundation
import SwitchyardCore
import SwitchyardFlagFiles

/// `--flags DIR [--namespace NS]`: which flag files, and which namespace among them.
///
/// `--flags` is optional for commands that can also read the namespace from the flags service (`explain`);
/// `flagFile(console:)` needs it.
public struct FlagsOptions: ParsableArguments, Sendable {
    @Option(
        name: .customLong("flags"),
        help: ArgumentHelp("The directory of flag files (leave out to use the flags service).", valueName: "dir"))
    public var directory: String?

    @Option(
        name: [.customShort("n"), .long],
        help: ArgumentHelp(
            "The namespace; needed when the directory holds several (or FLAGCTL_NAMESPACE with the service).",
            valueName: "ns"))
    public var namespace: String?

    public init() {}

    public func validate() throws {
        guard let directory else { return }
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw ValidationError(
                "No directory '\(directory)'. Pass the folder that holds your flag files, e.g. --flags Flags.")
        }
    }

    /// Reads the directory and picks the namespace's flag file.
    ///
    /// - Throws: `CommandFailure` (exit 1) when that file has problems, `.notFound` (exit 4) for an unknown
    ///   namespace, `ValidationError` (exit 64) when a namespace must be chosen.
    func flagFile(console: Console) throws -> FlagFile {
        guard let directory else {
            throw ValidationError("Pass --flags DIR, the folder of your flag files, e.g. --flags Flags.")
        }
        let flags = FlagDirectory(reading: directory)
        let file: FlagFile
        if let namespace {
            let path = flags.filePath(namespace: namespace)
            let problems = flags.problems(inFile: path)
            if !problems.isEmpty { throw Self.invalid(problems, directory: directory, console: console) }
            guard let found = flags.file(namespace: namespace) else {
                let known = flags.namespaces.isEmpty ? "none" : flags.namespaces.joined(separator: ", ")
                throw CommandFailure.notFound(
                    "no namespace '\(namespace)' in \(directory) (namespaces: \(known)); a namespace's flags live in \(path)"
                )
            }
            file = found
        } else {
            let namespaceCount = flags.filePaths.count
            if namespaceCount > 1 {
                let names = flags.filePaths.map {
                    ($0 as NSString).lastPathComponent.replacingOccurrences(of: ".yaml", with: "")
                }
                throw ValidationError(
                    "\(directory) holds several namespaces (\(names.joined(separator: ", "))). Pass one, e.g. --namespace \(names[0])."
                )
            }
            guard let only = flags.files.first else {
                throw Self.invalid(flags.problems, directory: directory, console: console)
            }
            file = only
        }
        let elsewhere = flags.problems.filter { $0.file != file.path }.count
        if elsewhere > 0 {
            console.writeError(
                "note: \(elsewhere) problem\(elsewhere == 1 ? "" : "s") in other files of \(directory); run 'flagctl lint \(directory)'\n"
            )
        }
        return file
    }

    private static func invalid(_ problems: [ValidationProblem], directory: String, console: Console) -> CommandFailure
    {
        for problem in problems { console.writeError("\(problem)\n") }
        return CommandFailure(
            "the flag file has problems (above); fix them first, 'flagctl lint \(directory)' checks them")
    }
}
