import Foundation
import SwitchyardCore
import SwitchyardStorage
import Testing

/// What every backend must do with client events (`EventStore`); runs against each backend in
/// `StoreBackend.all`, beside `FlagStoreConformanceTests`.
@Suite(.serialized) struct EventStoreConformanceTests {
    /// 2027-01-15 08:00:00 UTC, a bucket start (1,800,000,000 is a multiple of 60).
    static let t0 = Date(timeIntervalSince1970: 1_800_000_000)

    static func session(_ id: String, at seconds: TimeInterval = 0, crashed: Bool, switches: [String], variants: [String: String] = [:],
                        city: String? = "lagos", cohorts: [String] = []) -> StoredEvent {
        StoredEvent(id: id, time: t0 + seconds, city: city, cohorts: cohorts,
                    payload: .session(crashed: crashed, switches: switches, variants: variants))
    }

    static func exposure(_ id: String, at seconds: TimeInterval = 0, flag: String = "checkout_button", variant: String,
                         city: String? = "lagos", cohorts: [String] = []) -> StoredEvent {
        StoredEvent(id: id, time: t0 + seconds, city: city, cohorts: cohorts, payload: .exposure(flag: flag, variant: variant))
    }

    static func window(_ subjects: Set<EventSubject.Kind>? = nil, keys: Set<String>? = nil, dimensions: Set<EventDimension.Kind>? = nil,
                       perBucket: Bool = false, namespace: String = "rider") -> EventCountQuery {
        EventCountQuery(namespace: namespace, from: t0, until: t0 + 3600, subjects: subjects, keys: keys, dimensions: dimensions,
                        perBucket: perBucket)
    }

    func tally(_ counts: [EventCount], _ subject: EventSubject, _ dimension: EventDimension = .all) -> EventTally {
        counts.first { $0.subject == subject && $0.dimension == dimension }?.tally ?? .zero
    }

