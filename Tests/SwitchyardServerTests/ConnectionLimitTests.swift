import Foundation
import HTTPTypes
import SwitchyardCore
import TestSupport
import Testing

@testable import SwitchyardServer

/// Idle and slow connections against the real server on loopback, over raw sockets: the header-read, idle and body
/// timeouts cut them on both HTTP paths (the snapshot fast path and the router), a parked long-poll outlives the idle
/// timeout, one address at its cap is refused while others are served, and at the connection cap the longest idle
/// connection makes room, or new connections are closed when none is idle, while real requests are still answered.
/// Clients connect from addresses of their own in 127.0.0.0/8.
///
/// Timeouts are short (a second) so the tests end soon; every wait is for an event (a response, a close) with the
/// raw connection's generous receive timeout, never a claim about how long something took.
struct ConnectionLimitTests {
    /// A live server's configuration with short timeouts (the ones a test is not about stay generous), and
    /// `/metrics` open to the raw connections that read the counters.
    static func configuration(
        idle: Duration = .seconds(120), header: Duration = .seconds(120), maximumConnections: Int = 16_384
    ) -> ServerConfiguration {
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
            try await Self.expectMetric(
                #"flagsd_connections_cut_total{reason="header_timeout"}"#, atLeast: 1, port: port)
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
            try await Self.expectMetric(
                #"flagsd_connections_cut_total{reason="header_timeout"}"#, atLeast: 1, port: port)
        }
    }

    @Test func anIdleConnectionIsCutAfterTheIdleTimeoutOnBothPaths() async throws {
        let app = try await TestApp.make()
        defer { app.close() }
        try await withLiveFlagsd(app, configuration: Self.configuration(idle: .seconds(1))) { server, port in
            let fast = try RawHTTPConnection(port: port)
            try fast.send(
                RawHTTPConnection.get(
                    "/v1/namespaces/rider/snapshot", headers: [("Authorization", "Bearer \(app.tokens["client"]!)")]))
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
            try stalled.send(
                "POST /v1/namespaces/rider/events HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer \(app.tokens["client"]!)\r\n"
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
        let tag = try #require(
            try await app.send(.get, "/v1/namespaces/rider/snapshot", token: "client").headers[.eTag])
        try await withLiveFlagsd(app, configuration: Self.configuration(idle: .seconds(1))) { server, port in
            let authorization = ("Authorization", "Bearer \(app.tokens["client"]!)")
            let fast = try RawHTTPConnection(port: port)
            try fast.send(
                RawHTTPConnection.get(
                    "/v1/namespaces/rider/snapshot?wait=4", headers: [authorization, ("If-None-Match", tag)]))
            let routed = try RawHTTPConnection(port: port)
            try routed.send(
                RawHTTPConnection.get("/v1/namespaces/rider/changes?after=1&wait=4", headers: [authorization]))

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

    /// Waits for a response and says whether it is a 200.
    static func served(_ connection: RawHTTPConnection, _ request: String) async throws -> Bool {
        try connection.send(request)
        return try await connection.readResponse().status == .ok
    }

    /// One address at its cap is refused a next connection, while another connects and is served; once one of the
    /// first address's connections closes, it connects again.
    @Test func anAddressAtItsCapIsRefusedWhileAnotherAddressIsServed() async throws {
        let app = try await TestApp.make()
        defer { app.close() }
        var configuration = Self.configuration()
        configuration.maximumConnectionsPerAddress = 5
        try await withLiveFlagsd(app, configuration: configuration) { server, port in
            let snapshot = RawHTTPConnection.get(
                "/v1/namespaces/rider/snapshot", headers: [("Authorization", "Bearer \(app.tokens["client"]!)")])
            var held: [RawHTTPConnection] = []
            for index in 0..<5 {
                let connection = try RawHTTPConnection(port: port, source: "127.0.0.2")
                #expect(
                    try await Self.served(
                        connection, index.isMultiple(of: 2) ? snapshot : RawHTTPConnection.get("/healthz")))
                held.append(connection)
            }

            // A sixth from the same address is closed at once, without an answer.
            let refused = try RawHTTPConnection(port: port, source: "127.0.0.2")
            try? refused.send(snapshot)
            #expect(try await refused.isClosedByServer())

            // Another address connects and is served, on both paths.
            let other = try RawHTTPConnection(port: port, source: "127.0.0.3")
            #expect(try await Self.served(other, snapshot))
            #expect(try await Self.served(other, RawHTTPConnection.get("/healthz")))
            // The first address's connections are still answered.
            #expect(try await Self.served(held[0], snapshot))

            // Once one of its connections closes, the first address connects again.
            held.removeLast().reset()
            try await waitUntil("the server counts the closed connection out") { server.connections.openCount == 5 }
            let again = try RawHTTPConnection(port: port, source: "127.0.0.2")
            #expect(try await Self.served(again, RawHTTPConnection.get("/healthz")))

            try other.send(RawHTTPConnection.get("/metrics"))
            let metrics = try await other.readResponse()
            #expect(metrics.status == .ok)
            #expect(
                metrics.text.contains(#"flagsd_connections_refused_total{reason="address_cap"} 1"#), "\(metrics.text)")
            #expect(
                metrics.text.contains(#"flagsd_connections_refused_total{reason="connection_cap"} 0"#),
                "\(metrics.text)")
            #expect(metrics.text.contains("flagsd_connections_open 6"), "\(metrics.text)")
        }
    }

    /// A load balancer carries many clients over its connections: a trusted proxy is not capped per address, while
    /// an untrusted address is.
    @Test func aTrustedProxyIsNotCappedPerAddress() async throws {
        let app = try await TestApp.make()
        defer { app.close() }
        var configuration = Self.configuration()
        configuration.maximumConnectionsPerAddress = 2
        configuration.trustedProxies = try TrustedProxies(parsing: "127.0.0.2")
        try await withLiveFlagsd(app, configuration: configuration) { _, port in
            var held: [RawHTTPConnection] = []
            for _ in 0..<6 {
                let proxied = try RawHTTPConnection(port: port, source: "127.0.0.2")
                #expect(try await Self.served(proxied, RawHTTPConnection.get("/healthz")))
                held.append(proxied)
            }
            for _ in 0..<2 {
                let direct = try RawHTTPConnection(port: port, source: "127.0.0.3")
                #expect(try await Self.served(direct, RawHTTPConnection.get("/healthz")))
                held.append(direct)
            }
            let refused = try RawHTTPConnection(port: port, source: "127.0.0.3")
            try? refused.send(RawHTTPConnection.get("/healthz"))
            #expect(try await refused.isClosedByServer())
            // Every connection of the proxy is still answered.
            for proxied in held.prefix(6) {
                #expect(try await Self.served(proxied, RawHTTPConnection.get("/healthz")))
            }
        }
    }

    /// The attack the per-address cap does not stop alone: idle connections from many addresses fill the server. At
    /// the cap, a new client takes the place of the connection idle longest, and the busy ones are kept.
    @Test func atTheCapTheLongestIdleConnectionMakesRoomForANewClient() async throws {
        let app = try await TestApp.make()
        defer { app.close() }
        try await withLiveFlagsd(app, configuration: Self.configuration(maximumConnections: 3)) { server, port in
            let snapshot = RawHTTPConnection.get(
                "/v1/namespaces/rider/snapshot", headers: [("Authorization", "Bearer \(app.tokens["client"]!)")])
            // The longest idle: open, no request sent.
            let silent = try RawHTTPConnection(port: port, source: "127.0.0.2")
            try await waitUntil("the server counts the first connection in") { server.connections.openCount == 1 }
            // Idle since their answers, which come after the first one opened.
            let fast = try RawHTTPConnection(port: port, source: "127.0.0.2")
            #expect(try await Self.served(fast, snapshot))
            let routed = try RawHTTPConnection(port: port, source: "127.0.0.2")
            #expect(try await Self.served(routed, RawHTTPConnection.get("/healthz")))

            let newcomer = try RawHTTPConnection(port: port, source: "127.0.0.3")
            #expect(try await Self.served(newcomer, snapshot))
            #expect(try await silent.isClosedByServer())
            #expect(try await Self.served(fast, snapshot))
            #expect(try await Self.served(routed, RawHTTPConnection.get("/healthz")))

            try newcomer.send(RawHTTPConnection.get("/metrics"))
            let metrics = try await newcomer.readResponse()
            #expect(metrics.status == .ok)
            #expect(metrics.text.contains(#"flagsd_connections_cut_total{reason="evicted_idle"} 1"#), "\(metrics.text)")
            #expect(
                metrics.text.contains(#"flagsd_connections_refused_total{reason="connection_cap"} 0"#),
                "\(metrics.text)")
            #expect(metrics.text.contains("flagsd_connections_open 3"), "\(metrics.text)")
            #expect(metrics.text.contains("flagsd_connections_max 3"), "\(metrics.text)")
        }
    }

    /// At the cap with every connection answering a request (parked long-polls, on both paths), a new connection is
    /// closed at once, and the parked ones are kept; once one closes, a new connection is answered.
    @Test func atTheCapWithEveryConnectionBusyNewConnectionsAreClosed() async throws {
        let app = try await TestApp.make()
        defer { app.close() }
        let tag = try #require(
            try await app.send(.get, "/v1/namespaces/rider/snapshot", token: "client").headers[.eTag])
        try await withLiveFlagsd(app, configuration: Self.configuration(maximumConnections: 3)) { server, port in
            let authorization = ("Authorization", "Bearer \(app.tokens["client"]!)")
            var parked: [RawHTTPConnection] = []
            for index in 0..<3 {
                let connection = try RawHTTPConnection(port: port, source: "127.0.0.2")
                try connection.send(
                    index == 0
                        ? RawHTTPConnection.get(
                            "/v1/namespaces/rider/changes?after=1&wait=300", headers: [authorization])
                        : RawHTTPConnection.get(
                            "/v1/namespaces/rider/snapshot?wait=300", headers: [authorization, ("If-None-Match", tag)]))
                parked.append(connection)
            }
            try await waitUntil("the three long-polls park") { server.context.hub.waiterCount == 3 }

            let refused = try RawHTTPConnection(port: port, source: "127.0.0.3")
            try? refused.send(RawHTTPConnection.get("/healthz"))
            #expect(try await refused.isClosedByServer())
            #expect(server.connections.openCount == 3)
            #expect(server.context.hub.waiterCount == 3)

            parked.removeFirst().reset()
            try await waitUntil("the server counts the closed connection out") { server.connections.openCount == 2 }
            let admitted = try RawHTTPConnection(port: port, source: "127.0.0.3")
            try admitted.send(RawHTTPConnection.get("/metrics"))
            let metrics = try await admitted.readResponse()
            #expect(metrics.status == .ok)
            #expect(
                metrics.text.contains(#"flagsd_connections_refused_total{reason="connection_cap"} 1"#),
                "\(metrics.text)")
            #expect(metrics.text.contains(#"flagsd_connections_cut_total{reason="evicted_idle"} 0"#), "\(metrics.text)")
            #expect(metrics.text.contains("flagsd_connections_open 3"), "\(metrics.text)")
        }
    }
}
