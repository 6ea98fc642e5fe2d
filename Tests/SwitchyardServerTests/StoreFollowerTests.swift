import Foundation
import HTTPTypes
import NIOCore
import ServiceLifecycle
import SwitchyardCore
import SwitchyardSQLite
import SwitchyardStorage
import SwitchyardWire
import Synchronization
import TestSupport
import Testing

@testable import SwitchyardServer

/// The follower's decisions, without I/O.
struct FollowPlanTests {
    let held = SnapshotVersion(epoch: "e", version: 5)

    @Test func aNotificationOfAVersionHeldOrOlderNeedsNoRead() {
        #expect(!FollowPlan.needsReload(("e", 5, false), held: held))
        #expect(!FollowPlan.needsReload(("e", 4, false), held: held))
        #expect(FollowPlan.needsReload(("e", 6, false), held: held))
    }

    @Test func anotherEpochOrANewNamespaceNeedsARead() {
        #expect(FollowPlan.needsReload(("f", 1, false), held: held))
        #expect(FollowPlan.needsReload(("f", 1, false), held: nil))
    }

    @Test func aDeletionNeedsAReadOnlyForTheEpochHeld() {
        #expect(FollowPlan.needsReload(("e", 5, true), held: held))
        #expect(!FollowPlan.needsReload(("old", 9, true), held: held))
        #expect(!FollowPlan.needsReload(("e", 5, true), held: nil))
    }

    @Test func theCheckReloadsNewerAndNewNamespacesAndForgetsDeletedOnes() {
        let time = Date(timeIntervalSince1970: 0)
        func record(_ name: String, _ epoch: String, _ version: Int64) -> NamespaceRecord {
            NamespaceRecord(
                name: name, epoch: epoch, version: version, reasonPolicy: .kills, createdAt: time, updatedAt: time)
        }
        let held = [
            "same": SnapshotVersion(epoch: "a", version: 3), "newer": SnapshotVersion(epoch: "b", version: 1),
            "recreated": SnapshotVersion(epoch: "c", version: 9), "deleted": SnapshotVersion(epoch: "d", version: 1),
        ]
        let stored = [
            record("same", "a", 3), record("newer", "b", 2), record("recreated", "c2", 1), record("new", "e", 1),
        ]
        let (reload, remove) = FollowPlan.differences(held: held, stored: stored)
        #expect(reload == ["newer", "recreated", "new"])
        #expect(remove == ["deleted"])
    }
}

/// The follower over a real store, with notifications sent by the test in place of another process's store.
struct StoreFollowerTests {
    /// An app whose store is written to behind its back (as another instance would), and a follower fed by the
    /// returned continuation.
    func withFollower(
        interval: Duration = .seconds(3600),
        _ body: (TestApp, AsyncStream<StoreNotification>.Continuation) async throws -> Void
    ) async throws {
        var configuration = ServerConfiguration(port: 0)
        configuration.tokenCacheMaximumAge = .seconds(3600)
        let app = try await TestApp.make(configuration: configuration)
        let (notifications, continuation) = AsyncStream<StoreNotification>.makeStream()
        let follower = StoreFollower(app: app.server.context, notifications: notifications, interval: interval)
        let running = Task { try await follower.run() }
        var failure: (any Error)?
        do {
            try await body(app, continuation)
        } catch {
            failure = error
        }
        continuation.finish()
        running.cancel()
        // The follower ends before the store closes: closing waits, blocking its thread, for reads in flight, and a
        // read releases its connection only when its task resumes (on a 2-core machine the test process's
        // cooperative pool is 2 threads, so two tests closing at once would wait on each other forever).
        let ended = EndFlag(watching: running)
        try await waitUntil(timeout: .seconds(60)) { ended.isSet }
        app.close()
        if let failure { throw failure }
    }

    /// Set once a task has ended.
    final class EndFlag: Sendable {
        private let value = Mutex(false)
        init(watching task: Task<Void, any Error>) {
            Task { [self] in
                _ = await task.result
                value.withLock { $0 = true }
            }
        }
        var isSet: Bool { value.withLock { $0 } }
    }

    func changeBehindTheAppsBack(_ app: TestApp, rollout: Int = 7000) async throws -> CommittedChange {
        try await app.store.change("rider", ChangeRequest(author: ChangeAuthor(actor: "elsewhere", source: .api))) {
            flagSet in
            var flagSet = flagSet
            let index = flagSet.flags.firstIndex { $0.key == "plugin_switch_map_traffic" }!
            flagSet.flags[index].pluginSwitch?.rollout = Rollout(basisPoints: rollout)!
            return flagSet
        }
    }

