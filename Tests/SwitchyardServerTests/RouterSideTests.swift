import Synchronization
import TestSupport
import Testing

@testable import SwitchyardServer

/// `RouterSide`: a connection's router loop is launched by the connection's task when the fast path handed it
/// something before the task looked, by the fast path's demand when that comes later, and is dropped unlaunched when
/// the connection closes first. `RouterLoops` runs what is launched until it is finished, and never drops a launch.
struct RouterSideTests {
    @Test func aDemandBeforeTheTaskLooksHasTheTaskLaunchTheLoop() {
        let side = RouterSide()
        let launches = Count()
        side.open()
        let taskLaunches = side.launchNowOrPark(launch: { launches.add() })
        #expect(taskLaunches)
        #expect(side.isStarted)
        side.open()
        side.channelClosed()
        #expect(launches.value == 0)
    }

    @Test func aDemandAfterTheTaskLeftLaunchesTheLoopOnce() {
        let side = RouterSide()
        let launches = Count()
        let taskLaunches = side.launchNowOrPark(launch: { launches.add() })
        #expect(!taskLaunches)
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
            let taskLaunches = side.launchNowOrPark(launch: {
                captured.add()
                launches.add()
            })
            #expect(!taskLaunches)
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
        let taskLaunches = side.launchNowOrPark(launch: { launches.add() })
        #expect(!taskLaunches)
        #expect(!side.isParked && !side.isStarted)
        #expect(launches.value == 0)
    }

    @Test func routerLoopsRunWhatIsLaunchedBeforeWhileAndAfterTheyRun() async throws {
        let loops = RouterLoops()
        let ran = Count()
        // More than one per group, so every group runs one and some run two.
        let first = RouterLoops.shardCount + 3
        for _ in 0..<first { loops.launch { ran.add() } }
        let running = Task { await loops.run() }
        try await waitUntil("the loops launched before run() ran") { ran.value == first }
        loops.launch { ran.add() }
        try await waitUntil("a loop launched while running ran") { ran.value == first + 1 }
        loops.finish()
        await running.value
        loops.launch { ran.add() }
        try await waitUntil("a loop launched after finish() still ran") { ran.value == first + 2 }
        #expect(loops.launchedCount == first + 2)
    }
}

/// A count set from any task.
private final class Count: Sendable {
    private let count = Atomic(0)
    var value: Int { count.load(ordering: .sequentiallyConsistent) }
    func add() { count.add(1, ordering: .sequentiallyConsistent) }
}
