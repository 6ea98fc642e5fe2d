public import Foundation
public import Logging
import PostgresNIO
public import ServiceLifecycle
import SwitchyardCore
public import SwitchyardStorage
import Synchronization

/// The shared backend: several flagsd processes on one PostgreSQL database.
///
/// Every change locks its namespace's row (`SELECT … FOR UPDATE`) for the whole transaction, so changes through
/// any process take strictly increasing versions and a mutation always sees the latest flag set. Each commit
/// sends a notification (`NOTIFY switchyard_changes`) that every process receives on a connection of its own
/// (`notifications()`), so a change through one process wakes the long-poll waiters of all of them.
///
/// When the database is unreachable, operations fail at once with `StorageError` `unavailable` (degraded mode)
/// and the store probes the database every `retryInterval` until it answers; it then sends `resync`, as
/// notifications may have been missed meanwhile. Nothing needs restarting.
///
/// Client events (ingestion, counter reads, pruning) use a pool of their own (`events_pool_size` connections), so
/// that a flood of events never takes the connections flag changes need; and an events operation that runs out of
/// time or loses its connection fails alone: only the main pool's operations and the probes decide whether the
/// database is reachable.
///
/// The store is a `Service`: run it (`run()`) for as long as it is used, for example in the `ServiceGroup` that
/// runs the server. `migrate()` waits until the database answers, then brings the schema up to date.
///
/// ```swift
/// let store = try PostgresFlagStore(configuration: PostgresStoreConfiguration(url: "postgres://flagsd@db/switchyard"), logger: logger)
/// async let running: Void = store.run()
/// try await store.migrate()
/// ```
public final class PostgresFlagStore: FlagStore, Service {
    /// The channel every process listens on.
    static let channel = "switchyard_changes"

    let configuration: PostgresStoreConfiguration
    let logger: Logger
    public let now: @Sendable () -> Date
    let makeEpoch: @Sendable () -> String
    private let clientConfiguration: PostgresClient.Configuration
    private let eventsClientConfiguration: PostgresClient.Configuration
    private let connectionConfiguration: PostgresConnection.Configuration

    /// Which pool an operation runs on.
    enum Pool: Sendable {
        /// Flags, changes, tokens, audit: what the probes watch.
        case main
        /// Client events: ingestion, counter reads, pruning.
        case events
    }

    private struct Shared {
        var client: PostgresClient?
        var eventsClient: PostgresClient?
        var availability = Availability()
        /// Set when the listener (re)connected: send `resync` once the database answers a probe.
        var resyncPending = false
        /// Set to probe at the next tick even when the database counts as reachable.
        var probeRequested = true
        var listening = false
        var subscribers: [UInt64: AsyncStream<StoreNotification>.Continuation] = [:]
        var nextSubscriber: UInt64 = 0
        var finished = false
        /// Versions this process is committing (epoch and version), whose notifications its subscribers do not get:
        /// the change's own path publishes them (`FlagService`), so following them too would read and publish the
        /// same version twice. At most a few at a time; forgotten when their notification arrives.
        var ownCommits: Set<OwnCommit> = []
    }

    struct OwnCommit: Hashable {
        let epoch: String
        let version: Int64
    }

    private let shared = Mutex(Shared())
    /// Resumed when the first client is installed (operations before `run()` wait for it).
    private let clientReady: AsyncStream<Void>
    private let clientReadyContinuation: AsyncStream<Void>.Continuation
    /// The last flag set parsed or committed per epoch, with its version.
    private let parsed = Mutex<[String: (version: Int64, flagSet: FlagSet)]>([:])