    @Test func aNotifiedChangeIsReadFromTheStoreAndWakesTheWaiters() async throws {
        try await withFollower { app, notify in
            let held = try #require(app.hub.snapshot(of: "rider"))
            async let woken = app.hub.wait(for: "rider", after: held.position, timeout: .seconds(60))
            try await waitUntil { app.hub.waiterCount == 1 }
            let committed = try await changeBehindTheAppsBack(app)
            #expect(app.hub.snapshot(of: "rider")?.version == held.version)
            notify.yield(
                .namespace(name: "rider", epoch: held.epoch, version: committed.state.record.version, deleted: false))
            #expect(await woken == .changed)
            let published = try #require(app.hub.snapshot(of: "rider"))
            #expect(published.version == committed.state.record.version)
            #expect(Array(published.body.readableBytesView) == SnapshotDocument.encode(committed.state.snapshot))
        }
    }

    @Test func aNotifiedDeletionForgetsTheNamespaceAndAnswersItsWaiters() async throws {
        try await withFollower { app, notify in
            let held = try #require(app.hub.snapshot(of: "rider"))
            async let woken = app.hub.wait(for: "rider", after: held.position, timeout: .seconds(60))
            try await waitUntil { app.hub.waiterCount == 1 }
            try await app.store.deleteNamespace("rider", by: ChangeAuthor(actor: "elsewhere", source: .api))
            notify.yield(.namespace(name: "rider", epoch: held.epoch, version: held.version, deleted: true))
            #expect(await woken == .gone)
            #expect(app.hub.snapshot(of: "rider") == nil)
        }
    }

    @Test func thePeriodicCheckCatchesUpWithoutANotification() async throws {
        try await withFollower(interval: .milliseconds(200)) { app, _ in
            let committed = try await changeBehindTheAppsBack(app)
            _ = try await app.store.createNamespace(
                Fixtures.rider("new"), reasonPolicy: .kills,
                request: ChangeRequest(author: ChangeAuthor(actor: "elsewhere", source: .api)))
            try await waitUntil(timeout: .seconds(60)) {
                app.hub.snapshot(of: "rider")?.version == committed.state.record.version
                    && app.hub.snapshot(of: "new") != nil
            }
        }
    }

    @Test func aResyncComparesEveryNamespaceAtOnce() async throws {
        try await withFollower { app, notify in
            let committed = try await changeBehindTheAppsBack(app)
            notify.yield(.resync)
            // A liveness deadline: the whole suite shares two cores with other builds.
            try await waitUntil(timeout: .seconds(60)) {
                app.hub.snapshot(of: "rider")?.version == committed.state.record.version
            }
        }
    }

    @Test func aTokensNotificationReloadsTheTokenCache() async throws {
        try await withFollower { app, notify in
            let (_, secret) = try await app.store.issueToken(
                name: "late", role: .client, namespaces: nil,
                by: ChangeAuthor(actor: "elsewhere", source: .api))
            #expect(try await app.send(.get, "/v1/namespaces/rider/snapshot", token: secret).status == .unauthorized)
            notify.yield(.tokens)
            try await waitUntil {
                (try? await app.send(.get, "/v1/namespaces/rider/snapshot", token: secret).status) == .ok
            }
            _ = try await app.store.revokeToken("late", by: ChangeAuthor(actor: "elsewhere", source: .api))
            notify.yield(.tokens)
            try await waitUntil {
                (try? await app.send(.get, "/v1/namespaces/rider/snapshot", token: secret).status) == .unauthorized
            }
        }
    }
}

/// Degraded mode in-process: the database is gone, what is held is served.
struct DegradedModeTests {
    @Test func withTheDatabaseGoneCachedTokensStillReadSnapshotsAndUnknownOnesGet503() async throws {
        var configuration = ServerConfiguration(port: 0)
        configuration.tokenCacheMaximumAge = .zero
        let app = try await TestApp.make(configuration: configuration)
        defer { app.close() }
        let before = try await app.send(.get, "/v1/namespaces/rider/snapshot", token: "client")
        #expect(before.status == .ok)
        try app.store.close()

        let after = try await app.send(.get, "/v1/namespaces/rider/snapshot", token: "client")
        #expect(after.status == .ok)
        #expect(after.body == before.body)
        let unknown = try await app.send(
            .get, "/v1/namespaces/rider/snapshot", token: "sy_client_unknown0000000000000000000000000000000")
        #expect(unknown.status == .serviceUnavailable)
        #expect(unknown.json["type"] == .string("urn:switchyard:problem:storage-unavailable"))
        let write = try await app.send(
            .post, "/v1/namespaces/rider/flags/plugin_switch_map_traffic/disable", token: "editor", body: "{}")
        #expect(write.status == .serviceUnavailable)
        #expect(write.json["type"] == .string("urn:switchyard:problem:storage-unavailable"))
        #expect(write.headers[.retryAfter] == "1")
    }
}
