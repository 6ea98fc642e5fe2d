public import Foundation
import SwitchyardStorage

/// How flagsd's HTTP application behaves.
public struct ServerConfiguration: Sendable {
    /// The address to listen on.
    public var host: String
    /// The port; 0 picks a free one (reported through `onServerRunning`).
    public var port: Int
    /// The longest long-poll wait; a longer `wait` is clamped to it.
    public var maximumWait: Int
    /// Past this many parked long-poll requests, new ones get 503 with `Retry-After`.
    public var maximumWaiters: Int
    /// The `Retry-After` seconds sent with 503 when overloaded.
    public var retryAfter: Int
    /// The largest request body accepted, in bytes.
    public var maximumBodySize: Int
    /// Whether `/metrics` is open to anyone; when false (the default) it needs a `metrics` token, or an editor's or
    /// admin's valid in every namespace: metrics name every namespace, switch and release plan.
    public var openMetrics: Bool
    /// The namespace OFREP requests evaluate in when neither the token (limited to one namespace) nor the
    /// `X-Switchyard-Namespace` header names one.
    public var defaultNamespace: String?
    /// The most OFREP evaluation requests per minute a token without its own rate may send; nil: no limit.
    public var ofrepRatePerMinute: Int?
    /// How long token checks trust the tokens cached in memory before reading the store again (for tokens
    /// created or revoked by another instance).
    public var tokenCacheMaximumAge: Duration = .seconds(10)
    /// On a store shared by several processes (PostgreSQL): how often every namespace is compared with the
    /// store, the safety net for missed change notifications.
    public var storeCheckInterval: Duration = .seconds(5)
    /// How many versions back a snapshot request that accepts deltas may start and still get one (instead of the
    /// whole snapshot); 0 answers every request with the full snapshot.
    public var deltaVersions: Int = 100
    /// The most connections open at once; past it, a new connection takes the place of the longest idle one (closed,
    /// and counted in `flagsd_connections_cut_total{reason="evicted_idle"}`), or is closed as soon as it is accepted
    /// when none is idle (counted in `flagsd_connections_refused_total{reason="connection_cap"}`). Keep it above
    /// `maximumWaiters` (a parked long-poll holds a connection) and below the process's open-file limit.
    public var maximumConnections: Int = 16_384
    /// The most connections one peer address may hold open at once (an IPv6 peer at its /64, and 4 and 16 times
    /// as many at its /56 and /48: ``AddressBlock``); past it, a new connection from it is closed as soon as it is
    /// accepted (and counted in `flagsd_connections_refused_total{reason="address_cap"}`). Peers in
    /// `trustedProxies` are not capped (they carry many clients). Nil: no cap.
    public var maximumConnectionsPerAddress: Int? = 1_100
    /// How many connections the kernel may hold, handshake done, for flagsd to accept (the listen backlog). Past
    /// it the kernel drops a new connection's handshake and its client waits a second for the retransmission, so a
    /// fleet reconnecting at once (after a restart or a deploy) needs room here. The kernel caps it at
    /// `net.core.somaxconn`; the default is that cap (``systemListenBacklog``).
    public var listenBacklog: Int = ServerConfiguration.systemListenBacklog
    /// How long a connection may wait for its client: between requests (after the last response), and within a
    /// request body (between two bytes). A request being answered, a parked long-poll included, is never cut.
    public var idleTimeout: Duration = .seconds(75)
    /// How long a client may take to send a request's head: from the connection's start, or from the first byte
    /// of a later request's head, however slowly the bytes come.
    public var headerTimeout: Duration = .seconds(10)
    /// Whether flagsd serves the web console at `/console/`.
    public var console: Bool = true
    /// The most events one `POST /v1/namespaces/{ns}/events` batch may hold (more: 413).
    public var maximumEventsPerBatch = 1000
    /// Events older than this are refused; their ids are remembered a day longer, so a retried batch never
    /// counts twice.
    public var maximumEventAge: Duration = .seconds(7 * 86_400)
    /// How far in the future an event's time may be (device clocks drift).
    public var maximumEventClockSkew: Duration = .seconds(600)
    /// How long event counters are kept (`--events-retention`): minute counters roll up into hours two days
    /// after their minute, and are deleted past this.
    public var eventCountRetention: Duration = .seconds(30 * 86_400)
    /// The most units one arm of an experiment's phase holds (`--experiment-units-per-arm`): once an arm holds this
    /// many, no new unit enters the phase. Experiment phases and metric totals are kept as long as counters.
    public var experimentUnitsPerArm: Int? = EventAdmission.defaultMaximumUnitsPerArm
    /// The most events admitted for counting and not yet written (the batch being written and those waiting
    /// their turn); past it, a batch gets 429 with `Retry-After` (`retryAfter`). A batch is always admitted
    /// when nothing waits, however large.
    public var maximumEventBacklog = 20_000
    /// The most rows (estimated: ids, counters, admission windows, crash records) one events transaction
    /// writes. Event batches write one at a time in transactions this small, so a flag change waits for at most
    /// one of them.
    public var eventRowsPerTransaction = 2_000
    /// The valid events per minute one reporter (or higher) token may post (a minute's worth at once, then this
    /// rate); more get 429 with `Retry-After`. Nil: no limit.
    public var eventRatePerToken: Int? = 600_000
    /// The valid events per minute one client token may post. Nil (the default): no limit, because a client token
    /// is public and shared by the whole fleet: a limit on it would let anyone holding it spend every app's budget.
    public var eventRatePerClientToken: Int?
    /// The events per minute one source address may post with client tokens, valid or not, at each of its blocks
    /// (``AddressBlock``; reporter tokens are secret and carry a whole fleet's crashes from a few addresses: only
    /// their token's rate applies). Nil: no limit.
    public var eventRatePerAddress: Int? = 60_000
    /// The most long-poll requests one source address may have parked at once; more get 429 with
    /// `Retry-After`.
    public var maximumWaitersPerAddress = 1_000
    /// The long-polls per minute one source address may park with client tokens (a minute's worth at once, then
    /// this rate); more get 429 with `Retry-After`. Nil: no limit. The default lets the address's whole cap of
    /// parked requests come back twelve times a minute, after changes, however close they follow each other.
    public var longPollRatePerAddress: Int? = 12_000
    /// The long-polls per minute one token may park; more get 429 with `Retry-After`. Nil (the default): no limit,
    /// because a client token is shared by a whole fleet and is public: a limit per token would let anyone holding
    /// it keep every app from hearing of a change. For tokens of a few known callers (server-side SDKs).
    public var longPollRatePerToken: Int?
    /// Where the crash guard announces each trip (`POST` of JSON, retried with backoff); nil: nowhere.
    public var guardWebhookURL: URL?
    /// The secret that signs each webhook post (`X-Switchyard-Signature`); nil: posts are not signed.
    public var guardWebhookSecret: [UInt8]?
    /// How often the crash guard reloads its counters from the store (other flagsd processes count events too)
    /// and updates its gauges.
    public var guardRefreshInterval: Duration = .seconds(15)
    /// How often every running release plan is looked at (and stepped when its evidence says so). Steps are
    /// announced to `guardWebhookURL` too.
    public var releasePlanInterval: Duration = .seconds(30)
    /// The time rate budgets refill by, as a duration since any fixed origin; nil: the continuous clock. Tests move
    /// their own.
    package var rateClock: (@Sendable () -> Duration)?
    /// The proxies whose forwarding header (`X-Forwarded-For`, or `Forwarded` when they are set so) says where a
    /// request came from; a request from any other peer comes from that peer.
    public var trustedProxies = TrustedProxies()