    /// Prepares a store; nothing connects until `run()`.
    ///
    /// - Parameters:
    ///   - configuration: where to connect, pool size, timeouts.
    ///   - logger: where to log connection changes and database errors.
    ///   - now: the clock for timestamps.
    ///   - makeEpoch: makes the random id of a new namespace.
    /// - Throws: `StorageError` `unavailable` when the TLS settings cannot be used.
    public init(
        configuration: PostgresStoreConfiguration, logger: Logger = Logger(label: "switchyard.postgres"),
        now: @escaping @Sendable () -> Date = { Date() },
        makeEpoch: @escaping @Sendable () -> String = NamespaceRecord.randomEpoch
    ) throws(StorageError) {
        self.configuration = configuration
        self.logger = logger
        self.now = now
        self.makeEpoch = makeEpoch
        var tlsConfiguration = TLSConfiguration.makeClientConfiguration()
        if configuration.tls != .verifyFull { tlsConfiguration.certificateVerification = .none }
        if let rootCertificates = configuration.rootCertificates {
            tlsConfiguration.trustRoots = .file(rootCertificates)
        }
        let clientTLS: PostgresClient.Configuration.TLS =
            switch configuration.tls {
            case .disable: .disable
            case .prefer: .prefer(tlsConfiguration)
            case .require, .verifyFull: .require(tlsConfiguration)
            }
        var client = PostgresClient.Configuration(
            host: configuration.host, port: configuration.port, username: configuration.username,
            password: configuration.password, database: configuration.database, tls: clientTLS)
        client.options.maximumConnections = configuration.maximumConnections
        client.options.connectTimeout = configuration.operationTimeout
        client.options.additionalStartupParameters = [("application_name", configuration.applicationName)]
        clientConfiguration = client
        var events = client
        events.options.maximumConnections = configuration.maximumEventConnections
        events.options.additionalStartupParameters = [("application_name", configuration.applicationName + " (events)")]
        eventsClientConfiguration = events
        let context: NIOSSLContext?
        do {
            context = configuration.tls == .disable ? nil : try NIOSSLContext(configuration: tlsConfiguration)
        } catch {
            throw StorageError(
                .unavailable, "cannot set up TLS for the PostgreSQL connection (check sslmode and sslrootcert)",
                diagnostic: "\(configuration.displayURL): \(error)")
        }
        let connectionTLS: PostgresConnection.Configuration.TLS =
            switch (configuration.tls, context) {
            case (.prefer, let context?): .prefer(context)
            case (.require, let context?), (.verifyFull, let context?): .require(context)
            default: .disable
            }
        var connection = PostgresConnection.Configuration(
            host: configuration.host, port: configuration.port, username: configuration.username,
            password: configuration.password, database: configuration.database, tls: connectionTLS)
        let timeout = configuration.operationTimeout.components
        connection.options.connectTimeout = .nanoseconds(
            timeout.seconds * 1_000_000_000 + timeout.attoseconds / 1_000_000_000)
        connection.options.additionalStartupParameters = [
            ("application_name", configuration.applicationName + " (listener)")
        ]
        connectionConfiguration = connection
        (clientReady, clientReadyContinuation) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
    }

    // MARK: Running

