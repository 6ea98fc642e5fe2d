public import Foundation
import SwitchyardClient
public import SwitchyardCore

/// A flagsd stand-in on loopback: serves one namespace's snapshots with ETags, conditional GETs and long-polls, and
/// deltas from earlier published versions to requests that accept them (as flagsd does), records event batches, and
/// plays scripted faults first.
///
/// ```swift
/// let server = try FlagsdStandIn(namespace: "rider")
/// server.publish(Snapshot(epoch: "e1", version: 1, flagSet: flagSet))
/// server.script([.response(status: 500), .raw(Array("garbage".utf8))])   // the next two answers
/// ```
public final class FlagsdStandIn: @unchecked Sendable {
    public typealias Reply = TestHTTPServer.Reply

    private struct State {
        var snapshot: Snapshot?
        var bytes: [UInt8] = []
        /// Every snapshot published, by epoch and version: the bases deltas can start from.
        var published: [String: Snapshot] = [:]
        var servesDeltas = true
        var deltasServed = 0
        var faults: [Reply] = []
        var changeReplies: [Reply] = []
        var eventBatches: [[JSONValue]] = []
        var eventReplies: [Reply] = []
    }

    public let namespace: String
    /// The longest hold of a long-poll, whatever the client asks.
    public let waitCap: Duration
    private let state = LockedBox(State())
    private let condition = NSCondition()
    private var http: TestHTTPServer!

    /// - Parameter port: a port to bind (to bring a server up where a client already points); 0 for a free one.
    public init(namespace: String = "rider", waitCap: Duration = .seconds(2), port: Int = 0) throws {
        self.namespace = namespace
        self.waitCap = waitCap
        // The handler holds the stand-in until `stop()` clears it.
        http = try TestHTTPServer(port: port) { request in self.handle(request) }
    }

    public var baseURL: URL { http.baseURL }
    public var port: Int { http.port }

    /// Every request so far.
    public var requests: [TestHTTPServer.Request] { http.requests }

    /// The snapshot requests so far.
    public var snapshotRequests: [TestHTTPServer.Request] {
        requests.filter { $0.path.hasSuffix("/snapshot") }
    }

    /// The events of every batch received so far, in order.
    public var receivedEvents: [JSONValue] {
        state.withLock { $0.eventBatches.flatMap { $0 } }
    }

    public var eventBatchCount: Int {
        state.withLock { $0.eventBatches.count }
    }

    /// Makes a snapshot current and wakes long-polls.
    public func publish(_ snapshot: Snapshot) {
        publish(snapshot, bytes: SnapshotDocument.encode(snapshot))
    }

    /// Makes a snapshot current with the given document bytes.
    public func publish(_ snapshot: Snapshot, bytes: [UInt8]) {
        state.withLock { state in
            state.snapshot = snapshot
            state.bytes = bytes
            state.published["\(snapshot.epoch).\(snapshot.version)"] = snapshot
        }
        condition.lock()
        condition.broadcast()
        condition.unlock()
    }

    /// Whether requests that accept deltas get one (from a published version of the current epoch); true at first.
    public var servesDeltas: Bool {
        get { state.withLock { $0.servesDeltas } }
        set { state.withLock { $0.servesDeltas = newValue } }
    }

    /// How many deltas were served.
    public var deltasServed: Int {
        state.withLock { $0.deltasServed }
    }

    /// Answers the next snapshot requests with these replies, in order, before behaving normally again.
    public func script(_ replies: [Reply]) {
        state.withLock { $0.faults += replies }
    }

    /// Answers the next requests that would get a new snapshot or a delta (a long-poll woken by ``publish(_:)``
    /// included) with these replies instead, in order: a hostile server's answer to a change.
    public func scriptChange(_ replies: [Reply]) {
        state.withLock { $0.changeReplies += replies }
    }

    /// Answers the next event batches with these replies, in order (by default every event is accepted).
    public func scriptEvents(_ replies: [Reply]) {
        state.withLock { $0.eventReplies += replies }
    }

    public func stop() {
        http.stop()
        condition.lock()
        condition.broadcast()
        condition.unlock()
    }

