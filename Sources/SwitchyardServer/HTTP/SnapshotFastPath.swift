import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import NIOHTTP1
import NIOHTTPTypes
import NIOHTTPTypesHTTP1
import SwitchyardCore
import SwitchyardStorage
import SwitchyardWire
import Synchronization

/// Answers `GET /v1/namespaces/{namespace}/snapshot`, the route every client polls, on the connection's event loop
/// before Hummingbird's router: no task per request, no hop between the event loop and Swift concurrency's
/// threads, and a parked long-poll holds a few hundred bytes in the hub instead of a suspended task.
///
/// It answers exactly what the route answers, through the same functions (`API.snapshotAnswer`,
/// `API.snapshotAfterWait`, `Reply.problem`), with the same headers (`X-Request-Id`, `Date`, `Server`), metrics
/// (`flagsd_http_requests_total` and the latency histogram under the route's label) and request log line. It
/// passes on to the router, untouched, every request it does not fully own:
/// - anything but a GET of exactly `/v1/namespaces/<name>/snapshot` (a percent-encoded name included);
/// - a request whose token is missing, unknown, revoked, without the client role or not allowed the namespace, or
///   when the token cache is due for a reload: the router reloads, explains the 401 or 403 and counts the failure;
/// - `Connection: close`, which Hummingbird honours by closing after the response;
/// - every request that arrives while a request passed on before it is unanswered, so responses keep their order.
///
/// Requests that arrive behind a parked long-poll on the same connection (pipelining) wait in order until it is
/// answered. A parked request whose connection resets leaves the hub at once; end of input alone keeps it parked
/// (a client may half-close and still want the answer), as on the router.
///
/// Hummingbird's connection state handler, after this one, sees only the requests passed on. That is why a fast
/// path request must never outlive a quiescing connection (graceful shutdown answers the hub's waiters first), and
/// why flagsd's idle and header timeouts live in `ConnectionGuardHandler`, before this one: it sees the requests
/// this handler takes, so a parked request counts as being answered, never as idle.
package final class SnapshotFastPath: Sendable {
    let api: API
    let recorder: RequestRecorder
    /// The route's label in metrics and logs: the router's description of its path.
    let route = RouterPath("/v1/namespaces/{namespace}/snapshot").description
    let serverName: String?
    let logger: Logger
    private let dates = HTTPDateCache()
    private let answered = Atomic<Int>(0)

    /// How many requests the fast path answered (the rest went to the router), for tests.
    package var answeredCount: Int { answered.load(ordering: .relaxed) }

    /// - Parameters:
    ///   - service: what the routes share (hub, tokens, configuration, metrics factory, logger).
    ///   - serverName: the `Server` header Hummingbird's application sends (its configuration's `serverName`).
    init(app: AppContext, serverName: String?) {
        api = API(app: app)
        recorder = RequestRecorder(factory: app.metricsFactory)
        self.serverName = serverName
        logger = app.logger
    }

    /// A handler for one connection, added after the HTTP codec (`HTTP1Channel.Configuration.additionalChannelHandlers`).
    func makeHandler() -> SnapshotFastPathHandler {
        SnapshotFastPathHandler(self)
    }

    /// The namespace of a request target that is exactly `/v1/namespaces/<name>/snapshot` with an optional query;
    /// nil for any other target, and for a name with `/` or percent-encoding (left to the router's decoding).
    static func namespace(inSnapshotTarget target: String) -> String? {
        let path = target.utf8.prefix { $0 != UInt8(ascii: "?") }
        let prefix = "/v1/namespaces/".utf8
        let suffix = "/snapshot".utf8
        guard path.count > prefix.count + suffix.count, path.starts(with: prefix),
            path.reversed().starts(with: suffix.reversed())
        else { return nil }
        let name = path.dropFirst(prefix.count).dropLast(suffix.count)
        guard !name.contains(UInt8(ascii: "/")), !name.contains(UInt8(ascii: "%")) else { return nil }
        return String(Substring(name))
    }

    /// The head of a reply as the application sends it, in HTTP/1 form: the reply's headers with `Content-Length`,
    /// then the request id, `Date` and `Server` (added in that order by the middleware and the application, and
    /// converted the same way by Hummingbird's pipeline).
    func head(of reply: Reply, requestID: String) -> HTTPResponseHead {
        var head = HTTPResponseHead(reply.response.head)
        head.headers.add(name: HTTPField.Name.requestID.rawName, value: requestID)
        head.headers.add(name: HTTPField.Name.date.rawName, value: dates.now())
        if let serverName { head.headers.add(name: HTTPField.Name.server.rawName, value: serverName) }
        return head
    }

    /// Records an answered request (a GET of `path`) with the router's recorder: counter, latency, request log line.
    func record(path: String, requestID: String, status: HTTPResponse.Status, since start: ContinuousClock.Instant) {
        answered.add(1, ordering: .relaxed)
        recorder.record(
            method: HTTPRequest.Method.get.rawValue, route: route, path: path, status: status.code,
            elapsed: ContinuousClock.now - start, logger: logger, requestID: requestID)
    }
}

