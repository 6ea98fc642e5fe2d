import HummingbirdCore
package import Logging
package import Metrics
import NIOCore
import NIOHTTP1
import NIOHTTPTypesHTTP1
import SwitchyardStorage
import Synchronization

/// The connections flagsd holds: caps on how many are open at once, in all and per peer address, and the timeouts
/// that cut a connection whose client keeps it waiting (`ConnectionTimeouts`), on both HTTP paths (the snapshot fast
/// path and the router).
///
/// A new connection whose peer address already holds `maximumConnectionsPerAddress` (at any of its blocks:
/// ``AddressBlock``) is closed as soon as it is accepted, before any byte of it is read; peers in the trusted proxies
/// carry many clients and are not capped. At the global cap, the connection idle longest (between requests) is closed
/// to make room for the new one; when none is idle, the new one is closed as soon as it is accepted. A refused
/// client sees the connection closed or reset at once (rather than waiting in the kernel's queue for an unknown
/// time) and retries, typically on another instance; the connections already open go on being answered. The
/// decisions are `ConnectionAdmission`'s; one instance of this is shared by every connection and takes its lock once
/// when a connection is accepted and once when it closes.
package final class ConnectionGate: Sendable {
    /// The caps and the timeouts.
    package struct Limits: Sendable {
        /// The most connections open at once.
        package var maximumConnections: Int
        /// How long a connection may wait for its client between requests, and within a request body.
        package var idleTimeout: Duration
        /// How long a client may take to send a request's head, from the connection's start or the head's first
        /// byte.
        package var headerTimeout: Duration
        /// The most connections open at once from one peer address (4 and 16 times as many from an IPv6 peer's /56
        /// and /48); nil: no cap.
        package var maximumConnectionsPerAddress: Int? = nil
        /// Peers not capped per address.
        package var trustedProxies = TrustedProxies()
    }

    /// An open connection, as the admission state holds it.
    private struct Open {
        let channel: any Channel
        let activity: ConnectionActivity
    }

    /// The admission state, and the tasks waiting for the last connection to close (`allClosed()`).
    private struct State {
        var admission: ConnectionAdmission<Open, GateInstant>
        var drainWaiters: [CheckedContinuation<Void, Never>] = []
    }

    package let limits: Limits
    let logger: Logger
    private let state: Mutex<State>
    /// The start of the gate's clock (``GateInstant``).
    private let origin = ContinuousClock.now
    private let refusing = Atomic<Bool>(false)
    private let refusedAnAddress = Atomic<Bool>(false)
    private let closedAnIdleOne = Atomic<Bool>(false)
    private let openMeter: Meter
    private let refusals: [ConnectionRefusal: Counter]
    private let cuts: [ConnectionTimeouts<ContinuousClock.Instant>.Cut: Counter]
    private let evictions: Counter

    package init(limits: Limits, metricsFactory: any MetricsFactory, logger: Logger) {
        self.limits = limits
        self.logger = logger
        state = Mutex(
            State(
                admission: ConnectionAdmission(
                    maximumConnections: limits.maximumConnections,
                    maximumConnectionsPerAddress: limits.maximumConnectionsPerAddress ?? .max)))
        openMeter = Meter(label: "flagsd_connections_open", factory: metricsFactory)
        refusals = Dictionary(
            uniqueKeysWithValues: ConnectionRefusal.allCases.map { refusal in
                (
                    refusal,
                    Counter(
                        label: "flagsd_connections_refused_total", dimensions: [("reason", refusal.rawValue)],
                        factory: metricsFactory)
                )
            })
        cuts = Dictionary(
            uniqueKeysWithValues: ConnectionTimeouts<ContinuousClock.Instant>.Cut.allCases.map { cut in
                (
                    cut,
                    Counter(
                        label: "flagsd_connections_cut_total", dimensions: [("reason", cut.rawValue)],
                        factory: metricsFactory)
                )
            })
        evictions = Counter(
            label: "flagsd_connections_cut_total", dimensions: [("reason", "evicted_idle")], factory: metricsFactory)
        Gauge(label: "flagsd_connections_max", factory: metricsFactory).record(limits.maximumConnections)
    }

    /// The connections open now (refused ones, and ones closed to make room, are not counted), for tests.
    package var openCount: Int { state.withLock { $0.admission.count } }

    /// Counts a new connection in until it closes, closing the longest idle one when it reaches the cap; nil,
    /// counting a refusal, when its address is at its cap or the cap is reached and no connection is idle.
    ///
    /// - Returns: where the connection's handler reports when it is idle.
    func admit(_ channel: any Channel) -> ConnectionActivity? {
        let now = GateInstant(ContinuousClock.now, since: origin)
        let activity = ConnectionActivity(origin: origin, openedAt: now)
        let blocks = addressBlocks(of: channel)
        let decision = state.withLock { state in
            state.admission.admit(Open(channel: channel, activity: activity), blocks: blocks, at: now) {
                $0.activity.idleSince
            }
        }
        switch decision {
        case .refused(let refusal):
            refused(refusal, remote: channel.remoteAddress)
            return nil
        case .admitted(let id, let closing):
            openMeter.increment()
            if let closing { close(closing, toAdmit: channel) }
            if refusing.load(ordering: .relaxed), refusing.exchange(false, ordering: .relaxed) {
                logger.notice(
                    "accepting new connections again", metadata: ["open_connections": .stringConvertible(openCount)])
            }
            channel.closeFuture.whenComplete { _ in self.closed(id: id) }
            return activity
        }
    }

    private func closed(id: Int) {
        let (counted, drained) = state.withLock { state in
            let counted = state.admission.close(id: id)
            var drained: [CheckedContinuation<Void, Never>] = []
            if state.admission.count == 0 { swap(&drained, &state.drainWaiters) }
            return (counted, drained)
        }
        if counted { openMeter.decrement() }
        for waiter in drained { waiter.resume() }
    }

    /// Returns once no connection is open, as after a graceful shutdown's last connection closed; if the calling task
    /// is cancelled, closes every open connection first.
    ///
    /// A connection the snapshot fast path alone served has no task of its own (`RouterSide`), so Hummingbird's
    /// server returns without waiting for it: the HTTP service waits here.
    func allClosed() async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let resumeNow = state.withLock { state in
                    guard state.admission.count > 0 else { return true }
                    state.drainWaiters.append(continuation)
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            for open in state.withLock({ $0.admission.connections }) {
                open.channel.close(promise: nil)
            }
        }
    }

    /// The blocks a connection counts toward per address: none when there is no per-address cap, the peer is
    /// unknown or a trusted proxy.
    private func addressBlocks(of channel: any Channel) -> [AddressBlock] {
        guard limits.maximumConnectionsPerAddress != nil,
            let peer = channel.remoteAddress?.ipAddress.flatMap({ IPAddress($0) }),
            !limits.trustedProxies.trusts(peer)
        else { return [] }
        return peer.blocks
    }

    private func refused(_ refusal: ConnectionRefusal, remote: SocketAddress?) {
        refusals[refusal]?.increment()
        switch refusal {
        case .connectionCap:
            if !refusing.exchange(true, ordering: .relaxed) {
                logger.warning(
                    "refusing new connections: the cap of open connections is reached and none is idle (--max-connections)",
                    metadata: [
                        "max_connections": .stringConvertible(limits.maximumConnections)
                    ])
            }
        case .addressCap:
            if !refusedAnAddress.exchange(true, ordering: .relaxed) {
                logger.notice(
                    "refusing new connections from an address that holds its cap of open connections (--max-connections-per-address); flagsd_connections_refused_total{reason=\"address_cap\"} counts them",
                    metadata: [
                        "max_connections_per_address": .stringConvertible(limits.maximumConnectionsPerAddress ?? 0),
                        "remote": .string(remote.map { "\($0)" } ?? "unknown"),
                    ])
            } else {
                logger.debug(
                    "refused a connection from an address at its cap",
                    metadata: ["remote": .string(remote.map { "\($0)" } ?? "unknown")])
            }
        }
    }

    /// Closes the connection idle longest, counted out already, to admit a new one at the cap. It may have begun a
    /// request since it was found idle; its client then sees the connection closed, as HTTP/1.1 clients must expect
    /// of an idle connection at any time (RFC 9112, 9.5), and retries.
    private func close(_ idle: Open, toAdmit channel: any Channel) {
        openMeter.decrement()
        evictions.increment()
        if !closedAnIdleOne.exchange(true, ordering: .relaxed) {
            logger.notice(
                "closing the longest idle connection to admit a new one: the cap of open connections is reached (--max-connections); flagsd_connections_cut_total{reason=\"evicted_idle\"} counts them",
                metadata: [
                    "max_connections": .stringConvertible(limits.maximumConnections)
                ])
        }
        logger.debug(
            "closed the longest idle connection to admit a new one",
            metadata: [
                "remote": .string(idle.channel.remoteAddress.map { "\($0)" } ?? "unknown"),
                "admitted": .string(channel.remoteAddress.map { "\($0)" } ?? "unknown"),
            ])
        // Thread-safe: the close runs on the idle connection's own event loop.
        idle.channel.close(promise: nil)
    }

    /// Counts a connection cut by a timeout.
    func count(_ cut: ConnectionTimeouts<ContinuousClock.Instant>.Cut, remote: SocketAddress?) {
        cuts[cut]?.increment()
        logger.debug(
            "closed a connection that kept flagsd waiting",
            metadata: [
                "reason": .string(cut.rawValue), "remote": .string(remote.map { "\($0)" } ?? "unknown"),
            ])
    }

    /// The timeout handler of one connection (`GatedHTTP1Channel.setup` adds it).
    func makeHandler() -> ConnectionGuardHandler {
        ConnectionGuardHandler(gate: self)
    }
}

