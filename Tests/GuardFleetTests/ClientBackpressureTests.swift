import Foundation
import SwitchyardClient
import SwitchyardCore
import SwitchyardSQLite
import SwitchyardServer
import SwitchyardStorage
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Real `FlagClient`s against a live flagsd on loopback whose ingestion backlog is full: every batch they post gets
/// 429 with `Retry-After`, they keep their events queued and retry, and once the backlog drains every event is
/// counted exactly once.
struct ClientBackpressureTests {
    static func metric(_ series: String, base: URL) async throws -> Double {
        let (data, _) = try await URLSession.shared.data(from: base.appendingPathComponent("metrics"))
        let line = String(decoding: data, as: UTF8.self).split(separator: "\n").first { $0.hasPrefix(series + " ") }
        return line.flatMap { Double($0.dropFirst(series.count + 1)) } ?? 0
    }

    @Test func clientsRefusedWith429KeepTheirEventsAndEveryOneIsCountedOnce() async throws {
        // The test reads /metrics as a scraper inside the network would, without a token.
        var configuration = ServerConfiguration(port: 0, retryAfter: 1, openMetrics: true)
        configuration.maximumEventBacklog = 1
        try await FleetServer.run(configuration: configuration) { fleet in
            let (store, server, base, token, folder) = (fleet.store, fleet.server, fleet.url, fleet.token, fleet.folder)

            // One event holds the whole backlog until released.
            let ingestor = server.context.eventIngestor
            let (release, releaser) = AsyncStream<Void>.makeStream()
            let holder = Task {
                try await ingestor.ingest([
                    StoredEvent(id: "held", time: Date(), payload: .exposure(flag: "f", variant: "v"))
                ]) { _, _ in
                    for await _ in release { break }
                    return EventIngestResult(counted: [], duplicates: [])
                }
            }
            try await waitUntil("the backlog is full") { ingestor.backlog == 1 }

            // Six devices each ran a session with one plugin switch; the next launch reports it (one event each).
            let switches = [CrashGuardFleetTests.crashing] + CrashGuardFleetTests.healthy
            let clients = (0..<6).map { index in
                var configuration = FlagClient.Configuration(
                    serverURL: base, namespace: "fleet", token: token,
                    context: EvaluationContext(
                        unitId: "device-\(index)", city: "lagos", appVersion: "5.14.0", platform: "ios"),
                    directory: folder.appendingPathComponent("device-\(index)"))
                configuration.events.flushDelay = .milliseconds(10)
                configuration.backoff = Backoff(initial: .milliseconds(200), maximum: .seconds(1))
                configuration.maximumRetryAfter = .seconds(1)
                configuration.crashLoopGuard = .off
                let first = FlagClient(configuration: configuration)
                first.recordActive(PluginSwitch(switches[index % switches.count]))
                first.endSession()
                return FlagClient(configuration: configuration)
            }
            #expect(clients.allSatisfy { $0.status.queuedEvents == 1 })
            let running = clients.map { client in Task { await client.run() } }
            // Every client posted and was refused at least once; each still holds its session.
            try await waitUntil("each client was refused") {
                try await Self.metric(
                    #"flagsd_event_batches_refused_total{namespace="fleet",reason="backlog_full"}"#, base: base) >= 12
            }
            #expect(clients.allSatisfy { $0.status.queuedEvents == 1 })
            #expect(
                try await store.eventCounts(
                    EventCountQuery(namespace: "fleet", from: Date() - 3600, until: Date() + 3600)
                ).isEmpty)

            releaser.yield()
            _ = try await holder.value
            try await waitUntil("every client's queue is empty") { clients.allSatisfy { $0.status.queuedEvents == 0 } }
            let counts = try await store.eventCounts(
                EventCountQuery(
                    namespace: "fleet", from: Date() - 3600, until: Date() + 3600,
                    subjects: [.baseline], dimensions: [.all]))
            #expect(counts.map(\.tally.sessions) == [6])
            for task in running { task.cancel() }
            for task in running { await task.value }
        }
    }
}
