import Synchronization
import TestSupport
import Testing

@testable import SwitchyardServer

/// `RouterDemand`: a connection's task waits until the fast path first hands the router something, whichever of the
/// two comes first, or until the task is cancelled. Each wait runs in a task of its own, so a wait that never returns
/// fails its test at `waitUntil`'s deadline instead of hanging it.
struct RouterDemandTests {
    @Test func aWaitAfterTheDemandReturnsAtOnce() async throws {
        let demand = RouterDemand()
        demand.open()
        let (task, returned) = waiting(on: demand)
        try await waitUntil("the wait returned") { returned.value }
        #expect(!demand.hasWaiter)
        task.cancel()
    }

    @Test func aSuspendedWaitReturnsWhenTheDemandComesAndNotBefore() async throws {
        let demand = RouterDemand()
        let (task, returned) = waiting(on: demand)
        try await waitUntil("the task suspended in wait()") { demand.hasWaiter }
        #expect(!returned.value)
        demand.open()
        try await waitUntil("the wait returned") { returned.value }
        #expect(!demand.hasWaiter)
        demand.open()  // idempotent
        task.cancel()
    }

    @Test func aCancelledTaskStopsWaiting() async throws {
        let demand = RouterDemand()
        let (task, returned) = waiting(on: demand)
        try await waitUntil("the task suspended in wait()") { demand.hasWaiter }
        task.cancel()
        try await waitUntil("the wait returned") { returned.value }
        #expect(!demand.hasWaiter)
    }
}

/// Whether a wait returned, set once by its task.
private final class Returned: Sendable {
    private let flag = Atomic(false)
    var value: Bool { flag.load(ordering: .sequentiallyConsistent) }
    func set() { flag.store(true, ordering: .sequentiallyConsistent) }
}

/// A task that waits on `demand` and then sets the flag it returns.
private func waiting(on demand: RouterDemand) -> (Task<Void, Never>, Returned) {
    let returned = Returned()
    let task = Task {
        await demand.wait()
        returned.set()
    }
    return (task, returned)
}
