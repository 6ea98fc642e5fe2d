import HTTPTypes
import HummingbirdCore
package import Logging
package import Metrics
import NIOCore
import NIOHTTPTypes
import Synchronization

/// The connections flagsd holds: a cap on how many are open at once, and the timeouts that cut a connection whose
/// client keeps it waiting (`ConnectionTimeouts`), on both HTTP paths (the snapshot fast path and the router).
///
/// Past the cap, a new connection is closed as soon as it is accepted, before any byte of it is read: its client
/// sees the connection closed or reset at once (rather than waiting in the kernel's queue for an unknown time) and
/// retries, typically on another instance; the connections already open go on being answered. One instance of
/// this is shared by every connection; its counters are atomic.
package final class ConnectionGate: Sendable {
    /// The cap and the timeouts.
    package struct Limits: Sendable {
        /// The most connections open at once.
        package var maximumConnections: Int
        /// How long a connection may wait for its client between requests, and within a request body.
        package var idleTimeout: Duration
        /// How long a client may take to send a request's head, from the connection's start or the head's first
        /// byte.
        package var headerTimeout: Duration
    }

    package let limits: Limits
    let logger: Logger
    private let open = Atomic<Int>(0)
    private let refusing = Atomic<Bool>(false)
    private let openMeter: Meter
    private let refusals: Counter
    private let cuts: [ConnectionTimeouts<ContinuousClock.Instant>.Cut: Counter]

    package init(limits: Limits, metricsFactory: any MetricsFactory, logger: Logger) {
        self.limits = limits
        self.logger = logger
        openMeter = Meter(label: "flagsd_connections_open", factory: metricsFactory)
        refusals = Counter(label: "flagsd_connections_refused_total", factory: metricsFactory)
        cuts = Dictionary(uniqueKeysWithValues: ConnectionTimeouts<ContinuousClock.Instant>.Cut.allCases.map { cut in
            (cut, Counter(label: "flagsd_connections_cut_total", dimensions: [("reason", cut.rawValue)], factory: metricsFactory))
        })
        Gauge(label: "flagsd_connections_max", factory: metricsFactory).record(limits.maximumConnections)
    }

    /// The connections open now (refused ones are not counted), for tests.
    package var openCount: Int { open.load(ordering: .relaxed) }

    /// Counts a new connection in until it closes; false, counting a refusal, when it would pass the cap.
    func admit(_ channel: any Channel) -> Bool {
        let count = open.add(1, ordering: .relaxed).newValue
        guard count <= limits.maximumConnections else {
            open.subtract(1, ordering: .relaxed)
            refusals.increment()
            if !refusing.exchange(true, ordering: .relaxed) {
                logger.warning("refusing new connections: the cap of open connections is reached (--max-connections)", metadata: [
                    "max_connections": .stringConvertible(limits.maximumConnections),
                ])
            }
            return false
        }
        if refusing.load(ordering: .relaxed), refusing.exchange(false, ordering: .relaxed) {
            logger.notice("accepting new connections again", metadata: ["open_connections": .stringConvertible(count)])
        }
        openMeter.increment()
        channel.closeFuture.whenComplete { _ in
            self.openMeter.decrement()
            self.open.subtract(1, ordering: .relaxed)
        }
        return true
    }

    /// Counts a connection cut by a timeout.
    func count(_ cut: ConnectionTimeouts<ContinuousClock.Instant>.Cut, remote: SocketAddress?) {
        cuts[cut]?.increment()
        logger.debug("closed a connection that kept flagsd waiting", metadata: [
            "reason": .string(cut.rawValue), "remote": .string(remote.map { "\($0)" } ?? "unknown"),
        ])
    }

    /// The timeout handler of one connection, added right after the HTTP codec.
    func makeHandler() -> ConnectionGuardHandler {
        ConnectionGuardHandler(gate: self)
    }
}

/// Hummingbird's HTTP/1.1 child channel behind a `ConnectionGate`: a connection past the cap is closed as soon as
/// it is registered and never reaches HTTP.
struct GatedHTTP1Channel: ServerChildChannel {
    enum Value: ServerChildChannelValue {
        case admitted(HTTP1Channel.Value)
        case refused(any Channel)

        var channel: any Channel {
            switch self {
            case .admitted(let value): value.channel
            case .refused(let channel): channel
            }
        }
    }

    let http1: HTTP1Channel
    let gate: ConnectionGate

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        guard gate.admit(channel) else {
            return channel.eventLoop.makeCompletedFuture {
                try channel.pipeline.syncOperations.addHandler(RefusedConnectionHandler())
                return .refused(channel)
            }
        }
        return http1.setup(channel: channel, logger: logger).map { .admitted($0) }
    }

    func handle(value: Value, logger: Logger) async {
        if case .admitted(let value) = value {
            await http1.handle(value: value, logger: logger)
        }
    }
}

/// Closes a refused connection as soon as it is active, before anything is read from it.
private final class RefusedConnectionHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { context.close(promise: nil) }
    }

    func channelActive(context: ChannelHandlerContext) {
        context.close(promise: nil)
    }
}

/// One connection's timeouts (see `ConnectionTimeouts`), on its event loop, right after the HTTP codec: it sees
/// every request part before the snapshot fast path or the router takes it, and every response part either writes.
/// One timer per connection, moved only when the deadline comes closer; when it fires, the state decides.
final class ConnectionGuardHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private let gate: ConnectionGate
    private var timeouts: ConnectionTimeouts<ContinuousClock.Instant>
    private var timer: Scheduled<Void>?
    private var timerDeadline: ContinuousClock.Instant?

    fileprivate init(gate: ConnectionGate) {
        self.gate = gate
        timeouts = ConnectionTimeouts(idleTimeout: gate.limits.idleTimeout, headerTimeout: gate.limits.headerTimeout,
                                      openedAt: .now)
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { arm(context) }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        disarm()
    }

    func channelActive(context: ChannelHandlerContext) {
        arm(context)
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        disarm()
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head: timeouts.headRead(at: .now)
        case .end: timeouts.requestEnded(at: .now)
        case .body: break
        }
        context.fireChannelRead(data)
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        // Every read of the socket ends here, also one that decoded no part (a head arriving a byte at a time).
        timeouts.bytesRead(at: .now)
        arm(context)
        context.fireChannelReadComplete()
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .end = unwrapOutboundIn(data) {
            timeouts.responseEnded(at: .now)
            arm(context)
        }
        context.write(data, promise: promise)
    }

    /// Schedules the timer for the current deadline, unless one is due at or before it.
    private func arm(_ context: ChannelHandlerContext) {
        guard let deadline = timeouts.deadline?.at else { return }
        if let scheduled = timerDeadline, scheduled <= deadline { return }
        timer?.cancel()
        timerDeadline = deadline
        let delay = max(.zero, deadline - .now)
        timer = context.eventLoop.assumeIsolated().scheduleTask(in: .nanoseconds(delay.nanoseconds)) { [self] in
            fire(context)
        }
    }

    private func fire(_ context: ChannelHandlerContext) {
        timer = nil
        timerDeadline = nil
        if let cut = timeouts.expired(at: .now) {
            gate.count(cut, remote: context.channel.remoteAddress)
            context.close(promise: nil)
        } else {
            arm(context)
        }
    }

    private func disarm() {
        timer?.cancel()
        timer = nil
        timerDeadline = nil
    }
}
