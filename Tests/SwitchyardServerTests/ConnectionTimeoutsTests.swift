import Testing

@testable import SwitchyardServer

/// The decisions of `ConnectionTimeouts`, driven with instants of our own (no I/O, no waiting).
struct ConnectionTimeoutsTests {
    typealias Timeouts = ConnectionTimeouts<ContinuousClock.Instant>
    let start = ContinuousClock.now

    func at(_ seconds: Double) -> ContinuousClock.Instant {
        start + .milliseconds(Int64(seconds * 1000))
    }

    func make() -> Timeouts {
        Timeouts(idleTimeout: .seconds(75), headerTimeout: .seconds(10), openedAt: start)
    }

    @Test func aNewConnectionMustSendItsHeadWithinTheHeaderTimeout() {
        let timeouts = make()
        #expect(timeouts.deadline?.at == at(10))
        #expect(timeouts.deadline?.cut == .header)
        #expect(timeouts.expired(at: at(9.9)) == nil)
        #expect(timeouts.expired(at: at(10)) == .header)
    }

    @Test func bytesOfAHeadDoNotMoveItsDeadline() {
        var timeouts = make()
        for second in 1...9 { timeouts.bytesRead(at: at(Double(second))) }
        #expect(timeouts.expired(at: at(10)) == .header)
    }

    @Test func aRequestBeingAnsweredIsNeverCutHoweverLongItTakes() {
        var timeouts = make()
        timeouts.readRequest(at: at(1))
        #expect(timeouts.deadline == nil)
        #expect(timeouts.expired(at: at(100_000)) == nil)
        // A parked long-poll answered after its wait: the connection is idle from the answer.
        timeouts.responseEnded(at: at(31))
        #expect(timeouts.deadline?.at == at(106))
        #expect(timeouts.deadline?.cut == .idle)
    }

    @Test func anIdleConnectionIsCutAfterTheIdleTimeoutAndANextHeadStartsItsOwnClock() {
        var timeouts = make()
        timeouts.readRequest(at: at(1))
        timeouts.responseEnded(at: at(2))
        #expect(timeouts.expired(at: at(76.9)) == nil)
        #expect(timeouts.expired(at: at(77)) == .idle)
        // The first byte of a next request at 50 s: its head is due by 60 s, not 77 s.
        timeouts.bytesRead(at: at(50))
        #expect(timeouts.deadline?.at == at(60))
        #expect(timeouts.deadline?.cut == .header)
        timeouts.bytesRead(at: at(59))
        #expect(timeouts.expired(at: at(60)) == .header)
    }

    @Test func aBodyIsCutWhenItsBytesStopForTheIdleTimeout() {
        var timeouts = make()
        timeouts.headRead(at: at(1))
        timeouts.bytesRead(at: at(1))
        #expect(timeouts.deadline?.cut == .body)
        timeouts.bytesRead(at: at(60))
        #expect(timeouts.expired(at: at(100)) == nil)
        #expect(timeouts.expired(at: at(135)) == .body)
        timeouts.requestEnded(at: at(120))
        #expect(timeouts.deadline == nil)
    }

    @Test func aResponseSentBeforeTheBodyEndedLeavesTheBodyTimed() {
        var timeouts = make()
        timeouts.headRead(at: at(1))
        timeouts.responseEnded(at: at(2))
        #expect(timeouts.deadline?.cut == .body)
        #expect(timeouts.deadline?.at == at(77))
    }

    /// The snapshot fast path answers a request while its read is under way: the read's end is no next head.
    @Test func aRequestAnsweredWithinItsOwnReadLeavesTheConnectionIdle() {
        var timeouts = make()
        timeouts.headRead(at: at(1))
        timeouts.responseEnded(at: at(1))
        timeouts.requestEnded(at: at(1))
        timeouts.bytesRead(at: at(1))
        #expect(timeouts.deadline?.cut == .idle)
        #expect(timeouts.deadline?.at == at(76))
        // The next read, with no complete head in it, begins one.
        timeouts.bytesRead(at: at(5))
        #expect(timeouts.deadline?.cut == .header)
        #expect(timeouts.deadline?.at == at(15))
    }

    @Test func pipelinedBytesWaitForTheAnswerAheadOfThem() {
        var timeouts = make()
        timeouts.readRequest(at: at(1))
        // Part of a second head arrives while the first request is answered: not timed yet.
        timeouts.bytesRead(at: at(2))
        #expect(timeouts.deadline == nil)
        timeouts.responseEnded(at: at(30))
        #expect(timeouts.deadline?.at == at(105))
        // Two requests in flight: one answer leaves the other being answered.
        timeouts.readRequest(at: at(31))
        timeouts.readRequest(at: at(31))
        timeouts.responseEnded(at: at(32))
        #expect(timeouts.deadline == nil)
        timeouts.responseEnded(at: at(33))
        #expect(timeouts.deadline?.at == at(108))
    }

    /// What the connection cap closes first: idle from the opening until the first head, and from each last answer
    /// until the next head (bytes of that head included); never while a request is read or answered.
    @Test func aConnectionIsIdleBetweenRequestsFromItsOpeningOrItsLastAnswer() {
        var timeouts = make()
        #expect(timeouts.idleSince == start)
        timeouts.bytesRead(at: at(3))
        #expect(timeouts.idleSince == start)
        timeouts.headRead(at: at(4))
        #expect(timeouts.idleSince == nil)
        timeouts.requestEnded(at: at(5))
        #expect(timeouts.idleSince == nil, "a request being answered (a parked long-poll) is not idle")
        timeouts.responseEnded(at: at(40))
        #expect(timeouts.idleSince == at(40))
        timeouts.bytesRead(at: at(50))
        #expect(timeouts.idleSince == at(40), "bytes of a next head leave the connection idle since its last answer")
        // Two pipelined requests: idle only once both are answered.
        timeouts.readRequest(at: at(60))
        timeouts.readRequest(at: at(60))
        timeouts.responseEnded(at: at(61))
        #expect(timeouts.idleSince == nil)
        timeouts.responseEnded(at: at(62))
        #expect(timeouts.idleSince == at(62))
        // Answered before its body ended: idle once the body has ended.
        timeouts.headRead(at: at(70))
        timeouts.responseEnded(at: at(71))
        #expect(timeouts.idleSince == nil)
        timeouts.requestEnded(at: at(72))
        #expect(timeouts.idleSince == at(72))
    }
}

extension ConnectionTimeouts {
    /// One read that brought a whole request (head and end), as the handler reports it.
    mutating func readRequest(at now: Instant) {
        headRead(at: now)
        requestEnded(at: now)
        bytesRead(at: now)
    }
}
