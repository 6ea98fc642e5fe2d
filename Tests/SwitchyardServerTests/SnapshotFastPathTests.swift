import Foundation
import HTTPTypes
import Hummingbird
import LiveFlagsdSupport
import Logging
import Prometheus
import ServiceLifecycle
import SwitchyardCore
import SwitchyardSQLite
import SwitchyardStorage
import TestSupport
import Testing

@testable import SwitchyardServer

/// The snapshot fast path (`SnapshotFastPathHandler`) on the real server over loopback: it answers exactly as the
/// router does, hands the router what it does not own, keeps pipelined responses in order, counts its requests in
/// the same metrics, and lets go of parked requests whose connection closed.
struct SnapshotFastPathTests {
    /// Requests sent both to the live server and to the router in-process; `fast` when the fast path owns them.
    struct Case: Sendable, CustomStringConvertible {
        let target: String
        let token: String?
        let headers: [(String, String)]
        let fast: Bool

        var description: String { "\(target) token=\(token ?? "none") \(headers)" }
    }

    @Test func itAnswersExactlyAsTheRouterDoesAndLeavesItTheRest() async throws {
        let app = try await TestApp.make()
        defer { app.close() }
        let tag = try #require(
            try await app.send(.get, "/v1/namespaces/rider/snapshot", token: "client").headers[.eTag])
        let snapshot = "/v1/namespaces/rider/snapshot"
        let cases = [
            Case(target: snapshot, token: "client", headers: [], fast: true),
            Case(target: snapshot, token: "client", headers: [("Accept-Encoding", "gzip, deflate")], fast: true),
            Case(target: snapshot, token: "client", headers: [("Accept-Encoding", "br;q=1, gzip;q=0")], fast: true),
            Case(target: snapshot, token: "client", headers: [("If-None-Match", tag)], fast: true),
            Case(
                target: snapshot, token: "client",
                headers: [("If-None-Match", "W/\(tag)"), ("Accept-Encoding", "gzip")], fast: true),
            Case(
                target: snapshot + "?wait=30", token: "client", headers: [("If-None-Match", "\"other.1\"")], fast: true),
            Case(target: snapshot + "?wait=0", token: "rider-client", headers: [("If-None-Match", tag)], fast: true),
            Case(target: snapshot + "?wait=abc", token: "client", headers: [], fast: true),
            Case(target: "/v1/namespaces/nope/snapshot", token: "client", headers: [], fast: true),
            Case(target: snapshot, token: "admin", headers: [], fast: true),
            Case(target: snapshot, token: nil, headers: [], fast: false),
            Case(target: snapshot, token: "not-a-token", headers: [], fast: false),
            Case(target: snapshot, token: "revoked", headers: [], fast: false),
            Case(target: snapshot, token: "other-editor", headers: [], fast: false),
            Case(target: "/v1/namespaces/%72ider/snapshot", token: "client", headers: [], fast: false),
            Case(
                target: "/v1/namespaces/%72ider/snapshot", token: "client", headers: [("If-None-Match", tag)],
                fast: false),
            Case(target: "/v1/namespaces/rider/snapshot/", token: "client", headers: [], fast: false),
            Case(target: "/v1/namespaces/rider/changes", token: "client", headers: [], fast: false),
        ]
        try await withLiveFlagsd(app) { server, port in
            let connection = try RawHTTPConnection(port: port)
            for (index, testCase) in cases.enumerated() {
                var headers = testCase.headers
                headers.append(("X-Request-Id", "case-\(index)"))
                if let token = testCase.token {
                    headers.append(("Authorization", "Bearer \(app.tokens[token] ?? token)"))
                }
                let answeredBefore = server.snapshotFastPath.answeredCount
                try connection.send(RawHTTPConnection.get(testCase.target, headers: headers))
                let live = try await connection.readResponse()
                #expect(
                    server.snapshotFastPath.answeredCount - answeredBefore == (testCase.fast ? 1 : 0), "\(testCase)")

                var fields = HTTPFields()
                for (name, value) in headers { fields.append(HTTPField(name: HTTPField.Name(name)!, value: value)) }
                let routed = try await app.send(.get, testCase.target, headers: fields)
                #expect(live.status == routed.status, "\(testCase)")
                #expect(live.body == routed.body, "\(testCase)")
                // The same headers in the same order; the application adds Date and Server to every response, and
                // NIO's encoder leaves a 304's Content-Length off the wire (on both paths: see the %72ider case).
                let expected = routed.headers.filter { routed.status != .notModified || $0.name != .contentLength }
                #expect(
                    Array(live.headers.filter { $0.name != .date && $0.name != .server }) == Array(expected),
                    "\(testCase)")
                #expect(live.headers[.server] == "flagsd")
                #expect(
                    live.headers[.date].flatMap { Self.imfFixdate().date(from: $0) } != nil,
                    "Date: \(live.headers[.date] ?? "")")
            }
        }
    }

    @Test func aParkedRequestIsAnsweredOnItsConnectionAndPipelinedRequestsFollowInOrder() async throws {
        let app = try await TestApp.make()
        defer { app.close() }
        let tag = try #require(
            try await app.send(.get, "/v1/namespaces/rider/snapshot", token: "client").headers[.eTag])
        let auth = ("Authorization", "Bearer \(app.tokens["client"]!)")
        try await withLiveFlagsd(app) { server, port in
            let connection = try RawHTTPConnection(port: port)
            // A long-poll, a request for the router and a plain snapshot GET, pipelined behind it.
            try connection.send(
                RawHTTPConnection.get("/v1/namespaces/rider/snapshot?wait=60", headers: [auth, ("If-None-Match", tag)])
                    + RawHTTPConnection.get("/healthz")
                    + RawHTTPConnection.get(
                        "/v1/namespaces/rider/snapshot", headers: [auth, ("Accept-Encoding", "gzip")]))
            try await waitUntil { server.context.hub.waiterCount == 1 }
            let change = try await LiveClient(
                base: URL(string: "http://127.0.0.1:\(port)")!, token: app.tokens["editor"]
            )
            .send("POST", "/v1/namespaces/rider/flags/plugin_switch_map_traffic/rollout", body: #"{"rollout": 4200}"#)
            #expect(change.status == .ok)
            let woken = try await connection.readResponse()
            #expect(woken.status == .ok)
            let decoded = try SnapshotDocument.decode(woken.body)
            #expect(decoded.version == 2)
            #expect(woken.headers[.eTag] == decoded.entityTag)
            let health = try await connection.readResponse()
            #expect(health.status == .ok)
            #expect(health.json["status"] == .string("ok"))
            let plain = try await connection.readResponse()
            #expect(plain.headers[.contentEncoding] == "gzip")
            #expect(try SnapshotDocument.decode(Gzip.decompress(plain.body)).version == 2)
            #expect(server.context.hub.waiterCount == 0)
            // The connection stays usable, on either path.
            try connection.send(
                RawHTTPConnection.get(
                    "/v1/namespaces/rider/snapshot", headers: [auth, ("If-None-Match", decoded.entityTag)]))
            #expect(try await connection.readResponse().status == .notModified)
        }
    }

    @Test func aParkedRequestIsWokenInTheEncodingItAskedForWithItsOwnRequestID() async throws {
        let app = try await TestApp.make()
        defer { app.close() }
        let tag = try #require(
            try await app.send(.get, "/v1/namespaces/rider/snapshot", token: "client").headers[.eTag])
        let auth = ("Authorization", "Bearer \(app.tokens["client"]!)")
        try await withLiveFlagsd(app) { server, port in
            // A parked request keeps its Accept-Encoding's answer, not the request: each must still get its own.
            let encodings = ["gzip", "br;q=1, gzip;q=0", "deflate, x-gzip"]
            var connections: [RawHTTPConnection] = []
            for (index, encoding) in encodings.enumerated() {
                let connection = try RawHTTPConnection(port: port)
                try connection.send(
                    RawHTTPConnection.get(
                        "/v1/namespaces/rider/snapshot?wait=60",
                        headers: [
                            auth, ("If-None-Match", tag), ("Accept-Encoding", encoding),
                            ("X-Request-Id", "parked-\(index)"),
                        ]))
                connections.append(connection)
            }
            try await waitUntil { server.context.hub.waiterCount == encodings.count }
            let answeredBefore = server.snapshotFastPath.answeredCount
            let change = try await LiveClient(
                base: URL(string: "http://127.0.0.1:\(port)")!, token: app.tokens["editor"]
            )
            .send("POST", "/v1/namespaces/rider/flags/plugin_switch_map_traffic/rollout", body: #"{"rollout": 4300}"#)
            #expect(change.status == .ok)
            for (index, connection) in connections.enumerated() {
                let woken = try await connection.readResponse()
                #expect(woken.status == .ok)
                #expect(woken.headers[.requestID] == "parked-\(index)")
                let gzip = index != 1
                #expect(woken.headers[.contentEncoding] == (gzip ? "gzip" : nil), "\(encodings[index])")
                let document = try SnapshotDocument.decode(gzip ? Gzip.decompress(woken.body) : woken.body)
                #expect(document.version == 2)
                #expect(woken.headers[.eTag] == document.entityTag)
            }
            #expect(server.snapshotFastPath.answeredCount - answeredBefore == encodings.count)
        }
    }

    @Test func aParkedRequestWhoseConnectionIsResetLeavesTheHubAtOnce() async throws {
        let app = try await TestApp.make()
        defer { app.close() }
        let tag = try #require(
            try await app.send(.get, "/v1/namespaces/rider/snapshot", token: "client").headers[.eTag])
        try await withLiveFlagsd(app) { server, port in
            let connection = try await parkedSnapshotRequest(app, server, port: port, tag: tag)
            connection.reset()
            // Well before the 60 s wait ends. (A client that only closes its sending side may still want the
            // answer, as HTTP allows, so end of input alone keeps the request parked, as on the router.)
            try await waitUntil { server.context.hub.waiterCount == 0 }
        }
    }

    @Test func aHalfClosedClientGetsItsAnswerBeforeTheConnectionCloses() async throws {
        let app = try await TestApp.make()
        defer { app.close() }
        let tag = try #require(
            try await app.send(.get, "/v1/namespaces/rider/snapshot", token: "client").headers[.eTag])
        try await withLiveFlagsd(app) { server, port in
            let connection = try await parkedSnapshotRequest(app, server, port: port, tag: tag)
            connection.shutdownWriting()
            _ = try await LiveClient(base: URL(string: "http://127.0.0.1:\(port)")!, token: app.tokens["editor"])
                .send("POST", "/v1/namespaces/rider/flags/plugin_switch_map_traffic/disable")
            let response = try await connection.readResponse()
            #expect(response.status == .ok)
            #expect(try SnapshotDocument.decode(response.body).version == 2)
            #expect(try await connection.isClosedByServer())
        }
    }

    @Test func aClientThatHalfClosesAfterPollsGetsEveryAnswerBeforeTheConnectionCloses() async throws {
        let app = try await TestApp.make()
        defer { app.close() }
        try await withLiveFlagsd(app) { server, port in
            // Far more answer bytes than the sockets hold while this side does not read, then the end of input:
            // the connection closes only after the last answer went out (a close as soon as the end of input is read
            // would drop answers still waiting in flagsd).
            let connection = try RawHTTPConnection(port: port, receiveBuffer: 4096)
            let poll = try clientPoll(app)
            let polls = 2_000
            try connection.send(String(repeating: poll, count: polls))
            connection.shutdownWriting()
            var bytes = 0
            for _ in 0..<polls {
                let response = try await connection.readResponse()
                #expect(response.status == .ok)
                bytes += response.body.count
            }
            #expect(bytes > 2_000_000, "the answers are too small to wait in flagsd: \(bytes) bytes")
            #expect(server.snapshotFastPath.answeredCount == polls)
            #expect(try await connection.isClosedByServer())
        }
    }

    @Test func connectionCloseIsLeftToTheRouterWhichCloses() async throws {
        let app = try await TestApp.make()
        defer { app.close() }
        try await withLiveFlagsd(app) { server, port in
            let connection = try RawHTTPConnection(port: port)
            try connection.send(
                RawHTTPConnection.get(
                    "/v1/namespaces/rider/snapshot",
                    headers: [("Authorization", "Bearer \(app.tokens["client"]!)"), ("Connection", "close")]))
            #expect(try await connection.readResponse().status == .ok)
            #expect(try await connection.isClosedByServer())
            #expect(server.snapshotFastPath.answeredCount == 0)
        }
    }

    // A connection's router side (Hummingbird's request loop) starts only when the fast path hands it something
    // (`RouterSide`): what only the router side did for a connection the fast path alone served must still happen,
    // with the idle and header timeouts (which would close the connection anyway) far away.

    static func farIdleTimeout() -> ServerConfiguration {
        var configuration = freshTokenCacheConfiguration()
        configuration.idleTimeout = .seconds(600)
        configuration.headerTimeout = .seconds(600)
        return configuration
    }

    @Test func aConnectionTheFastPathAloneServedIsClosedAtItsEndOfInput() async throws {
        let app = try await TestApp.make()
        defer { app.close() }
        try await withLiveFlagsd(app, configuration: Self.farIdleTimeout()) { server, port in
            let connection = try await snapshotAnsweredByTheFastPath(app, server, port: port)
            connection.shutdownWriting()
            #expect(try await connection.isClosedByServer())
        }
    }

    @Test func bytesThatAreNotHTTPAfterAFastPathAnswerGet400AndTheConnectionCloses() async throws {
        let app = try await TestApp.make()
        defer { app.close() }
        try await withLiveFlagsd(app, configuration: Self.farIdleTimeout()) { server, port in
            let connection = try await snapshotAnsweredByTheFastPath(app, server, port: port)
            try connection.send("NOT HTTP AT ALL\r\n\r\n")
            #expect(try await connection.readResponse().status == .badRequest)
            #expect(try await connection.isClosedByServer())
        }
    }

    @Test func aGracefulShutdownClosesAConnectionTheFastPathAloneServed() async throws {
        let app = try await TestApp.make()
        defer { app.close() }
        let (ports, continuation) = AsyncStream<Int>.makeStream()
        let server = try await buildApplication(
            configuration: freshTokenCacheConfiguration(), store: app.store, logger: app.logger
        ) { continuation.yield($0) }
        let group = ServiceGroup(configuration: .init(services: [server], logger: app.logger))
        let running = Task { try await group.run() }
        let port = try #require(await ports.first { _ in true })
        let connection = try await snapshotAnsweredByTheFastPath(app, server, port: port)
        await group.triggerGracefulShutdown()
        #expect(try await connection.isClosedByServer())
        // A liveness deadline: the service ends once its connections are closed.
        try await withDeadline(.seconds(60)) { try await running.value }
    }

    @Test func connectionsTheFastPathAloneServedCloseWithoutARouterLoop() async throws {
        let app = try await TestApp.make()
        defer { app.close() }
        try await withLiveFlagsd(app, configuration: Self.farIdleTimeout()) { server, port in
            var connections: [RawHTTPConnection] = []
            for index in 0..<5 {
                connections.append(
                    try await snapshotAnsweredByTheFastPath(app, server, port: port, answeredBefore: index))
            }
            try await waitUntil("each connection's task ended") { server.routerLoops.leftCount == 5 }
            for connection in connections.prefix(2) { connection.reset() }  // as a client whose process died
            connections.removeAll()  // the others closed by the client
            try await waitUntil("flagsd saw them closed") { server.connections.openCount == 0 }
            #expect(server.routerLoops.launchedCount == 0)
        }
    }

    @Test func aRouterRequestAfterFastPathAnswersIsServedByALateRouterLoop() async throws {
        let app = try await TestApp.make()
        defer { app.close() }
        try await withLiveFlagsd(app, configuration: Self.farIdleTimeout()) { server, port in
            let connection = try await snapshotAnsweredByTheFastPath(app, server, port: port)
            try await waitUntil("the connection's task ended") { server.routerLoops.leftCount == 1 }
            for _ in 0..<2 {
                try connection.send(RawHTTPConnection.get("/healthz"))
                #expect(try await connection.readResponse().status == .ok)
            }
            #expect(server.routerLoops.launchedCount == 1)
            // The fast path goes on answering polls on the connection beside its router loop.
            try connection.send(try clientPoll(app))
            #expect(try await connection.readResponse().status == .ok)
            #expect(server.snapshotFastPath.answeredCount == 2)
        }
    }

    @Test func cancellingTheServiceClosesAConnectionWithAParkedPollAndEnds() async throws {
        let app = try await TestApp.make()
        defer { app.close() }
        let (ports, continuation) = AsyncStream<Int>.makeStream()
        let server = try await buildApplication(
            configuration: Self.farIdleTimeout(), store: app.store, logger: app.logger
        ) { continuation.yield($0) }
        let running = Task { try await server.run() }
        let port = try #require(await ports.first { _ in true })
        let tag = try #require(
            try await app.send(.get, "/v1/namespaces/rider/snapshot", token: "client").headers[.eTag])
        let connection = try await parkedSnapshotRequest(app, server, port: port, tag: tag)
        try await waitUntil("the connection's task ended") { server.routerLoops.leftCount == 1 }
        // Not a graceful shutdown: the connection has no task to cancel.
        running.cancel()
        // The hub, cancelled too, may answer the parked poll first.
        _ = try? await connection.readResponse()
        #expect(try await connection.isClosedByServer())
        // A liveness deadline: the service ends once its connections are closed.
        try await withDeadline(.seconds(60)) { _ = try? await running.value }
    }

    @Test func aDeletedNamespaceAnswersItsParkedRequestsWith404() async throws {
        let app = try await TestApp.make()
        defer { app.close() }
        let tag = try #require(
            try await app.send(.get, "/v1/namespaces/rider/snapshot", token: "client").headers[.eTag])
        try await withLiveFlagsd(app) { server, port in
            let connection = try await parkedSnapshotRequest(
                app, server, port: port, tag: tag, headers: [("X-Request-Id", "parked-1")])
            let deleted = try await LiveClient(
                base: URL(string: "http://127.0.0.1:\(port)")!, token: app.tokens["admin"]
            )
            .send("DELETE", "/v1/namespaces/rider")
            #expect(deleted.status == .ok || deleted.status == .noContent)
            let response = try await connection.readResponse()
            #expect(response.status == .notFound)
            #expect(response.headers[.contentType] == "application/problem+json")
            #expect(response.headers[.requestID] == "parked-1")
            #expect(response.json["instance"] == .string("/v1/namespaces/rider/snapshot"))
            #expect(response.json["detail"]?.stringValue?.contains("'rider'") == true)
        }
    }

    @Test func itsRequestsAreCountedUnderTheRoutesLabels() async throws {
        let app = try await TestApp.make()
        defer { app.close() }
        let tag = try #require(
            try await app.send(.get, "/v1/namespaces/rider/snapshot", token: "client").headers[.eTag])
        try await withLiveFlagsd(app) { server, port in
            let connection = try RawHTTPConnection(port: port)
            let auth = ("Authorization", "Bearer \(app.tokens["client"]!)")
            for _ in 0..<3 {
                try connection.send(RawHTTPConnection.get("/v1/namespaces/rider/snapshot", headers: [auth]))
            }
            try connection.send(
                RawHTTPConnection.get("/v1/namespaces/rider/snapshot", headers: [auth, ("If-None-Match", tag)]))
            try connection.send(RawHTTPConnection.get("/v1/namespaces/rider/snapshot"))  // no token: the router's 401
            for _ in 0..<5 { _ = try await connection.readResponse() }
            #expect(server.snapshotFastPath.answeredCount == 4)
            let metrics = try await LiveClient(base: URL(string: "http://127.0.0.1:\(port)")!, token: nil).send(
                "GET", "/metrics"
            ).text
            let route = #"route="/v1/namespaces/{namespace}/snapshot""#
            #expect(
                metrics.contains(#"flagsd_http_requests_total{method="GET",\#(route),status="200"} 3"#), "\(metrics)")
            #expect(metrics.contains(#"flagsd_http_requests_total{method="GET",\#(route),status="304"} 1"#))
            #expect(metrics.contains(#"flagsd_http_requests_total{method="GET",\#(route),status="401"} 1"#))
            #expect(metrics.contains(#"flagsd_http_request_duration_seconds_count{method="GET",\#(route)} 5"#))
            #expect(metrics.contains(#"flagsd_auth_failures_total{reason="missing"} 1"#))
        }
    }

    @Test func aTokenRevokedElsewhereIsRefusedOnceTheCacheIsDue() async throws {
        var configuration = ServerConfiguration(port: 0)
        configuration.tokenCacheMaximumAge = .milliseconds(200)
        let app = try await TestApp.make(configuration: configuration)
        defer { app.close() }
        try await withLiveFlagsd(app, configuration: configuration) { server, port in
            let connection = try RawHTTPConnection(port: port)
            let request = RawHTTPConnection.get(
                "/v1/namespaces/rider/snapshot", headers: [("Authorization", "Bearer \(app.tokens["client"]!)")])
            try connection.send(request)
            #expect(try await connection.readResponse().status == .ok)
            // Revoked in the store directly, as another instance would: this server learns it at its next reload.
            _ = try await app.store.revokeToken("client", by: ChangeAuthor(actor: "elsewhere", source: .api))
            try await waitUntil {
                guard (try? connection.send(request)) != nil else { return false }
                return (try? await connection.readResponse().status) == .unauthorized
            }
        }
    }

    static func imfFixdate() -> DateFormatter {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        return formatter
    }

    @Test(arguments: [
        Int64(0), 951_782_400, 784_111_777, 1_700_000_000, 4_107_542_399, 4_102_444_800, 1_234_567_890, 1_709_164_799,
    ])
    func theDateHeaderIsAnIMFFixdate(seconds: Int64) {
        #expect(
            HTTPDateCache.format(secondsSince1970: seconds)
                == Self.imfFixdate().string(from: Date(timeIntervalSince1970: TimeInterval(seconds))))
    }

    @Test func aConnectionThatChangesTokensIsCheckedForEachOne() async throws {
        let app = try await TestApp.make()
        defer { app.close() }
        try await withLiveFlagsd(app) { server, port in
            let connection = try RawHTTPConnection(port: port)
            // The connection remembers the digest of the header it presented last; a different header is hashed
            // and looked up again, whatever came before it.
            for (token, status) in [
                ("client", HTTPResponse.Status.ok), ("revoked", .unauthorized), ("client", .ok),
                ("other-editor", .forbidden), ("rider-client", .ok), ("client", .ok),
            ] {
                try connection.send(
                    RawHTTPConnection.get(
                        "/v1/namespaces/rider/snapshot",
                        headers: [("Authorization", "Bearer \(app.tokens[token]!)")]))
                #expect(try await connection.readResponse().status == status, "\(token)")
            }
            try connection.send(
                RawHTTPConnection.get(
                    "/v1/namespaces/rider/snapshot",
                    headers: [("Authorization", "Bearer \(app.tokens["client"]!)x")]))
            #expect(try await connection.readResponse().status == .unauthorized)
            #expect(server.snapshotFastPath.answeredCount == 4)
        }
    }

    @Test func aHeaderReadsAsTheFieldsSubscriptReadsIt() {
        var fields: HTTPFields = [.accept: "a", .ifNoneMatch: "\"e.1\"", .cookie: "x=1", .accept: "b", .cookie: "y=2"]
        for name in [HTTPField.Name.accept, .ifNoneMatch, .cookie, .authorization] {
            #expect(fields.value(name) == fields[name], "\(name)")
        }
        fields[.accept] = nil
        #expect(fields.value(.accept) == nil)
    }

    @Test func generatedRequestIDsAreSixteenLowercaseHexDigits() {
        let request = Request(
            head: HTTPRequest(method: .get, scheme: "http", authority: "x", path: "/"),
            body: RequestBody(buffer: ByteBuffer()))
        let ids = (0..<200).map { _ in ObservabilityMiddleware.requestID(from: request) }
        #expect(
            ids.allSatisfy {
                $0.utf8.count == 16 && $0.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
            })
        #expect(Set(ids).count == 200)
    }

    @Test func ifNoneMatchPartsAreTrimmedExactlyAsFoundationTrimsThem() {
        var generator = SystemRandomNumberGenerator()
        let pieces = [" ", "\t", "  ", "\"e.1\"", "W/", "*", "x", "\u{00A0}", "\u{3000}", "é", "\u{2003}", ".", "\""]
        for _ in 0..<2000 {
            let text = (0..<Int.random(in: 0...6, using: &generator)).map { _ in
                pieces.randomElement(using: &generator)!
            }.joined()
            #expect(
                EntityTagList.trimmingWhitespace(Substring(text)) == text.trimmingCharacters(in: .whitespaces),
                "\(Array(text.unicodeScalars))")
        }
    }

    @Test func asciiIfNoneMatchHeadersReadAsTheGeneralReaderReadsThem() {
        var generator = SystemRandomNumberGenerator()
        let pieces = [
            " ", "\t", ",", "\"", "W/", "w/", "*", ".", "e", "f0", "1", "12", "-", "+", "/", "\"e.1\"", "W/\"e.7\"",
            "\".5\"", "9223372036854775808",
        ]
        for _ in 0..<5000 {
            let header = (0..<Int.random(in: 0...8, using: &generator)).map { _ in
                pieces.randomElement(using: &generator)!
            }.joined()
            #expect(EntityTagList(ascii: header) == EntityTagList(general: header), "\(header)")
        }
        #expect(
            EntityTagList("W/\"e.4\" ,\t\"e.7\", *, junk").tags == [
                SnapshotVersion(epoch: "e", version: 4), SnapshotVersion(epoch: "e", version: 7),
            ])
    }

    @Test func pastTheCapPerAddressALongPollGets429OnBothPathsAndTheOthersStayParked() async throws {
        try await withLongPolls({ $0.maximumWaitersPerAddress = 2 }) { app, server, port, tag, version in
            let client = try #require(app.tokens["client"])
            var parked: [RawHTTPConnection] = []
            for index in 0..<2 {
                let connection = try RawHTTPConnection(port: port)
                try connection.send(
                    RawHTTPConnection.get(
                        "/v1/namespaces/rider/snapshot?wait=60",
                        headers: [("Authorization", "Bearer \(client)"), ("If-None-Match", tag)]))
                try await waitUntil { server.context.hub.waiterCount == index + 1 }
                parked.append(connection)
            }
            // The fast path (snapshot) and the router (changes) refuse the third from the same address.
            let third = try RawHTTPConnection(port: port)
            try third.send(
                RawHTTPConnection.get(
                    "/v1/namespaces/rider/snapshot?wait=60",
                    headers: [("Authorization", "Bearer \(client)"), ("If-None-Match", tag)]))
            let refused = try await third.readResponse()
            #expect(refused.status == .tooManyRequests, "\(refused.text)")
            #expect(refused.headers[.retryAfter] == String(server.context.configuration.retryAfter))
            let routed = try await LiveClient(base: URL(string: "http://127.0.0.1:\(port)")!, token: client)
                .send("GET", "/v1/namespaces/rider/changes?after=\(version)&wait=60")
            #expect(routed.status == .tooManyRequests, "\(routed.text)")
            #expect(server.context.hub.waiterCount == 2)
            try await ConnectionLimitTests.expectMetric(
                #"flagsd_long_poll_refused_total{reason="address_cap"}"#, atLeast: 2, port: port)

            // A change answers the parked ones, which frees the address's places.
            let changed = try await LiveClient(
                base: URL(string: "http://127.0.0.1:\(port)")!, token: app.tokens["editor"]
            )
            .send("POST", "/v1/namespaces/rider/flags/plugin_switch_feed_promos/disable")
            #expect(changed.status == .ok)
            for connection in parked { #expect(try await connection.readResponse().status == .ok) }
            try await waitUntil { server.context.hub.waiterCount == 0 }
            let again = try RawHTTPConnection(port: port)
            let newTag = try #require(server.context.hub.snapshot(of: "rider")?.entityTag)
            try again.send(
                RawHTTPConnection.get(
                    "/v1/namespaces/rider/snapshot?wait=60",
                    headers: [("Authorization", "Bearer \(client)"), ("If-None-Match", newTag)]))
            try await waitUntil { server.context.hub.waiterCount == 1 }
        }
    }

    @Test func pastTheRatesPerAddressAndPerTokenALongPollGets429OnBothPathsAndOthersStillPark() async throws {
        let limits: (inout ServerConfiguration) -> Void = {
            $0.trustedProxies = CrashGuardTests.proxies
            $0.longPollRatePerAddress = 2
            $0.longPollRatePerToken = 3
            // Budgets that never refill: the test does not depend on how long the machine takes between requests.
            $0.rateClock = { .zero }
        }
        try await withLongPolls(limits) { app, server, port, tag, version in
            let client = try #require(app.tokens["client"])
            func longPoll(from address: String, token: String = client) throws -> RawHTTPConnection {
                let connection = try RawHTTPConnection(port: port)
                try connection.send(
                    RawHTTPConnection.get(
                        "/v1/namespaces/rider/snapshot?wait=60",
                        headers: [
                            ("Authorization", "Bearer \(token)"), ("If-None-Match", tag),
                            ("X-Forwarded-For", address),
                        ]))
                return connection
            }
            var parked: [RawHTTPConnection] = []
            for index in 0..<2 {
                parked.append(try longPoll(from: "10.7.0.1"))
                try await waitUntil { server.context.hub.waiterCount == index + 1 }
            }
            // The address's rate is spent: the fast path (snapshot) and the router (changes) refuse the third.
            let third = try await longPoll(from: "10.7.0.1").readResponse()
            #expect(third.status == .tooManyRequests, "\(third.text)")
            let retryAfter = try #require(third.headers[.retryAfter].flatMap(Int.init))
            #expect((1...30).contains(retryAfter), "two a minute: the next in at most 30 s, not \(retryAfter)")
            #expect(third.text.contains("2 long-polls per minute"), "\(third.text)")
            let routed = try await LiveClient(base: URL(string: "http://127.0.0.1:\(port)")!, token: client)
                .send(
                    "GET", "/v1/namespaces/rider/changes?after=\(version)&wait=60",
                    headers: ["X-Forwarded-For": "10.7.0.1"])
            #expect(routed.status == .tooManyRequests && routed.headers[.retryAfter] != nil, "\(routed.text)")
            // A request answered at once is not a long-poll: a client behind on versions gets the snapshot.
            let behind = try await LiveClient(base: URL(string: "http://127.0.0.1:\(port)")!, token: client)
                .send(
                    "GET", "/v1/namespaces/rider/snapshot?wait=60",
                    headers: ["X-Forwarded-For": "10.7.0.1", "If-None-Match": "\"old.1\""])
            #expect(behind.status == .ok, "\(behind.text)")

            // Another address parks; it spends the token's third, so a fourth address meets the token's rate.
            parked.append(try longPoll(from: "10.7.0.2"))
            try await waitUntil { server.context.hub.waiterCount == 3 }
            let fourth = try await longPoll(from: "10.7.0.3").readResponse()
            #expect(
                fourth.status == .tooManyRequests && fourth.text.contains("token 'client' may park 3"), "\(fourth.text)"
            )
            // Another token parks, even from the spent address (the rate per address is for client tokens).
            parked.append(try longPoll(from: "10.7.0.1", token: try #require(app.tokens["editor"])))
            try await waitUntil { server.context.hub.waiterCount == 4 }
            try await ConnectionLimitTests.expectMetric(
                #"flagsd_long_poll_refused_total{reason="address_rate"}"#, atLeast: 2, port: port)
            try await ConnectionLimitTests.expectMetric(
                #"flagsd_long_poll_refused_total{reason="token_rate"}"#, atLeast: 1, port: port)

            // The parked ones hear of the next change.
            let changed = try await LiveClient(
                base: URL(string: "http://127.0.0.1:\(port)")!, token: app.tokens["editor"]
            )
            .send("POST", "/v1/namespaces/rider/flags/plugin_switch_feed_promos/disable")
            #expect(changed.status == .ok)
            for connection in parked { #expect(try await connection.readResponse().status == .ok) }
        }
    }

    @Test func theSnapshotTargetIsRecognisedExactly() {
        #expect(SnapshotFastPath.namespace(inSnapshotTarget: "/v1/namespaces/rider/snapshot") == "rider")
        #expect(
            SnapshotFastPath.namespace(inSnapshotTarget: "/v1/namespaces/rider-staging/snapshot?wait=30&x=/")
                == "rider-staging")
        for target in [
            "/v1/namespaces//snapshot", "/v1/namespaces/snapshot", "/v1/namespaces/a/b/snapshot",
            "/v1/namespaces/%61/snapshot",
            "/v1/namespaces/rider/snapshot/", "/v1/namespaces/rider/snapshots", "/v2/namespaces/rider/snapshot",
            "v1/namespaces/rider/snapshot", "/v1/namespaces/rider/changes",
        ] {
            #expect(SnapshotFastPath.namespace(inSnapshotTarget: target) == nil, "\(target)")
        }
    }
}

/// Runs `body` on a live flagsd over a fresh app's store, its configuration (on a fresh token cache) set by
/// `configure`, given the app, the server, its port, and the rider namespace's tag and version.
private func withLongPolls(
    _ configure: (inout ServerConfiguration) -> Void,
    _ body: @escaping @Sendable (TestApp, FlagsServer, Int, _ tag: String, _ version: Int64) async throws -> Void
) async throws {
    var configuration = freshTokenCacheConfiguration()
    configure(&configuration)
    let app = try await TestApp.make()
    defer { app.close() }
    let tag = try #require(try await app.send(.get, "/v1/namespaces/rider/snapshot", token: "client").headers[.eTag])
    let version = try #require(app.hub.snapshot(of: "rider")?.version)
    try await withLiveFlagsd(app, configuration: configuration) { server, port in
        try await body(app, server, port, tag, version)
    }
}

/// Opens a raw connection and gets the rider snapshot on it with the client token, answered by the fast path (the
/// server's first request), and returns the connection.
private func snapshotAnsweredByTheFastPath(
    _ app: TestApp, _ server: FlagsServer, port: Int, answeredBefore: Int = 0
) async throws -> RawHTTPConnection {
    let connection = try RawHTTPConnection(port: port)
    try connection.send(try clientPoll(app))
    #expect(try await connection.readResponse().status == .ok)
    #expect(server.snapshotFastPath.answeredCount == answeredBefore + 1)
    return connection
}

/// Opens a raw connection, sends `GET /v1/namespaces/rider/snapshot?wait=60` with the client token, `If-None-Match:
/// tag` and `headers`, and returns once the hub holds it as its only waiter.
private func parkedSnapshotRequest(
    _ app: TestApp, _ server: FlagsServer, port: Int, tag: String,
    headers: [(String, String)] = []
) async throws -> RawHTTPConnection {
    let connection = try RawHTTPConnection(port: port)
    try connection.send(
        RawHTTPConnection.get(
            "/v1/namespaces/rider/snapshot?wait=60",
            headers: [
                ("Authorization", "Bearer \(try #require(app.tokens["client"]))"),
                ("If-None-Match", tag),
            ] + headers))
    try await waitUntil { server.context.hub.waiterCount == 1 }
    return connection
}

/// A live server's configuration whose token cache stays fresh for the whole test, however slowly a busy machine
/// runs it: a due cache sends requests to the router (the stale-cache test sets its own age). Long-polls park as
/// long as a test asks, as on `TestApp`s (a minute's margin between parking waiters and waking them).
func freshTokenCacheConfiguration() -> ServerConfiguration {
    var configuration = ServerConfiguration(port: 0, maximumWait: 600)
    configuration.tokenCacheMaximumAge = .seconds(3600)
    // Live tests read /metrics as a scraper inside the network would; that it needs a token by default is
    // AdminRouteTests' subject.
    configuration.openMetrics = true
    return configuration
}

/// Runs a live flagsd over the app's store on a free loopback port for the duration of `body`, then shuts it down.
func withLiveFlagsd<T: Sendable>(
    _ app: TestApp, configuration: ServerConfiguration = freshTokenCacheConfiguration(),
    _ body: @escaping @Sendable (FlagsServer, Int) async throws -> T
) async throws -> T {
    try await LiveFlagsdSupport.withLiveFlagsd(store: app.store, configuration: configuration, logger: app.logger) {
        server, port in
        try await withDeadline(.seconds(120)) { try await body(server, port) }
    }
}

/// A snapshot poll of the rider namespace with the client token, as raw request bytes.
private func clientPoll(_ app: TestApp) throws -> String {
    RawHTTPConnection.get(
        "/v1/namespaces/rider/snapshot", headers: [("Authorization", "Bearer \(try #require(app.tokens["client"]))")])
}
