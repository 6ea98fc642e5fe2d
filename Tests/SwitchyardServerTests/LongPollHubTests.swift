import HTTPTypes
import NIOCore
import NIOPosix
import SwitchyardCore
import Synchronization
import TestSupport
import Testing

@testable import SwitchyardServer

/// The hub's side of the snapshot fast path: connections parked in the hub and woken on their own event loop.
struct LongPollHubTests {
    /// Records each fake connection's wakes, checking that they run on the connection's loop.
    final class Wakes: Sendable {
        let reasons = Mutex<[Int: [WakeReason]]>([:])

        var count: Int { reasons.withLock { $0.values.reduce(0) { $0 + $1.count } } }
    }

    struct FakeConnection: ParkedConnection {
        let eventLoop: any EventLoop
        let index: Int
        let wakes: Wakes

        func wake(_ reason: WakeReason) {
            eventLoop.preconditionInEventLoop()
            wakes.reasons.withLock { $0[index, default: []].append(reason) }
        }
    }

    @Test func everyParkedConnectionIsWokenOnceOnItsOwnLoopAcrossBatches() async throws {
        let app = try await TestApp.make()
        defer { app.close() }
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 2)
        let loops = Array(group.makeIterator())
        let current = try #require(app.hub.snapshot(of: "rider")).position
        let wakes = Wakes()
        // More than one batch per loop, and uneven.
        var ids: [Int] = []
        for index in 0..<1_700 {
            let connection = FakeConnection(eventLoop: loops[index < 1_000 ? 0 : 1], index: index, wakes: wakes)
            guard case .parked(let id) = app.hub.park(connection, for: "rider", after: current, timeout: .seconds(60))
            else {
                Issue.record("connection \(index) was not parked")
                return
            }
            ids.append(id)
        }
        #expect(app.hub.waiterCount == 1_700)
        // One forgotten (its connection closed): never woken.
        app.hub.forget(ids[5])
        #expect(app.hub.waiterCount == 1_699)
        _ = try await app.send(
            .post, "/v1/namespaces/rider/flags/plugin_switch_feed_weather/rollout", token: "editor",
            body: #"{"rollout": 4200}"#)
        try await waitUntil { wakes.count >= 1_699 }
        let reasons = wakes.reasons.withLock { $0 }
        #expect(reasons.count == 1_699)
        #expect(reasons[5] == nil)
        #expect(reasons.values.allSatisfy { $0 == [.changed] })
        #expect(app.hub.waiterCount == 0)
        try await group.shutdownGracefully()
    }

    @Test func aConnectionParkedBehindTheCurrentVersionOrAfterShutdownIsAnsweredAtOnce() async throws {
        let app = try await TestApp.make()
        defer { app.close() }
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let connection = FakeConnection(eventLoop: group.next(), index: 0, wakes: Wakes())
        let current = try #require(app.hub.snapshot(of: "rider")).position
        let behind = SnapshotVersion(epoch: current.epoch, version: current.version - 1)
        #expect(app.hub.park(connection, for: "rider", after: behind, timeout: .seconds(60)) == .answerNow(.changed))
        #expect(app.hub.park(connection, for: "nope", after: current, timeout: .seconds(60)) == .answerNow(.gone))
        app.hub.shutdown()
        #expect(app.hub.park(connection, for: "rider", after: current, timeout: .seconds(60)) == .answerNow(.shutdown))
        #expect(app.hub.waiterCount == 0)
        #expect(connection.wakes.count == 0)
        try await group.shutdownGracefully()
    }
}
