import CoreFixtures
import Foundation
import MallocCounter
import SwitchyardClient
import SwitchyardCore
import Synchronization

/// Serves versions of a large snapshot, one one-flag change apart, on every long-poll at once: the full snapshot of
/// the next version, or the delta to it when the request accepts deltas (as flagsd would).
final class ChangingTransport: HTTPTransport {
    private let full: [[UInt8]]
    private let deltas: [[UInt8]]
    /// Until opened, requests after the first wait: the measurement starts from a client settled on version 1.
    private let open = Mutex(false)

    /// - Parameters:
    ///   - full: the snapshots of versions 1, 2, …
    ///   - deltas: `deltas[i]` leads from version i + 1 to i + 2.
    init(full: [[UInt8]], deltas: [[UInt8]]) {
        self.full = full
        self.deltas = deltas
    }

    func release() {
        open.withLock { $0 = true }
    }

    func send(_ request: HTTPRequest) async throws -> HTTPResponse {
        let tag = request.headers["If-None-Match"].map { $0.trimmingCharacters(in: CharacterSet(charactersIn: "\"")) }
        let held = tag.flatMap { $0.split(separator: ".").last.flatMap { Int($0) } }
        guard let held else {
            return HTTPResponse(status: 200, headers: ["Content-Type": "application/json"], body: full[0])
        }
        while !open.withLock({ $0 }) { try await Task.sleep(for: .milliseconds(1)) }
        guard held < full.count else {
            try await Task.sleep(for: .milliseconds(20))
            return HTTPResponse(status: 304)
        }
        if request.headers["Accept"]?.contains(SnapshotDelta.mediaType) == true {
            return HTTPResponse(status: 200, headers: ["Content-Type": SnapshotDelta.mediaType], body: deltas[held - 1])
        }
        return HTTPResponse(status: 200, headers: ["Content-Type": "application/json"], body: full[held])
    }
}

/// What the client runtime spends to take in a one-flag change on a large namespace: through its sync loop, as a
/// delta and (the reference, in the same run) as a full snapshot download, the last known good kept on disk.
enum ApplyFigures {
    struct Run {
        var cpuPerInstall: Double
        var wallPerInstall: Double
        var mallocsPerInstall: Double
        var installs: Int
    }

    #if os(Linux)
    static let RUSAGE_SELF_VALUE = __rusage_who_t(RUSAGE_SELF.rawValue)
    #else
    static let RUSAGE_SELF_VALUE = RUSAGE_SELF
    #endif

    static func processCPU() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_SELF_VALUE, &usage)
        return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
    }

    /// Runs a client from version 1 to the last; the figures are per install after the first (a full download).
    static func follow(_ transport: ChangingTransport, versions: Int, deltas: Bool) async throws -> Run {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("client-apply-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        var configuration = FlagClient.Configuration(serverURL: URL(string: "http://127.0.0.1:9")!, namespace: "bench",
                                                     token: "t", context: Fixtures.context, directory: directory)
        configuration.snapshotTransport = transport
        configuration.eventTransport = transport
        configuration.minimumPollInterval = .zero
        configuration.events.recordsExposures = false
        configuration.deltas = deltas
        let client = FlagClient(configuration: configuration)
        var changes = client.changes.makeAsyncIterator()
        let sync = Task.detached { await client.run() }
        defer { sync.cancel() }
        // The first install is a full download; with deltas on, the client then works out its digest once.
        while client.status.snapshot?.version != 1 { _ = await changes.next() }
        try await Task.sleep(for: .milliseconds(500))
        transport.release()
        let clock = ContinuousClock()
        let start = clock.now
        let cpu = processCPU()
        let mallocs = sy_total_mallocs()
        while let change = await changes.next(), change.snapshot?.version != Int64(versions) {}
        let wall = start.duration(to: clock.now)
        let installs = versions - 1
        let (seconds, attoseconds) = wall.components
        return Run(cpuPerInstall: (processCPU() - cpu) / Double(installs),
                   wallPerInstall: (Double(seconds) + Double(attoseconds) / 1e18) / Double(installs),
                   mallocsPerInstall: Double(sy_total_mallocs() - mallocs) / Double(installs), installs: installs)
    }

    static func run(flags: Int, versions: Int) async throws {
        FileHandle.standardError.write(Data("encoding \(versions) versions of a \(flags)-flag snapshot and the deltas between them…\n".utf8))
        var snapshot = try SnapshotDocument.decode(SnapshotDocument.encode(Fixtures.snapshot(flagCount: flags, version: 1)))
        var full = [SnapshotDocument.encode(snapshot)]
        var deltaBodies: [[UInt8]] = []
        let index = snapshot.flagSet.flags.firstIndex { $0.key == Fixtures.targetedKey }!
        for step in 1..<versions {
            var next = snapshot
            next.version += 1
            next.flagSet.flags[index].pluginSwitch?.rollout = Rollout(basisPoints: 1_000 + step)!
            deltaBodies.append(SnapshotDelta(from: snapshot, to: next).encode())
            full.append(SnapshotDocument.encode(next))
            snapshot = next
        }
        var fullRuns: [Run] = [], deltaRuns: [Run] = []
        for _ in 0..<3 {
            fullRuns.append(try await follow(ChangingTransport(full: full, deltas: deltaBodies), versions: versions, deltas: false))
            deltaRuns.append(try await follow(ChangingTransport(full: full, deltas: deltaBodies), versions: versions, deltas: true))
        }
        figure("snapshot document bytes", Double(full.last!.count), "bytes")
        figure("delta document bytes", Double(deltaBodies.last!.count), "bytes")
        figure("install of a one-flag change as a full snapshot, process CPU (ms)", median(fullRuns.map(\.cpuPerInstall)) * 1000, "ms")
        figure("install of a one-flag change as a delta, process CPU (ms)", median(deltaRuns.map(\.cpuPerInstall)) * 1000, "ms")
        figure("install as a full snapshot, wall (ms)", median(fullRuns.map(\.wallPerInstall)) * 1000, "ms")
        figure("install as a delta, wall (ms)", median(deltaRuns.map(\.wallPerInstall)) * 1000, "ms")
        figure("install as a full snapshot, mallocs", median(fullRuns.map(\.mallocsPerInstall)), "mallocs")
        figure("install as a delta, mallocs", median(deltaRuns.map(\.mallocsPerInstall)), "mallocs")
    }
}
