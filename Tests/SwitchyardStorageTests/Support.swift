import Foundation
import PostgresTestSupport
import SwitchyardClientTesting
import SwitchyardCore
import SwitchyardPostgres
import SwitchyardSQLite
import SwitchyardStorage
import Synchronization
import Testing

/// A storage backend the conformance suite runs against. The PostgreSQL backend adds itself to `all`. The suites
/// that open PostgreSQL stores run their tests one at a time (`.serialized`): dozens of stores starting at once in one
/// test process, beside the rest of the suite on two shared cores, starved each other past their operation timeouts.
struct StoreBackend: Sendable, CustomTestStringConvertible {
    let name: String
    /// Opens `count` stores on one fresh, empty database (as `count` processes would); the cleanup runs after
    /// the test.
    let open:
        @Sendable (_ clock: TestClock, _ count: Int) async throws -> (
            stores: [any FlagStore], cleanup: @Sendable () async throws -> Void
        )

    var testDescription: String { name }

    static let sqlite = StoreBackend(name: "SQLite") { clock, count in
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
            "switchyard-store-\(UUID().uuidString)")
        var stores: [SQLiteFlagStore] = []
        for _ in 0..<count {
            stores.append(
                try await SQLiteFlagStore(path: folder.appendingPathComponent("flags.sqlite").path, now: { clock.date })
            )
        }
        let opened = stores
        return (
            opened,
            {
                for store in opened { try store.close() }
                try? FileManager.default.removeItem(at: folder)
            }
        )
    }

    /// A fresh database on the test server (`scripts/test` starts one), the stores running until cleanup.
    static let postgres = StoreBackend(name: "PostgreSQL") { clock, count in
        let trace = UUID().uuidString.prefix(6)
        TestTrace.mark("\(trace) create database")
        let (url, drop) = try await TestPostgres.createDatabase(timeout: 60)
        TestTrace.mark("\(trace) created \(url)")
        var stores: [PostgresFlagStore] = []
        var tasks: [Task<Void, any Error>] = []
        let stop: @Sendable ([Task<Void, any Error>]) async -> Void = { tasks in
            TestTrace.mark("\(trace) stopping")
            defer { TestTrace.mark("\(trace) stopped") }
            for task in tasks { task.cancel() }
            for task in tasks {
                if await !ended(task, within: .seconds(60)) {
                    Issue.record("PostgresFlagStore.run() did not return within 60 s of its cancellation")
                }
            }
            TestTrace.mark("\(trace) dropping")
            await drop()
            TestTrace.mark("\(trace) dropped")
        }
        do {
            for _ in 0..<count {
                let store = try PostgresFlagStore(
                    configuration: PostgresStoreConfiguration(url: url), now: { clock.date })
                tasks.append(Task { try await store.run() })
                TestTrace.mark("\(trace) migrating")
                try await store.migrate(waitingUpTo: .seconds(10))
                TestTrace.mark("\(trace) migrated")
                stores.append(store)
            }
        } catch {
            await stop(tasks)
            throw error
        }
        let running = tasks
        return (stores, { await stop(running) })
    }

    static let all: [StoreBackend] = [.sqlite, .postgres]

    /// Runs a test body with a fresh store.
    func withStore<T>(clock: TestClock = TestClock.forStores(), _ body: (any FlagStore) async throws -> T) async throws
        -> T
    {
        try await withStores(1, clock: clock) { try await body($0[0]) }
    }

    /// Runs a test body with several stores on one fresh database, as several processes would use it.
    func withStores<T>(
        _ count: Int, clock: TestClock = TestClock.forStores(), _ body: ([any FlagStore]) async throws -> T
    ) async throws -> T {
        let (stores, cleanup) = try await open(clock, count)
        let trace = "\(name) \(UUID().uuidString.prefix(6))"
        do {
            TestTrace.mark("\(trace) body")
            let result = try await body(stores)
            TestTrace.mark("\(trace) body done")
            try await cleanup()
            TestTrace.mark("\(trace) cleaned up")
            return result
        } catch {
            try? await cleanup()
            throw error
        }
    }
}

/// Whether a task ended within a time (a liveness check: a hang becomes a failure naming what hung); waits no
/// longer, also when the task never ends.
func ended(_ task: Task<Void, any Error>, within limit: Duration) async -> Bool {
    let (results, continuation) = AsyncStream<Bool>.makeStream()
    let timer = Task {
        try? await Task.sleep(for: limit)
        continuation.yield(false)
    }
    Task {
        _ = await task.result
        continuation.yield(true)
    }
    let first = await results.first { _ in true } ?? false
    timer.cancel()
    continuation.finish()
    return first
}

extension TestClock {
    /// A clock that moves only when a test advances it, whose `date` stores stamp their records with.
    static func forStores() -> TestClock {
        TestClock(start: Date(timeIntervalSince1970: 1_800_000_000), advancesAutomatically: false)
    }
}

