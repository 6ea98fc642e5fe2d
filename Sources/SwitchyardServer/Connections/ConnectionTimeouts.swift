/// When an HTTP/1.1 connection has waited too long for its client, decided from what its handler sees
/// (`ConnectionGuardHandler`), without I/O and generic over time so tests drive it with their own instants.
///
/// A connection is in one of four phases:
/// - **awaiting a head**: just accepted, or bytes of a next request arrived after the last response. It is cut
///   `headerTimeout` after the phase began, however slowly bytes keep coming (slowloris sends a head a byte at a
///   time, or never).
/// - **reading a body**: a head arrived and the request's end has not. It is cut when no byte arrives for
///   `idleTimeout`.
/// - **answering**: every request read, a response not yet ended: a handler works or a long-poll is parked (its
///   wait is bounded by the server's cap). Never cut here.
/// - **idle**: every response ended and no byte of a next request arrived. It is cut `idleTimeout` after the last
///   response.
///
/// Bytes of a pipelined request that arrive while an earlier one is answered are not timed until that answer ends:
/// from then, the connection counts as idle, and a next byte starts its head's clock.
///
/// For the connection cap (`ConnectionAdmission`), a connection is idle while awaiting a head or idle as above:
/// between requests, from the end of the last response (or from its opening, before its first request) to the next
/// request's head, however many bytes of that head arrived (`idleSince`).
package struct ConnectionTimeouts<Instant: InstantProtocol> where Instant.Duration == Duration {
    /// Why a connection was cut, as the `reason` label of `flagsd_connections_cut_total`.
    package enum Cut: String, Sendable, CaseIterable {
        /// No request within the idle timeout after the last response.
        case idle = "idle_timeout"
        /// A request head not complete within the header timeout.
        case header = "header_timeout"
        /// No byte of a request body within the idle timeout.
        case body = "body_timeout"
    }

    package let idleTimeout: Duration
    package let headerTimeout: Duration
    /// Requests whose head arrived and whose response has not ended.
    private var requestsInFlight = 0
    /// A request's head arrived and its end has not.
    private var readingBody = false
    /// When the phase of awaiting a head began; nil in the other phases.
    private var headStart: Instant?
    /// The last byte read or response ended.
    private var lastActivity: Instant
    /// Whether a head or end was decoded from the bytes of the read under way.
    private var decodedInRead = false
    /// When the connection last became idle: no request read or answered (see `idleSince`).
    private var idleStart: Instant

    /// A connection accepted at `openedAt`: awaiting its first head.
    package init(idleTimeout: Duration, headerTimeout: Duration, openedAt now: Instant) {
        self.idleTimeout = idleTimeout
        self.headerTimeout = headerTimeout
        headStart = now
        lastActivity = now
        idleStart = now
    }

    /// Since when the connection has waited for its client between requests: the end of the last response, or its
    /// opening before its first request; nil while a request is read or answered (a parked long-poll included).
    package var idleSince: Instant? {
        isIdle ? idleStart : nil
    }

    private var isIdle: Bool {
        requestsInFlight == 0 && !readingBody
    }

    /// A read of the socket ended, after the parts decoded from its bytes, if any, were reported. A read that
    /// completed no head or end, while nothing is in flight, begins a head.
    package mutating func bytesRead(at now: Instant) {
        lastActivity = now
        if !decodedInRead, requestsInFlight == 0, !readingBody, headStart == nil { headStart = now }
        decodedInRead = false
    }

    /// A request's head was decoded.
    package mutating func headRead(at now: Instant) {
        requestsInFlight += 1
        readingBody = true
        headStart = nil
        lastActivity = now
        decodedInRead = true
    }

    /// A request's end was decoded.
    package mutating func requestEnded(at now: Instant) {
        let wasIdle = isIdle
        readingBody = false
        lastActivity = now
        decodedInRead = true
        // Answered before its body ended (a refusal that did not wait for the body): idle from now.
        if !wasIdle, isIdle { idleStart = now }
    }

    /// A response's end was written.
    package mutating func responseEnded(at now: Instant) {
        let wasIdle = isIdle
        requestsInFlight = max(0, requestsInFlight - 1)
        lastActivity = now
        if !wasIdle, isIdle { idleStart = now }
    }

    /// When the connection is to be cut, and why; nil while it answers a request.
    package var deadline: (at: Instant, cut: Cut)? {
        if readingBody { return (lastActivity.advanced(by: idleTimeout), .body) }
        if requestsInFlight > 0 { return nil }
        if let headStart { return (headStart.advanced(by: headerTimeout), .header) }
        return (lastActivity.advanced(by: idleTimeout), .idle)
    }

    /// Why the connection is to be cut at `now`; nil when its deadline has not passed (or it has none).
    package func expired(at now: Instant) -> Cut? {
        guard let deadline, deadline.at <= now else { return nil }
        return deadline.cut
    }
}
