import Foundation
import SwitchyardClientTesting
import SwitchyardCore
import SwitchyardStorage
import SwitchyardWire
import Testing

/// The behaviour every storage backend must have; runs against each backend in `StoreBackend.all`.
@Suite(.serialized) struct FlagStoreConformanceTests {
    @Test(arguments: StoreBackend.all)
    func createdNamespaceStartsAtVersionOneWithAFreshEpoch(backend: StoreBackend) async throws {
        try await backend.withStore { store in
            let first = try await store.createNamespace(
                Fixtures.rider("a"), reasonPolicy: .kills, request: Fixtures.request())
            let second = try await store.createNamespace(
                Fixtures.rider("b"), reasonPolicy: .kills, request: Fixtures.request())
            #expect(first.state.record.version == 1)
            #expect(first.record?.version == 1)
            #expect(first.state.flagSet == Fixtures.rider("a"))
            #expect(first.state.record.epoch != second.state.record.epoch)
            #expect(first.state.record.epoch.count >= 16)
            let loaded = try #require(try await store.namespace("a"))
            #expect(loaded == first.state)
            #expect(try await store.namespaces().map(\.name) == ["a", "b"])
        }
    }

    @Test(arguments: StoreBackend.all)
    func aNewNamespaceIsAnsweredAsStoredWithFlagsAndKillSwitchesInKeyOrder(backend: StoreBackend) async throws {
        try await backend.withStore { store in
            // Declared out of key order; the answer lists them as every later read does, and so do later changes.
            let declared = Fixtures.rider()
            let flags = declared.flags.map(\.key).sorted()
            let killSwitches = declared.killSwitches.map(\.key).sorted()
            #expect(declared.flags.map(\.key) != flags && declared.killSwitches.map(\.key) != killSwitches)
            let created = try await store.createNamespace(declared, reasonPolicy: .kills, request: Fixtures.request())
            #expect(created.state.flagSet.flags.map(\.key) == flags)
            #expect(created.state.flagSet.killSwitches.map(\.key) == killSwitches)
            #expect(try await store.namespace("rider")?.flagSet.flags.map(\.key) == flags)
            let changed = try await store.change(
                "rider", Fixtures.request(reason: nil), mutation: Fixtures.rollout("plugin_switch_feed_weather", 1))
            #expect(changed.state.flagSet.flags.map(\.key) == flags)
            #expect(changed.state.flagSet.killSwitches.map(\.key) == killSwitches)
        }
    }

    @Test(arguments: StoreBackend.all)
    func creatingANamespaceThatExistsFails(backend: StoreBackend) async throws {
        try await backend.withStore { store in
            _ = try await store.createNamespace(Fixtures.rider(), reasonPolicy: .kills, request: Fixtures.request())
            let error = await expectStorageError(.alreadyExists) {
                try await store.createNamespace(Fixtures.rider(), reasonPolicy: .kills, request: Fixtures.request())
            }
            #expect(error?.message.contains("'rider'") == true)
        }
    }

    @Test(arguments: StoreBackend.all)
    func eachChangeTakesTheNextVersionAndIsLogged(backend: StoreBackend) async throws {
        let clock = TestClock.forStores()
        try await backend.withStore(clock: clock) { store in
            _ = try await store.createNamespace(Fixtures.rider(), reasonPolicy: .kills, request: Fixtures.request())
            clock.advance(by: .seconds(60))
            let second = try await store.change(
                "rider", Fixtures.request("bo", source: .api, reason: "ramp up"),
                mutation: Fixtures.rollout("plugin_switch_feed_weather", 2500))
            let third = try await store.change(
                "rider", Fixtures.request("cy", reason: nil, summary: "ramp further"),
                mutation: Fixtures.rollout("plugin_switch_feed_weather", 5000))
            #expect(second.state.record.version == 2)
            #expect(third.state.record.version == 3)
            #expect(third.state.flagSet.flag("plugin_switch_feed_weather")?.pluginSwitch?.rollout.basisPoints == 5000)

            let log = try await store.changes(in: "rider", after: 1, limit: 10)
            #expect(log.map(\.version) == [2, 3])
            #expect(log[0].actor == "bo")
            #expect(log[0].source == .api)
            #expect(log[0].reason == "ramp up")
            #expect(log[0].time == clock.date)
            #expect(log[0].summary == "updated flag plugin_switch_feed_weather")
            #expect(log[1].summary == "ramp further")
            #expect(log[1].reason == nil)
            let touched = try #require(log[0].changes.first)
            #expect(touched.kind == .flag)
            #expect(touched.key == "plugin_switch_feed_weather")
            #expect(touched.before?["rollout"] == .int(0))
            #expect(touched.after?["rollout"] == .int(2500))
            #expect(try await store.changes(in: "rider", after: 0, limit: 2).map(\.version) == [1, 2])
            #expect(try await store.change(in: "rider", version: 3)?.actor == "cy")
        }
    }

