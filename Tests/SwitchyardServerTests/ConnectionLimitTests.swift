import Foundation
import HTTPTypes
import SwitchyardCore
@testable import SwitchyardServer
import TestSupport
import Testing

/// Idle and slow connections against the real server on loopback, over raw sockets: the header-read, idle and body
/// timeouts cut them on both HTTP paths (the snapshot fast path and the router), a parked long-poll outlives the idle
/// timeout, and past the connection cap new connections are closed while real requests are still answered.
///
/// Timeouts are short (a second) so the tests end soon; every wait is for an event (a response, a close) with the
/// raw connection's generous receive timeout, never a claim about how long something took.
struct ConnectionLimitTests {
    /// A live server's configuration with short timeouts (the ones a test is not about stay generous), and
    /// `/metrics` open to the raw connections that read the counters.
    static func configuration(idle: Duration = .seconds(120), header: Duration = .seconds(120), maximumConnections: Int = 16_384) -> ServerConfiguration {
        var configuration = freshTokenCacheConfiguration()
        configuration.openMetrics = true
        configuration.idleTimeout = idle
        configuration.headerTimeout = header
        configuration.maximumConnections = maximumConnections
        return configuration
    }

    /// Waits until a series of the server's `/metrics` reaches a value. Retried: with one-second timeouts, a busy
    /// machine may cut the very connection that asks (and the connections asking add to the idle count).
    static func expectMetric(_ series: String, atLeast expected: Double, port: Int) async throws {
        let client = LiveClient(base: URL(string: "http://127.0.0.1:\(port)")!, token: nil)
        try await waitUntil("/metrics shows \(series) ≥ \(expected)") {
            let text = try await client.send("GET", "/metrics").text
            let line = text.split(separator: "\n").first { $0.hasPrefix(series + " ") }
            return line.flatMap { Double($0.dropFirst(series.count + 1)) }.map { $0 >= expected } ?? false
        }
    }

