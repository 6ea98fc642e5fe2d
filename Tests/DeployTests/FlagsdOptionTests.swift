import Foundation
import Testing

/// flagsd's own options, as an operator meets them: refused with a message saying what they take.
struct FlagsdOptionTests {
    @Test(arguments: [["--events-retention", "1d"], ["--events-retention", "forever"], ["--events-retention", "400d"]])
    func aRetentionOutsideTwoDaysToAYearIsRefusedSayingWhatItTakes(arguments: [String]) async throws {
        let outcome = try await runProgram(try Built.binary("flagsd").path, arguments + ["--port", "0"])
        #expect(outcome.status != 0)
        #expect(outcome.error.contains("--events-retention '\(arguments[1])' is not a duration from 2d to 366d"), "\(outcome.error)")
    }

    @Test(arguments: [["--events-max-age", "30m"], ["--events-max-age", "31d"], ["--events-max-age", "week"]])
    func anEventAgeOutsideAnHourToThirtyDaysIsRefusedSayingWhatItTakes(arguments: [String]) async throws {
        let outcome = try await runProgram(try Built.binary("flagsd").path, arguments + ["--port", "0"])
        #expect(outcome.status != 0)
        #expect(outcome.error.contains("--events-max-age '\(arguments[1])' is not a duration from 1h to 30d"), "\(outcome.error)")
    }

    @Test(arguments: [["--long-poll-rate-per-address", "200000000"], ["--long-poll-rate-per-token", "100000001"]])
    func aLongPollRateOutOfRangeIsRefusedSayingWhatItTakes(arguments: [String]) async throws {
        let outcome = try await runProgram(try Built.binary("flagsd").path, arguments + ["--port", "0"])
        #expect(outcome.status != 0)
        #expect(outcome.error.contains("\(arguments[0]) \(arguments[1]) is not a number of long-polls per minute from 0 (no limit)"),
                "\(outcome.error)")
    }

    @Test func theRetentionVariableIsReadAndCheckedToo() async throws {
        let outcome = try await runProgram(try Built.binary("flagsd").path, ["--port", "0"], environment: ["SWITCHYARD_EVENTS_RETENTION": "12"])
        #expect(outcome.status != 0)
        #expect(outcome.error.contains("--events-retention '12' is not a duration"), "\(outcome.error)")
        let options = try await FlagsdOptions.read()
        #expect(options.helpOf("--events-retention").contains("SWITCHYARD_EVENTS_RETENTION"))
    }
}
