import Foundation
import HTTPTypes
import SwitchyardCore
import SwitchyardGuard
import SwitchyardSQLite
import SwitchyardStorage
import Synchronization
import TestSupport
import Testing

@testable import SwitchyardServer

/// The crash guard's own bookkeeping: a confirmation asked for too soon after the last one is deferred, never
/// dropped, and counts reloaded from the store while batches commit count each batch once.
struct CrashGuardBookkeepingTests {
    static let promos = CrashGuardTests.promos

    @Test func aConfirmationAskedForTooSoonIsDeferredNotDropped() async throws {
        let app = try await CrashGuardTests.app()
        defer { app.close() }
        // A guard of its own, on a clock that moves only when the test moves it.
        let start = ContinuousClock.now
        let elapsed = Mutex(Duration.zero)
        var options = CrashGuard.Options()
        options.confirmInterval = .seconds(5)
        options.instant = { start + elapsed.withLock { $0 } }
        let crashGuard = CrashGuard(app: app.server.context, options: options)
        app.server.context.eventObservers.add(crashGuard)
        await crashGuard.refresh("rider")

        // 80 sessions, 8 crashed: under the policy's 100 sessions.
        try await CrashGuardTests.post(
            app, CrashGuardTests.sessions("a", count: 80, crashEvery: 10, switches: [Self.promos]))
        await crashGuard.drain()
        // A confirmation made now finds no trip...
        await crashGuard.confirm("rider", Self.promos)
        #expect(try await CrashGuardTests.gate(app)?.disabled == false)
        // ...and the batch that completes the evidence comes within the interval, with no batch after it: its
        // confirmation waits for the interval's end.
        elapsed.withLock { $0 = .seconds(4) }
        try await CrashGuardTests.post(
            app, CrashGuardTests.sessions("b", count: 40, crashEvery: 10, switches: [Self.promos]))
        await crashGuard.drain()
        #expect(try await CrashGuardTests.gate(app)?.disabled == false, "deferred while the interval runs")

        elapsed.withLock { $0 = .seconds(5) }
        await crashGuard.drain()
        #expect(try await CrashGuardTests.gate(app)?.disabled == true, "the deferred confirmation disables the switch")
        let audit = try await app.store.audit(AuditQuery(namespace: "rider", source: .crashGuard))
        let evidence = try #require(audit.entries.first?.evidence)
        #expect(evidence["sessions"] == .int64(120))
        #expect(evidence["crashes"] == .int64(12))
    }

    @Test func batchesCommittedDuringReloadsAreCountedOnce() async throws {
        let app = try await CrashGuardTests.app()
        defer { app.close() }
        let crashGuard = app.server.guardService
        await crashGuard.refresh("rider")

        // 40 batches of healthy sessions, 4 posting side by side, while the guard reloads from the store again and again.
        let events = CrashGuardTests.sessions("r", count: 800, crashEvery: 0, switches: [Self.promos])
        let reloads = Task {
            var count = 0
            while !Task.isCancelled {
                await crashGuard.refresh("rider")
                count += 1
            }
            return count
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for part in 0..<4 {
                group.addTask { try await CrashGuardTests.post(app, Array(events[(part * 200)..<((part + 1) * 200)])) }
            }
            try await group.waitForAll()
        }
        reloads.cancel()
        #expect(await reloads.value > 1)

        let from = Date() - 3600
        let memory = try #require(crashGuard.memoryCounts(of: "rider", from: from))
        #expect(memory.sessions(of: Self.promos, source: .client, in: .all).sessions == 800)
        #expect(memory.baseline(source: .client, in: .all).sessions == 800)
        // After one more reload too, from the store alone.
        await crashGuard.refresh("rider")
        let reloaded = try #require(crashGuard.memoryCounts(of: "rider", from: from))
        #expect(reloaded.sessions(of: Self.promos, source: .client, in: .all).sessions == 800)
    }

    @Test func aConfirmationAfterAProposalWasAppliedProposesNothingMore() async throws {
        var policy = CrashGuardTests.policy
        policy.maximumTripsPerHour = 0
        let app = try await CrashGuardTests.app(policy: policy)
        defer { app.close() }
        let crashGuard = app.server.guardService
        try await CrashGuardTests.post(
            app, CrashGuardTests.sessions("p", count: 200, crashEvery: 5, switches: [Self.promos]))
        await crashGuard.drain()
        let proposals = try await app.store.audit(AuditQuery(namespace: "rider", actions: [.guardPropose])).entries
        let proposal = try #require(proposals.first)
        #expect(proposals.count == 1)
        let applied = try await app.send(
            .post, "/v1/namespaces/rider/guard/proposals/\(proposal.id)/apply", token: "editor",
            body: #"{"reason": "INC-11"}"#)
        #expect(applied.status == .ok, "\(applied.text)")
        // A confirmation asked for before the person applied it (deferred, or queued behind other work) runs now.
        await crashGuard.confirm("rider", Self.promos)
        #expect(try await app.store.audit(AuditQuery(namespace: "rider", actions: [.guardPropose])).entries.count == 1)
    }

    @Test func theGateLetsAReadWaitingGoBeforeLaterBatches() async throws {
        let gate = NamespaceGate()
        let order = Order()
        await gate.enter("rider", exclusive: false)
        let read = Task {
            await gate.enter("rider", exclusive: true)
            order.append("read")
            gate.leave("rider", exclusive: true)
        }
        try await waitUntil("the read waits") { gate.waiting(in: "rider") == 1 }
        let batch = Task {
            await gate.enter("rider", exclusive: false)
            order.append("batch")
            gate.leave("rider", exclusive: false)
        }
        try await waitUntil("the later batch waits behind the read") { gate.waiting(in: "rider") == 2 }
        // Another namespace is not held up.
        await gate.enter("paris", exclusive: true)
        gate.leave("paris", exclusive: true)
        #expect(order.entries.isEmpty)

        gate.leave("rider", exclusive: false)
        await read.value
        await batch.value
        #expect(order.entries == ["read", "batch"])
        #expect(gate.waiting(in: "rider") == 0)
    }
}

/// What happened, in order, across tasks.
private final class Order: Sendable {
    private let list = Mutex<[String]>([])
    func append(_ entry: String) { list.withLock { $0.append(entry) } }
    var entries: [String] { list.withLock { $0 } }
}