    /// The kernel's cap of a listen backlog (`/proc/sys/net/core/somaxconn`, read once), or 4096 (Linux's default
    /// since 5.4) where it cannot be read.
    public static let systemListenBacklog: Int = {
        guard let text = try? String(contentsOfFile: "/proc/sys/net/core/somaxconn", encoding: .utf8),
            let value = Int(text.trimmingCharacters(in: .whitespacesAndNewlines)), value > 0
        else { return 4_096 }
        return value
    }()

    public init(
        host: String = "127.0.0.1", port: Int = 8080, maximumWait: Int = 30, maximumWaiters: Int = 15_000,
        retryAfter: Int = 5, maximumBodySize: Int = 1 << 20, openMetrics: Bool = false,
        defaultNamespace: String? = nil, ofrepRatePerMinute: Int? = nil
    ) {
        self.host = host
        self.port = port
        self.maximumWait = maximumWait
        self.maximumWaiters = maximumWaiters
        self.retryAfter = retryAfter
        self.maximumBodySize = maximumBodySize
        self.openMetrics = openMetrics
        self.defaultNamespace = defaultNamespace
        self.ofrepRatePerMinute = ofrepRatePerMinute
    }
}

extension ServerConfiguration {
    var eventLimits: EventLimits {
        EventLimits(
            maximumEvents: maximumEventsPerBatch, maximumAge: maximumEventAge, maximumFutureSkew: maximumEventClockSkew)
    }
}
