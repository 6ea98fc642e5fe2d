import Foundation
import HTTPTypes
import Hummingbird
package import Logging
package import Metrics
import SwitchyardCore
package import SwitchyardStorage
import Synchronization

/// The app's parts, made once by the composition root (`buildApplication`) and shared by the routes, the crash guard,
/// the release plans' runner, the snapshot fast path and the store follower: the store, the long-poll hub, token
/// checks, the rate limiters, the event ingestor and its observers, the console, metrics and the log. Flags change
/// through `service` (`FlagService`), the one write path.
package struct AppContext: Sendable {
    package let store: any FlagStore
    package let hub: LongPollHub
    /// The change path: every write of flags and namespaces.
    package let service: FlagService
    package let auth: Authenticator
    package let configuration: ServerConfiguration
    package let metricsFactory: any MetricsFactory
    package let logger: Logger
    /// Per-token request budgets of OFREP evaluations.
    package let rateLimiter: RateLimiter
    /// The web console's files and headers (`/console/`).
    var console = ConsoleSite(unavailable: "the web console is not set up on this flagsd")
    /// Told after each batch of client events commits (the crash guard adds itself here).
    package let eventObservers = EventObservers()
    /// Forgets old event ids, at most once an hour.
    package let eventIDPruner = EventIDPruner()
    /// Writes event batches one at a time, in small transactions, behind a bounded backlog, so that no flag
    /// change waits long behind events (Events/EventIngestion.swift).
    package let eventIngestor: EventIngestor
    /// The crash guard's series of each plugin switch, written after the registry's at each scrape.
    package let guardSeries = GuardSeries()
    /// Per-token and per-address budgets of events posted.
    package let eventRates: RateLimiter
    /// Per-address and per-token budgets of long-polls parked (their own lock: a flood of events never holds it).
    package let longPollRates: RateLimiter

    /// Says once, in the log, that a trusted proxy sends the forwarding header flagsd does not read.
    package let forwardingWarning = OnceFlag()

    /// Where a request came from: its TCP peer, or behind a trusted proxy the address the proxies forwarded
    /// (``TrustedProxies``). Nil when the peer is unknown (requests sent in-process).
    func sourceAddress(of request: Request, context: FlagsRequestContext) -> IPAddress? {
        sourceAddress(peer: context.peer, headers: request.headers)
    }

    /// Where a request came from, from its TCP peer and header fields (the snapshot fast path's form). When a trusted
    /// proxy sends only the forwarding header flagsd does not read (`--forwarded-header` names the other), every
    /// request from it counts as the proxy's: flagsd says so once, as a warning.
    func sourceAddress(peer: IPAddress?, headers: HTTPFields) -> IPAddress? {
        let proxies = configuration.trustedProxies
        if let peer, proxies.sendsOnlyTheOtherHeader(peer: peer, headers: headers), forwardingWarning.claim() {
            logger.warning(
                "a trusted proxy forwards requests with the forwarding header flagsd does not read: every request from it counts as the proxy's own address; set --forwarded-header to the header it writes",
                metadata: ["proxy": .stringConvertible(peer), "forwarded_header": .string(proxies.header.rawValue)])
        }
        return proxies.sourceAddress(peer: peer, headers: headers)
    }

    /// Loads every namespace into the hub and every token into the cache.
    package func load() async throws {
        try await auth.reload()
        for record in try await store.namespaces() {
            if let state = try await store.namespace(record.name) { hub.publish(state) }
        }
    }

}

/// A flag that is claimed once (a warning said once per process).
package final class OnceFlag: Sendable {
    private let claimed = Atomic<Bool>(false)

    package init() {}

    /// True the first time only.
    func claim() -> Bool {
        !claimed.load(ordering: .relaxed) && !claimed.exchange(true, ordering: .relaxed)
    }
}
