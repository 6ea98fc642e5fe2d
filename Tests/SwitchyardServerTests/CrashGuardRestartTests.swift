import Foundation
import HTTPTypes
import SwitchyardCore
import TestSupport
import Testing

/// The crash guard across a real flagsd process killed with SIGKILL in the middle of a window: the sessions
/// acknowledged before the kill still count after the restart, and only together with them do the sessions after
/// it trip the switch. The flagsd trusts its loopback peer as a proxy, and the sessions come in batches of 20 from
/// forwarded addresses, as a fleet's do.
struct CrashGuardRestartTests {
    static let adminToken = "crash-guard-restart-admin-0123456789"

    /// Posts sessions in batches of 20, each from its own forwarded address; every batch must be acknowledged.
    static func post(_ client: LiveClient, _ events: [JSONValue], firstAddress: Int) async throws {
        for (index, start) in stride(from: 0, to: events.count, by: 20).enumerated() {
            let response = try await client.send(
                "POST", "/v1/namespaces/rider/events", headers: ["X-Forwarded-For": "10.2.\(firstAddress + index).7"],
                body: CrashGuardTests.batch(Array(events[start..<min(start + 20, events.count)])))
            try #require(response.status == .ok, "\(response.text)")
        }
    }

    @Test func sessionsAcknowledgedBeforeASIGKILLCountTowardsATripAfterTheRestart() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
            "flagsd-guard-restart-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let database = folder.appendingPathComponent("flags.sqlite").path
        let promos = CrashGuardTests.promos

        // Built-in policy: 200 sessions and 10 crashes at least, 2 % at 99.9 %.
        let proxy = ["--trusted-proxies", "127.0.0.1"]
        var child = try ChildFlagsd(database: database, folder: folder, adminToken: Self.adminToken, arguments: proxy)
        defer { child.kill() }
        var admin = LiveClient(
            base: URL(string: "http://127.0.0.1:\(try await child.port())")!, token: Self.adminToken, timeout: 30)
        let created = try await admin.send(
            "POST", "/v1/namespaces",
            body: #"{"name": "rider", "reason_policy": "never", "flag_set": \#(Fixtures.riderJSON())}"#)
        try #require(created.status == .created, "\(created.text)")
        let issued = try await admin.send(
            "POST", "/v1/tokens", body: #"{"name": "rider-ios", "role": "client", "namespaces": ["rider"]}"#)
        let clientToken = try #require(issued.json["token"]?.stringValue, "\(issued.text)")

        // 150 sessions, 10 crashed: too few sessions to trip. Acknowledged, then flagsd is killed at once.
        var app = LiveClient(base: admin.base, token: clientToken, timeout: 30)
        try await Self.post(
            app, CrashGuardTests.sessions("before", count: 150, crashEvery: 15, switches: [promos]), firstAddress: 1)
        let quiet = try await admin.send("GET", "/v1/namespaces/rider/guard?switch=\(promos)")
        #expect(quiet.json["switches"]?[0]?["sessions"] == .int64(150))
        #expect(quiet.json["switches"]?[0]?["state"] == .string("watching"))
        child.kill()

        child = try ChildFlagsd(database: database, folder: folder, adminToken: Self.adminToken, arguments: proxy)
        let base = URL(string: "http://127.0.0.1:\(try await child.port())")!
        admin = LiveClient(base: base, token: Self.adminToken, timeout: 30)
        app = LiveClient(base: base, token: clientToken, timeout: 30)
        // 100 more, 10 crashed: not enough alone (100 sessions), enough with the 150 from before the kill.
        try await Self.post(
            app, CrashGuardTests.sessions("after", count: 100, crashEvery: 10, switches: [promos]), firstAddress: 101)

        var entries: [JSONValue] = []
        try await waitUntil("the restarted flagsd's guard trips") {
            entries =
                try await admin.send("GET", "/v1/audit?namespace=rider&source=crash-guard").json["entries"]?.arrayValue
                ?? []
            return !entries.isEmpty
        }
        let entry = try #require(entries.first, "the restarted flagsd's guard did not trip")
        #expect(entries.count == 1)
        #expect(entry["summary"] == .string("crash guard: disable \(promos) everywhere"))
        // The trip came as soon as the counts sufficed, after the third batch or later: always with the 150 sessions
        // from before the kill, as the 100 after it cannot trip alone.
        let sessions = try #require(entry["evidence"]?["sessions"]?.int64Value)
        #expect(sessions > 150 && sessions <= 250, "\(entry)")
        let flag = try await admin.send("GET", "/v1/namespaces/rider/flags/\(promos)")
        #expect(flag.json["disabled"] == .bool(true))
    }
}