/// One connection's snapshot fast path (see `SnapshotFastPath`). Lives on the connection's event loop.
final class SnapshotFastPathHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    /// A request the fast path took, parked in the hub until `wake`: what its answer needs, not the whole request
    /// (10,000 parked requests hold this much each, and a wake moves it once).
    private struct Parked {
        let serial: Int
        let id: Int
        /// The request's path, for the log line and a problem's `instance`.
        let path: String
        let acceptsGzip: Bool
        /// The version the request waited past, when it accepts deltas.
        let deltaBase: Int64?
        let namespace: String
        let requestID: String
        let current: PublishedSnapshot
        let start: ContinuousClock.Instant
    }

    /// What arrived behind a parked request, replayed in order once it is answered.
    private enum Queued {
        case part(HTTPRequestPart)
        case event(Any)
    }

    /// Past this many queued parts, reading stops until the parked request is answered.
    private static let queueLimit = 64

    private let fastPath: SnapshotFastPath
    private var context: ChannelHandlerContext?
    /// The conversion to HTTP types before this handler: the fast path writes its answers as HTTP/1 parts from
    /// there, which skips converting them and two handlers' writes (`respond`).
    private var http1Context: ChannelHandlerContext?
    /// Requests passed on to the router whose response has not ended: later requests follow them there.
    private var forwarded = 0
    /// The rest of a request the fast path took (its body, if any, up to its end) is dropped.
    private var droppingRequestRest = false
    private var parked: Parked?
    private var parkSerial = 0
    /// Rarely more than empty (an empty array allocates nothing: most connections never queue).
    private var queued: [Queued] = []
    private var readHeld = false
    /// The token this connection presented last, so its next polls skip hashing the same secret.
    private var lastPresentedToken: PresentedToken?
    /// Opened with the first event this handler passes on that the router side has to act on: until then the
    /// connection's router side (Hummingbird's request loop) does not run, and if the connection closes first it
    /// never does (`GatedHTTP1Channel.handle`).
    let routerSide = RouterSide()

    fileprivate init(_ fastPath: SnapshotFastPath) {
        self.fastPath = fastPath
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        http1Context = try? context.pipeline.syncOperations.context(handlerType: HTTP1ToHTTPServerCodec.self)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        forgetParked()
        self.context = nil
        http1Context = nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        _ = receive(unwrapInboundIn(data), context: context)
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        // Half-closure, quiescing: after the parked request's answer, as the router would see them.
        if parked != nil {
            queued.append(.event(event))
        } else {
            pass(event, context: context)
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        // A router side not started has nothing to do at the end: it is dropped once the channel has closed.
        forgetParked()
        queued.removeAll()
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // A request the decoder could not read: the router side answers 400 and closes. An I/O error (a reset
        // connection) needs no router loop that is not running already: NIO closes the connection.
        if !(error is IOError) { routerSide.open() }
        context.fireErrorCaught(error)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        // Only the router's responses pass here; the fast path writes below this handler.
        if case .end = unwrapOutboundIn(data), forwarded > 0 { forwarded -= 1 }
        context.write(data, promise: promise)
    }

    func read(context: ChannelHandlerContext) {
        if queued.count >= Self.queueLimit {
            readHeld = true
        } else {
            context.read()
        }
    }

    /// Takes, drops, queues or passes on one part; true when it was passed on to the router.
    private func receive(_ part: HTTPRequestPart, context: ChannelHandlerContext) -> Bool {
        if droppingRequestRest {
            if case .end = part { droppingRequestRest = false }
            return false
        }
        if parked != nil {
            queued.append(.part(part))
            return false
        }
        if case .head(let head) = part, forwarded == 0, http1Context != nil, take(head, context: context) {
            droppingRequestRest = true
            return false
        }
        if case .head = part { forwarded += 1 }
        routerSide.open()
        context.fireChannelRead(wrapInboundOut(part))
        return true
    }

    /// Answers or parks a request when the fast path owns it; false to pass it on to the router.
    private func take(_ head: HTTPRequest, context: ChannelHandlerContext) -> Bool {
        guard head.method == .get, let target = head.path,
            let namespace = SnapshotFastPath.namespace(inSnapshotTarget: target),
            head.headerFields.value(.connection) != "close"
        else { return false }
        let request = Request(head: head, body: RequestBody(buffer: ByteBuffer()))
        guard let token = fastPath.api.auth.cachedToken(request, lastPresented: &lastPresentedToken),
            token.role >= .client,
            token.allows(namespace: namespace)
        else { return false }
        let start = ContinuousClock.now
        let requestID = ObservabilityMiddleware.requestID(from: request)
        let reply: Reply
        do {
            switch try fastPath.api.snapshotAnswer(request, namespace: namespace) {
            case .now(let outcome):
                reply = outcome.reply
            case .wait(let position, let seconds, let current):
                parkSerial += 1
                let connection = ParkedSnapshotRequest(
                    handler: NIOLoopBound(self, eventLoop: context.eventLoop), serial: parkSerial)
                let app = fastPath.api.app
                let address = app.sourceAddress(
                    peer: context.remoteAddress?.ipAddress.flatMap { IPAddress($0) }, headers: head.headerFields)
                let spent = try fastPath.api.spendLongPollBudgets(token: token, address: address)
                switch app.hub.park(
                    connection, for: namespace, after: position, timeout: .seconds(seconds), address: address)
                {
                case .parked(let id):
                    parked = Parked(
                        serial: parkSerial, id: id, path: request.uri.path,
                        acceptsGzip: AcceptEncoding(request.headers.value(.acceptEncoding)).acceptsGzip,
                        deltaBase: AcceptsDelta(request.headers.value(.accept)).accepted ? position.version : nil,
                        namespace: namespace, requestID: requestID, current: current, start: start)
                    return true
                case .answerNow(let reason):
                    fastPath.api.refundLongPoll(spent, if: reason)
                    reply = try fastPath.api.snapshotAfterWait(
                        reason, request: request, namespace: namespace, waitedOn: current,
                        after: position
                    ).reply
                }
            }
        } catch {
            reply = Self.problem(error, path: request.uri.path, requestID: requestID)
        }
        respond(reply, path: request.uri.path, requestID: requestID, since: start, context: context)
        return true
    }

    /// Answers the parked request (on the event loop, from the hub), then what queued behind it.
    fileprivate func wake(_ reason: WakeReason, serial: Int) {
        // Taken out rather than copied: a copy would retain each of its references once more.
        guard parked?.serial == serial, let context, let parked = parked.take() else { return }
        let reply: Reply
        do {
            reply = try fastPath.api.snapshotAfterWait(
                reason, acceptsGzip: parked.acceptsGzip, deltaBase: parked.deltaBase,
                namespace: parked.namespace,
                waitedOn: parked.current
            ).reply
        } catch {
            reply = Self.problem(error, path: parked.path, requestID: parked.requestID)
        }
        respond(reply, path: parked.path, requestID: parked.requestID, since: parked.start, context: context)
        replayQueued(context: context)
    }

    /// Passes a user event on. Quiescing needs no router loop (Hummingbird's connection state handler, next in the
    /// pipeline, closes a connection with no router request in progress, and a router side with one has started).
    /// Nor does the end of the client's input when the router was never handed anything: the connection is closed
    /// here once the answers written to it have gone out, as the router's loop would close it at the end of its
    /// input, without starting one for it (a fleet hanging up at once would start thousands).
    private func pass(_ event: Any, context: ChannelHandlerContext) {
        switch event {
        case is ChannelShouldQuiesceEvent:
            context.fireUserInboundEventTriggered(event)
        case ChannelEvent.inputClosed where !routerSide.hasDemand:
            context.fireUserInboundEventTriggered(event)
            closeAfterWrites(context)
        default:
            routerSide.open()
            context.fireUserInboundEventTriggered(event)
        }
    }

    /// Closes the connection once everything written to it has gone to the socket: a full close drops writes still
    /// waiting in NIO (a large answer to a client whose input ended). An empty write below the HTTP encoder completes
    /// after every write before it; the idle timeout still cuts a client that stops reading.
    private func closeAfterWrites(_ context: ChannelHandlerContext) {
        guard let encoder = try? context.pipeline.syncOperations.context(handlerType: HTTPResponseEncoder.self)
        else {
            context.close(promise: nil)
            return
        }
        let written = context.eventLoop.makePromise(of: Void.self)
        let channel = context.channel
        written.futureResult.whenComplete { _ in channel.close(promise: nil) }
        encoder.writeAndFlush(NIOAny(ByteBuffer()), promise: written)
    }

    private func replayQueued(context: ChannelHandlerContext) {
        var passedOn = false
        while parked == nil, !queued.isEmpty {
            let item = queued.removeFirst()
            switch item {
            case .part(let part):
                if receive(part, context: context) { passedOn = true }
            case .event(let event):
                pass(event, context: context)
            }
        }
        // The router's side delivers what it read at read completion.
        if passedOn { context.fireChannelReadComplete() }
        if readHeld, queued.count < Self.queueLimit {
            readHeld = false
            context.read()
        }
    }

    private func respond(
        _ reply: Reply, path: String, requestID: String, since start: ContinuousClock.Instant,
        context: ChannelHandlerContext
    ) {
        // Only requests taken with the conversion in the pipeline are answered here (`receive`).
        guard let http1 = http1Context else { return }
        // Recorded before the write, as the middleware records before the application writes.
        fastPath.record(path: path, requestID: requestID, status: reply.status, since: start)
        // Written where the router's answers arrive converted, in the same form: nothing between here and there
        // has to see them (the router's side has no request in progress), and NIO's encoder still pairs each
        // head with its request.
        http1.write(NIOAny(HTTPServerResponsePart.head(fastPath.head(of: reply, requestID: requestID))), promise: nil)
        if let body = reply.body { http1.write(NIOAny(HTTPServerResponsePart.body(.byteBuffer(body))), promise: nil) }
        http1.writeAndFlush(NIOAny(HTTPServerResponsePart.end(nil)), promise: nil)
    }

    private func forgetParked() {
        if let parked {
            fastPath.api.app.hub.forget(parked.id)
            self.parked = nil
        }
    }

    /// The problem reply `ProblemMiddleware` gives for an error of these functions.
    private static func problem(_ error: any Error, path: String, requestID: String) -> Reply {
        let apiError =
            error as? APIError
            ?? APIError(
                .internalServerError, "internal", "Internal error",
                "an unexpected error occurred; it was logged with request id \(requestID)")
        return .problem(apiError, instance: path, requestID: requestID)
    }
}

