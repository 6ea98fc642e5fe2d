import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import SwitchyardClient
import SwitchyardCore

/// Flips `plugin_switch_map_traffic` on a live flagsd (namespace `rider`, seeded from Flags/) and times how long
/// each change takes to be visible in clients following it with the real client runtime (long-poll, URLSession).
enum PropagationFigures {
    static let key = "plugin_switch_map_traffic"

    static func run(server: URL, token: String, rounds: Int, clients count: Int) async {
        let traffic = PluginSwitch(key)
        var clients: [FlagClient] = []
        var syncs: [Task<Void, Never>] = []
        for index in 0..<count {
            var configuration = FlagClient.Configuration(serverURL: server, namespace: "rider", token: token,
                                                         context: EvaluationContext(unitId: "bench-\(index)", city: "lagos",
                                                                                    appVersion: "5.12.0", platform: "ios"))
            configuration.longPollWait = .seconds(25)
            configuration.events.recordsExposures = false
            let client = FlagClient(configuration: configuration)
            clients.append(client)
            syncs.append(Task.detached { await client.run() })
        }
        defer { for sync in syncs { sync.cancel() } }
        let session = URLSession(configuration: .ephemeral)
        // Every client live first.
        while clients.contains(where: { $0.status.snapshot?.origin != .server }) { try? await Task.sleep(for: .milliseconds(10)) }

        var first: [Double] = [], last: [Double] = [], roundTrips: [Double] = []
        var enabled = clients[0].isEnabled(traffic)
        for round in 0..<rounds {
            // Let every client park its next long-poll (successes are at least a second apart by default).
            try? await Task.sleep(for: .milliseconds(1200 + Int64(round % 5) * 100))
            let action = enabled ? "disable" : "enable"
            var request = URLRequest(url: server.appendingPathComponent("v1/namespaces/rider/flags/\(key)/\(action)"))
            request.httpMethod = "POST"
            request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
            request.httpBody = Data(#"{"reason": "propagation benchmark"}"#.utf8)
            let start = Date()
            guard let (data, response) = try? await session.data(for: request), (response as? HTTPURLResponse)?.statusCode == 200 else {
                FileHandle.standardError.write(Data("the \(action) request failed\n".utf8))
                exit(1)
            }
            let acknowledged = Date()
            _ = data
            enabled.toggle()
            var seen = [Double?](repeating: nil, count: clients.count)
            while seen.contains(where: { $0 == nil }) {
                for (index, client) in clients.enumerated() where seen[index] == nil && client.isEnabled(traffic) == enabled {
                    seen[index] = Date().timeIntervalSince(start)
                }
                if Date().timeIntervalSince(start) > 30 {
                    FileHandle.standardError.write(Data("a client did not see the change within 30 s\n".utf8))
                    exit(1)
                }
                await Task.yield()
            }
            let times = seen.compactMap { $0 }
            first.append(times.min()! * 1000)
            last.append(times.max()! * 1000)
            roundTrips.append(acknowledged.timeIntervalSince(start) * 1000)
        }
        figure("change round trip (POST, acknowledged), p50 (ms)", percentile(roundTrips, 0.5), "ms")
        figure("change visible, first of \(count) client(s), p50 (ms)", percentile(first, 0.5), "ms")
        figure("change visible, first of \(count) client(s), p90 (ms)", percentile(first, 0.9), "ms")
        figure("change visible, last of \(count) client(s), p50 (ms)", percentile(last, 0.5), "ms")
        figure("change visible, last of \(count) client(s), p90 (ms)", percentile(last, 0.9), "ms")
        figure("change visible, last of \(count) client(s), max (ms)", last.max() ?? .nan, "ms")
    }
}