    @Test(arguments: StoreBackend.all)
    func sessionsCountPerSwitchBesideTheBaselinePerCityAndCohort(backend: StoreBackend) async throws {
        try await backend.withStore { store in
            _ = try await store.createNamespace(Fixtures.rider(), reasonPolicy: .kills, request: Fixtures.request())
            let promos = "plugin_switch_feed_promos", weather = "plugin_switch_feed_weather"
            let result = try await store.ingestEvents([
                Self.session("s1", crashed: true, switches: [promos], cohorts: ["beta"]),
                Self.session("s2", crashed: false, switches: [promos, weather], cohorts: ["beta", "staff"]),
                Self.session("s3", crashed: true, switches: [promos, promos], city: "paris"),
                Self.session("s4", crashed: false, switches: [], city: nil),
            ], in: "rider", receivedAt: Self.t0)
            #expect(result.counted == ["s1", "s2", "s3", "s4"])
            #expect(result.duplicates.isEmpty)

            let counts = try await store.eventCounts(Self.window())
            #expect(tally(counts, .baseline) == EventTally(sessions: 4, crashedSessions: 2))
            #expect(tally(counts, .pluginSwitch(promos)) == EventTally(sessions: 3, crashedSessions: 2))
            #expect(tally(counts, .pluginSwitch(weather)) == EventTally(sessions: 1, crashedSessions: 0))
            #expect(tally(counts, .pluginSwitch(promos), .city("lagos")) == EventTally(sessions: 2, crashedSessions: 1))
            #expect(tally(counts, .pluginSwitch(promos), .city("paris")) == EventTally(sessions: 1, crashedSessions: 1))
            #expect(tally(counts, .baseline, .city("lagos")) == EventTally(sessions: 2, crashedSessions: 1))
            #expect(tally(counts, .pluginSwitch(promos), .cohort("beta")) == EventTally(sessions: 2, crashedSessions: 1))
            #expect(tally(counts, .pluginSwitch(weather), .cohort("staff")) == EventTally(sessions: 1))
            #expect(tally(counts, .baseline).crashRate == 0.5)
            // Sorted by subject, then dimension; nothing that sums to zero.
            #expect(counts.map(\.subject) == counts.map(\.subject).sorted())
            #expect(counts.allSatisfy { !$0.tally.isZero })

            let cityOnly = try await store.eventCounts(Self.window([.pluginSwitch], keys: [promos], dimensions: [.city]))
            #expect(cityOnly.map(\.description) == ["plugin_switch_feed_promos [city=lagos]: 2 sessions, 1 crashed, 0 exposures",
                                                     "plugin_switch_feed_promos [city=paris]: 1 sessions, 1 crashed, 0 exposures"])
        }
    }

    @Test(arguments: StoreBackend.all)
    func variantsCountExposuresAndTheSessionsTheyWereServedIn(backend: StoreBackend) async throws {
        try await backend.withStore { store in
            _ = try await store.createNamespace(Fixtures.rider(), reasonPolicy: .kills, request: Fixtures.request())
            _ = try await store.ingestEvents([
                Self.exposure("e1", variant: "control"),
                Self.exposure("e2", variant: "bold"),
                Self.exposure("e3", variant: "bold", cohorts: ["beta"]),
                Self.session("s1", crashed: true, switches: [], variants: ["checkout_button": "bold"]),
                Self.session("s2", crashed: false, switches: [], variants: ["checkout_button": "control", "other": "x"]),
            ], in: "rider", receivedAt: Self.t0)
            let counts = try await store.eventCounts(Self.window([.variant], keys: ["checkout_button"], dimensions: [.all]))
            #expect(counts == [
                EventCount(subject: .variant("bold", of: "checkout_button"), dimension: .all,
                           tally: EventTally(sessions: 1, crashedSessions: 1, exposures: 2)),
                EventCount(subject: .variant("control", of: "checkout_button"), dimension: .all,
                           tally: EventTally(sessions: 1, crashedSessions: 0, exposures: 1)),
            ])
            let beta = try await store.eventCounts(Self.window([.variant], dimensions: [.cohort]))
            #expect(beta.map(\.description) == ["checkout_button=bold [cohort=beta]: 0 sessions, 0 crashed, 1 exposures"])
        }
    }

    @Test(arguments: StoreBackend.all)
    func aRetriedBatchNeverCountsTwice(backend: StoreBackend) async throws {
        try await backend.withStore { store in
            _ = try await store.createNamespace(Fixtures.rider(), reasonPolicy: .kills, request: Fixtures.request())
            let batch = [Self.session("s1", crashed: true, switches: ["plugin_switch_feed_promos"]), Self.exposure("e1", variant: "bold")]
            _ = try await store.ingestEvents(batch, in: "rider", receivedAt: Self.t0)
            let retried = try await store.ingestEvents(batch + [Self.session("s2", crashed: false, switches: [])], in: "rider",
                                                       receivedAt: Self.t0 + 5)
            #expect(retried.counted == ["s2"])
            #expect(retried.duplicates == ["s1", "e1"])
            // The same id twice in one batch counts once.
            let doubled = try await store.ingestEvents([Self.session("s3", crashed: true, switches: []), Self.session("s3", crashed: true, switches: [])],
                                                       in: "rider", receivedAt: Self.t0 + 6)
            #expect(doubled.counted == ["s3"])
            #expect(doubled.duplicates == ["s3"])
            let counts = try await store.eventCounts(Self.window(dimensions: [.all]))
            #expect(tally(counts, .baseline) == EventTally(sessions: 3, crashedSessions: 2))
            #expect(tally(counts, .pluginSwitch("plugin_switch_feed_promos")) == EventTally(sessions: 1, crashedSessions: 1))
            #expect(tally(counts, .variant("bold", of: "checkout_button")).exposures == 1)
        }
    }

    @Test(arguments: StoreBackend.all)
    func eventIDsAreKeptPerNamespace(backend: StoreBackend) async throws {
        try await backend.withStore { store in
            _ = try await store.createNamespace(Fixtures.rider("a"), reasonPolicy: .kills, request: Fixtures.request())
            _ = try await store.createNamespace(Fixtures.rider("b"), reasonPolicy: .kills, request: Fixtures.request())
            let event = Self.session("same-id", crashed: true, switches: ["plugin_switch_feed_promos"])
            #expect(try await store.ingestEvents([event], in: "a", receivedAt: Self.t0).counted == ["same-id"])
            #expect(try await store.ingestEvents([event], in: "b", receivedAt: Self.t0).counted == ["same-id"])
            #expect(tally(try await store.eventCounts(Self.window(namespace: "a")), .baseline).sessions == 1)
            #expect(tally(try await store.eventCounts(Self.window(namespace: "b")), .baseline).sessions == 1)
        }
    }

    @Test(arguments: StoreBackend.all)
    func countsFallIntoMinuteBucketsAndQueriesSumTheirRange(backend: StoreBackend) async throws {
        try await backend.withStore { store in
            _ = try await store.createNamespace(Fixtures.rider(), reasonPolicy: .kills, request: Fixtures.request())
            _ = try await store.ingestEvents([
                Self.session("a", at: 0, crashed: true, switches: []),
                Self.session("b", at: 59.999, crashed: false, switches: []),
                Self.session("c", at: 60, crashed: false, switches: []),
                Self.session("d", at: 180.5, crashed: true, switches: []),
            ], in: "rider", receivedAt: Self.t0 + 200)
            let perMinute = try await store.eventCounts(Self.window([.baseline], dimensions: [.all], perBucket: true))
            #expect(perMinute.map(\.bucket) == [Self.t0, Self.t0 + 60, Self.t0 + 180])
            #expect(perMinute.map(\.tally.sessions) == [2, 1, 1])
            #expect(perMinute.map(\.tally.crashedSessions) == [1, 0, 1])
            // [t0 + 30 s, t0 + 180 s): the bucket of t0 + 30 s starts at t0; the bucket at t0 + 180 s is left out.
            let middle = try await store.eventCounts(EventCountQuery(namespace: "rider", from: Self.t0 + 30, until: Self.t0 + 180,
                                                                     subjects: [.baseline], dimensions: [.all]))
            #expect(middle.map(\.tally) == [EventTally(sessions: 3, crashedSessions: 1)])
            #expect(try await store.eventCounts(EventCountQuery(namespace: "rider", from: Self.t0 + 240, until: Self.t0 + 600)).isEmpty)
            #expect(try await store.eventCounts(Self.window(namespace: "nobody")).isEmpty)
        }
    }

    @Test(arguments: StoreBackend.all)
    func eventsForAnUnknownNamespaceAreRefusedAndRecordNothing(backend: StoreBackend) async throws {
        try await backend.withStore { store in
            _ = try await store.createNamespace(Fixtures.rider(), reasonPolicy: .kills, request: Fixtures.request())
            let event = Self.session("s1", crashed: true, switches: [])
            let error = await expectStorageError(.notFound) {
                try await store.ingestEvents([event], in: "nope", receivedAt: Self.t0)
            }
            #expect(error?.message.contains("'nope'") == true)
            try await store.deleteNamespace("rider", by: Fixtures.editor)
            _ = await expectStorageError(.notFound) { try await store.ingestEvents([event], in: "rider", receivedAt: Self.t0) }
            _ = try await store.createNamespace(Fixtures.rider(), reasonPolicy: .kills, request: Fixtures.request())
            #expect(try await store.ingestEvents([event], in: "rider", receivedAt: Self.t0).counted == ["s1"])
        }
    }

    @Test(arguments: StoreBackend.all)
    func pruningForgetsOldIDsAndKeepsEveryCount(backend: StoreBackend) async throws {
        try await backend.withStore { store in
            _ = try await store.createNamespace(Fixtures.rider(), reasonPolicy: .kills, request: Fixtures.request())
            let old = Self.session("old", at: 0, crashed: true, switches: [])
            let recent = Self.session("recent", at: 600, crashed: false, switches: [])
            _ = try await store.ingestEvents([old, recent], in: "rider", receivedAt: Self.t0 + 600)
            #expect(try await store.pruneEventIDs(before: Self.t0 + 300) == 1)
            #expect(try await store.pruneEventIDs(before: Self.t0 + 300) == 0)
            #expect(tally(try await store.eventCounts(Self.window()), .baseline) == EventTally(sessions: 2, crashedSessions: 1))
            // The recent id is still known; the forgotten one would count again (the server refuses events that old).
            let again = try await store.ingestEvents([old, recent], in: "rider", receivedAt: Self.t0 + 700)
            #expect(again.counted == ["old"])
            #expect(again.duplicates == ["recent"])
        }
    }
}

/// The shared aggregation every backend uses.
struct EventAggregationTests {
    @Test func bucketsStartOnWholeMinutesUTCAlsoBefore1970() {
        #expect(EventAggregation.bucketStart(of: Date(timeIntervalSince1970: 125.5)) == 120_000)
        #expect(EventAggregation.bucketStart(of: Date(timeIntervalSince1970: 120)) == 120_000)
        #expect(EventAggregation.bucketStart(of: Date(timeIntervalSince1970: -0.5)) == -60_000)
    }

    @Test func aSessionIncrementsTheBaselineEachSwitchAndEachVariantInEveryDimension() {
        let event = StoredEvent(id: "s", time: Date(timeIntervalSince1970: 60), city: "lagos", cohorts: ["beta", "beta", "staff"],
                                payload: .session(crashed: true, switches: ["sw", "sw"], variants: ["exp": "b"]))
        let increments = EventAggregation.increments(of: [event])
        // 3 subjects × (all, city, 2 distinct cohorts).
        #expect(increments.count == 12)
        #expect(increments.allSatisfy { $0.tally == EventTally(sessions: 1, crashedSessions: 1) && $0.key.bucket == 60_000 })
        #expect(increments.map(\.key) == increments.map(\.key).sorted())
    }
}
