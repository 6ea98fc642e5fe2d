import Testing
import Foundation
import SwitchyardFlagFiles
import SwitchyardCore

@Test func probe() {
    let dir = String(#filePath.dropLast("FlagFilesTests.swift".count)) + "Fixtures/broken"
    let d = FlagDirectory(reading: dir)
    for p in d.problems { print("P|", p.description.replacingOccurrences(of: dir + "/", with: "")) }
    let r = FlagDirectory(reading: String(#filePath.dropLast("Tests/SwitchyardFlagFilesTests/FlagFilesTests.swift".count)) + "Flags")
    for p in r.problems { print("R|", p) }
    print(r.files.first?.flagSet.yamlText() ?? "none")
}
