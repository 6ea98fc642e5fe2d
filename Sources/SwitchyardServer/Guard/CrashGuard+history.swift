import Foundation
import Logging
import SwitchyardCore
import SwitchyardGuard
import SwitchyardStorage
import Synchronization

/// The crash guard's counts and history: loaded from the store at start, reloaded periodically (other processes
/// count events and change flags too), and merged with what this process was told meanwhile.
extension CrashGuard {
    func loadAll() async {
        do {
            for record in try await store.namespaces() { await refresh(record.name) }
        } catch {
            logger.warning(
                "crash guard: could not list namespaces; counting from new events only", metadata: ["error": "\(error)"]
            )
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
                shared.withLock { shared in
                    shared.namespaces.removeValue(forKey: namespace)
                    shared.work.forget(namespace)
                }
                return
            }
            let now = options.now()
            let longest = GuardCore.longestWindow(state.flagSet)
            let (counts, crashes) = try await app.eventObservers.settled(namespace) {
                shared.withLock { $0.namespaces[namespace, default: Watched()].buffers[reload] = [] }
                let counts = try await store.eventCounts(
                    EventCountQuery(
                        namespace: namespace, from: now - longest.timeInterval - 60, until: now + 86_400,
                        subjects: [.pluginSwitch, .baseline], perBucket: true))
                let crashes = try await store.crashRecords(
                    in: namespace, from: now - longest.timeInterval - 60, until: now + 86_400)
                return (counts, crashes)
            }
            var scopes = try await self.scopes(
                of: state.flagSet, in: namespace, from: now - longest.timeInterval, until: now)
            scopes.newValuesAllowed = true
            try await updateHistory(namespace, state: state)
            let (assessments, proposals) = shared.withLock { shared -> ([GuardAssessment], Int) in
                var watched = shared.namespaces[namespace] ?? Watched()
                var window = WindowCounts(counts, crashes: crashes)
                for (increments, crashes) in watched.buffers.removeValue(forKey: reload) ?? [] {
                    window.add(increments, crashes: crashes)
                }
                window.prune(before: EventAggregation.bucketStart(of: now - longest.timeInterval) - 60_000)
                watched.window = window
                watched.scopes = scopes
                watched.loaded = true
                shared.namespaces[namespace] = watched
                return (
                    GuardCore.assessAll(state.flagSet, window: window, history: watched.history, now: now),
                    watched.history.openProposals(in: state.flagSet).count
                )
            }
            app.guardSeries.record(namespace, assessments)
            recordOpenProposals(namespace, proposals)
        } catch {
            shared.withLock { _ = $0.namespaces[namespace]?.buffers.removeValue(forKey: reload) }
            logger.warning(
                "crash guard: could not read the counts of namespace \(namespace); will retry",
                metadata: ["error": "\(error)"])
        }
    }

    /// The counts kept in memory for a namespace, from a time on (nil before its first load).
    func memoryCounts(of namespace: String, from: Date) -> GuardCounts? {
        shared.withLock { shared in
            guard let watched = shared.namespaces[namespace], watched.loaded else { return nil }
            return watched.window.counts(from: EventAggregation.bucketStart(of: from), until: Int64.max)
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
            let trips = try await store.audit(
                AuditQuery(namespace: namespace, source: .crashGuard, since: since, limit: 1000))
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
        let notes = try await store.audit(
            AuditQuery(namespace: namespace, actions: [.guardPropose, .guardDismiss], since: since, limit: 1000))
        history.setProposals(from: notes.entries)
        let updated = history
        shared.withLock { shared in
            var watched = shared.namespaces[namespace] ?? Watched()
            watched.history.merge(updated)
            shared.namespaces[namespace] = watched
        }
    }

    /// The cities and cohorts a trip on clients' evidence may be scoped to (``ScopeEligibility``), from the reach the
    /// store counted over the admission windows that overlap `[from, until]`.
    func scopes(of flagSet: FlagSet, in namespace: String, from: Date, until: Date) async throws -> ScopeEligibility {
        let admission = EventAdmission(policy: CrashGuardPolicy.resolved(namespace: flagSet.crashGuard, switch: nil))
        let reach = try await store.scopeReach(
            in: namespace, from: Date(milliseconds: admission.windowStart(of: from)),
            until: until + 86_400)
        return ScopeEligibility(flagSet: flagSet, reach: reach)
    }
}
