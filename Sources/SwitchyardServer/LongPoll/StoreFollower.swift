import Foundation
import Logging
import Metrics
import ServiceLifecycle
package import SwitchyardCore
package import SwitchyardStorage

/// What to do to catch up with a shared store: the decisions of `StoreFollower`, without I/O.
package enum FollowPlan {
    /// Whether a namespace notification may bring something the hub lacks (otherwise it is skipped without
    /// reading the store: the process's own commits, or a notification that arrives after a newer version).
    package static func needsReload(
        _ notification: (epoch: String, version: Int64, deleted: Bool), held: SnapshotVersion?
    ) -> Bool {
        guard let held else { return !notification.deleted }
        if notification.deleted { return held.epoch == notification.epoch }
        return held.epoch != notification.epoch || held.version < notification.version
    }

    /// The namespaces to reload (new, another epoch, or a newer version) and to forget (deleted), comparing the
    /// store's live namespaces with the hub's.
    package static func differences(held: [String: SnapshotVersion], stored: [NamespaceRecord]) -> (
        reload: [String], remove: [String]
    ) {
        var reload: [String] = []
        var live = Set<String>()
        for record in stored {
            live.insert(record.name)
            if let position = held[record.name], position.epoch == record.epoch, position.version >= record.version {
                continue
            }
            reload.append(record.name)
        }
        let remove = held.keys.filter { !live.contains($0) }.sorted()
        return (reload, remove)
    }
}

/// Keeps this process's snapshots and token cache in step with writes that other processes commit to a shared
/// store (several flagsd instances on one PostgreSQL database).
///
/// Each store notification makes it read the namespace from the store and publish it to the hub, which wakes
/// the waiters; every `interval`, and after the store reconnects, it compares every namespace with the store
/// (the safety net for missed notifications). Work is done one item at a time, in order, so a namespace deleted
/// and created again always ends at its latest state. While the database is unreachable, the hub keeps serving
/// what it holds and the check is retried every second.
package final class StoreFollower: Service, Sendable {
    private enum Work: Sendable {
        case notification(StoreNotification)
        case tick
    }

    private let app: AppContext
    private let notifications: AsyncStream<StoreNotification>
    private let interval: Duration
    private let logger: Logger

    package init(app: AppContext, notifications: AsyncStream<StoreNotification>, interval: Duration) {
        self.app = app
        self.notifications = notifications
        self.interval = interval
        self.logger = app.logger
    }

    package func run() async throws {
        let (work, queue) = AsyncStream<Work>.makeStream(bufferingPolicy: .unbounded)
        await cancelWhenGracefulShutdown {
            await withTaskGroup(of: Void.self) { group in
                group.addTask {
                    for await notification in self.notifications { queue.yield(.notification(notification)) }
                    queue.finish()
                }
                group.addTask {
                    while !Task.isCancelled {
                        try? await Task.sleep(for: min(self.interval, .seconds(1)))
                        queue.yield(.tick)
                    }
                    queue.finish()
                }
                var lastCheck = ContinuousClock.now
                var checkPending = false
                var tokensPending = false
                for await item in work {
                    switch item {
                    case .notification(.namespace(let name, let epoch, let version, let deleted)):
                        let held = self.app.hub.snapshot(of: name)?.position
                        guard FollowPlan.needsReload((epoch, version, deleted), held: held) else { continue }
                        if !(await self.reload(name)) { checkPending = true }
                    case .notification(.tokens):
                        tokensPending = !(await self.reloadTokens())
                    case .notification(.resync):
                        checkPending = true
                        tokensPending = true
                        fallthrough
                    case .tick:
                        if tokensPending { tokensPending = !(await self.reloadTokens()) }
                        guard checkPending || ContinuousClock.now - lastCheck >= self.interval else { continue }
                        checkPending = !(await self.check())
                        lastCheck = .now
                    }
                }
                group.cancelAll()
            }
        }
    }

    /// Reads one namespace and publishes it (or forgets it when deleted); false when the store did not answer.
    private func reload(_ name: String) async -> Bool {
        do {
            if let state = try await app.store.namespace(name) {
                let held = app.hub.snapshot(of: name)?.position
                app.hub.publish(state)
                if held != state.record.snapshotVersion {
                    Counter(
                        label: "flagsd_followed_changes_total", dimensions: [("namespace", name)],
                        factory: app.metricsFactory
                    ).increment()
                    logger.debug(
                        "published a version committed elsewhere",
                        metadata: [
                            "namespace": .string(name), "version": .stringConvertible(state.record.version),
                        ])
                }
            } else if app.hub.snapshot(of: name) != nil {
                app.hub.remove(name)
                logger.info("forgot a namespace deleted elsewhere", metadata: ["namespace": .string(name)])
            }
            return true
        } catch {
            logger.warning(
                "cannot read a namespace changed elsewhere; retrying",
                metadata: ["namespace": .string(name), "error": "\(error)"])
            return false
        }
    }

    /// Compares every namespace with the store; false when the store did not answer.
    private func check() async -> Bool {
        do {
            let stored = try await app.store.namespaces()
            let (reload, remove) = FollowPlan.differences(held: app.hub.positions(), stored: stored)
            var complete = true
            for name in reload where !(await self.reload(name)) { complete = false }
            for name in remove {
                app.hub.remove(name)
                logger.info("forgot a namespace deleted elsewhere", metadata: ["namespace": .string(name)])
            }
            return complete
        } catch {
            logger.debug("cannot compare namespaces with the store; retrying", metadata: ["error": "\(error)"])
            return false
        }
    }

    private func reloadTokens() async -> Bool {
        do {
            try await app.auth.reload()
            return true
        } catch {
            logger.debug("cannot reload tokens; retrying", metadata: ["error": "\(error)"])
            return false
        }
    }
}