/// Since when a connection has been idle (`ConnectionTimeouts.idleSince`), written by its handler on its event loop
/// at each change and read by the gate when it looks for the connection idle longest: one atomic, no lock.
final class ConnectionActivity: Sendable {
    private let origin: ContinuousClock.Instant
    /// The start of the present idle time, in nanoseconds of the gate's clock; -1 while a request is read or answered.
    private let idleStart: Atomic<Int64>

    /// A connection that opened at `openedAt`: idle since then.
    ///
    /// - Parameter origin: the start of the gate's clock.
    init(origin: ContinuousClock.Instant, openedAt: GateInstant) {
        self.origin = origin
        idleStart = Atomic(openedAt.nanoseconds)
    }

    /// Since when the connection has been idle; nil while it reads or answers a request.
    var idleSince: GateInstant? {
        let start = idleStart.load(ordering: .relaxed)
        return start < 0 ? nil : GateInstant(nanoseconds: start)
    }

    func record(idleSince: ContinuousClock.Instant?) {
        idleStart.store(idleSince.map { GateInstant($0, since: origin).nanoseconds } ?? -1, ordering: .relaxed)
    }
}

/// An instant of a gate's clock: nanoseconds since the gate was made. A look over every open connection sorts their
/// idle times; these compare as integers, some 15 times faster than `ContinuousClock.Instant` (measured: 1.6 against
/// 24 ms to sort 16,384 in a release build).
struct GateInstant: InstantProtocol {
    let nanoseconds: Int64