/// A parked fast-path request as the hub holds it.
private struct ParkedSnapshotRequest: ParkedConnection {
    let handler: NIOLoopBound<SnapshotFastPathHandler>
    let serial: Int

    var eventLoop: any EventLoop { handler.eventLoop }

    func wake(_ reason: WakeReason) {
        handler.value.wake(reason, serial: serial)
    }
}

/// The `Date` header's value (RFC 9110 IMF-fixdate, `Sun, 06 Nov 1994 08:49:37 GMT`), formatted once per second.
final class HTTPDateCache: Sendable {
    private let cached = Mutex<(second: Int64, text: String)>((.min, ""))

    func now() -> String {
        let second = Int64(Date().timeIntervalSince1970.rounded(.down))
        return cached.withLock { cached in
            if cached.second != second { cached = (second, Self.format(secondsSince1970: second)) }
            return cached.text
        }
    }

    /// IMF-fixdate of a time in whole seconds since 1970.
    static func format(secondsSince1970 seconds: Int64) -> String {
        let days = UTCTime.days(since1970: seconds)
        let time = seconds - days * 86_400
        let weekday = Int((days % 7 + 11) % 7)  // 1970-01-01 was a Thursday
        let (year, month, day) = UTCTime.civil(days: days)
        let weekdays = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        func two(_ value: Int64) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return
            "\(weekdays[weekday]), \(two(day)) \(months[Int(month) - 1]) \(year) \(two(time / 3600)):\(two(time / 60 % 60)):\(two(time % 60)) GMT"
    }
}
