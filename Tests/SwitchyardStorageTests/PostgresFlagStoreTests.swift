import Foundation
import PostgresNIO
import PostgresTestSupport
import SwitchyardCore
import SwitchyardStorage
import SwitchyardWire
import Synchronization
import TestSupport
import Testing

@testable import SwitchyardPostgres

/// What only the PostgreSQL backend promises: notifications to every process, migrations shared safely by
/// processes starting together, degraded mode while the database is gone, URLs.
@Suite(.serialized) struct PostgresFlagStoreTests {
    /// Stores on one fresh database, running until the body ends.
    func withStores<T>(
        _ count: Int, url: String? = nil, timeout: Int = 60, _ body: ([PostgresFlagStore]) async throws -> T
    ) async throws -> T {
        let (databaseURL, drop) = try await TestPostgres.createDatabase(on: url, timeout: timeout)
        var stores: [PostgresFlagStore] = []
        var tasks: [Task<Void, any Error>] = []
        defer { for task in tasks { task.cancel() } }
        do {
            for _ in 0..<count {
                let store = try PostgresFlagStore(configuration: PostgresStoreConfiguration(url: databaseURL))
                tasks.append(Task { try await store.run() })
                stores.append(store)
            }
            let result = try await body(stores)
            for task in tasks { task.cancel() }
            for task in tasks {
                if await !ended(task, within: .seconds(60)) {
                    Issue.record("PostgresFlagStore.run() did not return within 60 s of its cancellation")
                }
            }
            await drop()
            return result
        } catch {
            for task in tasks { task.cancel() }
            await drop()
            throw error
        }
    }

