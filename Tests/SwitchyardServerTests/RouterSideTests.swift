import Synchronization
import TestSupport
import Testing

@testable import SwitchyardServer

/// `RouterSide`: a connection's router loop runs in the connection's task when the fast path handed it something
/// before the task looked, is launched when that comes later, and is dropped unlaunched when the connection closes
/// first. `LateRouterSides` runs what is launched until it is finished, and never drops a launch.
struct RouterSideTests {
    @Test func aDemandBeforeTheTaskLooksRunsTheLoopInTheTask() {
        let side = RouterSide()
        let launches = Count()
        side.open()
        let ranInTask = side.runNowOrPark(launch: { launches.add() })
        #expect(ranInTask)
        #expect(side.isStarted)
        side.open()
        side.channelClosed()
        #expect(launches.value == 0)
    }

    @Test func aDemandAfterTheTaskLeftLaunchesTheLoopOnce() {
        let side = RouterSide()
        let launches = Count()
        let ranInTask = side.runNowOrPark(launch: { launches.add() })
        #expect(!ranInTask)
        #expect(side.isParked)
        #expect(launches.value == 0)
        side.open()
        side.open()
        #expect(launches.value == 1)
        #expect(side.isStarted)
        side.channelClosed()
        #expect(side.isStarted)
    }

    @Test func aConnectionClosedBeforeAnyDemandDropsItsLoopUnlaunched() {
        let side = RouterSide()
        let launches = Count()
        weak var held: Count?
        do {
            let captured = Count()
            held = captured
            let ranInTask = side.runNowOrPark(launch: { captured.add() })
            #expect(!ranInTask)
        }
        #expect(held != nil)
        side.channelClosed()
        #expect(held == nil, "the launch (and the connection's async channel it holds) is released")
        side.open()
        #expect(launches.value == 0)
        #expect(!side.isParked && !side.isStarted)
    }

    @Test func aConnectionClosedBeforeItsTaskLooksNeedsNoLoop() {
        let side = RouterSide()
        side.open()
        side.channelClosed()
        let launches = Count()
        let ranInTask = side.runNowOrPark(launch: { launches.add() })
        #expect(!ranInTask)
        #expect(!side.isParked && !side.isStarted)
        #expect(launches.value == 0)
    }

    @Test func lateRouterSidesRunWhatIsLaunchedBeforeAndAfterTheyFinish() async throws {
        let sides = LateRouterSides()
        let ran = Count()
        sides.launch { ran.add() }
        let running = Task { await sides.run() }
        try await waitUntil("the loop launched before run() ran") { ran.value == 1 }
        sides.launch { ran.add() }
        try await waitUntil("the loop launched while running ran") { ran.value == 2 }
        sides.finish()
        await running.value
        sides.launch { ran.add() }
        try await waitUntil("a loop launched after finish() still ran") { ran.value == 3 }
        #expect(sides.launchedCount == 3)
    }
}

/// A count set from any task.
private final class Count: Sendable {
    private let count = Atomic(0)
    var value: Int { count.load(ordering: .sequentiallyConsistent) }
    func add() { count.add(1, ordering: .sequentiallyConsistent) }
}