    init(nanoseconds: Int64) {
        self.nanoseconds = nanoseconds
    }

    init(_ instant: ContinuousClock.Instant, since origin: ContinuousClock.Instant) {
        nanoseconds = max(.zero, instant - origin).nanoseconds
    }

    func advanced(by duration: Duration) -> GateInstant {
        GateInstant(nanoseconds: nanoseconds + duration.nanoseconds)
    }

    func duration(to other: GateInstant) -> Duration {
        .nanoseconds(other.nanoseconds - nanoseconds)
    }

    static func < (lhs: GateInstant, rhs: GateInstant) -> Bool {
        lhs.nanoseconds < rhs.nanoseconds
    }
}

/// Hummingbird's HTTP/1.1 child channel behind a `ConnectionGate`: a refused connection is closed as soon as it is
/// registered and never reaches HTTP; an admitted one's timeout handler reports to the gate when it is idle, and its
/// router side (Hummingbird's request loop) runs only once the snapshot fast path hands it something (`RouterSide`),
/// on `routerLoops`: the connection's task (in Hummingbird's task group) launches it or leaves it, and ends.
struct GatedHTTP1Channel: ServerChildChannel {
    enum Value: ServerChildChannelValue {
        case admitted(HTTP1Channel.Value, routerSide: RouterSide)
        case refused(any Channel)

