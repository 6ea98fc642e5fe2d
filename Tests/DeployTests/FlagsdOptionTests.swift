import Foundation
import TestSupport
import Testing

/// flagsd's own options, as an operator meets them: refused with a message saying what they take.
struct FlagsdOptionTests {
    @Test(arguments: [
        ["--events-retention", "1d"], ["--events-retention", "forever"], ["--events-retention", "400d"],
    ])
    func aRetentionOutsideTwoDaysToAYearIsRefusedSayingWhatItTakes(arguments: [String]) async throws {
        let outcome = try await runProgram(try Built.binary("flagsd").path, arguments + ["--port", "0"])
        #expect(outcome.status != 0)
        #expect(
            outcome.error.contains("--events-retention '\(arguments[1])' is not a duration from 2d to 366d"),
            "\(outcome.error)")
    }

    @Test(arguments: [["--events-max-age", "30m"], ["--events-max-age", "31d"], ["--events-max-age", "week"]])
    func anEventAgeOutsideAnHourToThirtyDaysIsRefusedSayingWhatItTakes(arguments: [String]) async throws {
        let outcome = try await runProgram(try Built.binary("flagsd").path, arguments + ["--port", "0"])
        #expect(outcome.status != 0)
        #expect(
            outcome.error.contains("--events-max-age '\(arguments[1])' is not a duration from 1h to 30d"),
            "\(outcome.error)")
    }

    @Test(arguments: [["--events-max-skew", "2h"], ["--events-max-skew", "61m"], ["--events-max-skew", "soon"]])
    func anEventSkewOutsideNoneToAnHourIsRefusedSayingWhatItTakes(arguments: [String]) async throws {
        let outcome = try await runProgram(try Built.binary("flagsd").path, arguments + ["--port", "0"])
        #expect(outcome.status != 0)
        #expect(
            outcome.error.contains("--events-max-skew '\(arguments[1])' is not a duration from 0s to 1h"),
            "\(outcome.error)")
    }

    @Test(arguments: [["--long-poll-rate-per-address", "200000000"], ["--long-poll-rate-per-token", "100000001"]])
    func aLongPollRateOutOfRangeIsRefusedSayingWhatItTakes(arguments: [String]) async throws {
        let outcome = try await runProgram(try Built.binary("flagsd").path, arguments + ["--port", "0"])
        #expect(outcome.status != 0)
        #expect(
            outcome.error.contains(
                "\(arguments[0]) \(arguments[1]) is not a number of long-polls per minute from 0 (no limit)"),
            "\(outcome.error)")
    }

    @Test func aListenBacklogBelowOneIsRefusedSayingWhatItTakes() async throws {
        let outcome = try await runProgram(try Built.binary("flagsd").path, ["--listen-backlog", "0", "--port", "0"])
        #expect(outcome.status != 0)
        #expect(outcome.error.contains("--listen-backlog 0 must be at least 1"), "\(outcome.error)")
    }

    @Test func theRetentionVariableIsReadAndCheckedToo() async throws {
        let outcome = try await runProgram(
            try Built.binary("flagsd").path, ["--port", "0"], environment: ["SWITCHYARD_EVENTS_RETENTION": "12"])
        #expect(outcome.status != 0)
        #expect(outcome.error.contains("--events-retention '12' is not a duration"), "\(outcome.error)")
        let options = try await FlagsdOptions.read()
        #expect(options.helpOf("--events-retention").contains("SWITCHYARD_EVENTS_RETENTION"))
    }

    /// Every variable flagsd's help names is read as its option would be: one flagsd cannot read stops it at start,
    /// naming the variable (issue 29: `SWITCHYARD_PORT=80a` used to serve 8080).
    @Test func everyVariableFlagsdCannotReadStopsItNamingTheVariable() async throws {
        let options = try await FlagsdOptions.read()
        // Free text that "80a%" is a fine value of (a host, paths, a namespace), and secrets read where they are used.
        // SWITCHYARD_PORT is checked below: the runs here give --port, which wins over it.
        let freeText: Set<String> = [
            "SWITCHYARD_HOST", "SWITCHYARD_DATABASE", "SWITCHYARD_FLAGS", "SWITCHYARD_DEFAULT_NAMESPACE",
            "SWITCHYARD_ADMIN_TOKEN", "SWITCHYARD_METRICS_TOKEN", "SWITCHYARD_GUARD_WEBHOOK_SECRET",
            "SWITCHYARD_PORT",
        ]
        let checked = options.variables.subtracting(freeText).sorted()
        #expect(checked.count >= 30, "\(checked)")
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("env-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        for variable in checked {
            let outcome = try await runProgram(
                try Built.binary("flagsd").path,
                ["--port", "0", "--database", folder.appendingPathComponent("flags.sqlite").path],
                environment: [variable: "80a%"], deadline: .seconds(60))
            #expect(outcome.status != 0, "\(variable)=80a% was not read: flagsd started")
            #expect(outcome.error.contains(variable), "\(variable): \(outcome.error)")
        }
        let port = try await runProgram(try Built.binary("flagsd").path, [], environment: ["SWITCHYARD_PORT": "80a"])
        #expect(
            port.status != 0 && port.error.contains("SWITCHYARD_PORT='80a'") && port.error.contains("--port"),
            "\(port.error)")
        // A variable's value that may hold a secret is not repeated.
        let webhook = try await runProgram(
            try Built.binary("flagsd").path, ["--port", "0"],
            environment: ["SWITCHYARD_GUARD_WEBHOOK": "ftp://hooks.example.com/T0/XXXXSECRET"])
        #expect(
            webhook.status != 0 && webhook.error.contains("SWITCHYARD_GUARD_WEBHOOK")
                && !webhook.error.contains("XXXXSECRET"),
            "\(webhook.error)")
        // The option wins over its variable, and a flag's variable takes a yes or a no.
        let both = try await runProgram(
            try Built.binary("flagsd").path, ["--port", "70000"], environment: ["SWITCHYARD_PORT": "80a"])
        #expect(
            both.error.contains("--port 70000 is not a port") && !both.error.contains("SWITCHYARD_PORT"),
            "\(both.error)")
    }
}
