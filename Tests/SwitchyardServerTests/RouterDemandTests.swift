import Testing

@testable import SwitchyardServer

/// `RouterDemand`: a connection's task waits until the fast path first hands the router something, whichever of the
/// two comes first, or until the task is cancelled.
struct RouterDemandTests {
    @Test func aWaitAfterTheDemandReturnsAtOnce() async {
        let demand = RouterDemand()
        demand.open()
        await demand.wait()
        #expect(demand.isOpen)
    }

    @Test func aWaitReturnsWhenTheDemandComes() async throws {
        let demand = RouterDemand()
        let waiter = Task { await demand.wait() }
        // Still waiting while nothing was asked (the task runs its wait, finds no demand, and suspends).
        try await Task.sleep(for: .milliseconds(50))
        #expect(!demand.isOpen)
        demand.open()
        await waiter.value
        #expect(demand.isOpen)
        demand.open()  // idempotent
    }

    @Test func aCancelledTaskStopsWaiting() async {
        let demand = RouterDemand()
        let waiter = Task { await demand.wait() }
        waiter.cancel()
        await waiter.value
        #expect(demand.isOpen)
    }
}
