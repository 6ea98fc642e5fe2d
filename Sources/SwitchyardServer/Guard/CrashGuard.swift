package import Foundation
import HTTPTypes
import Logging
import Metrics
import ServiceLifecycle
import SwitchyardCore
import SwitchyardGuard
package import SwitchyardStorage
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

    enum Work: Hashable {
        case load(String)
        case confirm(String, String)
    }

    struct Watched: Sendable {
        var window = WindowCounts()
        var loaded = false
        /// Where clients' trips may be scoped, as the last reload read it (values new since then are allowed: the
        /// worker decides on the store's): made-up values do not queue a confirmation with every batch.
        var scopes: ScopeEligibility?
        /// Per reload under way (by its number), the increments and crash records told since it read the store, to
        /// add to what it read.
        var buffers: [Int: [(increments: [(key: EventAggregation.CounterKey, tally: EventTally)], crashes: [CrashRecord])]] = [:]
        var history = GuardHistory()
        var lastConfirmed: [String: ContinuousClock.Instant] = [:]
        /// When the batch that queued a confirmation was received, for the trip latency.
        var queuedAt: [String: Date] = [:]
    }

    struct Shared: Sendable {
        var namespaces: [String: Watched] = [:]
        var queue: [Work] = []
        var queued = Set<Work>()
        /// Confirmations asked for within `confirmInterval` of the last one of their switch, and when they are due.
        var deferred: [Work: ContinuousClock.Instant] = [:]
        /// Numbers the reloads.
        var reloads = 0
    }

    let service: FlagService
    let options: Options
    let webhook: GuardWebhook?
    private let shared = Mutex(Shared())
    private let wakeups: AsyncStream<Void>
    private let wake: AsyncStream<Void>.Continuation
    var logger: Logger { service.logger }
    var store: any FlagStore { service.store }

    package init(service: FlagService, options: Options = Options()) {
        self.service = service
        self.options = options
        (wakeups, wake) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        webhook = options.webhookURL.map { GuardWebhook(url: $0, secret: options.webhookSecret, metricsFactory: service.metricsFactory, logger: service.logger) }
    }

    // MARK: Ingestion path

    package func eventsCommitted(_ batch: CommittedEvents) async {
        let switches = batch.switches
        let increments = EventAggregation.increments(of: batch.events)
        let crashes = EventAggregation.crashes(of: batch.events)
        let flagSet = service.hub.snapshot(of: batch.namespace)?.flagSet
        let now = options.now()
        let instant = options.instant()
        let queuedWork = shared.withLock { shared -> Bool in
            var watched = shared.namespaces[batch.namespace] ?? Watched()
            var work: [Work] = []
            if !watched.loaded { work.append(.load(batch.namespace)) }
            watched.window.add(increments, crashes: crashes)
            for id in watched.buffers.keys { watched.buffers[id]?.append((increments, crashes)) }
            if let flagSet {
                var spans: [Int64: GuardCounts] = [:]
                for key in switches.sorted() {
                    guard let gate = flagSet.flag(key)?.pluginSwitch,
                          Self.wouldTrip(key, gate: gate, flagSet: flagSet, watched: watched, now: now, counts: &spans) else { continue }
                    if watched.queuedAt[key] == nil { watched.queuedAt[key] = batch.receivedAt }
                    let confirm = Work.confirm(batch.namespace, key)
                    if let last = watched.lastConfirmed[key], instant - last < options.confirmInterval {
                        // Not lost: this batch may be the one that completes the evidence, and none may follow.
                        let due = last + options.confirmInterval
                        shared.deferred[confirm] = min(shared.deferred[confirm] ?? due, due)
                        continue
                    }
                    work.append(confirm)
                }
            }
            shared.namespaces[batch.namespace] = watched
            var added = false
            for item in work where shared.queued.insert(item).inserted {
                shared.queue.append(item)
                added = true
            }
            return added
        }
        if queuedWork { wake.yield() }
    }

    /// Whether the in-memory counts make a switch look like it trips, and nothing waits for a person about it (the
    /// worker then checks the store's).
    ///
    /// - Parameter counts: the window's counts by span start, summed once per batch for the switches sharing one.
    static func wouldTrip(_ key: String, gate: PluginSwitchDefinition, flagSet: FlagSet, watched: Watched, now: Date,
                          counts: inout [Int64: GuardCounts]) -> Bool {
        let policy = CrashGuardPolicy.resolved(namespace: flagSet.crashGuard, switch: gate.crashGuard)
        guard policy.enabled, !gate.disabled else { return false }
        let span = Self.span(key, policy: policy, history: watched.history, now: now)
        guard !span.coolingDown else { return false }
        var sums = counts[span.from] ?? watched.window.counts(from: span.from, until: Int64.max)
        sums.scopes = watched.scopes
        counts[span.from] = sums
        guard let trip = GuardRule.assess(key: key, counts: sums, policy: policy, gate: gate).trip else { return false }
        return !watched.history.awaitsPerson(key, in: trip.scope, flagSet: flagSet, now: now, cooldown: policy.cooldown.timeInterval)
    }

    /// The buckets a switch's window covers now, and whether it is in its cool-down.
    static func span(_ key: String, policy: ResolvedCrashGuardPolicy, history: GuardHistory, now: Date)
        -> (from: Int64, coolingDown: Bool, reenabled: GuardHistory.Reenable?) {
        var from = EventAggregation.bucketStart(of: now - policy.window.timeInterval)
        var coolingDown = false
        let reenable = history.lastReenable(of: key)
        if let reenable {
            // Only minutes that start after the re-enable: the minute it happened in holds earlier sessions.
            let start = EventAggregation.bucketStart(of: reenable.time)
            from = max(from, start == reenable.time.milliseconds ? start : start + 60_000)
            coolingDown = now < reenable.time + policy.cooldown.timeInterval
        }
        return (from, coolingDown, reenable)
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
                        if self.shared.withLock({ !$0.deferred.isEmpty }) { self.wake.yield() }
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
                shared.withLock { _ = $0.queued.remove(work) }
            case .confirm(let namespace, let key):
                await confirm(namespace, key)
            }
        }
    }

    /// The next work item. A confirmation leaves the queued set as it starts: a batch told while it reads the
    /// store asks for another (deferred to the interval's end), which reads what this one may have missed.
    private func dequeue() -> Work? {
        let now = options.instant()
        return shared.withLock { shared in
            for (work, due) in shared.deferred where due <= now {
                shared.deferred[work] = nil
                if shared.queued.insert(work).inserted { shared.queue.append(work) }
            }
            guard !shared.queue.isEmpty else { return nil }
            let work = shared.queue.removeFirst()
            if case .confirm = work { shared.queued.remove(work) }
            return work
        }
    }

    func loadAll() async {
        do {
            for record in try await store.namespaces() { await refresh(record.name) }
        } catch {
            logger.warning("crash guard: could not list namespaces; counting from new events only", metadata: ["error": "\(error)"])
        }
    }

    func refreshAll() async {
        let names = shared.withLock { Array($0.namespaces.keys) }
        for name in names { await refresh(name) }
    }

    /// Reloads a namespace's counters from the store and reads its change log since the last time.
    ///
    /// Exact for this process's batches: the store is read while none is between its commit and its notification
    /// (``EventObservers/settled(_:_:)``), and those told from then on are kept aside and added to what was read.
    /// Reloads of one namespace may overlap (the worker's first load, the periodic one): each keeps its own.
    func refresh(_ namespace: String) async {
        let reload = shared.withLock { shared -> Int in
            shared.reloads += 1
            return shared.reloads
        }
        do {
            guard let state = try await store.namespace(namespace) else {
                shared.withLock { _ = $0.namespaces.removeValue(forKey: namespace) }
                return
            }
            let now = options.now()
            let longest = Self.longestWindow(state.flagSet)
            let (counts, crashes) = try await service.eventObservers.settled(namespace) {
                shared.withLock { $0.namespaces[namespace, default: Watched()].buffers[reload] = [] }
                let counts = try await store.eventCounts(EventCountQuery(
                    namespace: namespace, from: now - longest.timeInterval - 60, until: now + 86_400,
                    subjects: [.pluginSwitch, .baseline], perBucket: true))
                let crashes = try await store.crashRecords(in: namespace, from: now - longest.timeInterval - 60, until: now + 86_400)
                return (counts, crashes)
            }
            var scopes = try await self.scopes(of: state.flagSet, in: namespace, from: now - longest.timeInterval, until: now)
            scopes.newValuesAllowed = true
            try await updateHistory(namespace, state: state)
            let (assessments, proposals) = shared.withLock { shared -> ([GuardAssessment], Int) in
                var watched = shared.namespaces[namespace] ?? Watched()
                var window = WindowCounts(counts, crashes: crashes)
                for (increments, crashes) in watched.buffers.removeValue(forKey: reload) ?? [] { window.add(increments, crashes: crashes) }
                window.prune(before: EventAggregation.bucketStart(of: now - longest.timeInterval) - 60_000)
                watched.window = window
                watched.scopes = scopes
                watched.loaded = true
                shared.namespaces[namespace] = watched
                return (Self.assessAll(state.flagSet, watched: watched, now: now), watched.history.openProposals(in: state.flagSet).count)
            }
            recordGauges(namespace, assessments)
            recordOpenProposals(namespace, proposals)
        } catch {
            shared.withLock { _ = $0.namespaces[namespace]?.buffers.removeValue(forKey: reload) }
            logger.warning("crash guard: could not read the counts of namespace \(namespace); will retry", metadata: ["error": "\(error)"])
        }
    }

    /// The counts kept in memory for a namespace, from a time on (nil before its first load).
    func memoryCounts(of namespace: String, from: Date) -> GuardCounts? {
        shared.withLock { shared in
            guard let watched = shared.namespaces[namespace], watched.loaded else { return nil }
            return watched.window.counts(from: EventAggregation.bucketStart(of: from), until: Int64.max)
        }
    }

    static func longestWindow(_ flagSet: FlagSet) -> Duration {
        flagSet.flags.compactMap(\.pluginSwitch).map {
            CrashGuardPolicy.resolved(namespace: flagSet.crashGuard, switch: $0.crashGuard).window
        }.max() ?? CrashGuardPolicy.resolved(namespace: flagSet.crashGuard, switch: nil).window
    }

    static func assessAll(_ flagSet: FlagSet, watched: Watched, now: Date) -> [GuardAssessment] {
        var spans: [Int64: GuardCounts] = [:]
        return flagSet.flags.compactMap { flag in
            guard let gate = flag.pluginSwitch else { return nil }
            let policy = CrashGuardPolicy.resolved(namespace: flagSet.crashGuard, switch: gate.crashGuard)
            let span = span(flag.key, policy: policy, history: watched.history, now: now)
            let counts = spans[span.from] ?? watched.window.counts(from: span.from, until: Int64.max)
            spans[span.from] = counts
            return GuardRule.assess(key: flag.key, counts: counts, policy: policy, gate: gate)
        }
    }

    /// Brings a namespace's trip history up to its latest change.
    func updateHistory(_ namespace: String, state: NamespaceState) async throws {
        var history = shared.withLock { $0.namespaces[namespace]?.history } ?? GuardHistory()
        if history.epoch != state.record.epoch {
            // First look, or the namespace was deleted and created again: the trips of the last week from the
            // audit log, then the changes since the oldest one still in force.
            history = GuardHistory()
            history.epoch = state.record.epoch
            let since = max(state.record.createdAt, options.now() - 8 * 86_400)
            let trips = try await store.audit(AuditQuery(namespace: namespace, source: .crashGuard, since: since, limit: 1000))
            for entry in trips.entries where entry.action == .change { history.add(entry) }
            history.seenVersion = (history.trips.keys.min() ?? state.record.version + 1) - 1
            // Trips already re-enabled long ago still need their re-enable read: start at the oldest trip.
        }
        while history.seenVersion < state.record.version {
            let changes = try await store.changes(in: namespace, after: history.seenVersion, limit: 500)
            guard !changes.isEmpty else { break }
            for change in changes { history.apply(change) }
        }
        // Proposals and dismissals are audit entries only (they change no flag): read them afresh each time.
        let since = max(state.record.createdAt, options.now() - 8 * 86_400)
        let notes = try await store.audit(AuditQuery(namespace: namespace, actions: [.guardPropose, .guardDismiss], since: since, limit: 1000))
        history.setProposals(from: notes.entries)
        let updated = history
        shared.withLock { shared in
            var watched = shared.namespaces[namespace] ?? Watched()
            if watched.history.epoch == updated.epoch {
                for (version, trip) in updated.trips {
                    if let known = watched.history.trips[version], known.reenabled != nil, trip.reenabled == nil { continue }
                    watched.history.trips[version] = trip
                }
                watched.history.seenVersion = max(watched.history.seenVersion, updated.seenVersion)
                // A proposal this process just made may not be in what was read: keep it.
                var proposals = updated.proposals
                for (id, proposal) in watched.history.proposals where proposals[id] == nil { proposals[id] = proposal }
                watched.history.proposals = proposals
            } else {
                watched.history = updated
            }
            shared.namespaces[namespace] = watched
        }
    }

    /// Decides on the store's counts whether a switch trips, and trips it, or proposes to past the budget.
    func confirm(_ namespace: String, _ key: String, attempt: Int = 1) async {
        let queuedAt = shared.withLock { shared in
            shared.namespaces[namespace]?.lastConfirmed[key] = options.instant()
            return shared.namespaces[namespace]?.queuedAt.removeValue(forKey: key)
        }
        do {
            guard let state = try await store.namespace(namespace) else { return }
            try await updateHistory(namespace, state: state)
            guard let flag = state.flagSet.flag(key), let gate = flag.pluginSwitch else { return }
            let policy = CrashGuardPolicy.resolved(namespace: state.flagSet.crashGuard, switch: gate.crashGuard)
            let now = options.now()
            let history = shared.withLock { $0.namespaces[namespace]?.history } ?? GuardHistory()
            // The history was read after the state: a change committed between the two (a person applying a
            // proposal) is in the history but not in the state, and would make the proposal look settled while the
            // switch looks on. Decide on a state at least as new as the history.
            if history.seenVersion > state.record.version { throw GuardStaleDecision() }
            let span = Self.span(key, policy: policy, history: history, now: now)
            guard policy.enabled, !span.coolingDown else { return }
            let from = Date(milliseconds: span.from)
            let counts = try await store.eventCounts(EventCountQuery(
                namespace: namespace, from: from, until: now + 86_400, subjects: [.pluginSwitch, .baseline]))
            let crashes = try await store.crashRecords(in: namespace, from: from, until: now + 86_400)
            var sums = GuardCounts(counts, crashes: crashes)
            sums.scopes = try await scopes(of: state.flagSet, in: namespace, from: from, until: now)
            let assessment = GuardRule.assess(key: key, counts: sums, policy: policy, gate: gate)
            guard let trip = assessment.trip else {
                count(namespace, "no_trip")
                return
            }
            let action = GuardBudget.decide(
                trip, tripsInLastHour: history.automaticTrips(since: now - GuardBudget.period, scoped: !trip.scope.isEverywhere),
                openScopedDisables: history.openScopedTrips(of: key),
                pending: history.awaitsPerson(key, in: trip.scope, flagSet: state.flagSet, now: now, cooldown: policy.cooldown.timeInterval))
            switch action {
            case .hold:
                count(namespace, "held")
                return
            case .propose(let reason):
                try await propose(trip, because: reason, in: state, from: from, now: now)
                return
            case .trip:
                break
            }
            let where_ = trip.scope.guardWhere
            // Decided on this version's history (the budget counts its trips): commit on it, or decide again.
            let request = ChangeRequest(author: ChangeAuthor(actor: Self.actor, source: .crashGuard, reason: trip.reason),
                                        basedOn: state.record.snapshotVersion,
                                        summary: "crash guard: disable \(key) \(where_)", evidence: trip.evidence(from: from, until: now).json)
            let result = try await service.change(namespace, request) { current in
                try Self.disabling(key, in: trip.scope, expecting: flag, current)
            }
            guard let record = result.record else {
                count(namespace, "already_disabled")
                return
            }
            tripped(trip, record: record, queuedAt: queuedAt)
        } catch let error as StorageError where error.kind == .conflict {
            // The namespace changed between the decision and the commit: decide again on what it is now.
            if attempt < 3 { await confirm(namespace, key, attempt: attempt + 1) }
        } catch is GuardStaleDecision {
            if attempt < 3 { await confirm(namespace, key, attempt: attempt + 1) }
        } catch {
            count(namespace, "error")
            logger.error("crash guard: could not check or disable \(key) in namespace \(namespace); it is checked again on the next batch that names it",
                         metadata: ["error": "\(error)"])
        }
    }

    /// Records a proposal instead of a trip: an audit entry, a metric, a log line and the webhook.
    func propose(_ trip: GuardTrip, because reason: GuardBudget.ProposalReason, in state: NamespaceState, from: Date, now: Date) async throws {
        let namespace = state.record.name
        var evidence = trip.evidence(from: from, until: now)
        evidence.proposedBecause = reason.rawValue
        let where_ = trip.scope.guardWhere
        let sentence = GuardBudget.sentence(reason, policy: trip.policy)
        let entry = try await store.recordAudit(AuditNote(
            author: ChangeAuthor(actor: Self.actor, source: .crashGuard, reason: "\(sentence); \(trip.reason)"), action: .guardPropose,
            namespace: namespace, summary: "crash guard: propose disabling \(trip.key) \(where_)", targets: [trip.key],
            evidence: evidence.json))
        let proposal = GuardHistory.Proposal(id: entry.id, key: trip.key, scope: trip.scope, time: entry.time, why: reason.rawValue,
                                             reason: entry.reason, evidence: evidence.json)
        let open = shared.withLock { shared -> Int in
            shared.namespaces[namespace]?.history.proposals[entry.id] = proposal
            return shared.namespaces[namespace]?.history.openProposals(in: state.flagSet).count ?? 1
        }
        let factory = service.metricsFactory
        Counter(label: "switchyard_guard_proposals_total",
                dimensions: [("namespace", namespace), ("switch", trip.key), ("reason", reason.rawValue)], factory: factory).increment()
        count(namespace, "proposed")
        recordOpenProposals(namespace, open)
        logger.warning("crash guard proposes disabling \(trip.key) \(where_): \(sentence)", metadata: [
            "namespace": .string(namespace), "proposal": .stringConvertible(entry.id), "switch": .string(trip.key),
            "apply": .string("flagctl guard apply \(entry.id) -n \(namespace)"),
        ])
        webhook?.announce(GuardWebhook.payload(proposal, namespace: namespace, entry: entry))
    }

    /// Applies a proposal for a person: disables its switch in its scope as their change (source `crash-guard`,
    /// with the proposal's evidence and id).
    ///
    /// - Returns: the proposal and the change (nil when the switch was off in that scope already).
    /// - Throws: `APIError` 404 for an unknown proposal, 409 for a dismissed one; a `StorageError`.
    func apply(_ id: Int64, in namespace: String, by author: ChangeAuthor) async throws -> (GuardHistory.Proposal, CommittedChange) {
        let (proposal, state) = try await proposal(id, in: namespace)
        if case .dismissed = state {
            throw APIError(.conflict, "proposal-dismissed", "Proposal dismissed",
                           "crash guard proposal \(id) was dismissed by \(proposal.dismissed?.actor ?? "someone") at \(proposal.dismissed?.time.iso8601 ?? "?"); disable the switch yourself if it should be off")
        }
        var evidence = try GuardEvidenceBody(json: proposal.evidence)
        evidence.proposal = id
        evidence.appliedThrough = author.source.rawValue
        let where_ = proposal.scope.guardWhere
        var author = author
        if author.reason?.isEmpty ?? true { author.reason = "applied crash guard proposal \(id)" }
        let request = ChangeRequest(author: ChangeAuthor(actor: author.actor, source: .crashGuard, reason: author.reason),
                                    summary: "apply crash guard proposal \(id): disable \(proposal.key) \(where_)", evidence: evidence.json)
        let result = try await service.change(namespace, request) { current in
            try Self.disabling(proposal.key, in: proposal.scope, expecting: nil, current)
        }
        if let record = result.record {
            shared.withLock { shared in shared.namespaces[namespace]?.history.add(committed: record) }
        }
        await refreshOpenProposals(namespace)
        return (proposal, result)
    }

    /// Dismisses a proposal for a person (and every open proposal of the same switch and scope): the guard leaves
    /// that switch and scope alone for the policy's cool-down.
    ///
    /// - Returns: the proposal, and the audit entry (nil when it was dismissed already).
    /// - Throws: `APIError` 404 for an unknown proposal, 409 for one applied or superseded.
    func dismiss(_ id: Int64, in namespace: String, by author: ChangeAuthor) async throws -> (GuardHistory.Proposal, AuditEntry?) {
        let (proposal, state) = try await proposal(id, in: namespace)
        switch state {
        case .dismissed:
            return (proposal, nil)
        case .applied, .superseded:
            throw APIError(.conflict, "proposal-settled", "Proposal settled",
                           "crash guard proposal \(id) is \(state.rawValue): \(proposal.key) is off \(proposal.scope.guardWhere) already; to turn it back on, 'flagctl enable \(proposal.key)'")
        case .open:
            break
        }
        let where_ = proposal.scope.guardWhere
        let entry = try await store.recordAudit(AuditNote(
            author: author, action: .guardDismiss, namespace: namespace,
            summary: "dismiss crash guard proposal \(id) (disable \(proposal.key) \(where_))", targets: [proposal.key],
            evidence: .object(JSONObject([("proposal", .int64(id)), ("switch", .string(proposal.key)), ("scope", .object(proposal.scope.tree))]))))
        await refreshOpenProposals(namespace)
        return (proposal, entry)
    }

    /// A proposal of a namespace and what became of it.
    func proposal(_ id: Int64, in namespace: String) async throws -> (GuardHistory.Proposal, GuardHistory.ProposalState) {
        guard let state = try await store.namespace(namespace) else { throw APIError.namespaceNotFound(namespace) }
        try await updateHistory(namespace, state: state)
        let history = shared.withLock { $0.namespaces[namespace]?.history } ?? GuardHistory()
        guard let proposal = history.proposals[id] else {
            throw APIError.notFound("namespace '\(namespace)' has no crash guard proposal \(id) in the last 8 days (list them with GET /v1/namespaces/\(namespace)/guard/proposals)")
        }
        return (proposal, history.state(of: proposal, gate: state.flagSet.flag(proposal.key)?.pluginSwitch))
    }

    private func refreshOpenProposals(_ namespace: String) async {
        guard let state = try? await store.namespace(namespace) else { return }
        try? await updateHistory(namespace, state: state)
        let open = shared.withLock { $0.namespaces[namespace]?.history.openProposals(in: state.flagSet).count } ?? 0
        recordOpenProposals(namespace, open)
    }

    private func recordOpenProposals(_ namespace: String, _ count: Int) {
        Gauge(label: "switchyard_guard_open_proposals", dimensions: [("namespace", namespace)], factory: service.metricsFactory).record(count)
    }

    /// The trip as a conditional change: nothing when the switch is off in the scope already; refused when the
    /// switch changed since the decision.
    static func disabling(_ key: String, in scope: Scope, expecting expected: FlagDefinition?, _ flagSet: FlagSet) throws -> FlagSet {
        guard let flag = flagSet.flag(key), let gate = flag.pluginSwitch, !gate.isDisabled(in: scope) else { return flagSet }
        if let expected, flag != expected { throw GuardStaleDecision() }
        return try flagSet.disabling(key, scope: scope)
    }

    private func tripped(_ trip: GuardTrip, record: ChangeRecord, queuedAt: Date?) {
        shared.withLock { shared in shared.namespaces[record.namespace]?.history.add(committed: record) }
        let factory = service.metricsFactory
        Counter(label: "switchyard_guard_trips_total",
                dimensions: [("namespace", record.namespace), ("switch", trip.key), ("scope", trip.scopeKind)], factory: factory).increment()
        count(record.namespace, "tripped")
        if let queuedAt {
            Timer(label: "switchyard_guard_trip_seconds", factory: factory)
                .recordNanoseconds(Int64(max(0, record.time.timeIntervalSince(queuedAt)) * 1e9))
        }
        logger.warning("crash guard disabled \(trip.key) \(trip.scope.guardWhere)", metadata: [
            "namespace": .string(record.namespace), "version": .stringConvertible(record.version), "switch": .string(trip.key),
            "sessions": .stringConvertible(trip.check.sessions), "crashes": .stringConvertible(trip.check.crashes),
            "reason": .string(record.reason ?? ""),
        ])
        webhook?.announce(GuardWebhook.payload(trip, record: record))
    }

    private func count(_ namespace: String, _ result: String) {
        Counter(label: "switchyard_guard_checks_total", dimensions: [("namespace", namespace), ("result", result)],
                factory: service.metricsFactory).increment()
    }

    private func recordGauges(_ namespace: String, _ assessments: [GuardAssessment]) {
        let factory = service.metricsFactory
        for assessment in assessments {
            let dimensions = [("namespace", namespace), ("switch", assessment.key)]
            Gauge(label: "switchyard_guard_window_sessions", dimensions: dimensions, factory: factory).record(assessment.overall.sessions)
            Gauge(label: "switchyard_guard_window_crashes", dimensions: dimensions, factory: factory).record(assessment.overall.crashes)
            Gauge(label: "switchyard_guard_crash_rate_lower_bound", dimensions: dimensions, factory: factory)
                .record(assessment.overall.lowerBound ?? 0)
            Gauge(label: "switchyard_guard_crash_rate_bound", dimensions: dimensions, factory: factory).record(assessment.overall.bound)
            // Each trip counter exists from the start at 0: a series first seen at 1 shows no increase in
            // Prometheus, and the guard-trip alert would miss a switch's first trip.
            if assessment.policy.enabled {
                for scope in ["global"] + assessment.policy.scopeBy.map(\.rawValue) {
                    _ = Counter(label: "switchyard_guard_trips_total", dimensions: dimensions + [("scope", scope)], factory: factory)
                }
            }
        }
    }

    // MARK: Views

    /// The guard's view of every plugin switch of a namespace, on the store's counts, with its trip budget and
    /// proposals (for the API).
    package func status(of state: NamespaceState) async throws -> GuardOverview {
        try await updateHistory(state.record.name, state: state)
        let now = options.now()
        let longest = Self.longestWindow(state.flagSet)
        let counts = try await store.eventCounts(EventCountQuery(
            namespace: state.record.name, from: now - longest.timeInterval, until: now + 86_400,
            subjects: [.pluginSwitch, .baseline], perBucket: true))
        let crashes = try await store.crashRecords(in: state.record.name, from: now - longest.timeInterval, until: now + 86_400)
        let window = WindowCounts(counts, crashes: crashes)
        let history = shared.withLock { $0.namespaces[state.record.name]?.history } ?? GuardHistory()
        let scopes = try await scopes(of: state.flagSet, in: state.record.name, from: now - longest.timeInterval, until: now)
        var spans: [Int64: GuardCounts] = [:]
        let statuses: [SwitchStatus] = state.flagSet.flags.compactMap { flag in
            guard let gate = flag.pluginSwitch else { return nil }
            let policy = CrashGuardPolicy.resolved(namespace: state.flagSet.crashGuard, switch: gate.crashGuard)
            let span = Self.span(flag.key, policy: policy, history: history, now: now)
            var sums = spans[span.from] ?? window.counts(from: span.from, until: Int64.max)
            sums.scopes = scopes
            spans[span.from] = sums
            let assessment = GuardRule.assess(key: flag.key, counts: sums, policy: policy, gate: gate)
            return SwitchStatus(key: flag.key, gate: gate, assessment: assessment, from: Date(milliseconds: span.from), until: now,
                                coolingDownUntil: span.coolingDown ? span.reenabled.map { $0.time + policy.cooldown.timeInterval } : nil,
                                openTrips: history.openTrips(of: flag.key), latestTrip: history.latestTrip(of: flag.key),
                                openProposals: history.openProposals(of: flag.key, in: state.flagSet))
        }
        let policy = CrashGuardPolicy.resolved(namespace: state.flagSet.crashGuard, switch: nil)
        return GuardOverview(switches: statuses, proposals: history.openProposals(in: state.flagSet),
                             tripsLastHour: history.automaticTrips(since: now - GuardBudget.period, scoped: false),
                             maximumTripsPerHour: policy.maximumTripsPerHour,
                             scopedTripsLastHour: history.automaticTrips(since: now - GuardBudget.period, scoped: true),
                             maximumScopedTripsPerHour: policy.maximumScopedTripsPerHour)
    }

    /// The proposals of a namespace, newest first, with what became of each (for the API).
    func proposals(of state: NamespaceState) async throws -> [(proposal: GuardHistory.Proposal, state: GuardHistory.ProposalState)] {
        try await updateHistory(state.record.name, state: state)
        let history = shared.withLock { $0.namespaces[state.record.name]?.history } ?? GuardHistory()
        return history.proposals.values.sorted { $0.id > $1.id }.map { proposal in
            (proposal, history.state(of: proposal, gate: state.flagSet.flag(proposal.key)?.pluginSwitch))
        }
    }

    /// The trips of a namespace, newest first (for the API).
    func trips(of state: NamespaceState) async throws -> [GuardHistory.Trip] {
        try await updateHistory(state.record.name, state: state)
        let history = shared.withLock { $0.namespaces[state.record.name]?.history } ?? GuardHistory()
        return history.trips.values.sorted { $0.version > $1.version }
    }
}

