import Foundation
import SwitchyardCore
import SwitchyardFlagFiles
import Testing

/// Reading a directory of flag files: one `<namespace>.yaml` per namespace, every problem at once.
struct FlagDirectoryTests {
    let directory: String

    init() throws {
        directory = try TestPaths.temporaryDirectory()
    }

    func write(_ name: String, _ text: String) throws {
        try TestPaths.write(text, to: directory + "/" + name)
    }

    func cleanUp() {
        try? FileManager.default.removeItem(atPath: directory)
    }

    @Test func readsEveryNamespaceOfADirectory() throws {
        defer { cleanUp() }
        try write("rider.yaml", "namespace: rider\nflags:\n  plugin_switch_a:\n    rollout: 100\n")
        try write("driver.yaml", "namespace: driver\n")
        try write("README.md", "not a flag file\n")
        let flags = FlagDirectory(reading: directory + "/")
        #expect(flags.problems == [])
        #expect(flags.namespaces == ["driver", "rider"])
        #expect(flags.filePaths == [directory + "/driver.yaml", directory + "/rider.yaml"])
        #expect(flags.file(namespace: "rider")?.flagSet.flag("plugin_switch_a")?.pluginSwitch?.rollout == .full)
        #expect(flags.file(namespace: "rider")?.path == directory + "/rider.yaml")
        #expect(flags.filePath(namespace: "rider") == directory + "/rider.yaml")
        #expect(throws: Never.self) { try flags.validated() }
    }

    @Test func twoFilesForOneNamespaceAreAnError() throws {
        defer { cleanUp() }
        try write("rider.yaml", "namespace: rider\n")
        try write("rider-copy.yaml", "namespace: rider\n")
        let flags = FlagDirectory(reading: directory)
        let copy = directory + "/rider-copy.yaml"
        #expect(
            flags.problems.map(\.description) == [
                "\(copy): namespace: 'rider' differs from the file name rider-copy.yaml; name the file rider.yaml or set namespace: rider-copy (one file per namespace, named <namespace>.yaml)",
                "\(copy): namespace: 'rider' is also declared in \(directory)/rider.yaml; keep one file per namespace",
            ])
        #expect(flags.namespaces == ["rider"])
        #expect(throws: DefinitionError.self) { try flags.validated() }
    }

    @Test func ymlFilesAreReportedNotIgnored() throws {
        defer { cleanUp() }
        try write("rider.yml", "namespace: rider\n")
        let flags = FlagDirectory(reading: directory)
        #expect(
            flags.problems.map(\.description) == [
                "\(directory)/rider.yml: flag files end in .yaml; rename it to rider.yaml"
            ])
    }

    @Test func anEmptyDirectorySaysWhatItShouldHold() throws {
        defer { cleanUp() }
        let flags = FlagDirectory(reading: directory)
        #expect(
            flags.problems.map(\.description) == [
                "\(directory): holds no flag files (<namespace>.yaml); pass the folder that holds them, e.g. Flags"
            ])
    }

    @Test func aMissingDirectoryIsAProblem() {
        defer { cleanUp() }
        let flags = FlagDirectory(reading: directory + "/nope")
        #expect(
            flags.problems.map(\.description) == [
                "\(directory)/nope: no such directory; pass the folder that holds your flag files, e.g. Flags"
            ])
    }

    @Test func aFileThatIsNotUTF8IsAProblem() throws {
        defer { cleanUp() }
        try Data([0x6E, 0x3A, 0x20, 0xFF, 0xFE, 0x0A]).write(to: URL(fileURLWithPath: directory + "/rider.yaml"))
        let flags = FlagDirectory(reading: directory)
        #expect(flags.problems.map(\.description) == ["\(directory)/rider.yaml: is not UTF-8 text; save it as UTF-8"])
    }

    @Test func aMissingFileIsAProblemWithItsPath() {
        defer { cleanUp() }
        #expect {
            try FlagFile(contentsOf: directory + "/rider.yaml")
        } throws: { error in
            (error as? DefinitionError)?.description == "\(directory)/rider.yaml: no such file"
        }
    }
}