    @Test(arguments: StoreBackend.all)
    func aChangeThatAltersNothingTakesNoVersion(backend: StoreBackend) async throws {
        try await backend.withStore { store in
            _ = try await store.createNamespace(Fixtures.rider(), reasonPolicy: .kills, request: Fixtures.request())
            let result = try await store.change(
                "rider", Fixtures.request(), mutation: Fixtures.rollout("plugin_switch_feed_weather", 0))
            #expect(!result.changed)
            #expect(result.state.record.version == 1)
            #expect(try await store.changes(in: "rider", after: 1, limit: 10).isEmpty)
        }
    }

    @Test(arguments: StoreBackend.all)
    func aChangeBasedOnAStaleVersionIsRefusedNamingWhoChangedIt(backend: StoreBackend) async throws {
        let clock = TestClock.forStores()
        try await backend.withStore(clock: clock) { store in
            let created = try await store.createNamespace(
                Fixtures.rider(), reasonPolicy: .kills, request: Fixtures.request())
            let epoch = created.state.record.epoch
            _ = try await store.change(
                "rider", Fixtures.request("bo", basedOn: SnapshotVersion(epoch: epoch, version: 1)),
                mutation: Fixtures.rollout("plugin_switch_feed_weather", 100))
            let error = await expectStorageError(.conflict) {
                try await store.change(
                    "rider", Fixtures.request("cy", basedOn: SnapshotVersion(epoch: epoch, version: 1)),
                    mutation: Fixtures.rollout("plugin_switch_feed_weather", 200))
            }
            #expect(error?.conflict?.currentVersion == 2)
            #expect(error?.conflict?.changedBy == "bo")
            #expect(error?.conflict?.changedAt == clock.date)
            #expect(error?.message.contains("bo") == true)
            let other = await expectStorageError(.conflict) {
                try await store.change(
                    "rider", Fixtures.request(basedOn: SnapshotVersion(epoch: "another", version: 2)),
                    mutation: Fixtures.rollout("plugin_switch_feed_weather", 200))
            }
            #expect(other?.conflict?.currentEpoch == epoch)
            #expect(try await store.namespace("rider")?.record.version == 2)
        }
    }

    @Test(arguments: StoreBackend.all)
    func aChangeLeavingAnInvalidFlagSetIsRefusedWithFieldPaths(backend: StoreBackend) async throws {
        try await backend.withStore { store in
            _ = try await store.createNamespace(Fixtures.rider(), reasonPolicy: .kills, request: Fixtures.request())
            let error = await expectStorageError(.invalid) {
                try await store.change("rider", Fixtures.request()) { flagSet in
                    var flagSet = flagSet
                    flagSet.flags.removeAll { $0.key == "plugin_switch_feed_weather" }
                    return flagSet
                }
            }
            #expect(error?.problems.map(\.path.description) == ["plugin_points[0].switches[1]"])
            #expect(try await store.namespace("rider")?.record.version == 1)
        }
    }