extension CrashGuard {
    /// The cities and cohorts a trip on clients' evidence may be scoped to (``ScopeEligibility``), from the reach the
    /// store counted over the admission windows that overlap `[from, until]`.
    func scopes(of flagSet: FlagSet, in namespace: String, from: Date, until: Date) async throws -> ScopeEligibility {
        let admission = EventAdmission(policy: CrashGuardPolicy.resolved(namespace: flagSet.crashGuard, switch: nil))
        let reach = try await store.scopeReach(in: namespace, from: Date(milliseconds: admission.windowStart(of: from)),
                                               until: until + 86_400)
        return ScopeEligibility(flagSet: flagSet, reach: reach)
    }
}

/// The switch changed between the guard's decision and its commit.
struct GuardStaleDecision: Error {}

/// A namespace as the crash guard sees it: every plugin switch, the proposals waiting for a person, and the trip
/// budget.
package struct GuardOverview: Sendable {
    var switches: [SwitchStatus]
    var proposals: [GuardHistory.Proposal]
    /// The guard's own global disables in the last hour.
    var tripsLastHour: Int
    var maximumTripsPerHour: Int
    /// The guard's own scoped disables in the last hour.
    var scopedTripsLastHour: Int
    var maximumScopedTripsPerHour: Int
}

/// One plugin switch as the guard sees it now.
package struct SwitchStatus: Sendable {
    var key: String
    var gate: PluginSwitchDefinition
    var assessment: GuardAssessment
    var from: Date
    var until: Date
    var coolingDownUntil: Date?
    var openTrips: [GuardHistory.Trip]
    var latestTrip: GuardHistory.Trip?
    var openProposals: [GuardHistory.Proposal]

    /// `off` (the policy), `tripped`, `proposed` (a person decides), `disabled` (by a person), `cooling_down`,
    /// `tripping`, `watching`.
    var state: String {
        if !assessment.policy.enabled { return "off" }
        if !openTrips.isEmpty { return "tripped" }
        if !openProposals.isEmpty { return "proposed" }
        if gate.disabled { return "disabled" }
        if coolingDownUntil != nil { return "cooling_down" }
        if assessment.trip != nil { return "tripping" }
        return "watching"
    }
}

extension Duration {
    /// The duration in seconds, for `Date` arithmetic.
    var timeInterval: TimeInterval { seconds }
}