enum Fixtures {
    /// A small rider namespace: a feed plugin point with two switches under a group kill switch, and an
    /// experiment.
    static func rider(_ name: String = "rider") -> FlagSet {
        FlagSet(
            namespace: name, description: "Rider app",
            pluginPoints: [
                PluginPointDefinition(
                    name: "feed", killSwitch: "feed_cards",
                    switches: ["plugin_switch_feed_promos", "plugin_switch_feed_weather"])
            ],
            killSwitches: [KillSwitch(key: KillSwitch.masterKey), KillSwitch(key: "feed_cards")],
            flags: [
                FlagDefinition(
                    key: "plugin_switch_feed_promos",
                    kind: .pluginSwitch(
                        PluginSwitchDefinition(
                            rules: [
                                SwitchRule(
                                    conditions: Conditions(cities: ["lagos"]), rollout: Rollout(basisPoints: 500)!)
                            ],
                            rollout: .full))),
                FlagDefinition(key: "plugin_switch_feed_weather", kind: .pluginSwitch(PluginSwitchDefinition())),
                FlagDefinition(
                    key: "checkout_button",
                    kind: .experiment(
                        Experiment(
                            valueType: .string,
                            variants: [
                                Variant(key: "control", value: .string("Pay")),
                                Variant(key: "bold", value: .string("PAY NOW")),
                            ],
                            defaultVariant: "control", weights: ["control": 1, "bold": 1]))),
            ])
    }

    /// A namespace using every kind of value the snapshot encodes: floats (integral too), JSON objects with
    /// unsorted keys, non-ASCII text, scoped disables, kill entries, rules with versions.
    static func everyField() -> FlagSet {
        let text = #"""
            {"namespace": "kitchen", "description": "Kitchen sink \u00e9\u4e2d",
             "plugin_points": [{"name": "home_feed", "kill_switch": "kill_home_feed",
                                "switches": ["plugin_switch_feed_promos", "plugin_switch_feed_weather"]}],
             "kill_switches": {"master": {"entries": [{"cities": ["pyongyang"]}, {"cities": ["lagos"], "cohorts": ["core_only"]}]},
                               "kill_home_feed": {"description": "The home feed"},
                               "kill_team": {"members": ["plugin_switch_feed_promos", "price_factor"], "entries": [{}]}},
             "flags": {
               "plugin_switch_feed_promos": {"type": "plugin_switch", "owner": "team-growth",
                 "disabled_scopes": [{"cities": ["berlin"]}, {"cohorts": ["business"]}],
                 "rules": [{"name": "QA", "units": ["qa-1", "qa-2"], "rollout": 10000},
                           {"not_cities": ["paris"], "not_cohorts": ["beta"], "rollout": 7},
                           {"cities": ["lagos"], "cohorts": ["beta"], "app_version_at_least": "5.12",
                            "app_version_below": "6.0.0-beta.1", "platforms": ["ios"], "rollout": 110}],
                 "rollout": 1234},
               "plugin_switch_feed_weather": {"type": "plugin_switch", "disabled": true, "rollout": 10000},
               "price_factor": {"type": "experiment", "value_type": "float",
                 "variants": [{"key": "same", "value": 1.0}, {"key": "more", "value": 1.25}, {"key": "tiny", "value": 1e-7}],
                 "default_variant": "same", "weights": {"same": 1, "more": 0, "tiny": 2},
                 "rules": [{"cities": ["paris"], "weights": {"more": 1}}]},
               "map_style": {"type": "experiment", "value_type": "object",
                 "variants": [{"key": "classic", "value": {"zoom": 14, "palette": "classic", "labels": ["streets", "places"]}},
                              {"key": "night", "value": {"zoom": 13.5, "palette": "dark \u263e", "labels": []}}],
                 "default_variant": "classic", "weights": {"classic": 3, "night": 1}},
               "retry_limit": {"type": "experiment", "value_type": "integer",
                 "variants": [{"key": "low", "value": 2}, {"key": "high", "value": 5}],
                 "default_variant": "low", "weights": {"low": 90, "high": 10}}}}
            """#
        return try! FlagSet(tree: JSONValue.parse(text), unit: .basisPoints)
    }

    static let editor = ChangeAuthor(actor: "ada", source: .cli, reason: "testing")

    static func request(
        _ actor: String = "ada", source: ChangeSource = .cli, reason: String? = "testing",
        basedOn: SnapshotVersion? = nil, summary: String? = nil
    ) -> ChangeRequest {
        ChangeRequest(
            author: ChangeAuthor(actor: actor, source: source, reason: reason), basedOn: basedOn, summary: summary)
    }

    /// Sets a plugin switch's default rollout.
    static func rollout(_ key: String, _ basisPoints: Int) -> @Sendable (FlagSet) throws -> FlagSet {
        { flagSet in
            var flagSet = flagSet
            let index = flagSet.flags.firstIndex { $0.key == key }!
            flagSet.flags[index].pluginSwitch?.rollout = Rollout(basisPoints: basisPoints)!
            return flagSet
        }
    }

    /// Adds a kill entry to a kill switch.
    static func kill(_ key: String, _ scope: Scope = .everywhere) -> @Sendable (FlagSet) throws -> FlagSet {
        { flagSet in
            var flagSet = flagSet
            let index = flagSet.killSwitches.firstIndex { $0.key == key }!
            flagSet.killSwitches[index].entries.append(scope)
            return flagSet
        }
    }
}

/// Expects a `StorageError` of one kind.
func expectStorageError<T>(_ kind: StorageError.Kind, _ body: () async throws -> T) async -> StorageError? {
    do {
        _ = try await body()
        Issue.record("expected a StorageError of kind \(kind), got success")
        return nil
    } catch let error as StorageError {
        #expect(error.kind == kind, "\(error)")
        return error
    } catch {
        Issue.record("expected a StorageError of kind \(kind), got \(error)")
        return nil
    }
}
