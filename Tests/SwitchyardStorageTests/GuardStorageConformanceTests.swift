import Foundation
import SwitchyardCore
import SwitchyardStorage
import Testing

/// What the crash guard needs from every backend: evidence kept with its changes, conditional disables that
/// commit once however many flagsd processes race, and crash guard policies versioned like any definition.
@Suite(.serialized) struct GuardStorageConformanceTests {
    static let evidence: JSONValue = .object(
        JSONObject([
            ("switch", .string("plugin_switch_feed_promos")),
            ("scope", .object(JSONObject([("cities", .array([.string("lagos")]))]))),
            ("sessions", .int(1228)), ("crashes", .int(61)), ("crash_rate", .double(0.0497)), ("bound", .double(0.02)),
        ]))

    /// Disables a switch in a scope unless it is off there already: the crash guard's conditional change.
    static func disableUnlessDisabled(_ key: String, in scope: Scope) -> @Sendable (FlagSet) throws -> FlagSet {
        { flagSet in
            var flagSet = flagSet
            guard let index = flagSet.flags.firstIndex(where: { $0.key == key }),
                var gate = flagSet.flags[index].pluginSwitch,
                !gate.isDisabled(in: scope)
            else { return flagSet }
            if scope.isEverywhere { gate.disabled = true } else { gate.disabledScopes.append(scope) }
            flagSet.flags[index].pluginSwitch = gate
            return flagSet
        }
    }

    static func guardRequest() -> ChangeRequest {
        ChangeRequest(
            author: ChangeAuthor(actor: "crash-guard", source: .crashGuard, reason: "crash rate 4.97% in city lagos"),
            summary: "crash guard: disable plugin_switch_feed_promos in city lagos", evidence: evidence)
    }