        var channel: any Channel {
            switch self {
            case .admitted(let value, _): value.channel
            case .refused(let channel): channel
            }
        }
    }

    let http1: HTTP1Channel
    let gate: ConnectionGate
    let routerLoops: RouterLoops

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        guard let activity = gate.admit(channel) else {
            return channel.eventLoop.makeCompletedFuture {
                try channel.pipeline.syncOperations.addHandler(RefusedConnectionHandler())
                return .refused(channel)
            }
        }
        return http1.setup(channel: channel, logger: logger).flatMapThrowing { value in
            // A connection keeps its last receive buffer for its next read, and NIO's first is 2 KiB: 20 MiB for
            // 10,000 parked long-polls, whose requests are a few hundred bytes. From 1 KiB, the allocator still
            // grows the buffer after reads that fill it (request bodies).
            try channel.syncOptions?.setOption(
                ChannelOptions.recvAllocator,
                value: AdaptiveRecvByteBufferAllocator(minimum: 64, initial: 1024, maximum: 65536))
            let pipeline = channel.pipeline.syncOperations
            // Below the conversion to HTTP types, where it sees the router's responses (converted) and the snapshot
            // fast path's (written there as HTTP/1 parts: `SnapshotFastPathHandler.respond`).
            let timeouts = gate.makeHandler()
            try pipeline.addHandler(timeouts, position: .before(pipeline.handler(type: HTTP1ToHTTPServerCodec.self)))
            timeouts.report(to: activity)
            let routerSide = try pipeline.handler(type: SnapshotFastPathHandler.self).routerSide
            // Completed after NIO removed the channel's handlers (which finishes its async writer).
            channel.closeFuture.whenComplete { _ in routerSide.channelClosed() }
            return .admitted(value, routerSide: routerSide)
        }
    }

    func handle(value: Value, logger: Logger) async {
        guard case .admitted(let value, let routerSide) = value else { return }
        let http1 = http1
        let routerLoops = routerLoops
        let launch: @Sendable () -> Void = {
            routerLoops.launch { await http1.handle(value: value, logger: logger) }
        }
        if routerSide.launchNowOrPark(launch: launch) {
            launch()
        } else {
            routerLoops.countLeft()
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

/// One connection's timeouts (see `ConnectionTimeouts`), on its event loop, between NIO's HTTP/1 codec and the
/// conversion to HTTP types: it sees every request part before the snapshot fast path or the router takes it, and
/// every response part either writes.
/// One timer per connection, moved only when the deadline comes closer; when it fires, the state decides.
final class ConnectionGuardHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart

    private let gate: ConnectionGate
    private var timeouts: ConnectionTimeouts<ContinuousClock.Instant>
    /// Where the gate reads when the connection is idle; nil until the gate admitted it.
    private var activity: ConnectionActivity?
    private var timer: Scheduled<Void>?
    private var timerDeadline: ContinuousClock.Instant?

    fileprivate init(gate: ConnectionGate) {
        self.gate = gate
        timeouts = ConnectionTimeouts(
            idleTimeout: gate.limits.idleTimeout, headerTimeout: gate.limits.headerTimeout,
            openedAt: .now)
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { arm(context) }
    }

    /// Reports to `activity` when the connection is idle, from now on.
    func report(to activity: ConnectionActivity) {
        self.activity = activity
        activity.record(idleSince: timeouts.idleSince)
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
        case .head:
            timeouts.headRead(at: .now)
            activity?.record(idleSince: nil)
        case .end:
            timeouts.requestEnded(at: .now)
            activity?.record(idleSince: timeouts.idleSince)
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
            activity?.record(idleSince: timeouts.idleSince)
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
