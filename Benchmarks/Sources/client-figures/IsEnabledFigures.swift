import CoreFixtures
import Foundation
import MallocCounter
import SwitchyardClient
import SwitchyardCore
import Synchronization

/// Serves a new version of the 1,000-flag snapshot on every long-poll, at once: the sync loop installs snapshots
/// back to back (decode, verify, compile, swap), as fast as one core allows.
final class UpdatingTransport: HTTPTransport {
    private let bodies: [[UInt8]]
    private let next = Mutex(0)
    private let installs = Atomic(0)

    /// - Parameter versions: how many versions to serve; after the last, requests are answered 304.
    init(versions: Int) {
        var bodies: [[UInt8]] = []
        for version in 1...Int64(versions) {
            var snapshot = Fixtures.snapshot(flagCount: 1000, version: version)
            // Each version turns the plain switch on or off, so what readers see really changes.
            if let index = snapshot.flagSet.flags.firstIndex(where: { $0.key == Fixtures.plainKey }) {
                snapshot.flagSet.flags[index].pluginSwitch?.rollout = version % 2 == 0 ? .off : .full
            }
            bodies.append(SnapshotDocument.encode(snapshot))
        }
        self.bodies = bodies
    }

    var served: Int { next.withLock { $0 } }

    func send(_ request: HTTPRequest) async throws -> HTTPResponse {
        let index = next.withLock { index in
            defer { index += 1 }
            return index
        }
        guard index < bodies.count else {
            try await Task.sleep(for: .milliseconds(50))
            return HTTPResponse(status: 304)
        }
        return HTTPResponse(status: 200, body: bodies[index])
    }
}

/// Keeps a value alive so the optimiser cannot drop the loop that computed it.
@inline(never)
func blackHole(_ value: Int) {
    if value == -1 { print("") }
}

/// `isEnabled` on a reader thread, with and without the sync loop installing snapshots on another.
enum IsEnabledFigures {
    struct Reading {
        var nanosecondsPerCall: Double
        var mallocsPerCall: Double
        var calls: Int
    }

    /// Calls `read` on a thread of its own for `seconds`; its own allocations are counted.
    static func measure(seconds: Double, _ read: @escaping @Sendable () -> Bool) -> Reading {
        let result = Mutex<Reading?>(nil)
        let done = DispatchSemaphore(value: 0)
        Thread {
            var calls = 0
            var on = 0
            let clock = ContinuousClock()
            let start = clock.now
            let end = start + .milliseconds(Int64(seconds * 1000))
            let mallocs = sy_thread_mallocs()
            while calls & 0xFFF != 0 || clock.now < end {
                if read() { on &+= 1 }
                calls += 1
            }
            let elapsed = start.duration(to: clock.now)
            let allocations = sy_thread_mallocs() - mallocs
            let (whole, fraction) = elapsed.components
            let nanoseconds = Double(whole) * 1e9 + Double(fraction) / 1e9
            blackHole(on)
            result.withLock { $0 = Reading(nanosecondsPerCall: nanoseconds / Double(calls), mallocsPerCall: Double(allocations) / Double(calls), calls: calls) }
            done.signal()
        }.start()
        done.wait()
        return result.withLock { $0! }
    }

    static func run(seconds: Double) {
        let versions = Int(max(seconds, 1) * 3 * 60) + 50
        FileHandle.standardError.write(Data("encoding \(versions) versions of a 1,000-flag snapshot…\n".utf8))
        let context = Fixtures.context
        let plain = PluginSwitch(Fixtures.plainKey)
        let targeted = PluginSwitch(Fixtures.targetedKey)
        let reference = DictionaryClient(CompiledSnapshot(Fixtures.snapshot(flagCount: 1000)), context: context)

        var quiet: [Reading] = [], updating: [Reading] = [], quietTargeted: [Reading] = [], updatingTargeted: [Reading] = []
        var dictionary: [Reading] = []
        var installsPerSecond: [Double] = []
        for _ in 0..<3 {
            // Quiet: a client holding the snapshot, its sync loop not running.
            var configuration = FlagClient.Configuration(serverURL: URL(string: "http://127.0.0.1:9")!, namespace: "bench", token: "t",
                                                         context: context)
            configuration.bundledSnapshot = SnapshotDocument.encode(Fixtures.snapshot(flagCount: 1000))
            configuration.events.recordsExposures = false
            let still = FlagClient(configuration: configuration)
            quiet.append(measure(seconds: seconds) { still.isEnabled(plain) })
            quietTargeted.append(measure(seconds: seconds) { still.isEnabled(targeted) })
            dictionary.append(measure(seconds: seconds) { reference.isEnabled(Fixtures.plainKey) })

            // Updating: the sync loop installs version after version while the reader reads.
            let transport = UpdatingTransport(versions: versions)
            var live = FlagClient.Configuration(serverURL: URL(string: "http://127.0.0.1:9")!, namespace: "bench", token: "t", context: context)
            live.snapshotTransport = transport
            live.eventTransport = transport
            live.minimumPollInterval = .zero
            live.events.recordsExposures = false
            let client = FlagClient(configuration: live)
            let sync = Task.detached { await client.run() }
            while client.status.snapshot == nil { usleep(1000) }
            let before = transport.served
            let started = Date()
            updating.append(measure(seconds: seconds) { client.isEnabled(plain) })
            updatingTargeted.append(measure(seconds: seconds) { client.isEnabled(targeted) })
            installsPerSecond.append(Double(transport.served - before) / Date().timeIntervalSince(started))
            sync.cancel()
            if transport.served >= versions { FileHandle.standardError.write(Data("warning: ran out of versions\n".utf8)) }
        }
        figure("isEnabled plain, quiet (ns)", median(quiet.map(\.nanosecondsPerCall)), "ns")
        figure("isEnabled plain, updates landing (ns)", median(updating.map(\.nanosecondsPerCall)), "ns")
        figure("isEnabled targeted, quiet (ns)", median(quietTargeted.map(\.nanosecondsPerCall)), "ns")
        figure("isEnabled targeted, updates landing (ns)", median(updatingTargeted.map(\.nanosecondsPerCall)), "ns")
        figure("reference [String: Bool] lookup (ns)", median(dictionary.map(\.nanosecondsPerCall)), "ns")
        figure("snapshots installed per second while reading", median(installsPerSecond), "/s")
        let allUpdating = updating + updatingTargeted
        figure("reader mallocs per call, updates landing", allUpdating.map(\.mallocsPerCall).max() ?? .nan, "mallocs")
        figure("reader mallocs in all, updates landing", allUpdating.map { $0.mallocsPerCall * Double($0.calls) }.max() ?? .nan, "mallocs")
        figure("reader calls per run", Double(median(allUpdating.map { Double($0.calls) })), "calls")
    }
}
