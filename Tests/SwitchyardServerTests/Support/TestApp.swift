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
import SwitchyardWire
import Synchronization

@testable import SwitchyardServer

/// A response read in-process or over the wire.
struct TestResponse: Sendable {
    var status: HTTPResponse.Status
    var headers: HTTPFields
    var body: [UInt8]

    var text: String { String(decoding: body, as: UTF8.self) }

    /// The body as JSON (`.null` when it is not JSON).
    var json: JSONValue { (try? JSONValue.parse(body)) ?? .null }

    /// The field paths of a problem document's `errors`.
    var problemPaths: [String] { json["errors"]?.arrayValue?.compactMap { $0["path"]?.stringValue } ?? [] }
}

/// A flagsd application over a fresh SQLite file, with one token per role, for in-process and live tests.
struct TestApp: Sendable {
    /// Secrets of tokens by name: admin, editor, reporter, client, revoked (a revoked editor), other-editor (an editor
    /// limited to namespace `other`), rider-client (a client limited to `rider`), rider-admin (an admin limited to
    /// `rider`), metrics (reads /metrics only). `client` is valid in every namespace, as tokens created before
    /// client tokens had to name their namespaces may be.
    let tokens: [String: String]
    let store: SQLiteFlagStore
    let server: FlagsServer
    let folder: URL
    let registry: PrometheusCollectorRegistry
    private let responder: RouterResponder<FlagsRequestContext>
    let logger: Logger

    /// - Parameters:
    ///   - configuration: by default flagsd's, with long-polls parked as long as a test asks (`wait=60` waits 60 s,
    ///     not flagsd's cap of 30 s), so a test that parks waiters and then wakes them has a minute's margin.
    ///   - logger: the server's logger (by default one that logs only critical messages).
    ///   - flagSets: namespaces to create besides `namespaces` (whose flag sets are `Fixtures.rider`).
    ///   - now: the store's clock, which is the whole server's (by default the machine's).
    static func make(
        configuration: ServerConfiguration = ServerConfiguration(port: 0, maximumWait: 600),
        namespaces: [String] = ["rider"],
        flagSets: [FlagSet] = [], logger: Logger? = nil,
        now: @escaping @Sendable () -> Date = { Date() }
    ) async throws -> TestApp {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("flagsd-test-\(UUID().uuidString)")
        let store = try await SQLiteFlagStore(path: folder.appendingPathComponent("flags.sqlite").path, now: now)
        let root = ChangeAuthor(actor: "setup", source: .api)
        for flagSet in namespaces.map({ Fixtures.rider($0) }) + flagSets {
            _ = try await store.createNamespace(flagSet, reasonPolicy: .kills, request: ChangeRequest(author: root))
        }
        var tokens: [String: String] = [:]
        for (name, role, limit) in [
            ("admin", Role.admin, nil), ("editor", .editor, nil), ("reporter", .reporter, nil),
            ("client", .client, nil),
            ("revoked", .editor, nil), ("other-editor", .editor, ["other"]),
            ("rider-client", .client, ["rider"]), ("rider-admin", .admin, ["rider"]),
            ("metrics", .metrics, nil),
        ] as [(String, Role, [String]?)] {
            tokens[name] = try await store.issueToken(name: name, role: role, namespaces: limit, by: root).secret
        }
        _ = try await store.revokeToken("revoked", by: root)
        var quiet = Logger(label: "flagsd-test")
        quiet.logLevel = .critical
        let logger = logger ?? quiet
        let registry = PrometheusCollectorRegistry()
        let server = try await buildApplication(
            configuration: configuration, store: store, registry: registry, logger: logger)
        return TestApp(
            tokens: tokens, store: store, server: server, folder: folder, registry: registry,
            responder: server.makeResponder(), logger: logger)
    }

    func close() {
        try? store.close()
        try? FileManager.default.removeItem(at: folder)
    }

    /// The same database opened again by a new application, as after a restart (this app's store is closed).
    func restarted() async throws -> TestApp {
        try store.close()
        let store = try await SQLiteFlagStore(path: folder.appendingPathComponent("flags.sqlite").path)
        let server = try await buildApplication(
            configuration: server.context.configuration, store: store,
            registry: PrometheusCollectorRegistry(), logger: logger)
        return TestApp(
            tokens: tokens, store: store, server: server, folder: folder, registry: registry,
            responder: server.makeResponder(), logger: logger)
    }

    var hub: LongPollHub { server.context.hub }

    /// Sends a request to the router in-process, as from a TCP peer (loopback by default).
    func send(
        _ method: HTTPRequest.Method, _ path: String, token: String? = nil, headers: HTTPFields = [:],
        body: String? = nil, peer: IPAddress? = IPAddress("127.0.0.1")
    ) async throws -> TestResponse {
        var fields = headers
        if let token { fields[.authorization] = "Bearer \(self.tokens[token] ?? token)" }
        if let body { fields[.contentLength] = String(body.utf8.count) }
        let request = Request(
            head: HTTPRequest(method: method, scheme: "http", authority: "localhost", path: path, headerFields: fields),
            body: RequestBody(buffer: ByteBuffer(string: body ?? "")))
        let response = try await responder.respond(
            to: request, context: FlagsRequestContext(logger: logger, peer: peer))
        let collector = BodyCollector()
        try await response.body.write(collector)
        return TestResponse(status: response.status, headers: response.headers, body: collector.bytes)
    }

    /// Runs the real server on a free loopback port for the duration of `body`, then shuts it down gracefully.
    func withLiveServer<T: Sendable>(_ body: @Sendable (URL) async throws -> T) async throws -> T {
        try await LiveFlagsdSupport.withLiveFlagsd(
            store: store, configuration: server.context.configuration, logger: logger
        ) { _, port in
            try await body(URL(string: "http://127.0.0.1:\(port)")!)
        }
    }
}

/// Collects a response body written in-process.
final class BodyCollector: ResponseBodyWriter, Sendable {
    private let storage = Mutex<[UInt8]>([])

    var bytes: [UInt8] { storage.withLock { $0 } }

    func write(_ buffer: ByteBuffer) async throws {
        storage.withLock { $0.append(contentsOf: buffer.readableBytesView) }
    }

    func finish(_ trailingHeaders: HTTPFields?) async throws {}
}