    /// Runs the connection pool and the notification listener until cancelled or shut down gracefully.
    ///
    /// Replaces the pool when the database came back but the pool still refuses (it backs off for up to a
    /// minute between attempts to reconnect).
    public func run() async throws {
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                let client = PostgresClient(configuration: self.clientConfiguration, backgroundLogger: self.poolLogger)
                let eventsClient = PostgresClient(
                    configuration: self.eventsClientConfiguration, backgroundLogger: self.poolLogger)
                self.shared.withLock {
                    $0.client = client
                    $0.eventsClient = eventsClient
                    $0.probeRequested = true
                }
                self.clientReadyContinuation.yield()
                // The pool and the supervisor run in tasks of their own, so that a part of PostgresNIO that does not
                // end when cancelled (seen once in a listener under heavy load) cannot keep this store from
                // replacing its pool or from shutting down.
                let pool = Task { await client.run() }
                let eventsPool = Task { await eventsClient.run() }
                let supervisor = Task { await self.supervise(client) }
                // Until the supervisor asks for a new pool, or the store shuts down.
                _ = await ended(supervisor, within: nil, untilCancelled: true)
                supervisor.cancel()
                pool.cancel()
                eventsPool.cancel()
                if Task.isCancelled {
                    // Shutting down: give the pools time to close their connections.
                    let mainClosed = await ended(pool, within: .seconds(10))
                    let eventsClosed = await ended(eventsPool, within: .seconds(10))
                    let closed = mainClosed && eventsClosed
                    let stopped = await ended(supervisor, within: .seconds(2))
                    if !closed || !stopped {
                        self.logger.warning("the PostgreSQL connections did not all close within 10 s of shutdown")
                    }
                } else {
                    self.logger.notice(
                        "replacing the PostgreSQL connection pool: three probes in a row failed through it while the notification connection stayed up"
                    )
                }
            }
        }
        let subscribers = shared.withLock { shared in
            shared.finished = true
            defer { shared.subscribers = [:] }
            return Array(shared.subscribers.values)
        }
        for subscriber in subscribers { subscriber.finish() }
    }

    private var poolLogger: Logger {
        var logger = logger
        logger.logLevel = max(logger.logLevel, .warning)
        return logger
    }

    /// Listens for notifications and probes the database; returns when the pool must be replaced.
    private func supervise(_ client: PostgresClient) async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.listen() }
            group.addTask { await self.probe(client) }
            // Only the prober returns by itself (to replace the pool); the listener runs until cancelled.
            _ = await group.next()
            group.cancelAll()
        }
    }

    /// Keeps a connection listening on the channel, reconnecting with a growing pause after losing it.
    private func listen() async {
        var attempt = 0
        while !Task.isCancelled {
            var reason = "lost the connection"
            do {
                let connection = try await PostgresConnection.connect(
                    configuration: connectionConfiguration, id: 0, logger: poolLogger)
                do {
                    try await connection.listen(on: Self.channel) { notifications in
                        attempt = 0
                        shared.withLock {
                            $0.listening = true
                            $0.resyncPending = true
                            $0.probeRequested = true
                        }
                        logger.debug("listening for changes", metadata: ["database": .string(configuration.displayURL)])
                        for try await notification in notifications {
                            broadcast(StoreNotification(payload: notification.payload) ?? .resync)
                        }
                    }
                } catch {
                    reason = describe(error)
                }
                try? await connection.close()
            } catch {
                reason = describe(error)
            }
            shared.withLock { $0.listening = false }
            guard !Task.isCancelled else { return }
            markUnreachable("the notification connection failed: \(reason)")
            attempt += 1
            let pause = min(configuration.retryInterval, .milliseconds(50) * (1 << min(attempt, 6)))
            try? await Task.sleep(for: pause)
        }
    }

    /// Probes the database when a probe was requested (an operation ran out of time, a connection came back),
    /// and every `retryInterval` while it counts as unreachable or a probe went unanswered; returns when the pool
    /// keeps failing although a fresh connection (the listener's) reaches the database.
    private func probe(_ client: PostgresClient) async {
        var failuresWhileListening = 0
        var lastProbe: ContinuousClock.Instant?
        while !Task.isCancelled {
            try? await Task.sleep(for: .milliseconds(50))
            let (requested, retrying, listening) = shared.withLock {
                ($0.probeRequested, $0.availability.refusesOperations || $0.availability.awaitsAnswer, $0.listening)
            }
            let due = lastProbe.map { ContinuousClock.now - $0 >= configuration.retryInterval } ?? true
            guard requested || (retrying && due) else { continue }
            lastProbe = .now
            do {
                _ = try await deadline(configuration.operationTimeout) {
                    try await client.query("SELECT 1", logger: self.poolLogger).collect()
                }
                failuresWhileListening = 0
                markReachable()
            } catch {
                // Shutting down: the pool closing under a probe says nothing about the database.
                guard !Task.isCancelled else { return }
                shared.withLock { $0.probeRequested = false }
                if let error = error as? DeadlineExceeded {
                    markUnanswered("the database did not answer a probe within \(error.limit)")
                } else {
                    markUnreachable("the database does not answer: \(describe(error))")
                }
                // The listener's fresh connection reaches the database but the pool keeps failing: replace
                // the pool (PostgresNIO's backs off for up to a minute between attempts after an outage).
                if listening {
                    failuresWhileListening += 1
                    if failuresWhileListening >= 3 { return }
                }
            }
        }
    }

    private func markReachable() {
        let (downtime, resync) = shared.withLock { shared in
            shared.probeRequested = false
            let downtime = shared.availability.succeeded(at: now())
            let resync = shared.resyncPending
            shared.resyncPending = false
            return (downtime, resync)
        }
        if let downtime {
            logger.notice(
                "PostgreSQL answers again; leaving degraded mode",
                metadata: [
                    "database": .string(configuration.displayURL),
                    "unreachable_seconds": .string(String(format: "%.1f", downtime)),
                ])
        }
        if resync { broadcast(.resync) }
    }

    /// A connection to the database failed: it is unreachable now.
    private func markUnreachable(_ reason: String) {
        logIfNewlyUnreachable { $0.failed(reason, at: now()) }
    }

    /// A probe got no answer in time: the database is unreachable once enough probes in a row went unanswered.
    private func markUnanswered(_ reason: String) {
        logIfNewlyUnreachable { $0.probeUnanswered(reason, at: now()) }
    }

    private func logIfNewlyUnreachable(_ record: (inout Availability) -> Bool) {
        let status = shared.withLock { shared in record(&shared.availability) ? shared.availability.status : nil }
        guard case .unreachable(_, let reason) = status else { return }
        logger.error(
            "PostgreSQL is unreachable; entering degraded mode (writes fail with 503 until it answers again)",
            metadata: [
                "database": .string(configuration.displayURL), "reason": .string(reason),
            ])
    }

    /// Probes the database now, also while it counts as unreachable.
    func checkHealthNow() async throws {
        let client = try await client()
        do {
            _ = try await deadline(configuration.operationTimeout) {
                try await client.query("SELECT 1", logger: self.poolLogger).collect()
            }
            markReachable()
        } catch {
            let reason: String
            if error is DeadlineExceeded {
                reason = "no answer within \(configuration.operationTimeout)"
                markUnanswered(reason)
            } else {
                reason = describe(error)
                markUnreachable(reason)
            }
            throw StorageError(
                .unavailable,
                "cannot reach PostgreSQL (check that it runs and the URL, user and password are right; flagsd's log has the details)",
                diagnostic: "\(configuration.displayURL): \(reason)")
        }
    }

    /// The database's reachability as last found, for tests and status pages.
    package var availability: Availability {
        shared.withLock { $0.availability }
    }

    /// Whether the notification connection is connected and listening (it connects once `run()` starts, and again
    /// after losing its connection).
    package var isListening: Bool {
        shared.withLock { $0.listening }
    }

    // MARK: Notifications

    public func notifications() -> AsyncStream<StoreNotification>? {
        let (stream, continuation) = AsyncStream<StoreNotification>.makeStream(bufferingPolicy: .unbounded)
        let id = shared.withLock { shared -> UInt64? in
            guard !shared.finished else { return nil }
            shared.nextSubscriber += 1
            shared.subscribers[shared.nextSubscriber] = continuation
            // A subscriber arriving after the first resync went out still needs one.
            if shared.listening && !shared.resyncPending { continuation.yield(.resync) }
            return shared.nextSubscriber
        }
        guard let id else {
            continuation.finish()
            return stream
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.shared.withLock { $0.subscribers.removeValue(forKey: id) }
        }
        return stream
    }

    private func broadcast(_ notification: StoreNotification) {
        let subscribers = shared.withLock { shared -> [AsyncStream<StoreNotification>.Continuation] in
            if case .namespace(_, let epoch, let version, _) = notification,
                shared.ownCommits.remove(OwnCommit(epoch: epoch, version: version)) != nil
            {
                return []
            }
            return Array(shared.subscribers.values)
        }
        for subscriber in subscribers { subscriber.yield(notification) }
    }

    /// Runs a transaction that commits a version of a namespace this process publishes itself, keeping the
    /// version's notification from its own subscribers (see `Shared.ownCommits`). `body` names the version once it
    /// knows it (`commits`), before the commit. When the transaction fails after naming it (the commit's answer
    /// may be what was lost, with the commit done), subscribers get the notification anyway: reading the namespace
    /// again costs nothing when it did not commit.
    func transaction<T: Sendable>(
        publishing name: String,
        _ body:
            @escaping @Sendable (PostgresConnection, _ commits: @escaping @Sendable (String, Int64) -> Void)
            async throws -> T
    ) async throws -> T {
        let named = Mutex<OwnCommit?>(nil)
        do {
            return try await transaction { connection in
                try await body(connection) { epoch, version in
                    let commit = OwnCommit(epoch: epoch, version: version)
                    named.withLock { $0 = commit }
                    self.shared.withLock { shared in
                        // Never more than a few; a notification that never came (a lost listener) is not kept for good.
                        if shared.ownCommits.count >= 64 { shared.ownCommits.removeAll() }
                        shared.ownCommits.insert(commit)
                    }
                }
            }
        } catch {
            if let commit = named.withLock({ $0 }) {
                let kept = shared.withLock { $0.ownCommits.remove(commit) != nil }
                if kept {
                    broadcast(.namespace(name: name, epoch: commit.epoch, version: commit.version, deleted: false))
                }
            }
            throw error
        }
    }

    // MARK: Access

    /// The current pool, waiting for `run()` to install the first one.
    private func client(_ pool: Pool = .main) async throws -> PostgresClient {
        let events = pool == .events
        if let client = shared.withLock({ events ? $0.eventsClient : $0.client }) { return client }
        for await _ in clientReady {
            if let client = shared.withLock({ events ? $0.eventsClient : $0.client }) { return client }
        }
        throw StorageError(.unavailable, "the PostgreSQL store is shut down")
    }

    /// Runs a database operation: refused at once while the database is unreachable, bounded by the operation
    /// timeout, PostgreSQL errors turned into `StorageError`, other errors (a mutation's) passed through.
    ///
    /// An operation that runs out of time fails alone: it asks for a probe, and only the probes decide whether
    /// the database is unreachable (a slow answer, or a flagsd too busy to read it, is not a lost database).
    /// On the events pool it does not even ask for a probe, nor does a lost connection count: events never decide
    /// whether the database is reachable.
    ///
    /// - Parameter pool: the pool to run on (`.events` for client events).
    func access<T: Sendable>(on pool: Pool = .main, _ operation: @escaping @Sendable (PostgresClient) async throws -> T)
        async throws -> T
    {
        if case .unreachable(let since, let reason) = shared.withLock({ $0.availability.status }) {
            throw StorageError(
                .unavailable,
                "the database is unreachable since \(since.iso8601); flagsd keeps serving the snapshots it holds and retries by itself. Retry the request when the database is back",
                diagnostic: "\(configuration.displayURL): \(reason)")
        }
        let client = try await client(pool)
        let decides = pool == .main
        do {
            return try await deadline(configuration.operationTimeout) { try await operation(client) }
        } catch let error as StorageError {
            throw error
        } catch let error as DeadlineExceeded {
            if decides { shared.withLock { $0.probeRequested = true } }
            throw StorageError(
                .unavailable, "the database did not answer within \(error.limit); retry the request",
                diagnostic: configuration.displayURL)
        } catch let error as PSQLError {
            throw storageError(error, decidesAvailability: decides)
        } catch let error as PostgresDecodingError {
            throw StorageError(
                .corrupt, "a stored value could not be read", diagnostic: "column \(error.columnName): \(error.code)")
        } catch {
            if Self.isConnectionFailure(error) {
                if decides { markUnreachable(describe(error)) }
                throw StorageError(
                    .unavailable, "cannot reach the database; retry the request",
                    diagnostic: "\(configuration.displayURL): \(describe(error))")
            }
            throw error
        }
    }

    /// Runs `body` in a transaction on one connection; any error rolls it back and passes through unchanged.
    func transaction<T: Sendable>(
        on pool: Pool = .main, _ body: @escaping @Sendable (PostgresConnection) async throws -> T
    ) async throws -> T {
        let logger = self.poolLogger
        return try await access(on: pool) { client in
            try await client.withConnection { connection in
                try await connection.query("BEGIN", logger: logger)
                do {
                    let result = try await body(connection)
                    try await connection.query("COMMIT", logger: logger)
                    return result
                } catch {
                    _ = try? await connection.query("ROLLBACK", logger: logger)
                    throw error
                }
            }
        }
    }

    /// A query's rows, on a pool.
    func rows(_ query: PostgresQuery, on pool: Pool = .main) async throws -> [PostgresRow] {
        let logger = poolLogger
        return try await access(on: pool) { client in try await client.query(query, logger: logger).collect() }
    }

    /// - Parameter decidesAvailability: whether a connection failure makes the database unreachable (not for
    ///   events).
    private func storageError(_ error: PSQLError, decidesAvailability: Bool) -> StorageError {
        if let state = error.serverInfo?[.sqlState] {
            let message = error.serverInfo?[.message] ?? "\(error.code)"
            // Class 08 (connection exception), 57P (operator intervention: shutdown), 53 (insufficient resources).
            if state.hasPrefix("08") || state.hasPrefix("57P") || state.hasPrefix("53") {
                if decidesAvailability { markUnreachable("\(message) (SQLSTATE \(state))") }
                return StorageError(
                    .unavailable, "the database is not available; retry the request",
                    diagnostic: "\(configuration.displayURL): \(message) (SQLSTATE \(state))")
            }
            if state == "23505" {
                let constraint = error.serverInfo?[.constraintName] ?? "a unique constraint"
                return StorageError(
                    .alreadyExists, "a record with that name or id exists already",
                    diagnostic: "\(constraint): \(message)")
            }
            logger.error(
                "PostgreSQL refused an operation", metadata: ["sqlstate": .string(state), "message": .string(message)])
            return StorageError(
                .unavailable, "the database refused the operation; flagsd's log has the details",
                diagnostic: "\(message) (SQLSTATE \(state))")
        }
        if decidesAvailability { markUnreachable(describe(error)) }
        return StorageError(
            .unavailable, "cannot reach the database; retry the request",
            diagnostic: "\(configuration.displayURL): \(describe(error))")
    }

    static func isConnectionFailure(_ error: any Error) -> Bool {
        if error is PSQLError { return true }
        let text = String(describing: type(of: error))
        return text.contains("ConnectionPoolError") || text.contains("ChannelError") || text.contains("IOError")
            || text.contains("NIOConnectionError") || text.contains("SocketAddressError")
    }

    /// A short description of a connection error, without the query text PostgresNIO adds.
    func describe(_ error: any Error) -> String {
        if let error = error as? PSQLError {
            if let message = error.serverInfo?[.message] { return message }
            if let underlying = error.underlying { return "\(error.code): \(underlying)" }
            return "\(error.code)"
        }
        return "\(error)"
    }

    /// The SQLSTATE of a server error, when it is one.
    static func sqlState(_ error: any Error) -> String? {
        (error as? PSQLError)?.serverInfo?[.sqlState]
    }

    // MARK: Cache

    /// Keeps a committed state's flag set, so the next change need not parse the stored text again. Keyed by
    /// epoch and checked against the stored version, so a stale entry is never used.
    func remember(_ state: NamespaceState) {
        parsed.withLock { $0[state.record.epoch] = (state.record.version, state.flagSet) }
    }

    /// The cached flag set of an epoch at a version, when it is the one cached.
    func cachedFlagSet(epoch: String, version: Int64) -> FlagSet? {
        guard let cached = parsed.withLock({ $0[epoch] }), cached.version == version else { return nil }
        return cached.flagSet
    }

    /// The clock's time, truncated to the milliseconds that are stored.
    func currentTime() -> Date {
        Date(milliseconds: now().milliseconds)
    }
}