    @Test func aConnectionThatNeverSendsAHeadIsCutAfterTheHeaderTimeout() async throws {
        let app = try await TestApp.make()
        defer { app.close() }
        try await withLiveFlagsd(app, configuration: Self.configuration(header: .seconds(1))) { _, port in
            let silent = try RawHTTPConnection(port: port)
            #expect(try await silent.isClosedByServer())
            try await Self.expectMetric(#"flagsd_connections_cut_total{reason="header_timeout"}"#, atLeast: 1, port: port)
        }
    }

    @Test func aHeadSentAByteAtATimeIsCutAfterTheHeaderTimeout() async throws {
        let app = try await TestApp.make()
        defer { app.close() }
        try await withLiveFlagsd(app, configuration: Self.configuration(header: .seconds(1))) { _, port in
            let slow = try RawHTTPConnection(port: port)
            try slow.send("GET /v1/namespaces/rider/snapshot HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
            // The attack: a byte every 100 ms, each one well within any per-byte timeout, for as long as the
            // server keeps the connection (at most a minute: a server that never cuts fails below).
            for _ in 0..<600 {
                do { try slow.send("a") } catch { break }
                try await Task.sleep(for: .milliseconds(100))
            }
            #expect(try await slow.isClosedByServer())
            try await Self.expectMetric(#"flagsd_connections_cut_total{reason="header_timeout"}"#, atLeast: 1, port: port)
        }
    }

    @Test func anIdleConnectionIsCutAfterTheIdleTimeoutOnBothPaths() async throws {
        let app = try await TestApp.make()
        defer { app.close() }
        try await withLiveFlagsd(app, configuration: Self.configuration(idle: .seconds(1))) { server, port in
            let fast = try RawHTTPConnection(port: port)
            try fast.send(RawHTTPConnection.get("/v1/namespaces/rider/snapshot", headers: [("Authorization", "Bearer \(app.tokens["client"]!)")]))
            #expect(try await fast.readResponse().status == .ok)
            #expect(server.snapshotFastPath.answeredCount == 1)
            let routed = try RawHTTPConnection(port: port)
            try routed.send(RawHTTPConnection.get("/healthz"))
            #expect(try await routed.readResponse().status == .ok)

            #expect(try await fast.isClosedByServer())
            #expect(try await routed.isClosedByServer())
            try await Self.expectMetric(#"flagsd_connections_cut_total{reason="idle_timeout"}"#, atLeast: 2, port: port)
        }
    }

    @Test func aBodyThatStopsComingIsCutAfterTheIdleTimeout() async throws {
        let app = try await TestApp.make()
        defer { app.close() }
        try await withLiveFlagsd(app, configuration: Self.configuration(idle: .seconds(1))) { _, port in
            let stalled = try RawHTTPConnection(port: port)
            try stalled.send("POST /v1/namespaces/rider/events HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer \(app.tokens["client"]!)\r\n"
                + "Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"events\": [")
            #expect(try await stalled.isClosedByServer())
            try await Self.expectMetric(#"flagsd_connections_cut_total{reason="body_timeout"}"#, atLeast: 1, port: port)
        }
    }

    /// A long-poll parked longer than the idle timeout is answered at the end of its wait, on either path; the
    /// connection is cut only once it idles after the answer.
    @Test func aParkedLongPollOutlivesTheIdleTimeoutOnBothPaths() async throws {
        let app = try await TestApp.make()
        defer { app.close() }
        let tag = try #require(try await app.send(.get, "/v1/namespaces/rider/snapshot", token: "client").headers[.eTag])
        try await withLiveFlagsd(app, configuration: Self.configuration(idle: .seconds(1))) { server, port in
            let authorization = ("Authorization", "Bearer \(app.tokens["client"]!)")
            let fast = try RawHTTPConnection(port: port)
            try fast.send(RawHTTPConnection.get("/v1/namespaces/rider/snapshot?wait=4", headers: [authorization, ("If-None-Match", tag)]))
            let routed = try RawHTTPConnection(port: port)
            try routed.send(RawHTTPConnection.get("/v1/namespaces/rider/changes?after=1&wait=4", headers: [authorization]))

            #expect(try await fast.readResponse().status == .notModified)
            #expect(server.snapshotFastPath.answeredCount == 1)
            let changes = try await routed.readResponse()
            #expect(changes.status == .ok)
            #expect(changes.json["changes"] == .array([]))

            #expect(try await fast.isClosedByServer())
            #expect(try await routed.isClosedByServer())
            try await Self.expectMetric(#"flagsd_connections_cut_total{reason="idle_timeout"}"#, atLeast: 2, port: port)
        }
    }

    @Test func pastTheCapNewConnectionsAreClosedAndRealRequestsAreStillAnswered() async throws {
        let app = try await TestApp.make()
        defer { app.close() }
        try await withLiveFlagsd(app, configuration: Self.configuration(maximumConnections: 3)) { server, port in
            let snapshot = RawHTTPConnection.get("/v1/namespaces/rider/snapshot", headers: [("Authorization", "Bearer \(app.tokens["client"]!)")])
            var open: [RawHTTPConnection] = []
            for _ in 0..<3 {
                let connection = try RawHTTPConnection(port: port)
                try connection.send(snapshot)
                #expect(try await connection.readResponse().status == .ok)
                open.append(connection)
            }
            #expect(server.connections.openCount == 3)

            // A fourth connection is closed at once, without an answer.
            let refused = try RawHTTPConnection(port: port)
            try? refused.send(snapshot)
            #expect(try await refused.isClosedByServer())

            // The open connections are still answered, on both paths.
            try open[0].send(snapshot)
            #expect(try await open[0].readResponse().status == .ok)
            try open[1].send(RawHTTPConnection.get("/healthz"))
            #expect(try await open[1].readResponse().status == .ok)

            // Once one closes, a new connection is answered.
            open.removeLast().reset()
            try await waitUntil("the server counts the closed connection out") { server.connections.openCount == 2 }
            let admitted = try RawHTTPConnection(port: port)
            try admitted.send(RawHTTPConnection.get("/metrics"))
            let metrics = try await admitted.readResponse()
            #expect(metrics.status == .ok)
            #expect(metrics.text.contains("flagsd_connections_refused_total 1"), "\(metrics.text)")
            #expect(metrics.text.contains("flagsd_connections_max 3"), "\(metrics.text)")
            #expect(metrics.text.contains("flagsd_connections_open 3"), "\(metrics.text)")
        }
    }
}