    private func handle(_ request: TestHTTPServer.Request) -> Reply {
        if request.path == "/v1/namespaces/\(namespace)/events" && request.method == "POST" {
            return handleEvents(request)
        }
        guard request.path.hasSuffix("/snapshot") else {
            return .response(status: 404, body: Array("no route".utf8))
        }
        if let fault = state.withLock({ $0.faults.isEmpty ? nil : $0.faults.removeFirst() }) {
            return fault
        }
        guard request.path == "/v1/namespaces/\(namespace)/snapshot" else {
            return .response(
                status: 404, headers: ["Content-Type": "application/problem+json"],
                body: Array(#"{"title":"no such namespace","status":404}"#.utf8))
        }
        guard request.headers["authorization"]?.hasPrefix("Bearer ") == true else {
            return .response(status: 401)
        }
        let wait = request.query["wait"].flatMap { Int64($0) }.map { min(Duration.seconds($0), waitCap) }
        let deadline = Date().addingTimeInterval((wait ?? .zero).secondsValue)
        condition.lock()
        defer { condition.unlock() }
        while true {
            let (snapshot, bytes) = state.withLock { ($0.snapshot, $0.bytes) }
            guard let snapshot else { return .response(status: 503, headers: ["Retry-After": "1"]) }
            let tag = snapshot.entityTag
            let matches = request.headers["if-none-match"].map { Self.weakMatch($0, tag) } ?? false
            if !matches {
                if let scripted = state.withLock({ $0.changeReplies.isEmpty ? nil : $0.changeReplies.removeFirst() }) {
                    return scripted
                }
                if let delta = delta(for: request, to: snapshot) {
                    return .response(
                        status: 200, headers: ["ETag": tag, "Content-Type": SnapshotDelta.mediaType], body: delta)
                }
                return .response(status: 200, headers: ["ETag": tag, "Content-Type": "application/json"], body: bytes)
            }
            if wait == nil || Date() >= deadline || http.isStopped {
                return .response(status: 304, headers: ["ETag": tag])
            }
            _ = condition.wait(until: min(deadline, Date().addingTimeInterval(0.05)))
        }
    }

    /// The delta from the version a request names to the current snapshot, when it accepts deltas and that
    /// version was published.
    private func delta(for request: TestHTTPServer.Request, to snapshot: Snapshot) -> [UInt8]? {
        guard request.headers["accept"]?.contains(SnapshotDelta.mediaType) == true,
            let tag = request.headers["if-none-match"]?.trimmingCharacters(in: .whitespaces), tag.hasPrefix("\""),
            tag.hasSuffix("\"")
        else { return nil }
        return state.withLock { state -> [UInt8]? in
            guard state.servesDeltas, let base = state.published[String(tag.dropFirst().dropLast())],
                base.epoch == snapshot.epoch, base.version < snapshot.version
            else { return nil }
            state.deltasServed += 1
            return SnapshotDelta(from: base, to: snapshot).encode()
        }
    }

    private func handleEvents(_ request: TestHTTPServer.Request) -> Reply {
        guard let batch = try? JSONValue.parse(request.body), let events = batch["events"]?.arrayValue else {
            return .response(status: 400, body: Array(#"{"title":"not a batch"}"#.utf8))
        }
        let scripted = state.withLock { state -> Reply? in
            state.eventBatches.append(events)
            return state.eventReplies.isEmpty ? nil : state.eventReplies.removeFirst()
        }
        if let scripted { return scripted }
        let ids = events.compactMap { $0["id"]?.stringValue }
        let reply = JSONValue.object(
            JSONObject([("accepted", .array(ids.map { .string($0) })), ("rejected", .array([]))]))
        return .response(status: 200, headers: ["Content-Type": "application/json"], body: reply.serialized(.canonical))
    }

    /// Weak comparison of an `If-None-Match` list with a tag.
    static func weakMatch(_ header: String, _ tag: String) -> Bool {
        func strip(_ value: Substring) -> Substring {
            let trimmed = value.trimmingCharacters(in: .whitespaces)
            return Substring(trimmed.hasPrefix("W/") ? String(trimmed.dropFirst(2)) : trimmed)
        }
        return header.split(separator: ",").contains { strip($0) == strip(Substring(tag)) || strip($0) == "*" }
    }
}
