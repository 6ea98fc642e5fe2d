import Foundation
import HTTPTypes
import Hummingbird
package import Logging
package import Metrics
package import SwitchyardCore
package import SwitchyardStorage
import Synchronization

/// What every route shares: the store, the long-poll hub, token checks, metrics, and the change path that
/// commits a change and then wakes the waiters of its namespace.
///
/// The crash guard and other in-process writers change flags through `change(_:_:mutation:)` too, so every
/// change is delivered the same way.
package struct FlagService: Sendable {
    package let store: any FlagStore
    package let hub: LongPollHub
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

    // MARK: Writes
    //
    // Every change of a namespace's flags or settings goes through these: the API's routes (and so the console
    // and flagctl) and the crash guard. (Seeding an empty store from flag files, before the service starts, writes
    // to the store directly: nothing is delivered yet.) Each commits in the store, then publishes
    // the new version to the hub (waking the namespace's long-polls), counts it, times it and logs it, in one
    // place (`commit`).

    /// Commits a change of a namespace's flag set (a mutation of the current one) and delivers it.
    ///
    /// A change by anyone but the release plans' runner that touches the targeting or disables of a switch whose
    /// plan runs stops that plan in the same change: paused, or aborted by the crash guard's trip, saying why.
    package func change(
        _ namespace: String, _ request: ChangeRequest, mutation: @escaping @Sendable (FlagSet) throws -> FlagSet
    ) async throws -> CommittedChange {
        let author = request.author
        let summary = request.summary
        return try await commit {
            try await store.change(namespace, request) { before in
                let after = try mutation(before)
                guard author.source != .releasePlan else { return after }
                return after.stoppingInterruptedReleases(
                    since: before, actor: author.actor, summary: summary,
                    isCrashGuard: author.source == .crashGuard,
                    at: Int64(store.now().timeIntervalSince1970))
            }
        }
    }

    /// Creates a namespace with its first flag set (version 1) and delivers it.
    package func createNamespace(_ flagSet: FlagSet, reasonPolicy: ReasonPolicy, request: ChangeRequest) async throws
        -> CommittedChange
    {
        try await commit { try await store.createNamespace(flagSet, reasonPolicy: reasonPolicy, request: request) }
    }

    /// Restores what a recorded change changed, as a new change, and delivers it: an ordinary ``change(_:_:mutation:)``,
    /// so a revert that touches a switch whose plan runs pauses it (or, by the crash guard, aborts it) like any other.
    package func revert(_ namespace: String, version: Int64, request: ChangeRequest) async throws -> CommittedChange {
        let revert = try await store.reverting(namespace, version: version, request: request)
        return try await change(namespace, revert.request, mutation: revert.mutation)
    }

    /// Sets which evaluations report their reason (no new version: snapshots do not carry it). Setting the policy
    /// in force changes nothing and logs nothing.
    package func setReasonPolicy(_ policy: ReasonPolicy, of namespace: String, by author: ChangeAuthor) async throws
        -> NamespaceRecord
    {
        let (record, changed) = try await store.setReasonPolicy(policy, of: namespace, by: author)
        if changed {
            logger.info(
                "namespace setting changed",
                metadata: [
                    "namespace": .string(namespace), "reason_policy": .string(policy.rawValue),
                    "actor": .string(author.actor),
                ])
        }
        return record
    }

    /// Deletes a namespace with its history; its long-polls are answered 404 at once.
    package func deleteNamespace(_ namespace: String, by author: ChangeAuthor) async throws {
        try await store.deleteNamespace(namespace, by: author)
        hub.remove(namespace)
        logger.info("namespace deleted", metadata: ["namespace": .string(namespace), "actor": .string(author.actor)])
    }

    /// Commits through the store, then publishes what committed (nothing when the change changed nothing), and
    /// times the commit.
    ///
    /// Always on Swift's pool at the process's priority, even when asked from event work on
    /// ``BackgroundThreads/events`` (the crash guard trips after a batch): a change never waits for the processors
    /// behind a flood of events.
    private func commit(_ write: () async throws -> CommittedChange) async throws -> CommittedChange {
        let start = ContinuousClock.now
        let result = try await withTaskExecutorPreference(globalConcurrentExecutor, operation: write)
        if let record = result.record { committed(result.state, record) }
        Timer(label: "flagsd_change_commit_duration_seconds", factory: metricsFactory)
            .recordNanoseconds((ContinuousClock.now - start).nanoseconds)
        return result
    }

    /// Publishes a committed change: hub, metrics, log.
    private func committed(_ state: NamespaceState, _ record: ChangeRecord) {
        hub.publish(state)
        Counter(
            label: "flagsd_changes_total",
            dimensions: [("namespace", record.namespace), ("source", record.source.rawValue)],
            factory: metricsFactory
        ).increment()
        Counter(
            label: "flagsd_changes_by_actor_total",
            dimensions: [("namespace", record.namespace), ("actor", record.actor)],
            factory: metricsFactory
        ).increment()
        logger.info(
            "change committed",
            metadata: [
                "namespace": .string(record.namespace), "version": .stringConvertible(record.version),
                "actor": .string(record.actor), "source": .string(record.source.rawValue),
                "summary": .string(record.summary),
            ])
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