    @Test func everyCommitNotifiesEveryProcessOnTheDatabase() async throws {
        try await withStores(2) { stores in
            try await stores[0].migrate()
            let received = ReceivedNotifications(try #require(stores[1].notifications()))
            await received.expectNext(.resync)

            let created = try await stores[0].createNamespace(
                Fixtures.rider(), reasonPolicy: .never, request: Fixtures.request())
            let epoch = created.state.record.epoch
            await received.expectNext(.namespace(name: "rider", epoch: epoch, version: 1, deleted: false))
            _ = try await stores[0].change(
                "rider", Fixtures.request(), mutation: Fixtures.rollout("plugin_switch_feed_weather", 5))
            await received.expectNext(.namespace(name: "rider", epoch: epoch, version: 2, deleted: false))
            // A change that alters nothing commits nothing and notifies nobody; the next notification is the
            // token's.
            _ = try await stores[0].change(
                "rider", Fixtures.request(), mutation: Fixtures.rollout("plugin_switch_feed_weather", 5))
            _ = try await stores[0].issueToken(name: "ci", role: .client, namespaces: nil, by: Fixtures.editor)
            await received.expectNext(.tokens)
            _ = try await stores[0].revokeToken("ci", by: Fixtures.editor)
            await received.expectNext(.tokens)
            try await stores[0].deleteNamespace("rider", by: Fixtures.editor)
            await received.expectNext(.namespace(name: "rider", epoch: epoch, version: 2, deleted: true))
            // A refused change (here a conflict) rolls back its notification with everything else.
            let again = try await stores[0].createNamespace(
                Fixtures.rider(), reasonPolicy: .never, request: Fixtures.request())
            _ = await expectStorageError(.conflict) {
                try await stores[0].change(
                    "rider", Fixtures.request(basedOn: SnapshotVersion(epoch: epoch, version: 2)),
                    mutation: Fixtures.rollout("plugin_switch_feed_weather", 6))
            }
            // A process's own change is not told to its own subscribers (its change path publishes it): after the
            // creation by the other process, the next notification is the other process's change, version 3.
            _ = try await stores[1].change(
                "rider", Fixtures.request(), mutation: Fixtures.rollout("plugin_switch_feed_weather", 7))
            await received.expectNext(
                .namespace(name: "rider", epoch: again.state.record.epoch, version: 1, deleted: false))
            _ = try await stores[0].change(
                "rider", Fixtures.request(), mutation: Fixtures.rollout("plugin_switch_feed_weather", 8))
            await received.expectNext(
                .namespace(name: "rider", epoch: again.state.record.epoch, version: 3, deleted: false))
        }
    }

    @Test func processesStartingTogetherMigrateTheSchemaOnce() async throws {
        try await withStores(4) { stores in
            try await withThrowingTaskGroup(of: Void.self) { group in
                for store in stores { group.addTask { try await store.migrate() } }
                try await group.waitForAll()
            }
            try await stores[0].migrate()
            let url = stores[0].configuration
            var count = -1
            try await TestPostgres.administer(
                try TestPostgres.databaseURL(TestPostgres.serverURL(), name: url.database)
            ) { connection, logger in
                let rows = try await connection.query("SELECT count(*) FROM switchyard_migration", logger: logger)
                    .collect()
                count = try #require(rows.first, "SELECT count(*) returned no row").decode(Int.self)
            }
            #expect(count == PostgresFlagStore.migrations.count)
            _ = try await stores[3].createNamespace(Fixtures.rider(), reasonPolicy: .never, request: Fixtures.request())
            #expect(try await stores[1].namespaces().map(\.name) == ["rider"])
        }
    }

    /// A database from before objects had rows kept each version's flag set as one text; the migration splits it
    /// into rows in SQL (plugin points in their order, each member's text as it was), and changes go on from there.
    @Test func aDatabaseFromBeforeObjectRowsSplitsItsFlagSets() async throws {
        try await withStores(2) { stores in
            try await stores[0].migrate()
            _ = try await stores[0].createNamespace(
                Fixtures.everyField(), reasonPolicy: .never, request: Fixtures.request())
            let changed = try await stores[0].change("kitchen", Fixtures.request()) { flagSet in
                var flagSet = flagSet
                flagSet.pluginPoints.insert(PluginPointDefinition(name: "a_first", switches: []), at: 0)
                flagSet.crashGuard = CrashGuardPolicy(minimumSessions: 77)
                flagSet.metrics = [MetricDefinition(name: "fare", kind: .value, cap: 200)]
                return flagSet
            }
            let text = JSONValue.object(changed.state.flagSet.tree(unit: .basisPoints)).serializedString(.canonical)
            let url = try TestPostgres.databaseURL(TestPostgres.serverURL(), name: stores[0].configuration.database)
            try await TestPostgres.administer(url) { connection, logger in
                for statement: PostgresQuery in [
                    "DROP TABLE namespace_object", "ALTER TABLE namespace ADD COLUMN flag_set TEXT NOT NULL DEFAULT ''",
                    "UPDATE namespace SET flag_set = \(text)", "DELETE FROM switchyard_migration WHERE id = 8",
                ] {
                    _ = try await connection.query(statement, logger: logger).collect()
                }
            }
            try await stores[1].migrate()
            let read = try #require(try await stores[1].namespace("kitchen"))
            #expect(read.record == changed.state.record)
            #expect(read.flagSet.pluginPoints.map(\.name) == ["a_first", "home_feed"])
            #expect(JSONValue.object(read.flagSet.tree(unit: .basisPoints)).serializedString(.canonical) == text)
            let next = try await stores[1].change(
                "kitchen", Fixtures.request(), mutation: Fixtures.rollout("plugin_switch_feed_promos", 99))
            #expect(next.state.record.version == 3)
            #expect(try await stores[0].namespace("kitchen")?.flagSet == next.state.flagSet)
        }
    }

    @Test func operationsBeforeTheFirstConnectionWaitForRun() async throws {
        let (url, drop) = try await TestPostgres.createDatabase(timeout: 60)
        let store = try PostgresFlagStore(configuration: PostgresStoreConfiguration(url: url))
        async let migrated: Void = store.migrate()
        try await Task.sleep(for: .milliseconds(50))
        let running = Task { try await store.run() }
        try await migrated
        #expect(try await store.namespaces().isEmpty)
        running.cancel()
        #expect(await ended(running, within: .seconds(60)))
        await drop()
    }

    @Test func anUnreachableDatabaseFailsOperationsAtOnceAndTheStoreRecoversWhenItReturns() async throws {
        try await PrivateServer.with { server in
            try await withStores(1, url: server.url) { stores in
                let store = stores[0]
                try await store.migrate()
                let received = ReceivedNotifications(try #require(store.notifications()))
                await received.expectNext(.resync)
                _ = try await store.createNamespace(Fixtures.rider(), reasonPolicy: .never, request: Fixtures.request())
                #expect(await received.next() != nil)

                try await server.stop()
                try await waitUntil { store.availability.refusesOperations }
                let refused = await expectStorageError(.unavailable) {
                    try await store.change(
                        "rider", Fixtures.request(), mutation: Fixtures.rollout("plugin_switch_feed_weather", 9))
                }
                #expect(refused?.message.contains("unreachable") == true)
                // What a client reads never names the database; the log's diagnostic does.
                #expect(refused?.message.contains(store.configuration.host) == false, "\(refused?.message ?? "")")
                #expect(refused?.message.contains("postgres://") == false)
                #expect(refused?.diagnostic?.contains(store.configuration.displayURL) == true)
                _ = await expectStorageError(.unavailable) { try await store.checkHealth() }

                try await server.start()
                // The store notices by itself, says notifications may have been missed, and works again.
                try await waitUntil { !store.availability.refusesOperations }
                await received.expectNext(.resync)
                let committed = try await store.change(
                    "rider", Fixtures.request(), mutation: Fixtures.rollout("plugin_switch_feed_weather", 9))
                #expect(committed.state.record.version == 2)
                try await store.checkHealth()
            }
        }
    }

    /// A slow answer is not an outage: operations that run out of time fail alone, with a message saying so, and
    /// the store goes on taking operations (a busy flagsd or a slow query must not put it in degraded mode).
    @Test func operationsThatRunOutOfTimeFailAloneAndTheDatabaseStaysReachable() async throws {
        try await withStores(1, timeout: 5) { stores in
            let store = stores[0]
            try await store.migrate()
            // More slow operations at once than the probes that may go unanswered before the database counts as
            // unreachable.
            let messages = await withTaskGroup(of: String?.self) { group in
                for _ in 0..<(store.availability.silenceLimit + 1) {
                    group.addTask {
                        await expectStorageError(.unavailable) { try await store.rows("SELECT pg_sleep(15)") }?.message
                    }
                }
                return await group.reduce(into: [String?]()) { $0.append($1) }
            }
            for message in messages {
                #expect(message?.contains("did not answer within") == true, "\(message ?? "no error")")
            }
            #expect(!store.availability.refusesOperations, "\(store.availability.status)")
            // The store takes the next operation at once rather than refusing it as if the database were gone.
            let created = try await store.createNamespace(
                Fixtures.rider(), reasonPolicy: .never, request: Fixtures.request())
            #expect(created.state.record.version == 1)
            #expect(store.availability.status == .reachable)
        }
    }

    /// Client events have a pool of their own: events operations that hold every one of its connections past the
    /// operation timeout fail alone, a change meanwhile takes a connection of the main pool and commits, and the
    /// database never counts as unreachable.
    @Test func slowEventsOperationsNeitherHoldUpChangesNorMakeTheDatabaseUnreachable() async throws {
        let (base, drop) = try await TestPostgres.createDatabase(timeout: 5)
        let url = base + "&pool_size=2&events_pool_size=1"
        let store = try PostgresFlagStore(configuration: PostgresStoreConfiguration(url: url))
        #expect(store.configuration.maximumEventConnections == 1)
        let running = Task { try await store.run() }
        defer { running.cancel() }
        try await store.migrate()
        // Four slow events queries on the one events connection: together they hold it for 40 s.
        let slow = Task {
            await withTaskGroup(of: String?.self) { group in
                for _ in 0..<4 {
                    group.addTask {
                        await expectStorageError(.unavailable) {
                            try await store.rows("SELECT pg_sleep(10)", on: .events)
                        }?.message
                    }
                }
                return await group.reduce(into: [String?]()) { $0.append($1) }
            }
        }
        // On a shared pool of two connections this change would wait behind them past its 5 s and fail.
        let created = try await store.createNamespace(
            Fixtures.rider(), reasonPolicy: .never, request: Fixtures.request())
        #expect(created.state.record.version == 1)
        for message in await slow.value {
            #expect(message?.contains("did not answer within") == true, "\(message ?? "no error")")
        }
        #expect(store.availability.status == .reachable, "\(store.availability.status)")
        #expect(store.availability.unansweredProbes == 0)
        running.cancel()
        if await !ended(running, within: .seconds(60)) {
            Issue.record("PostgresFlagStore.run() did not return within 60 s of its cancellation")
        }
        await drop()
    }

    /// A database that stops answering without closing a connection (a network partition, a hung host) counts as
    /// unreachable once its probes go unanswered, and the store works again when it answers.
    @Test func aSilentDatabaseBecomesUnreachableWhenItsProbesGoUnansweredAndRecovers() async throws {
        try await PrivateServer.with { server in
            try await withStores(1, url: server.url, timeout: 5) { stores in
                let store = stores[0]
                try await store.migrate()
                _ = try await store.createNamespace(Fixtures.rider(), reasonPolicy: .never, request: Fixtures.request())
                // Paused before the notification connection is up, its connect times out and marks the database
                // unreachable first (also right, but not the path under test: a silence that fails no connection).
                try await waitUntil("the notification connection listens") { store.isListening }

                try server.pause()
                defer { try? server.resume() }
                let timedOut = await expectStorageError(.unavailable) { try await store.namespaces() }
                #expect(timedOut?.message.contains("did not answer within") == true, "\(timedOut?.message ?? "")")
                try await waitUntil { store.availability.refusesOperations }
                guard case .unreachable(_, let reason) = store.availability.status else { return }
                #expect(reason.contains("probes in a row without an answer"), "\(reason)")
                let refused = await expectStorageError(.unavailable) { try await store.namespaces() }
                #expect(refused?.message.contains("unreachable") == true)

                try server.resume()
                try await waitUntil { !store.availability.refusesOperations }
                let committed = try await store.change(
                    "rider", Fixtures.request(), mutation: Fixtures.rollout("plugin_switch_feed_weather", 9))
                #expect(committed.state.record.version == 2)
            }
        }
    }

    @Test func aDatabaseThatNeverAnswersFailsMigrationWithAClearError() async throws {
        let store = try PostgresFlagStore(
            configuration: PostgresStoreConfiguration(
                url: "postgres://nobody@127.0.0.1:1/none?sslmode=disable&timeout=1"))
        let running = Task { try await store.run() }
        defer { running.cancel() }
        let error = await expectStorageError(.unavailable) { try await store.migrate(waitingUpTo: .zero) }
        // flagsd prints the whole description when it cannot start: where, and what to check.
        #expect(error?.description.contains("127.0.0.1:1") == true)
        #expect(error?.message.contains("127.0.0.1:1") == false)
        #expect(error?.message.contains("check that it runs") == true)
    }

    // MARK: URLs

    @Test func aURLNamesHostPortUserPasswordDatabaseAndOptions() throws {
        let configuration = try PostgresStoreConfiguration(
            url:
                "postgresql://flag%40sd:p%3Ass@db.internal:6543/switch_yard?sslmode=verify-full&pool_size=4&events_pool_size=3&timeout=2.5&application_name=edge"
        )
        #expect(configuration.host == "db.internal")
        #expect(configuration.port == 6543)
        #expect(configuration.username == "flag@sd")
        #expect(configuration.password == "p:ss")
        #expect(configuration.database == "switch_yard")
        #expect(configuration.tls == .verifyFull)
        #expect(configuration.maximumConnections == 4)
        #expect(configuration.maximumEventConnections == 3)
        #expect(configuration.operationTimeout == .milliseconds(2500))
        #expect(configuration.applicationName == "edge")
        #expect(!configuration.displayURL.contains("p:ss"))

        let defaults = try PostgresStoreConfiguration(url: "postgres://localhost")
        #expect(defaults.port == 5432)
        #expect(defaults.username == "postgres")
        #expect(defaults.database == "switchyard")
        #expect(defaults.tls == .prefer)
    }

    /// Across a network, the server's certificate is checked unless the URL says otherwise; on loopback no network
    /// path lies between flagsd and the database.
    @Test func sslmodeDefaultsToVerifyFullExceptOnLoopback() throws {
        for host in ["db.internal", "10.0.0.5", "postgres", "[2001:db8::1]", "127.example.com"] {
            #expect(
                try PostgresStoreConfiguration(url: "postgres://flagsd@\(host)/switchyard").tls == .verifyFull,
                "\(host)")
        }
        for host in ["localhost", "LOCALHOST", "127.0.0.1", "127.1.2.3", "[::1]"] {
            #expect(
                try PostgresStoreConfiguration(url: "postgres://flagsd@\(host)/switchyard").tls == .prefer, "\(host)")
        }
        #expect(try PostgresStoreConfiguration(url: "postgres://db.internal/s?sslmode=require").tls == .require)
        #expect(try PostgresStoreConfiguration(url: "postgres://db.internal/s?sslmode=disable").tls == .disable)
        #expect(PostgresStoreConfiguration(host: "db.internal").tls == .verifyFull)
        #expect(PostgresStoreConfiguration(host: "127.0.0.1").tls == .prefer)
    }

