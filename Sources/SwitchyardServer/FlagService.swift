import Foundation
import HTTPTypes
import Hummingbird
package import Logging
package import Metrics
package import SwitchyardCore
package import SwitchyardStorage
import Synchronization

/// The change path: commits a change of a namespace through the store, then publishes the new version to the
/// long-poll hub (waking the namespace's waiters), counts it, times it and logs it, in one place.
///
/// The routes, the crash guard and the release plans' runner change flags through `change(_:_:mutation:)` and its
/// siblings, so every change is delivered the same way; what else the app shares is in `AppContext`.
package struct FlagService: Sendable {
    package let store: any FlagStore
    package let hub: LongPollHub
    package let metricsFactory: any MetricsFactory
    package let logger: Logger

    package init(store: any FlagStore, hub: LongPollHub, metricsFactory: any MetricsFactory, logger: Logger) {
        self.store = store
        self.hub = hub
        self.metricsFactory = metricsFactory
        self.logger = logger
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
