import Foundation
import TestSupport
import Testing

/// Where flagsd listens, as an operator meets it: a taken port stops it before it touches its database, and the
/// banner says where the console is.
struct ListenTests {
    @Test func aTakenPortStopsFlagsdNamingThePortBeforeItOpensItsDatabase() async throws {
        let running = try await LiveFlagsd.start()
        defer { running.stop() }
        let port = try #require(running.base.port)
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("listen-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let database = folder.appendingPathComponent("flags.sqlite")
        let outcome = try await runProgram(try Built.binary("flagsd").path,
                                           ["--port", String(port), "--database", database.path, "--flags", Repository.url("Flags").path],
                                           deadline: .seconds(60))
        #expect(outcome.status == 1, "\(outcome.error)")
        #expect(outcome.error.contains("port \(port) on 127.0.0.1 is in use by another process"), "\(outcome.error)")
        #expect(outcome.error.contains("--port N (or SWITCHYARD_PORT"), "\(outcome.error)")
        #expect(!outcome.error.contains("errno"), "\(outcome.error)")
        // Nothing was opened, migrated or seeded; no admin token was made.
        #expect(!FileManager.default.fileExists(atPath: database.path))
        #expect(!FileManager.default.fileExists(atPath: folder.appendingPathComponent("admin-token").path))
        // The running flagsd is untouched.
        #expect(try await running.send("GET", "/healthz").status == 200)
    }

    @Test func theBannerSaysWhereTheConsoleIsUnlessItIsOff() async throws {
        let withConsole = try await LiveFlagsd.start()
        defer { withConsole.stop() }
        let url = withConsole.base.absoluteString
        #expect(withConsole.banner.contains("flagsd listening on \(url) (database "), "\(withConsole.banner)")
        #expect(withConsole.banner.contains("console: \(url)/console/"), "\(withConsole.banner)")
        #expect(try await withConsole.send("GET", "/console/").status == 200)

        let without = try await LiveFlagsd.start(arguments: ["--no-console"])
        defer { without.stop() }
        #expect(!without.banner.contains("console:"), "\(without.banner)")
    }

    @Test func theLogFormatHelpNamesOneDefault() async throws {
        let help = try await FlagsdOptions.read().helpOf("--log-format").split(whereSeparator: \.isWhitespace).joined(separator: " ")
        #expect(help.contains("text on a terminal and json otherwise"), "\(help)")
        #expect(!help.contains("(default:"), "\(help)")
    }
}