    @Test(arguments: StoreBackend.all)
    func evidenceIsKeptWithTheChangeAndItsAuditEntry(backend: StoreBackend) async throws {
        try await backend.withStore { store in
            _ = try await store.createNamespace(Fixtures.rider(), reasonPolicy: .always, request: Fixtures.request())
            let result = try await store.change(
                "rider", Self.guardRequest(),
                mutation: Self.disableUnlessDisabled("plugin_switch_feed_promos", in: Scope(cities: ["lagos"])))
            #expect(result.record?.evidence == Self.evidence)
            #expect(
                result.state.flagSet.flag("plugin_switch_feed_promos")?.pluginSwitch?.disabledScopes == [
                    Scope(cities: ["lagos"])
                ])
            let logged = try #require(try await store.change(in: "rider", version: 2))
            #expect(logged.evidence == Self.evidence)
            #expect(logged.actor == "crash-guard")
            #expect(logged.source == .crashGuard)
            let audit = try await store.audit(AuditQuery(namespace: "rider", source: .crashGuard))
            #expect(audit.entries.count == 1)
            #expect(audit.entries.first?.evidence == Self.evidence)
            #expect(audit.entries.first?.version == 2)
            // People's changes carry none.
            let person = try await store.change(
                "rider", Fixtures.request(), mutation: Fixtures.rollout("plugin_switch_feed_weather", 100))
            #expect(person.record?.evidence == nil)
            #expect(try await store.audit(AuditQuery(namespace: "rider", limit: 1)).entries.first?.evidence == nil)
        }
    }

    @Test(arguments: StoreBackend.all)
    func racingConditionalDisablesCommitOnce(backend: StoreBackend) async throws {
        try await backend.withStore { store in
            _ = try await store.createNamespace(Fixtures.rider(), reasonPolicy: .kills, request: Fixtures.request())
            let results = try await withThrowingTaskGroup(of: CommittedChange.self) { group in
                for _ in 0..<8 {
                    group.addTask {
                        try await store.change(
                            "rider", Self.guardRequest(),
                            mutation: Self.disableUnlessDisabled("plugin_switch_feed_promos", in: .everywhere))
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(results.filter(\.changed).count == 1)
            #expect(try await store.namespace("rider")?.record.version == 2)
            #expect(try await store.audit(AuditQuery(namespace: "rider", source: .crashGuard)).entries.count == 1)
            // A scoped disable is covered by the global one: nothing more to do.
            let scoped = try await store.change(
                "rider", Self.guardRequest(),
                mutation: Self.disableUnlessDisabled("plugin_switch_feed_promos", in: Scope(cities: ["lagos"])))
            #expect(!scoped.changed)
        }
    }

    @Test(arguments: StoreBackend.all)
    func racingConditionalDisablesThroughSeveralProcessesCommitOnce(backend: StoreBackend) async throws {
        // Three flagsd instances whose guards saw the same crashes: the condition is decided under the namespace's
        // lock on the latest state (PostgreSQL: the row lock each change takes), so one trip commits.
        try await backend.withStores(3) { stores in
            _ = try await stores[0].createNamespace(Fixtures.rider(), reasonPolicy: .kills, request: Fixtures.request())
            let results = try await withThrowingTaskGroup(of: CommittedChange.self) { group in
                for index in 0..<9 {
                    let store = stores[index % stores.count]
                    group.addTask {
                        try await store.change(
                            "rider", Self.guardRequest(),
                            mutation: Self.disableUnlessDisabled(
                                "plugin_switch_feed_promos", in: Scope(cities: ["lagos"])))
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(results.filter(\.changed).count == 1)
            for store in stores {
                let state = try #require(try await store.namespace("rider"))
                #expect(state.record.version == 2)
                #expect(
                    state.flagSet.flag("plugin_switch_feed_promos")?.pluginSwitch?.disabledScopes == [
                        Scope(cities: ["lagos"])
                    ])
                let audit = try await store.audit(AuditQuery(namespace: "rider", source: .crashGuard))
                #expect(audit.entries.map(\.evidence) == [Self.evidence])
            }
        }
    }

    @Test(arguments: StoreBackend.all)
    func aNamespacesCrashGuardPolicyIsVersionedAuditedAndReverted(backend: StoreBackend) async throws {
        try await backend.withStore { store in
            _ = try await store.createNamespace(Fixtures.rider(), reasonPolicy: .kills, request: Fixtures.request())
            let policy = CrashGuardPolicy(window: .seconds(900), maximumCrashRate: Rollout(basisPoints: 150))
            let result = try await store.change("rider", Fixtures.request()) { flagSet in
                var flagSet = flagSet
                flagSet.crashGuard = policy
                let index = flagSet.flags.firstIndex { $0.key == "plugin_switch_feed_promos" }!
                flagSet.flags[index].pluginSwitch?.crashGuard = CrashGuardPolicy(enabled: false)
                return flagSet
            }
            #expect(result.record?.summary == "created namespace crash_guard; updated flag plugin_switch_feed_promos")
            let stored = try #require(try await store.namespace("rider"))
            #expect(stored.flagSet.crashGuard == policy)
            #expect(
                stored.flagSet.flag("plugin_switch_feed_promos")?.pluginSwitch?.crashGuard
                    == CrashGuardPolicy(enabled: false))
            let namespaceChange = try #require(result.record?.changes.first { $0.kind == .namespace })
            #expect(namespaceChange.key == "crash_guard")
            #expect(namespaceChange.before == nil)
            #expect(namespaceChange.after?["max_crash_rate"] == .int(150))
            let reverted = try await store.revert("rider", version: 2, request: Fixtures.request())
            #expect(reverted.state.flagSet.crashGuard == nil)
            #expect(reverted.state.flagSet == Fixtures.rider())
        }
    }

    @Test(arguments: StoreBackend.all)
    func proposalsAndDismissalsAreAuditedWithoutAVersionAndFoundByAction(backend: StoreBackend) async throws {
        try await backend.withStore { store in
            _ = try await store.createNamespace(Fixtures.rider(), reasonPolicy: .kills, request: Fixtures.request())
            let proposed = try await store.recordAudit(
                AuditNote(
                    author: ChangeAuthor(actor: "crash-guard", source: .crashGuard, reason: "the trip budget is spent"),
                    action: .guardPropose,
                    namespace: "rider",
                    summary: "crash guard: propose disabling plugin_switch_feed_promos in city lagos",
                    targets: ["plugin_switch_feed_promos"], evidence: Self.evidence))
            #expect(proposed.action == .guardPropose && proposed.version == nil && proposed.evidence == Self.evidence)
            #expect(proposed.reason == "the trip budget is spent")
            let dismissed = try await store.recordAudit(
                AuditNote(
                    author: ChangeAuthor(actor: "ada", source: .cli, reason: "a known flaky device farm"),
                    action: .guardDismiss,
                    namespace: "rider", summary: "dismiss crash guard proposal \(proposed.id)",
                    targets: ["plugin_switch_feed_promos"],
                    evidence: .object(JSONObject([("proposal", .int64(proposed.id))]))))
            #expect(dismissed.id > proposed.id)
            #expect(try await store.namespace("rider")?.record.version == 1)
            let found = try await store.audit(AuditQuery(namespace: "rider", actions: [.guardPropose, .guardDismiss]))
            #expect(found.entries.map(\.id) == [dismissed.id, proposed.id])
            #expect(
                try await store.audit(AuditQuery(target: "plugin_switch_feed_promos", actions: [.guardDismiss])).entries
                    .map(\.actor) == ["ada"])
            #expect(try await store.audit(AuditQuery(namespace: "rider", actions: [.change])).entries.isEmpty)
            _ = await expectStorageError(.notFound) {
                try await store.recordAudit(
                    AuditNote(
                        author: ChangeAuthor(actor: "crash-guard", source: .crashGuard), action: .guardPropose,
                        namespace: "nope", summary: "x", targets: [], evidence: nil))
            }
        }
    }
}
