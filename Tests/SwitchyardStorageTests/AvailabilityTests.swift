import Foundation
import Testing

@testable import SwitchyardPostgres

/// Degraded mode's decisions, without a database: a failed connection is an outage at once, a slow answer is not.
struct AvailabilityTests {
    let start = Date(timeIntervalSince1970: 1_800_000_000)

    @Test func aFailedConnectionMakesTheDatabaseUnreachableAtOnce() {
        var availability = Availability()
        _ = availability.succeeded(at: start)
        let madeUnreachable = availability.failed("connection refused", at: start)
        #expect(madeUnreachable && availability.refusesOperations)
        #expect(availability.status == .unreachable(since: start, reason: "connection refused"))
        // Later failures keep the first one's time and reason.
        let madeUnreachableAgain = availability.failed("connection reset", at: start + 5)
        #expect(!madeUnreachableAgain)
        #expect(availability.status == .unreachable(since: start, reason: "connection refused"))
    }

    @Test func unansweredProbesMakeItUnreachableOnlyWhenEnoughComeInARow() {
        var availability = Availability(silenceLimit: 3)
        _ = availability.succeeded(at: start)
        let verdicts = [
            availability.probeUnanswered("no answer", at: start + 1),
            availability.probeUnanswered("no answer", at: start + 2),
        ]
        #expect(verdicts == [false, false])
        #expect(availability.awaitsAnswer && !availability.refusesOperations)
        // An answer in between starts the count again.
        let downtime = availability.succeeded(at: start + 3)
        #expect(downtime == nil && !availability.awaitsAnswer)
        let laterVerdicts = [
            availability.probeUnanswered("no answer", at: start + 4),
            availability.probeUnanswered("no answer", at: start + 5),
            availability.probeUnanswered("no answer", at: start + 6),
        ]
        #expect(laterVerdicts == [false, false, true])
        #expect(availability.refusesOperations && !availability.awaitsAnswer)
        #expect(
            availability.status
                == .unreachable(since: start + 6, reason: "no answer (3 probes in a row without an answer)"))
        // It answers again: reachable, and how long it was not.
        let unreachableFor = availability.succeeded(at: start + 16)
        #expect(unreachableFor == 10)
        #expect(availability.status == .reachable && availability.unansweredProbes == 0)
    }
}