/// Whether a task ended within a time; waits no longer, also when the task does not end at all.
///
/// - Parameters:
///   - limit: the longest wait; nil for no limit.
///   - untilCancelled: also stop waiting (and return false) when the waiting task is cancelled.
func ended<Failure: Error>(_ task: Task<Void, Failure>, within limit: Duration?, untilCancelled: Bool = false) async
    -> Bool
{
    let outcome = Outcome<Bool>()
    let timer = limit.map { limit in
        Task {
            try await Task.sleep(for: limit)
            outcome.resume(with: .success(false))
        }
    }
    defer { timer?.cancel() }
    let wait = {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Bool, any Error>) in
            outcome.wait(continuation)
            Task {
                _ = await task.result
                outcome.resume(with: .success(true))
            }
        }
    }
    guard untilCancelled else { return (try? await wait()) ?? false }
    return
        (try? await withTaskCancellationHandler(
            operation: wait,
            onCancel: {
                outcome.resume(with: .success(false))
            })) ?? false
}

/// An operation that ran out of time.
struct DeadlineExceeded: Error {
    let limit: Duration
}

/// Runs an operation, throwing `DeadlineExceeded` when it takes longer than `limit`.
///
/// The operation runs in a task of its own that is never cancelled: a PostgresNIO query whose task is cancelled
/// can stop in the middle of a transaction and never return (seen under load: a connection left "idle in
/// transaction" and the caller waiting forever). Past the limit the caller gets the error at once and the
/// operation finishes (or fails) on its own, returning its connection to the pool.
///
/// The operation's task settles the outcome itself, in the same step as its last resumption: on a busy process,
/// where that resumption waits its turn for a thread, an answer that arrived in time is not lost to a timer that
/// happens to run first.
func deadline<T: Sendable>(_ limit: Duration, _ operation: @escaping @Sendable () async throws -> T) async throws -> T {
    let outcome = Outcome<T>()
    let timer = Task {
        try await Task.sleep(for: limit)
        outcome.resume(with: .failure(DeadlineExceeded(limit: limit)))
    }
    Task {
        let result: Result<T, any Error>
        do { result = .success(try await operation()) } catch { result = .failure(error) }
        timer.cancel()
        outcome.resume(with: result)
    }
    return try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
        outcome.wait(continuation)
    }
}

/// The caller of `deadline` or `ended`, resumed once by whichever event comes first.
private final class Outcome<T: Sendable>: Sendable {
    private struct State {
        var waiter: CheckedContinuation<T, any Error>?
        /// An event came before the waiter was set.
        var early: Result<T, any Error>?
        var settled = false
    }

    private let state = Mutex(State())

    /// Sets the waiter, resuming it at once when an event came first.
    func wait(_ continuation: CheckedContinuation<T, any Error>) {
        let early = state.withLock { state -> Result<T, any Error>? in
            if let early = state.early { return early }
            state.waiter = continuation
            return nil
        }
        if let early { continuation.resume(with: early) }
    }

    func resume(with result: Result<T, any Error>) {
        let waiter = state.withLock { state -> CheckedContinuation<T, any Error>? in
            guard !state.settled else { return nil }
            state.settled = true
            guard let waiter = state.waiter else {
                state.early = result
                return nil
            }
            state.waiter = nil
            return waiter
        }
        waiter?.resume(with: result)
    }
}