    @Test func sslrootcertNamesAReadableFileAndNeedsVerifyFull() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("ca-\(UUID().uuidString).pem")
        try "-----BEGIN CERTIFICATE-----\n-----END CERTIFICATE-----\n".write(
            to: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: file) }
        let configuration = try PostgresStoreConfiguration(url: "postgres://db.internal/s?sslrootcert=\(file.path)")
        #expect(configuration.rootCertificates == file.path)
        #expect(configuration.tls == .verifyFull)
        #expect {
            try PostgresStoreConfiguration(url: "postgres://db.internal/s?sslrootcert=/no/such/ca.pem")
        } throws: { error in
            "\(error)".contains("sslrootcert=/no/such/ca.pem") && "\(error)".contains("not a readable file")
        }
        #expect {
            try PostgresStoreConfiguration(url: "postgres://db.internal/s?sslmode=require&sslrootcert=\(file.path)")
        } throws: { error in
            "\(error)".contains("needs sslmode=verify-full")
        }
    }

    /// verify-full never falls back to plain TCP: against a server without TLS (the test server), connecting fails.
    @Test func verifyFullRefusesAServerWithoutTLS() async throws {
        let (url, drop) = try await TestPostgres.createDatabase(timeout: 2)
        let strict = url.replacingOccurrences(of: "sslmode=disable", with: "sslmode=verify-full")
        #expect(strict.contains("sslmode=verify-full"))
        let store = try PostgresFlagStore(configuration: PostgresStoreConfiguration(url: strict))
        let running = Task { try await store.run() }
        _ = await expectStorageError(.unavailable) { try await store.migrate(waitingUpTo: .zero) }
        running.cancel()
        #expect(await ended(running, within: .seconds(60)))
        await drop()
    }

    @Test(arguments: [
        ("postgres://", "names no host"),
        ("postgres://h/db?sslmode=sometimes", "sslmode=sometimes"),
        ("postgres://h/db?pool_size=0", "pool_size=0"),
        ("postgres://h/db?events_pool_size=0", "events_pool_size=0"),
        ("postgres://h/db?timeout=-1", "timeout=-1"),
        ("postgres://h/db?colour=blue", "unknown parameter 'colour'"),
        ("postgres://h/a/b", "single database name"),
        ("postgres://u:secret@h:99999/db", "99999"),
    ])
    func aBadURLIsRefusedNamingThePartAtFault(url: String, expected: String) {
        #expect {
            try PostgresStoreConfiguration(url: url)
        } throws: { error in
            let text = "\(error)"
            return text.contains(expected) && !text.contains("secret")
        }
    }
}

/// Collects a store's notifications as they arrive, for tests to take in order.
final class ReceivedNotifications: Sendable {
    private final class Items: Sendable {
        let list = Mutex<[StoreNotification]>([])
    }

    private let items = Items()
    private let task: Task<Void, Never>

    init(_ stream: AsyncStream<StoreNotification>) {
        let items = self.items
        task = Task { for await notification in stream { items.list.withLock { $0.append(notification) } } }
    }

    deinit { task.cancel() }

    /// Expects the next notification to be one.
    func expectNext(_ expected: StoreNotification, sourceLocation: SourceLocation = #_sourceLocation) async {
        let received = await next()
        #expect(received == expected, sourceLocation: sourceLocation)
    }

    /// The next notification, or nil when none arrives within a generous timeout.
    func next(timeout: Duration = .seconds(30)) async -> StoreNotification? {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if let first = items.list.withLock({ $0.isEmpty ? nil : $0.removeFirst() }) { return first }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return nil
    }
}
