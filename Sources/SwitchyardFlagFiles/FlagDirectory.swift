import Foundation
public import SwitchyardCore

/// A directory of flag files (`Flags/`), one `<namespace>.yaml` per namespace.
///
/// Reading never stops at the first problem: every file is read and every problem of every file is kept, so
/// `flagctl lint` shows them all at once.
///
/// ```swift
/// let flags = FlagDirectory(reading: "Flags")
/// for problem in flags.problems { print(problem) }  // Flags/rider.yaml: flags.x.rollout: 120 is not between 0 and 100
/// let rider = flags.file(namespace: "rider")?.flagSet
/// ```
public struct FlagDirectory: Sendable {
    /// The directory's path as given; file paths in problems start with it.
    public var path: String
    /// The files that read without a problem, in file name order.
    public var files: [FlagFile]
    /// Every problem found, file by file in file name order.
    public var problems: [ValidationProblem]
    /// The paths of the `.yaml` files found, in file name order, whether they read cleanly or not.
    public var filePaths: [String]

    /// The file extension of flag files.
    public static let fileExtension = "yaml"

    /// Reads every `.yaml` file of a directory, collecting every problem.
    ///
    /// Besides each file's own problems it reports: a missing or empty directory, `.yml` files (rename them),
    /// a `namespace` that differs from the file name, and two files declaring one namespace.
    public init(reading path: String) {
        self.path = path
        files = []
        problems = []
        filePaths = []
        let directory = path.count > 1 && path.hasSuffix("/") ? String(path.dropLast()) : path

        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory), isDirectory.boolValue else {
            problems.append(
                ValidationProblem(
                    file: path, path: .root,
                    message: "no such directory; pass the folder that holds your flag files, e.g. Flags"))
            return
        }
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: directory).sorted()
        } catch {
            problems.append(
                ValidationProblem(file: path, path: .root, message: "cannot be listed; check its permissions"))
            return
        }

        /// Each `.yaml` file read, in name order, with its problems so far.
        var readings: [(path: String, stem: String, result: FlagFile.ReadResult)] = []
        for name in names where !name.hasPrefix(".") {
            let filePath = "\(directory)/\(name)"
            if name.hasSuffix(".yml") {
                problems.append(
                    ValidationProblem(
                        file: filePath, path: .root,
                        message:
                            "flag files end in .\(Self.fileExtension); rename it to \(name.dropLast(4)).\(Self.fileExtension)"
                    ))
                continue
            }
            guard name.hasSuffix(".\(Self.fileExtension)") else { continue }
            filePaths.append(filePath)
            let stem = String(name.dropLast(Self.fileExtension.count + 1))
            switch FlagFile.contents(of: filePath) {
            case .success(let text): readings.append((filePath, stem, FlagFile.read(yaml: text, path: filePath)))
            case .failure(let error): readings.append((filePath, stem, FlagFile.ReadResult(problems: error.problems)))
            }
        }

        // One file per namespace, named after it: the file whose name matches owns the namespace.
        var owner: [String: String] = [:]
        for reading in readings where reading.result.namespace == reading.stem {
            owner[reading.stem] = reading.path
        }
        for reading in readings {
            var fileProblems = reading.result.problems
            if let namespace = reading.result.namespace, namespace != reading.stem {
                let name = (reading.path as NSString).lastPathComponent
                fileProblems.append(
                    ValidationProblem(
                        file: reading.path, path: "namespace",
                        message:
                            "'\(namespace)' differs from the file name \(name); name the file \(namespace).\(Self.fileExtension) or set namespace: \(reading.stem) (one file per namespace, named <namespace>.\(Self.fileExtension))"
                    ))
                if let other = owner[namespace] {
                    fileProblems.append(
                        ValidationProblem(
                            file: reading.path, path: "namespace",
                            message: "'\(namespace)' is also declared in \(other); keep one file per namespace"))
                } else {
                    owner[namespace] = reading.path
                }
            }
            problems += fileProblems
            if let flagSet = reading.result.flagSet, fileProblems.isEmpty {
                files.append(FlagFile(path: reading.path, flagSet: flagSet))
            }
        }
        if filePaths.isEmpty && problems.isEmpty {
            problems.append(
                ValidationProblem(
                    file: path, path: .root,
                    message:
                        "holds no flag files (<namespace>.\(Self.fileExtension)); pass the folder that holds them, e.g. Flags"
                ))
        }
    }

    /// The namespaces of the files that read cleanly, in file name order.
    public var namespaces: [String] { files.map(\.namespace) }

    /// The file defining a namespace, when it read cleanly.
    public func file(namespace: String) -> FlagFile? {
        files.first { $0.namespace == namespace }
    }

    /// The problems of one file.
    public func problems(inFile filePath: String) -> [ValidationProblem] {
        problems.filter { $0.file == filePath }
    }

    /// The path a namespace's file has in this directory: `Flags/rider.yaml`.
    public func filePath(namespace: String) -> String {
        let directory = path.count > 1 && path.hasSuffix("/") ? String(path.dropLast()) : path
        return "\(directory)/\(namespace).\(Self.fileExtension)"
    }

    /// Throws when any file has a problem.
    ///
    /// - Throws: `DefinitionError` with every problem of every file.
    public func validated() throws(DefinitionError) -> FlagDirectory {
        guard problems.isEmpty else { throw DefinitionError(problems: problems) }
        return self
    }
}
