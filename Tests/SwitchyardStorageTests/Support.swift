import Foundation
import Synchronization
import SwitchyardCore
import SwitchyardStorage
import Testing

/// A storage backend the conformance suite runs against. The PostgreSQL backend adds itself to `all`.
struct StoreBackend: Sendable, CustomTestStringConvertible {
    let name: String
    /// Opens a fresh, empty store; the closure's cleanup runs after the test.
    let open: @Sendable (_ clock: TestClock) async throws -> (store: any FlagStore, cleanup: @Sendable () async throws -> Void)

    var testDescription: String { name }

    static let sqlite = StoreBackend(name: "SQLite") { clock in
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("switchyard-store-\(UUID().uuidString)")
        let store = try SQLiteFlagStore(path: folder.appendingPathComponent("flags.sqlite").path, now: { clock.now })
        return (store, {
            try store.close()
            try? FileManager.default.removeItem(at: folder)
        })
    }

    static let all: [StoreBackend] = [.sqlite]

    /// Runs a test body with a fresh store.
    func withStore<T>(clock: TestClock = TestClock(), _ body: (any FlagStore) async throws -> T) async throws -> T {
        let (store, cleanup) = try await open(clock)
        do {
            let result = try await body(store)
            try await cleanup()
            return result
        } catch {
            try? await cleanup()
            throw error
        }
    }
}

/// A settable wall clock for timestamps.
final class TestClock: Sendable {
    private let state = Mutex(Date(timeIntervalSince1970: 1_800_000_000))

    var now: Date { state.withLock { $0 } }

    func advance(by seconds: TimeInterval) {
        state.withLock { $0.addTimeInterval(seconds) }
    }
}

enum Fixtures {
    /// A small rider namespace: a feed plugin point with two switches under a group kill switch, and an
    /// experiment.
    static func rider(_ name: String = "rider") -> FlagSet {
        FlagSet(
            namespace: name, description: "Rider app",
            pluginPoints: [PluginPointDefinition(name: "feed", killSwitch: "feed_cards",
                                       switches: ["plugin_switch_feed_promos", "plugin_switch_feed_weather"])],
            killSwitches: [KillSwitch(key: KillSwitch.masterKey), KillSwitch(key: "feed_cards")],
            flags: [
                FlagDefinition(key: "plugin_switch_feed_promos", kind: .pluginSwitch(PluginSwitchDefinition(
                    rules: [SwitchRule(conditions: Conditions(cities: ["lagos"]), rollout: Rollout(basisPoints: 500)!)],
                    rollout: .full))),
                FlagDefinition(key: "plugin_switch_feed_weather", kind: .pluginSwitch(PluginSwitchDefinition())),
                FlagDefinition(key: "checkout_button", kind: .experiment(Experiment(
                    valueType: .string,
                    variants: [Variant(key: "control", value: .string("Pay")), Variant(key: "bold", value: .string("PAY NOW"))],
                    defaultVariant: "control", weights: ["control": 1, "bold": 1]))),
            ])
    }

    static let editor = ChangeAuthor(actor: "ada", source: .cli, reason: "testing")

    static func request(_ actor: String = "ada", source: ChangeSource = .cli, reason: String? = "testing",
                        basedOn: VersionTag? = nil, summary: String? = nil) -> ChangeRequest {
        ChangeRequest(author: ChangeAuthor(actor: actor, source: source, reason: reason), basedOn: basedOn, summary: summary)
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
