import CoreFixtures
import Foundation
import MallocCounter
import SwitchyardClient
import SwitchyardCore

/// Serves one snapshot, then answers every long-poll with 304 after a pause.
final class OneSnapshotTransport: HTTPTransport {
    let body: [UInt8]

    init(_ body: [UInt8]) { self.body = body }

    func send(_ request: HTTPRequest) async throws -> HTTPResponse {
        if request.url.query?.contains("wait=") == true {
            try await Task.sleep(for: .seconds(3600))
            return HTTPResponse(status: 304)
        }
        return HTTPResponse(status: 200, body: body)
    }
}

/// Live heap bytes of a client holding a 1,000-flag snapshot it downloaded, beside the document's size and the
/// decoded model alone.
enum MemoryFigures {
    /// Resident set size in bytes, from /proc/self/statm.
    static func residentBytes() -> Int {
        guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
        let fields = text.split(separator: " ")
        return (fields.count > 1 ? Int(fields[1]) ?? 0 : 0) * Int(sysconf(Int32(_SC_PAGESIZE)))
    }

    static func run() {
        let body = SnapshotDocument.encode(Fixtures.snapshot(flagCount: 1000))
        let context = Fixtures.context
        let switches = (0..<1000).map { PluginSwitch(String(format: "plugin_switch_plain_%04d", $0)) }
        _ = switches

        // The decoded model alone, and compiled: what a client must keep at the least.
        var baseline = sy_live_bytes()
        var snapshot: Snapshot? = try! SnapshotDocument.decode(body)
        let model = sy_live_bytes() - baseline
        baseline = sy_live_bytes()
        var compiled: CompiledSnapshot? = CompiledSnapshot(snapshot!)
        let compiledBytes = sy_live_bytes() - baseline
        compiled = nil
        snapshot = nil
        _ = (compiled, snapshot)

        // Clients that downloaded the snapshot through their sync loop (no cache directory, no bundled bytes).
        var perClient: [Double] = []
        var residentPerClient: [Double] = []
        for count in [1, 10] {
            let before = sy_live_bytes()
            let residentBefore = residentBytes()
            var clients: [FlagClient] = []
            for _ in 0..<count {
                var configuration = FlagClient.Configuration(serverURL: URL(string: "http://127.0.0.1:9")!, namespace: "bench", token: "t",
                                                             context: context)
                configuration.snapshotTransport = OneSnapshotTransport(body)
                configuration.eventTransport = OneSnapshotTransport([])
                configuration.events.recordsExposures = false
                let client = FlagClient(configuration: configuration)
                let sync = Task.detached { await client.run() }
                while client.status.snapshot == nil { usleep(1000) }
                sync.cancel()
                let done = DispatchSemaphore(value: 0)
                Task.detached {
                    await sync.value
                    done.signal()
                }
                done.wait()
                // Read once through every switch, as an app does over time (slot tables extended).
                _ = client.isEnabled(PluginSwitch(Fixtures.plainKey))
                clients.append(client)
            }
            perClient.append(Double(sy_live_bytes() - before) / Double(count))
            residentPerClient.append(Double(residentBytes() - residentBefore) / Double(count))
            withExtendedLifetime(clients) {}
        }
        figure("snapshot document (bytes)", Double(body.count), "B")
        figure("decoded Snapshot model alone (live bytes)", Double(model), "B")
        figure("CompiledSnapshot alone (live bytes)", Double(compiledBytes), "B")
        figure("client holding the snapshot, 1 client (live bytes)", perClient[0], "B")
        figure("client holding the snapshot, per client of 10 (live bytes)", perClient[1], "B")
        figure("client holding the snapshot, per client of 10 (resident bytes)", residentPerClient[1], "B")
    }
}