    @Test(arguments: StoreBackend.all)
    func errorsThrownByTheMutationPassThroughAndChangeNothing(backend: StoreBackend) async throws {
        struct Refused: Error {}
        try await backend.withStore { store in
            _ = try await store.createNamespace(Fixtures.rider(), reasonPolicy: .kills, request: Fixtures.request())
            await #expect(throws: Refused.self) {
                try await store.change("rider", Fixtures.request()) { _ in throw Refused() }
            }
            #expect(try await store.namespace("rider")?.record.version == 1)
        }
    }

    @Test(arguments: StoreBackend.all)
    func killingNeedsAReasonUnlessThePolicySaysNever(backend: StoreBackend) async throws {
        try await backend.withStore { store in
            _ = try await store.createNamespace(Fixtures.rider("a"), reasonPolicy: .kills, request: Fixtures.request())
            _ = try await store.createNamespace(Fixtures.rider("b"), reasonPolicy: .always, request: Fixtures.request())
            _ = try await store.createNamespace(Fixtures.rider("c"), reasonPolicy: .never, request: Fixtures.request())
            _ = await expectStorageError(.reasonRequired) {
                try await store.change("a", Fixtures.request(reason: "  "), mutation: Fixtures.kill("feed_cards"))
            }
            _ = try await store.change(
                "a", Fixtures.request(reason: nil), mutation: Fixtures.rollout("plugin_switch_feed_weather", 1))
            _ = try await store.change(
                "a", Fixtures.request(reason: "incident 42"), mutation: Fixtures.kill("feed_cards"))
            _ = await expectStorageError(.reasonRequired) {
                try await store.change(
                    "b", Fixtures.request(reason: nil), mutation: Fixtures.rollout("plugin_switch_feed_weather", 1))
            }
            _ = try await store.change(
                "c", Fixtures.request(reason: nil), mutation: Fixtures.kill(KillSwitch.masterKey))
            let (record, changed) = try await store.setReasonPolicy(.never, of: "a", by: Fixtures.editor)
            #expect(record.reasonPolicy == .never && changed)
            #expect(try await store.namespace("a")?.record.reasonPolicy == .never)
            #expect(try await store.namespace("a")?.record.version == 3)
        }
    }

    @Test(arguments: StoreBackend.all)
    func settingTheReasonPolicyInForceWritesNothing(backend: StoreBackend) async throws {
        let clock = TestClock.forStores()
        try await backend.withStore(clock: clock) { store in
            _ = try await store.createNamespace(Fixtures.rider(), reasonPolicy: .kills, request: Fixtures.request())
            clock.advance(by: .seconds(10))
            let set = try await store.setReasonPolicy(.always, of: "rider", by: Fixtures.editor)
            #expect(set.changed && set.record.reasonPolicy == .always)
            clock.advance(by: .seconds(10))
            let again = try await store.setReasonPolicy(.always, of: "rider", by: Fixtures.editor)
            #expect(!again.changed && again.record.reasonPolicy == .always)
            // Not touched: the same time of the last update, one audit entry.
            #expect(abs(again.record.updatedAt.timeIntervalSince(set.record.updatedAt)) < 0.001)
            #expect(
                try await store.audit(AuditQuery(namespace: "rider", actions: [.namespaceUpdate])).entries.count == 1)
        }
    }

    @Test(arguments: StoreBackend.all)
    func auditEntriesCanBeFilteredByFlagActorSourceAndTimeAndPaged(backend: StoreBackend) async throws {
        let clock = TestClock.forStores()
        try await backend.withStore(clock: clock) { store in
            let start = clock.date
            _ = try await store.createNamespace(
                Fixtures.rider(), reasonPolicy: .kills, request: Fixtures.request("seed", source: .apply))
            for index in 1...5 {
                clock.advance(by: .seconds(10))
                _ = try await store.change(
                    "rider",
                    Fixtures.request(index.isMultiple(of: 2) ? "bo" : "cy", source: .api, reason: "step \(index)"),
                    mutation: Fixtures.rollout("plugin_switch_feed_weather", index * 100))
            }
            clock.advance(by: .seconds(10))
            _ = try await store.change(
                "rider", Fixtures.request("bo", source: .console, reason: "incident"),
                mutation: Fixtures.kill("feed_cards"))

            let all = try await store.audit(AuditQuery(limit: 100))
            #expect(all.entries.count == 7)
            #expect(all.entries.map(\.id) == all.entries.map(\.id).sorted(by: >))
            #expect(all.entries.last?.action == .namespaceCreate)
            #expect(all.entries.first?.action == .change)
            #expect(all.entries.first?.version == 7)
            #expect(all.entries.first?.reason == "incident")
            #expect(all.entries.first?.changes.first?.kind == .killSwitch)

            #expect(
                try await store.audit(AuditQuery(target: "plugin_switch_feed_weather", limit: 100)).entries.count == 6)
            #expect(
                try await store.audit(AuditQuery(target: "feed_cards", limit: 100)).entries.map(\.version) == [7, 1])
            #expect(try await store.audit(AuditQuery(actor: "bo", limit: 100)).entries.map(\.version) == [7, 5, 3])
            #expect(try await store.audit(AuditQuery(source: .console, limit: 100)).entries.map(\.version) == [7])
            let window = AuditQuery(
                since: start.addingTimeInterval(20), until: start.addingTimeInterval(40), limit: 100)
            #expect(try await store.audit(window).entries.map(\.version) == [4, 3])
            #expect(try await store.audit(AuditQuery(namespace: "other", limit: 100)).entries.isEmpty)
            #expect(try await store.audit(AuditQuery(visibleNamespaces: ["other"], limit: 100)).entries.isEmpty)

            var versions: [Int64?] = []
            var cursor: Int64?
            repeat {
                let page = try await store.audit(AuditQuery(before: cursor, limit: 3))
                #expect(page.entries.count <= 3)
                versions += page.entries.map(\.version)
                cursor = page.nextCursor
            } while cursor != nil
            #expect(versions == all.entries.map(\.version))
        }
    }

    @Test(arguments: StoreBackend.all)
    func revertRestoresWhatAChangeTouchedAsANewChange(backend: StoreBackend) async throws {
        try await backend.withStore { store in
            _ = try await store.createNamespace(Fixtures.rider(), reasonPolicy: .never, request: Fixtures.request())
            _ = try await store.change("rider", Fixtures.request()) { flagSet in
                var flagSet = try Fixtures.rollout("plugin_switch_feed_weather", 900)(flagSet)
                flagSet.flags.removeAll { $0.key == "checkout_button" }
                flagSet.killSwitches.append(KillSwitch(key: "ops", entries: [Scope(cities: ["paris"])]))
                return flagSet
            }
            _ = try await store.change(
                "rider", Fixtures.request(), mutation: Fixtures.rollout("plugin_switch_feed_promos", 42))
            let reverted = try await store.revert(
                "rider", version: 2, request: Fixtures.request("bo", reason: "bad idea"))
            #expect(reverted.state.record.version == 4)
            let flagSet = reverted.state.flagSet
            #expect(flagSet.flag("plugin_switch_feed_weather")?.pluginSwitch?.rollout == .off)
            #expect(flagSet.flag("checkout_button") == Fixtures.rider().flag("checkout_button"))
            #expect(flagSet.killSwitch("ops") == nil)
            #expect(flagSet.flag("plugin_switch_feed_promos")?.pluginSwitch?.rollout.basisPoints == 42)
            #expect(reverted.record?.summary.hasPrefix("revert version 2") == true)
            #expect(reverted.record?.reason == "bad idea")
            _ = await expectStorageError(.notFound) {
                try await store.revert("rider", version: 99, request: Fixtures.request())
            }
        }
    }

    /// Metrics are objects of their own in the change log (kind `metric`, key the name): each created, updated or
    /// removed one is listed, audited, and restored alone by a revert.
    @Test(arguments: StoreBackend.all)
    func metricsAreChangedAuditedAndRevertedOneByOne(backend: StoreBackend) async throws {
        try await backend.withStore { store in
            _ = try await store.createNamespace(Fixtures.rider(), reasonPolicy: .never, request: Fixtures.request())
            let fare = MetricDefinition(name: "fare", owner: "team-rider", kind: .value, cap: 200)
            let trips = MetricDefinition(name: "trips", kind: .count, cap: 20)
            let added = try await store.change("rider", Fixtures.request()) { flagSet in
                var flagSet = flagSet
                flagSet.metrics = [fare, trips]
                return flagSet
            }
            #expect(added.record?.summary == "created metric fare, metric trips")
            #expect(
                added.record?.changes == [
                    ObjectChange(kind: .metric, key: "fare", before: nil, after: .object(fare.tree)),
                    ObjectChange(kind: .metric, key: "trips", before: nil, after: .object(trips.tree)),
                ])
            let changed = try await store.change("rider", Fixtures.request()) { flagSet in
                var flagSet = flagSet
                flagSet.metrics[0].cap = 250.5
                flagSet.metrics.append(
                    MetricDefinition(name: "fare_per_trip", kind: .ratio, numerator: "fare", denominator: "trips"))
                return flagSet
            }
            #expect(changed.record?.summary == "updated metric fare; created metric fare_per_trip")
            #expect(changed.record?.changes.first?.after?["cap"] == .number(JSONNumber(uncheckedLiteral: "250.5")))
            let stored = try #require(try await store.namespace("rider"))
            #expect(stored.flagSet.metrics.map(\.name) == ["fare", "trips", "fare_per_trip"])
            #expect(stored.flagSet.metric("fare")?.cap == 250.5)
            let audit = try await store.audit(AuditQuery(namespace: "rider", source: .cli))
            #expect(audit.entries.first?.changes.map(\.kind) == [.metric, .metric])
            // Removing trips would leave fare_per_trip without a denominator: refused, naming the field.
            let refused = await expectStorageError(.invalid) {
                try await store.change("rider", Fixtures.request()) { flagSet in
                    var flagSet = flagSet
                    flagSet.metrics.removeAll { $0.name == "trips" }
                    return flagSet
                }
            }
            #expect(
                refused?.problems.map(\.description) == [
                    "metrics.fare_per_trip.denominator: 'trips' is not a metric of this namespace (declared or built in: sessions, crashed_sessions, fare)"
                ])
            // Reverting version 3 restores fare's cap and removes the ratio; trips, from version 2, stays.
            let reverted = try await store.revert("rider", version: 3, request: Fixtures.request())
            #expect(reverted.state.flagSet.metrics.map(\.name) == ["fare", "trips"])
            #expect(reverted.state.flagSet.metric("fare") == fare)
            #expect(reverted.record?.changes.map(\.kind) == [.metric, .metric])
            let all = try await store.revert("rider", version: 2, request: Fixtures.request())
            #expect(all.state.flagSet == Fixtures.rider())
        }
    }

    @Test(arguments: StoreBackend.all)
    func aDeletedNamespaceIsGoneAndComesBackWithANewEpoch(backend: StoreBackend) async throws {
        try await backend.withStore { store in
            let first = try await store.createNamespace(
                Fixtures.rider(), reasonPolicy: .kills, request: Fixtures.request())
            _ = try await store.change(
                "rider", Fixtures.request(), mutation: Fixtures.rollout("plugin_switch_feed_weather", 1))
            try await store.deleteNamespace("rider", by: Fixtures.editor)
            #expect(try await store.namespace("rider") == nil)
            #expect(try await store.namespaces().isEmpty)
            _ = await expectStorageError(.notFound) {
                try await store.change(
                    "rider", Fixtures.request(), mutation: Fixtures.rollout("plugin_switch_feed_weather", 2))
            }
            _ = await expectStorageError(.notFound) { try await store.deleteNamespace("rider", by: Fixtures.editor) }
            let second = try await store.createNamespace(
                Fixtures.rider(), reasonPolicy: .kills, request: Fixtures.request())
            #expect(second.state.record.epoch != first.state.record.epoch)
            #expect(try await store.changes(in: "rider", after: 0, limit: 10).map(\.version) == [1])
            let deletions = try await store.audit(AuditQuery(namespace: "rider", limit: 10)).entries.filter {
                $0.action == .namespaceDelete
            }
            #expect(deletions.count == 1)
            #expect(deletions.first?.version == 2)
        }
    }

    @Test(arguments: StoreBackend.all)
    func tokensAreStoredHashedAndRevokedByIdOrName(backend: StoreBackend) async throws {
        try await backend.withStore { store in
            let admin = ChangeAuthor(actor: "root", source: .api)
            let (record, secret) = try await store.issueToken(
                name: "ci", role: .client, namespaces: ["rider"], by: admin)
            #expect(secret.hasPrefix("sy_client_"))
            let stored = try #require(try await store.tokens().first)
            #expect(stored.record == record)
            #expect(stored.secretHash == TokenSecret.hash(secret))
            #expect(!stored.secretHash.isEmpty)
            _ = await expectStorageError(.alreadyExists) {
                try await store.issueToken(name: "ci", role: .editor, namespaces: nil, by: admin)
            }
            let revoked = try await store.revokeToken("ci", by: admin)
            #expect(revoked.isRevoked)
            #expect(revoked.id == record.id)
            _ = try await store.issueToken(name: "ci", role: .editor, namespaces: nil, by: admin)
            #expect(try await store.revokeToken(record.id, by: admin).isRevoked)
            _ = await expectStorageError(.notFound) { try await store.revokeToken("nobody", by: admin) }
            let tokens = try await store.tokens()
            #expect(tokens.count == 2)
            #expect(tokens.filter { !$0.record.isRevoked }.map(\.record.role) == [.editor])
            let audit = try await store.audit(AuditQuery(target: "ci", limit: 10)).entries
            #expect(audit.map(\.action) == [.tokenCreate, .tokenRevoke, .tokenCreate])
            #expect(!audit.contains { $0.changes.description.contains(secret) })
        }
    }

    /// Someone must always be able to manage tokens: the last live admin token valid in every namespace is never
    /// revoked, also when two processes each revoke one of the last two at the same moment.
    @Test(arguments: StoreBackend.all)
    func theLastUnrestrictedAdminTokenIsNeverRevokedEvenByRevocationsAtOnce(backend: StoreBackend) async throws {
        try await backend.withStores(2) { stores in
            let root = ChangeAuthor(actor: "root", source: .api)
            _ = try await stores[0].issueToken(name: "first", role: .admin, namespaces: nil, by: root)
            _ = try await stores[0].issueToken(name: "rider-admin", role: .admin, namespaces: ["rider"], by: root)
            let refused = await expectStorageError(.lastAdminToken) {
                try await stores[1].revokeToken("first", by: root)
            }
            #expect(refused?.message.contains("'first'") == true)
            // An admin limited to namespaces cannot manage tokens, so it neither counts nor is kept.
            #expect(try await stores[1].revokeToken("rider-admin", by: root).isRevoked)

            for round in 1...3 {
                _ = try await stores[0].issueToken(name: "second-\(round)", role: .admin, namespaces: nil, by: root)
                let live = try await stores[0].tokens().map(\.record).filter {
                    $0.role == .admin && $0.namespaces == nil && !$0.isRevoked
                }
                #expect(live.count == 2)
                let outcomes = await withTaskGroup(of: StorageError.Kind?.self) { group in
                    for (store, token) in zip(stores, live) {
                        group.addTask {
                            do {
                                _ = try await store.revokeToken(token.id, by: root)
                                return nil
                            } catch {
                                return (error as? StorageError)?.kind ?? .corrupt
                            }
                        }
                    }
                    return await group.reduce(into: [StorageError.Kind?]()) { $0.append($1) }
                }
                #expect(outcomes.filter { $0 == nil }.count == 1, "round \(round): \(outcomes)")
                #expect(outcomes.filter { $0 == .lastAdminToken }.count == 1, "round \(round): \(outcomes)")
                let left = try await stores[1].tokens().map(\.record).filter {
                    $0.role == .admin && $0.namespaces == nil && !$0.isRevoked
                }
                #expect(left.count == 1, "round \(round)")
            }
            #expect(
                try await stores[0].audit(AuditQuery(limit: 100)).entries.filter { $0.action == .tokenRevoke }.count
                    == 4)
        }
    }

    @Test(arguments: StoreBackend.all)
    func aTokensRequestRateIsStoredWithItAndAbsentByDefault(backend: StoreBackend) async throws {
        try await backend.withStore { store in
            let admin = ChangeAuthor(actor: "root", source: .api)
            let (limited, _) = try await store.issueToken(
                name: "web", role: .client, namespaces: nil, ratePerMinute: 120, by: admin)
            let (unlimited, _) = try await store.issueToken(name: "ios", role: .client, namespaces: nil, by: admin)
            let tokens = try await store.tokens()
            #expect(tokens.first { $0.record.id == limited.id }?.record.ratePerMinute == 120)
            #expect(tokens.first { $0.record.id == unlimited.id }?.record.ratePerMinute == nil)
            #expect(limited.tree["rate_per_minute"] == .int(120))
            #expect(unlimited.tree["rate_per_minute"] == .null)
        }
    }

    @Test(arguments: StoreBackend.all)
    func concurrentChangesEachTakeADistinctVersion(backend: StoreBackend) async throws {
        try await backend.withStore { store in
            _ = try await store.createNamespace(Fixtures.rider(), reasonPolicy: .never, request: Fixtures.request())
            let versions = try await withThrowingTaskGroup(of: Int64.self) { group in
                for index in 1...40 {
                    group.addTask {
                        try await store.change(
                            "rider", Fixtures.request("writer\(index)"),
                            mutation: Fixtures.rollout("plugin_switch_feed_weather", index)
                        ).state.record.version
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(Set(versions) == Set(2...41))
            #expect(try await store.namespace("rider")?.record.version == 41)
            #expect(try await store.changes(in: "rider", after: 0, limit: 100).map(\.version) == Array(1...41))
        }
    }

    // MARK: Several processes on one database

    @Test(arguments: StoreBackend.all)
    func aStateReadByAnotherProcessEncodesToTheSameSnapshotBytes(backend: StoreBackend) async throws {
        try await backend.withStores(2) { stores in
            let created = try await stores[0].createNamespace(
                Fixtures.everyField(), reasonPolicy: .never, request: Fixtures.request())
            let readCreated = try #require(try await stores[1].namespace("kitchen"))
            #expect(SnapshotDocument.encode(readCreated.snapshot) == SnapshotDocument.encode(created.state.snapshot))
            let changed = try await stores[0].change(
                "kitchen", Fixtures.request(), mutation: Fixtures.rollout("plugin_switch_feed_promos", 4321))
            let read = try #require(try await stores[1].namespace("kitchen"))
            #expect(read.record.version == 2)
            #expect(read.flagSet == changed.state.flagSet)
            #expect(SnapshotDocument.encode(read.snapshot) == SnapshotDocument.encode(changed.state.snapshot))
            // The bytes are a function of the stored flag set, epoch and version: decoding and encoding again
            // gives them back.
            let bytes = SnapshotDocument.encode(read.snapshot)
            #expect(SnapshotDocument.encode(try SnapshotDocument.decode(bytes)) == bytes)
        }
    }

    /// A change writes only the objects it touched; whatever it touched (a flag, a kill switch, the plugin points'
    /// order, a metric, the namespace's own fields), another process reads back the same flag set.
    @Test(arguments: StoreBackend.all)
    func everyKindOfChangeReadsBackTheSameInAnotherProcess(backend: StoreBackend) async throws {
        try await backend.withStores(2) { stores in
            _ = try await stores[0].createNamespace(
                Fixtures.everyField(), reasonPolicy: .never, request: Fixtures.request())
            let edits: [(String, @Sendable (inout FlagSet) -> Void)] = [
                (
                    "a rollout",
                    { flagSet in
                        let index = flagSet.flags.firstIndex { $0.key == "plugin_switch_feed_promos" }!
                        flagSet.flags[index].pluginSwitch?.rollout = Rollout(basisPoints: 4321)!
                    }
                ),
                (
                    "a flag added",
                    {
                        $0.flags.append(
                            FlagDefinition(key: "plugin_switch_aa_first", kind: .pluginSwitch(PluginSwitchDefinition()))
                        )
                    }
                ),
                (
                    "a plugin point added in front",
                    {
                        $0.pluginPoints.insert(
                            PluginPointDefinition(name: "checkout", switches: ["plugin_switch_aa_first"]), at: 0)
                    }
                ),
                ("a plugin point changed", { $0.pluginPoints[1].description = "Home" }),
                (
                    "a kill switch added",
                    { $0.killSwitches.append(KillSwitch(key: "kill_checkout", members: ["plugin_switch_aa_first"])) }
                ),
                ("the description removed", { $0.description = nil }),
                ("a crash guard policy", { $0.crashGuard = CrashGuardPolicy(minimumSessions: 123) }),
                ("a metric", { $0.metrics = [MetricDefinition(name: "fare", kind: .value, cap: 200)] }),
                (
                    "a flag deleted with its references",
                    { flagSet in
                        flagSet.flags.removeAll { $0.key == "retry_limit" }
                    }
                ),
                (
                    "a kill switch and a plugin point deleted",
                    { flagSet in
                        flagSet.killSwitches.removeAll { $0.key == "kill_checkout" }
                        flagSet.pluginPoints.removeFirst()
                    }
                ),
                (
                    "the crash guard policy and the metric removed, the description back",
                    { flagSet in
                        flagSet.crashGuard = nil
                        flagSet.metrics = []
                        flagSet.description = "Kitchen"
                    }
                ),
            ]
            for (name, edit) in edits {
                let changed = try await stores[0].change("kitchen", Fixtures.request()) { flagSet in
                    var flagSet = flagSet
                    edit(&flagSet)
                    return flagSet
                }
                #expect(changed.record != nil, "\(name)")
                let read = try #require(try await stores[1].namespace("kitchen"))
                #expect(read.record.version == changed.state.record.version, "\(name)")
                #expect(
                    JSONValue.object(read.flagSet.tree(unit: .basisPoints))
                        == .object(changed.state.flagSet.tree(unit: .basisPoints)), "\(name)")
                #expect(
                    read.flagSet.pluginPoints.map(\.name) == changed.state.flagSet.pluginPoints.map(\.name), "\(name)")
            }
        }
    }

    @Test(arguments: StoreBackend.all)
    func concurrentChangesThroughSeveralProcessesTakeStrictlyIncreasingVersions(backend: StoreBackend) async throws {
        try await backend.withStores(3) { stores in
            _ = try await stores[0].createNamespace(Fixtures.rider(), reasonPolicy: .never, request: Fixtures.request())
            let results = try await withThrowingTaskGroup(of: (rollout: Int, version: Int64).self) { group in
                for index in 1...30 {
                    let store = stores[index % stores.count]
                    group.addTask {
                        let committed = try await store.change(
                            "rider", Fixtures.request("writer\(index)"),
                            mutation: Fixtures.rollout("plugin_switch_feed_weather", index))
                        return (index, committed.state.record.version)
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(Set(results.map(\.version)) == Set(2...31))
            let log = try await stores[1].changes(in: "rider", after: 0, limit: 100)
            #expect(log.map(\.version) == Array(1...31))
            // Each version holds the rollout its writer set, and its `before` is the previous version's `after`.
            for (rollout, version) in results {
                let entry = try #require(log.first { $0.version == version })
                #expect(entry.actor == "writer\(rollout)")
                #expect(entry.changes.first?.after?["rollout"] == .int(rollout))
            }
            for (previous, next) in zip(log.dropFirst(), log.dropFirst(2)) {
                #expect(next.changes.first?.before == previous.changes.first?.after)
            }
        }
    }

    @Test(arguments: StoreBackend.all)
    func aMutationThatRefusesWorkAlreadyDoneLetsOnlyOneOfManyProcessesDoIt(backend: StoreBackend) async throws {
        // The crash guard's trip: "disable the switch unless it is disabled", decided in the store's transaction
        // on the latest state, so instances that see the same crashes trip it once.
        struct AlreadyDisabled: Error {}
        try await backend.withStores(3) { stores in
            _ = try await stores[0].createNamespace(Fixtures.rider(), reasonPolicy: .kills, request: Fixtures.request())
            let outcomes = await withTaskGroup(of: Bool?.self) { group in
                for index in 0..<12 {
                    let store = stores[index % stores.count]
                    group.addTask {
                        do {
                            _ = try await store.change(
                                "rider", Fixtures.request("crash-guard", source: .crashGuard, reason: "crashes")
                            ) { flagSet in
                                var flagSet = flagSet
                                let at = flagSet.flags.firstIndex { $0.key == "plugin_switch_feed_promos" }!
                                guard flagSet.flags[at].pluginSwitch?.disabled == false else { throw AlreadyDisabled() }
                                flagSet.flags[at].pluginSwitch?.disabled = true
                                return flagSet
                            }
                            return true
                        } catch is AlreadyDisabled {
                            return false
                        } catch {
                            return nil
                        }
                    }
                }
                return await group.reduce(into: []) { $0.append($1) }
            }
            #expect(outcomes.filter { $0 == true }.count == 1)
            #expect(outcomes.filter { $0 == false }.count == 11)
            #expect(try await stores[2].namespace("rider")?.record.version == 2)
            #expect(try await stores[1].audit(AuditQuery(source: .crashGuard, limit: 10)).entries.count == 1)
        }
    }

    @Test(arguments: StoreBackend.all)
    func tokensAndAuditWrittenByOneProcessAreReadByAnother(backend: StoreBackend) async throws {
        try await backend.withStores(2) { stores in
            let admin = ChangeAuthor(actor: "root", source: .api)
            let (record, secret) = try await stores[0].issueToken(name: "ci", role: .client, namespaces: nil, by: admin)
            #expect(
                try await stores[1].tokens().first { $0.record.id == record.id }?.secretHash == TokenSecret.hash(secret)
            )
            _ = try await stores[1].revokeToken("ci", by: admin)
            #expect(try await stores[0].tokens().first { $0.record.id == record.id }?.record.isRevoked == true)
            #expect(
                try await stores[0].audit(AuditQuery(target: "ci", limit: 10)).entries.map(\.action) == [
                    .tokenRevoke, .tokenCreate,
                ])
            _ = await expectStorageError(.alreadyExists) {
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for store in stores {
                        group.addTask {
                            _ = try await store.issueToken(name: "race", role: .client, namespaces: nil, by: admin)
                        }
                    }
                    try await group.waitForAll()
                }
            }
            #expect(try await stores[0].tokens().filter { $0.record.name == "race" }.count == 1)
        }
    }

    @Test(arguments: StoreBackend.all)
    func aBatchSentThroughSeveralProcessesAtOnceCountsOnce(backend: StoreBackend) async throws {
        // A client retries a batch through another instance while the first is still counting it; batches
        // overlapping in other orders must not deadlock.
        try await backend.withStores(3) { stores in
            _ = try await stores[0].createNamespace(Fixtures.rider(), reasonPolicy: .kills, request: Fixtures.request())
            let t0 = EventStoreConformanceTests.t0
            var batch: [StoredEvent] = []
            for index in 0..<60 {
                let cohorts: [String] = index % 2 == 0 ? ["beta"] : []
                batch.append(
                    EventStoreConformanceTests.session(
                        "e\(index)", at: Double(index), crashed: index % 4 == 0,
                        switches: ["plugin_switch_feed_promos"], cohorts: cohorts))
            }
            let orders: [[StoredEvent]] = [batch, batch.reversed(), batch.shuffled()]
            let results = try await withThrowingTaskGroup(of: EventIngestResult.self) { group in
                for (index, store) in stores.enumerated() {
                    for order in orders {
                        group.addTask {
                            try await store.ingestEvents(order, in: "rider", receivedAt: t0 + Double(index))
                        }
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            let counted = results.flatMap(\.counted)
            #expect(counted.count == 60)
            #expect(Set(counted).count == 60)
            #expect(results.map(\.duplicates.count).reduce(0, +) == 60 * 8)
            let counts = try await stores[1].eventCounts(EventStoreConformanceTests.window())
            #expect(
                counts.first { $0.subject == .baseline && $0.dimension == .all }?.tally
                    == EventTally(sessions: 60, crashedSessions: 15))
            #expect(
                counts.first {
                    $0.subject == .pluginSwitch("plugin_switch_feed_promos") && $0.dimension == .cohort("beta")
                }?.tally
                    == EventTally(sessions: 30, crashedSessions: 15))
        }
    }
}
