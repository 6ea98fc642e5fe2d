package import Foundation
import HTTPTypes
import Logging
import Metrics
import ServiceLifecycle
import SwitchyardCore
import SwitchyardGuard
import SwitchyardStorage
import SwitchyardWire
import Synchronization

/// The crash guard inside flagsd: watches committed `session` events and disables a plugin switch that crashes
/// too often, in the city or cohort where the crashes concentrate or everywhere, through the same change path as
/// a person (a new version, long-poll waiters woken, an audit entry by `crash-guard` with the evidence).
///
/// On the ingestion path it only adds the batch's increments to per-minute counters in memory and assesses the
/// switches the batch names (``GuardRule``), which costs a few sums of at most a window of minutes; it never
/// reads the store there. A switch that looks like it trips is queued; the worker (``run()``) then decides on
/// the store's durable counts and the namespace's latest state, and commits the trip as a conditional change
/// that does nothing when the switch is off in that scope already, so flagsd processes sharing a store never
/// trip it twice. Counters are reloaded from the store at start (nothing acknowledged is lost by a restart) and
/// refreshed periodically (other processes count events too).
///
/// A tripped switch stays off until a person enables it; after that the guard counts only sessions reported
/// later, and leaves the switch alone for the policy's cool-down.
///
/// Its blast radius is bounded (``GuardBudget``): past the namespace's trip budget, or the switch's cap on scoped
/// disables, it proposes instead (an audit entry `guard.propose`, a metric, the webhook), and a person applies or
/// dismisses the proposal. Trips commit only on the namespace version they were decided on, so several processes
/// never spend more than the budget between them.
///
/// This type is the shell: it reads the store and the clocks, and performs what the pure core decides
/// (``GuardCore`` for what to do with a switch, ``GuardWorkQueue`` for when, ``GuardHistory`` for what the guard did
/// and what a person did about it): store calls, the change through ``FlagService/decideAndCommit(_:attempts:decide:)``,
/// metrics, log lines and the webhook. Its concerns are a file each: ingestion, the worker and confirmation here;
/// `CrashGuard+history.swift` (reloading counts and history), `CrashGuard+proposals.swift`, `CrashGuard+views.swift`.
package final class CrashGuard: EventObserver, Service, Sendable {
    /// How the guard runs.
    package struct Options: Sendable {
        /// How often the counters are reloaded from the store and the gauges updated.
        package var refreshInterval: Duration = .seconds(15)
        /// The least time between two store confirmations of the same switch; one asked for sooner waits until then.
        package var confirmInterval: Duration = .seconds(1)
        /// Where trips are announced (`POST` of JSON); nil: nowhere.
        package var webhookURL: URL?
        /// The secret that signs each post; nil: unsigned.
        package var webhookSecret: [UInt8]?
        /// Wall-clock time, for windows and cool-downs.
        package var now: @Sendable () -> Date = { Date() }
        /// Monotonic time, for the confirmation interval.
        package var instant: @Sendable () -> ContinuousClock.Instant = { ContinuousClock.now }

        package init(refreshInterval: Duration = .seconds(15), webhookURL: URL? = nil) {
            self.refreshInterval = refreshInterval
            self.webhookURL = webhookURL
        }
    }

    /// The actor and source of the guard's changes.
    package static let actor = "crash-guard"

    /// A namespace as the guard holds it in memory: its counts, where trips may be scoped, and its history.
    struct Watched: Sendable {
        var window = WindowCounts()
        var loaded = false
        /// Where clients' trips may be scoped, as the last reload read it (values new since then are allowed: the
        /// worker decides on the store's): made-up values do not queue a confirmation with every batch.
        var scopes: ScopeEligibility?
        /// Per reload under way (by its number), the increments and crash records told since it read the store, to
        /// add to what it read.
        var buffers:
            [Int: [(increments: [(key: EventAggregation.CounterKey, tally: EventTally)], crashes: [CrashRecord])]] = [:]
        var history = GuardHistory()
    }

    /// Everything the guard holds, behind one lock.
    struct Shared: Sendable {
        var namespaces: [String: Watched] = [:]
        /// Loads and confirmations to do, and those deferred.
        var work: GuardWorkQueue<ContinuousClock.Instant>
        /// Numbers the reloads.
        var reloads = 0
    }

    let app: AppContext
    let options: Options
    let webhook: GuardWebhook?
    let shared: Mutex<Shared>
    private let wakeups: AsyncStream<Void>
    private let wake: AsyncStream<Void>.Continuation
    var logger: Logger { app.logger }
    var store: any FlagStore { app.store }

    package init(app: AppContext, options: Options = Options()) {
        self.app = app
        self.options = options
        shared = Mutex(Shared(work: GuardWorkQueue(interval: options.confirmInterval)))
        (wakeups, wake) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        webhook = options.webhookURL.map {
            GuardWebhook(
                url: $0, secret: options.webhookSecret, metricsFactory: app.metricsFactory, logger: app.logger)
        }
    }

    // MARK: Ingestion path

    package func eventsCommitted(_ batch: CommittedEvents) async {
        let switches = batch.switches
        let increments = EventAggregation.increments(of: batch.events)
        let crashes = EventAggregation.crashes(of: batch.events)
        let flagSet = app.hub.snapshot(of: batch.namespace)?.flagSet
        let now = options.now()
        let instant = options.instant()
        let queuedWork = shared.withLock { shared -> Bool in
            var watched = shared.namespaces[batch.namespace] ?? Watched()
            var added = false
            if !watched.loaded { added = shared.work.load(batch.namespace) }
            watched.window.add(increments, crashes: crashes)
            for id in watched.buffers.keys { watched.buffers[id]?.append((increments, crashes)) }
            if let flagSet {
                var spans: [Int64: GuardCounts] = [:]
                for key in switches.sorted() {
                    guard let gate = flagSet.flag(key)?.pluginSwitch,
                        GuardCore.wouldTrip(
                            key, gate: gate, flagSet: flagSet, window: watched.window, scopes: watched.scopes,
                            history: watched.history, now: now, counts: &spans)
                    else { continue }
                    if shared.work.confirm(batch.namespace, key, receivedAt: batch.receivedAt, now: instant) {
                        added = true
                    }
                }
            }
            shared.namespaces[batch.namespace] = watched
            return added
        }
        if queuedWork { wake.yield() }
    }

    // MARK: Worker

    /// Loads every namespace, then works through confirmations as they come and refreshes the counters
    /// periodically, until graceful shutdown.
    package func run() async throws {
        await cancelWhenGracefulShutdown {
            await withTaskGroup(of: Void.self) { group in
                group.addTask {
                    await self.loadAll()
                    await self.drain()
                    for await _ in self.wakeups { await self.drain() }
                }
                group.addTask {
                    while !Task.isCancelled {
                        do { try await Task.sleep(for: self.options.refreshInterval) } catch { return }
                        await self.refreshAll()
                    }
                }
                group.addTask {
                    // Deferred confirmations fall due: the worker's dequeue picks them up.
                    while !Task.isCancelled {
                        do { try await Task.sleep(for: self.options.confirmInterval) } catch { return }
                        if self.shared.withLock({ $0.work.hasDeferred }) { self.wake.yield() }
                    }
                }
                if let webhook = self.webhook {
                    group.addTask { await webhook.run() }
                }
                await group.next()
                group.cancelAll()
            }
        }
    }

    /// Does the queued work now, and the deferred confirmations that are due (the worker calls it; in-process
    /// tests that do not run the service too).
    package func drain() async {
        while let work = dequeue() {
            switch work {
            case .load(let namespace):
                await refresh(namespace)
                // Only now: every batch until the counts are loaded would queue another load.
                shared.withLock { $0.work.finished(work) }
            case .confirm(let namespace, let key):
                await confirm(namespace, key)
            }
        }
    }

    /// The next work item (``GuardWorkQueue/next(now:)``).
    private func dequeue() -> GuardWorkQueue<ContinuousClock.Instant>.Work? {
        let now = options.instant()
        return shared.withLock { $0.work.next(now: now) }
    }

    // MARK: Confirmation

    /// What a confirmation decided, with what it was decided on.
    struct Confirmed {
        var action: GuardCore.Action
        var state: NamespaceState
        /// The start of the span counted, and the time of the decision.
        var from: Date
        var now: Date
    }

    /// Decides on the store's counts whether a switch trips (``GuardCore``), and trips it, or proposes to past the
    /// budget; decided again when the namespace moves on before the trip commits (``FlagService/decideAndCommit(_:attempts:decide:)``).
    func confirm(_ namespace: String, _ key: String) async {
        let instant = options.instant()
        let queuedAt = shared.withLock { $0.work.starting(namespace, key, now: instant) }
        do {
            let outcome = try await app.service.decideAndCommit(namespace) { state -> VersionedDecision<Confirmed>? in
                try await updateHistory(namespace, state: state)
                let history = shared.withLock { $0.namespaces[namespace]?.history } ?? GuardHistory()
                let now = options.now()
                switch GuardCore.confirmation(of: key, in: state, history: history, now: now) {
                case .nothing:
                    return nil
                case .stale:
                    throw StaleDecision()
                case .count(let candidate):
                    let counts = try await self.counts(of: candidate, in: state, now: now)
                    let action = GuardCore.decide(
                        candidate, counts: counts, history: history, flagSet: state.flagSet, now: now)
                    let confirmed = Confirmed(action: action, state: state, from: candidate.from, now: now)
                    guard case .trip(let trip) = action else { return .settle(confirmed) }
                    // Decided on this version's history (the budget counts its trips): committed on it, or decided again.
                    let request = ChangeRequest(
                        author: ChangeAuthor(actor: Self.actor, source: .crashGuard, reason: trip.reason),
                        summary: "crash guard: disable \(key) \(trip.scope.guardWhere)",
                        evidence: trip.evidence(from: candidate.from, until: now).json)
                    let flag = candidate.flag
                    return .commit(confirmed, request) {
                        try GuardCore.disabling(key, in: trip.scope, expecting: flag, $0)
                    }
                }
            }
            switch outcome {
            case nil:
                return
            case .settled(let confirmed):
                switch confirmed.action {
                case .noTrip:
                    count(namespace, "no_trip")
                case .trip:
                    break  // a trip commits: never settled
                case .hold:
                    count(namespace, "held")
                case .propose(let trip, let reason):
                    try await propose(
                        trip, because: reason, in: confirmed.state, from: confirmed.from, now: confirmed.now)
                }
            case .committed(let confirmed, let result):
                guard case .trip(let trip) = confirmed.action, let record = result.record else {
                    count(namespace, "already_disabled")
                    return
                }
                tripped(trip, record: record, queuedAt: queuedAt)
            }
        } catch {
            count(namespace, "error")
            logger.error(
                "crash guard: could not check or disable \(key) in namespace \(namespace); it is checked again on the next batch that names it",
                metadata: ["error": "\(error)"])
        }
    }

    /// The store's counts of a candidate's span, with the scopes clients' trips may take.
    private func counts(of candidate: GuardCore.Candidate, in state: NamespaceState, now: Date) async throws
        -> GuardCounts
    {
        let namespace = state.record.name
        let counts = try await store.eventCounts(
            EventCountQuery(
                namespace: namespace, from: candidate.from, until: now + 86_400, subjects: [.pluginSwitch, .baseline]))
        let crashes = try await store.crashRecords(in: namespace, from: candidate.from, until: now + 86_400)
        var sums = GuardCounts(counts, crashes: crashes)
        sums.scopes = try await scopes(of: state.flagSet, in: namespace, from: candidate.from, until: now)
        return sums
    }

    // MARK: Effects

    private func tripped(_ trip: GuardTrip, record: ChangeRecord, queuedAt: Date?) {
        shared.withLock { shared in shared.namespaces[record.namespace]?.history.add(committed: record) }
        let factory = app.metricsFactory
        app.guardSeries.countTrip(in: record.namespace, key: trip.key, scope: trip.scopeKind)
        count(record.namespace, "tripped")
        if let queuedAt {
            Timer(label: "switchyard_guard_trip_seconds", factory: factory)
                .recordNanoseconds(Int64(max(0, record.time.timeIntervalSince(queuedAt)) * 1e9))
        }
        logger.warning(
            "crash guard disabled \(trip.key) \(trip.scope.guardWhere)",
            metadata: [
                "namespace": .string(record.namespace), "version": .stringConvertible(record.version),
                "switch": .string(trip.key),
                "sessions": .stringConvertible(trip.check.sessions), "crashes": .stringConvertible(trip.check.crashes),
                "reason": .string(record.reason ?? ""),
            ])
        webhook?.announce(GuardWebhook.payload(trip, record: record))
    }

    func count(_ namespace: String, _ result: String) {
        Counter(
            label: "switchyard_guard_checks_total", dimensions: [("namespace", namespace), ("result", result)],
            factory: app.metricsFactory
        ).increment()
    }
}
