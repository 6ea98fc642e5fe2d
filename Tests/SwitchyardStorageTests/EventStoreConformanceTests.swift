import Foundation
import SwitchyardCore
import SwitchyardStorage
import Testing

/// What every backend must do with client events (`EventStore`); runs against each backend in
/// `StoreBackend.all`, beside `FlagStoreConformanceTests`.
@Suite(.serialized) struct EventStoreConformanceTests {
    /// 2027-01-15 08:00:00 UTC, a bucket start (1,800,000,000 is a multiple of 60).
    static let t0 = Date(timeIntervalSince1970: 1_800_000_000)

    static func session(
        _ id: String, at seconds: TimeInterval = 0, crashed: Bool, switches: [String], variants: [String: String] = [:],
        city: String? = "lagos", cohorts: [String] = []
    ) -> StoredEvent {
        StoredEvent(
            id: id, time: t0 + seconds, city: city, cohorts: cohorts,
            payload: .session(crashed: crashed, switches: switches, variants: variants))
    }

    static func exposure(
        _ id: String, at seconds: TimeInterval = 0, flag: String = "checkout_button", variant: String,
        city: String? = "lagos", cohorts: [String] = []
    ) -> StoredEvent {
        StoredEvent(
            id: id, time: t0 + seconds, city: city, cohorts: cohorts, payload: .exposure(flag: flag, variant: variant))
    }

    static func window(
        _ subjects: Set<EventSubject.Kind>? = nil, keys: Set<String>? = nil,
        dimensions: Set<EventDimension.Kind>? = nil,
        perBucket: Bool = false, namespace: String = "rider"
    ) -> EventCountQuery {
        EventCountQuery(
            namespace: namespace, from: t0, until: t0 + 3600, subjects: subjects, keys: keys, dimensions: dimensions,
            perBucket: perBucket)
    }

    func tally(_ counts: [EventCount], _ subject: EventSubject, _ dimension: EventDimension = .all) -> EventTally {
        counts.first { $0.subject == subject && $0.dimension == dimension }?.tally ?? .zero
    }

    @Test(arguments: StoreBackend.all)
    func sessionsCountPerSwitchBesideTheBaselinePerCityAndCohort(backend: StoreBackend) async throws {
        try await backend.withStore { store in
            _ = try await store.createNamespace(Fixtures.rider(), reasonPolicy: .kills, request: Fixtures.request())
            let promos = "plugin_switch_feed_promos"
            let weather = "plugin_switch_feed_weather"
            let result = try await store.ingestEvents(
                [
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
            #expect(
                tally(counts, .pluginSwitch(promos), .cohort("beta")) == EventTally(sessions: 2, crashedSessions: 1))
            #expect(tally(counts, .pluginSwitch(weather), .cohort("staff")) == EventTally(sessions: 1))
            #expect(tally(counts, .baseline).crashRate == 0.5)
            // Sorted by subject, then dimension; nothing that sums to zero.
            #expect(counts.map(\.subject) == counts.map(\.subject).sorted())
            #expect(counts.allSatisfy { !$0.tally.isZero })

            let cityOnly = try await store.eventCounts(
                Self.window([.pluginSwitch], keys: [promos], dimensions: [.city]))
            #expect(
                cityOnly.map(\.description) == [
                    "plugin_switch_feed_promos [city=lagos]: 2 sessions, 1 crashed, 0 exposures",
                    "plugin_switch_feed_promos [city=paris]: 1 sessions, 1 crashed, 0 exposures",
                ])
        }
    }

    @Test(arguments: StoreBackend.all)
    func variantsCountExposuresAndTheSessionsTheyWereServedIn(backend: StoreBackend) async throws {
        try await backend.withStore { store in
            _ = try await store.createNamespace(Fixtures.rider(), reasonPolicy: .kills, request: Fixtures.request())
            _ = try await store.ingestEvents(
                [
                    Self.exposure("e1", variant: "control"),
                    Self.exposure("e2", variant: "bold"),
                    Self.exposure("e3", variant: "bold", cohorts: ["beta"]),
                    Self.session("s1", crashed: true, switches: [], variants: ["checkout_button": "bold"]),
                    Self.session(
                        "s2", crashed: false, switches: [], variants: ["checkout_button": "control", "other": "x"]),
                ], in: "rider", receivedAt: Self.t0)
            let counts = try await store.eventCounts(
                Self.window([.variant], keys: ["checkout_button"], dimensions: [.all]))
            #expect(
                counts == [
                    EventCount(
                        subject: .variant("bold", of: "checkout_button"), dimension: .all,
                        tally: EventTally(sessions: 1, crashedSessions: 1, exposures: 2)),
                    EventCount(
                        subject: .variant("control", of: "checkout_button"), dimension: .all,
                        tally: EventTally(sessions: 1, crashedSessions: 0, exposures: 1)),
                ])
            let beta = try await store.eventCounts(Self.window([.variant], dimensions: [.cohort]))
            #expect(
                beta.map(\.description) == ["checkout_button=bold [cohort=beta]: 0 sessions, 0 crashed, 1 exposures"])
        }
    }

    /// The parts of a batch before its last commit unsynced: they count, and their ids are recorded, as synced ones do.
    @Test(arguments: StoreBackend.all)
    func anUnsyncedPartCountsAndRecordsItsIdsAsASyncedOneDoes(backend: StoreBackend) async throws {
        try await backend.withStore { store in
            _ = try await store.createNamespace(Fixtures.rider(), reasonPolicy: .kills, request: Fixtures.request())
            let first = try await store.ingestEvents(
                [Self.session("s1", crashed: true, switches: ["plugin_switch_feed_promos"])],
                in: "rider", receivedAt: Self.t0, admission: .unlimited, synced: false)
            #expect(first.counted == ["s1"])
            let last = try await store.ingestEvents(
                [Self.session("s1", crashed: true, switches: []), Self.exposure("e1", variant: "bold")],
                in: "rider", receivedAt: Self.t0, admission: .unlimited, synced: true)
            #expect(last.counted == ["e1"])
            #expect(last.duplicates == ["s1"])
            let counts = try await store.eventCounts(Self.window(dimensions: [.all]))
            #expect(tally(counts, .baseline) == EventTally(sessions: 1, crashedSessions: 1))
            #expect(tally(counts, .variant("bold", of: "checkout_button")).exposures == 1)
            // A change after an unsynced part commits as usual.
            let changed = try await store.change("rider", Fixtures.request()) { $0 }
            #expect(changed.state.record.version >= 1)
        }
    }

    @Test(arguments: StoreBackend.all)
    func aRetriedBatchNeverCountsTwice(backend: StoreBackend) async throws {
        try await backend.withStore { store in
            _ = try await store.createNamespace(Fixtures.rider(), reasonPolicy: .kills, request: Fixtures.request())
            let batch = [
                Self.session("s1", crashed: true, switches: ["plugin_switch_feed_promos"]),
                Self.exposure("e1", variant: "bold"),
            ]
            _ = try await store.ingestEvents(batch, in: "rider", receivedAt: Self.t0)
            let retried = try await store.ingestEvents(
                batch + [Self.session("s2", crashed: false, switches: [])], in: "rider",
                receivedAt: Self.t0 + 5)
            #expect(retried.counted == ["s2"])
            #expect(retried.duplicates == ["s1", "e1"])
            // The same id twice in one batch counts once.
            let doubled = try await store.ingestEvents(
                [Self.session("s3", crashed: true, switches: []), Self.session("s3", crashed: true, switches: [])],
                in: "rider", receivedAt: Self.t0 + 6)
            #expect(doubled.counted == ["s3"])
            #expect(doubled.duplicates == ["s3"])
            let counts = try await store.eventCounts(Self.window(dimensions: [.all]))
            #expect(tally(counts, .baseline) == EventTally(sessions: 3, crashedSessions: 2))
            #expect(
                tally(counts, .pluginSwitch("plugin_switch_feed_promos")) == EventTally(sessions: 1, crashedSessions: 1)
            )
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
            _ = try await store.ingestEvents(
                [
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
            let middle = try await store.eventCounts(
                EventCountQuery(
                    namespace: "rider", from: Self.t0 + 30, until: Self.t0 + 180,
                    subjects: [.baseline], dimensions: [.all]))
            #expect(middle.map(\.tally) == [EventTally(sessions: 3, crashedSessions: 1)])
            #expect(
                try await store.eventCounts(
                    EventCountQuery(namespace: "rider", from: Self.t0 + 240, until: Self.t0 + 600)
                ).isEmpty)
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
            _ = await expectStorageError(.notFound) {
                try await store.ingestEvents([event], in: "rider", receivedAt: Self.t0)
            }
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
            #expect(
                tally(try await store.eventCounts(Self.window()), .baseline)
                    == EventTally(sessions: 2, crashedSessions: 1))
            // The recent id is still known; the forgotten one would count again (the server refuses events that old).
            let again = try await store.ingestEvents([old, recent], in: "rider", receivedAt: Self.t0 + 700)
            #expect(again.counted == ["old"])
            #expect(again.duplicates == ["recent"])
        }
    }

    @Test(arguments: StoreBackend.all)
    func compactionRollsMinutesUpIntoHoursAndDeletesCountersPastTheRetention(backend: StoreBackend) async throws {
        try await backend.withStore { store in
            _ = try await store.createNamespace(Fixtures.rider(), reasonPolicy: .kills, request: Fixtures.request())
            let promos = "plugin_switch_feed_promos"
            // Hour 0 (t0): minutes 0, 5 and 59; hour 1: minutes 0 and 30; hour 2: minute 10; and 50 minutes before t0.
            let events = [
                Self.session("a0", at: 0, crashed: true, switches: [promos]),
                Self.session("a5", at: 300, crashed: false, switches: [promos]),
                Self.session("a59", at: 3540, crashed: true, switches: [promos], cohorts: ["beta"]),
                Self.session("b0", at: 3600, crashed: false, switches: [promos]),
                Self.session("b30", at: 5400, crashed: false, switches: []),
                Self.session("c10", at: 7800, crashed: false, switches: [promos]),
                Self.session("old", at: -3000, crashed: true, switches: [promos]),
            ]
            _ = try await store.ingestEvents(events, in: "rider", receivedAt: Self.t0 + 8000)
            let span = EventCountQuery(namespace: "rider", from: Self.t0, until: Self.t0 + 3 * 3600)
            let before = try await store.eventCounts(span)

            // Whole hours before t0 + 2.5 h roll up (hours 0 and 1, not hour 2); counters before t0 go.
            let compaction = try await store.compactEventCounts(
                rollUp: Self.t0..<(Self.t0 + 9000), deleteBefore: Self.t0)
            // Rows after each hour's first minute: a5 and a59 (4 counters each: baseline and promos, all and lagos; a59
            // 2 more for beta), b30 (baseline, all and lagos).
            #expect(compaction.rolledUp == 4 + 6 + 2)
            #expect(compaction.deleted == 4)
            // Every sum over the hours kept is what it was.
            #expect(try await store.eventCounts(span) == before)
            let buckets = try await store.eventCounts(
                EventCountQuery(
                    namespace: "rider", from: Self.t0 - 3600, until: Self.t0 + 3 * 3600,
                    subjects: [.baseline], dimensions: [.all], perBucket: true))
            #expect(buckets.map(\.bucket) == [Self.t0, Self.t0 + 3600, Self.t0 + 7800])
            #expect(
                buckets.map(\.tally) == [
                    EventTally(sessions: 3, crashedSessions: 2), EventTally(sessions: 2), EventTally(sessions: 1),
                ])
            let beta = try await store.eventCounts(
                EventCountQuery(
                    namespace: "rider", from: Self.t0, until: Self.t0 + 3600,
                    subjects: [.pluginSwitch], dimensions: [.cohort], perBucket: true))
            #expect(beta.map(\.bucket) == [Self.t0])
            #expect(beta.map(\.tally) == [EventTally(sessions: 1, crashedSessions: 1)])
            // Done once: nothing left to do.
            #expect(
                try await store.compactEventCounts(rollUp: Self.t0..<(Self.t0 + 9000), deleteBefore: Self.t0)
                    == EventCompaction())
        }
    }

    @Test func compactionRollsUpWholeHoursOnly() {
        let t0 = Self.t0
        #expect(EventCompaction.hours(in: t0..<(t0 + 3600)) == [t0.milliseconds])
        #expect(EventCompaction.hours(in: (t0 + 1)..<(t0 + 3 * 3600 - 1)) == [t0.milliseconds + 3_600_000])
        #expect(EventCompaction.hours(in: t0..<(t0 + 3599)).isEmpty)
        #expect(EventCompaction.hours(in: (t0 + 10)..<(t0 + 20)).isEmpty)
    }
}

/// Who reported what, and how much each may weigh: sources counted apart, caps per unit and per source address,
/// cities and cohorts counted on their own only when declared or among the most frequent, crashed sessions
/// recorded with their unit and address. The same decisions on every backend.
@Suite(.serialized) struct EventAdmissionConformanceTests {
    static let t0 = EventStoreConformanceTests.t0
    static let promos = "plugin_switch_feed_promos"

    static func session(
        _ id: String, at seconds: TimeInterval = 0, crashed: Bool = true, unit: String?, address: String?,
        source: EventSource = .client, city: String? = "lagos", cohorts: [String] = []
    ) -> StoredEvent {
        StoredEvent(
            id: id, time: t0 + seconds, city: city, cohorts: cohorts,
            payload: .session(crashed: crashed, switches: [promos], variants: [:]), source: source, unit: unit,
            address: address)
    }

    static let capped = EventAdmission(
        window: .seconds(600), maximumSessionsPerUnit: 2, maximumSessionsPerAddress: 3, cities: nil,
        cohorts: nil, maximumScopeValues: nil)

    func tally(
        _ counts: [EventCount], _ source: EventSource, _ subject: EventSubject, _ dimension: EventDimension = .all
    ) -> EventTally {
        counts.first { $0.source == source && $0.subject == subject && $0.dimension == dimension }?.tally ?? .zero
    }

    @Test(arguments: StoreBackend.all)
    func aUnitAndAnAddressContributeAtMostTheirCapsPerWindowAcrossBatches(backend: StoreBackend) async throws {
        try await backend.withStore { store in
            _ = try await store.createNamespace(Fixtures.rider(), reasonPolicy: .kills, request: Fixtures.request())
            // One unit sends three sessions: two count. The third still counts against its address (every session offered
            // does, admitted or not: one atomic count per key), which is full now.
            let first = try await store.ingestEvents(
                [
                    Self.session("a1", unit: "u1", address: "203.0.113.7"),
                    Self.session("a2", unit: "u1", address: "203.0.113.7"),
                    Self.session("a3", unit: "u1", address: "203.0.113.7"),
                ], in: "rider", receivedAt: Self.t0, admission: Self.capped)
            #expect(first.counted == ["a1", "a2", "a3"])
            #expect(first.dropped == [EventDrop(id: "a3", reason: .unitCap)])
            #expect(first.admitted.map(\.id) == ["a1", "a2"])
            // A later batch: other units at the same address are refused, at another address they count.
            let second = try await store.ingestEvents(
                [
                    Self.session("b1", unit: "u2", address: "203.0.113.7"),
                    Self.session("b2", unit: "u3", address: "198.51.100.1"),
                    Self.session("b3", unit: "u4", address: "198.51.100.1"),
                ], in: "rider", receivedAt: Self.t0 + 1, admission: Self.capped)
            #expect(second.admitted.map(\.id) == ["b2", "b3"])
            #expect(second.dropped == [EventDrop(id: "b1", reason: .addressCap)])
            // The next window starts afresh (windows follow the events' own times).
            let later = try await store.ingestEvents(
                [Self.session("c1", at: 600, unit: "u1", address: "203.0.113.7")],
                in: "rider", receivedAt: Self.t0 + 600, admission: Self.capped)
            #expect(later.admitted.map(\.id) == ["c1"])
            let counts = try await store.eventCounts(EventStoreConformanceTests.window())
            #expect(tally(counts, .client, .pluginSwitch(Self.promos)) == EventTally(sessions: 5, crashedSessions: 5))
            // A retry of a dropped session is a duplicate: it never counts later.
            let retried = try await store.ingestEvents(
                [Self.session("a3", at: 600, unit: "u9", address: "192.0.2.1")],
                in: "rider", receivedAt: Self.t0 + 601, admission: Self.capped)
            #expect(retried.duplicates == ["a3"] && retried.admitted.isEmpty)
        }
    }

    @Test(arguments: StoreBackend.all)
    func reportersAreCountedApartAndOnlyTheirUnitsAreCapped(backend: StoreBackend) async throws {
        try await backend.withStore { store in
            _ = try await store.createNamespace(Fixtures.rider(), reasonPolicy: .kills, request: Fixtures.request())
            let events = (0..<6).map {
                Self.session("r\($0)", unit: "device-\($0 % 3)", address: "10.0.0.1", source: .reporter)
            }
            let result = try await store.ingestEvents(events, in: "rider", receivedAt: Self.t0, admission: Self.capped)
            // Six sessions from one address, two per unit: every one counts (a reporter's address is its own server).
            #expect(result.admitted.count == 6 && result.dropped.isEmpty)
            _ = try await store.ingestEvents(
                [Self.session("c1", crashed: false, unit: "u1", address: "10.0.0.1")],
                in: "rider", receivedAt: Self.t0, admission: Self.capped)
            let counts = try await store.eventCounts(EventStoreConformanceTests.window())
            #expect(tally(counts, .reporter, .pluginSwitch(Self.promos)) == EventTally(sessions: 6, crashedSessions: 6))
            #expect(tally(counts, .client, .pluginSwitch(Self.promos)) == EventTally(sessions: 1))
            let clientsOnly = try await store.eventCounts(
                EventCountQuery(
                    namespace: "rider", from: Self.t0, until: Self.t0 + 3600,
                    sources: [.client]))
            #expect(clientsOnly.allSatisfy { $0.source == .client } && !clientsOnly.isEmpty)
        }
    }

    @Test(arguments: StoreBackend.all)
    func undeclaredCitiesFoldIntoOtherAndOnlyTheMostFrequentCountOnTheirOwn(backend: StoreBackend) async throws {
        try await backend.withStore { store in
            _ = try await store.createNamespace(Fixtures.rider(), reasonPolicy: .kills, request: Fixtures.request())
            let declared = EventAdmission(
                window: .seconds(600), maximumSessionsPerUnit: nil, maximumSessionsPerAddress: nil,
                cities: ["lagos"], cohorts: ["beta"], maximumScopeValues: 100)
            let result = try await store.ingestEvents(
                [
                    Self.session("d1", unit: "u1", address: nil, city: "lagos", cohorts: ["beta", "made-up"]),
                    Self.session("d2", unit: "u2", address: nil, city: "atlantis", cohorts: ["x", "y"]),
                ], in: "rider", receivedAt: Self.t0, admission: declared)
            #expect(result.admitted.map(\.city) == ["lagos", CrashGuardPolicy.otherValue])
            #expect(
                result.admitted.map(\.cohorts) == [
                    ["beta", CrashGuardPolicy.otherValue], [CrashGuardPolicy.otherValue],
                ])
            // Not declared: the two most frequent of the window count on their own (ties by name).
            let ranked = EventAdmission(
                window: .seconds(600), maximumSessionsPerUnit: nil, maximumSessionsPerAddress: nil,
                cities: nil, cohorts: nil, maximumScopeValues: 2)
            let cities = ["paris", "paris", "rome", "paris", "rome", "nowhere-1", "nowhere-2"]
            var seen: [String?] = []
            for (index, city) in cities.enumerated() {
                let admitted = try await store.ingestEvents(
                    [Self.session("t\(index)", at: 600, unit: "u\(index)", address: nil, city: city)],
                    in: "rider", receivedAt: Self.t0 + 600, admission: ranked)
                seen += admitted.admitted.map(\.city)
            }
            #expect(
                seen == [
                    "paris", "paris", "rome", "paris", "rome", CrashGuardPolicy.otherValue, CrashGuardPolicy.otherValue,
                ])
            let counts = try await store.eventCounts(
                EventCountQuery(
                    namespace: "rider", from: Self.t0 + 600, until: Self.t0 + 1200,
                    subjects: [.baseline], dimensions: [.city]))
            #expect(counts.map(\.dimension.value) == [CrashGuardPolicy.otherValue, "paris", "rome"])
        }
    }

    /// A session past its address's cap is left out before anything of its unit is written: a forger's made-up units
    /// cost no rows and take no unit's place (issue 29).
    @Test(arguments: StoreBackend.all)
    func aSessionPastItsAddressCapTakesNoPlaceOfItsUnit(backend: StoreBackend) async throws {
        try await backend.withStore { store in
            _ = try await store.createNamespace(Fixtures.rider(), reasonPolicy: .kills, request: Fixtures.request())
            let full = (0..<3).map { Self.session("f\($0)", unit: "filler-\($0)", address: "203.0.113.7") }
            #expect(
                try await store.ingestEvents(full, in: "rider", receivedAt: Self.t0, admission: Self.capped).admitted
                    .count == 3)
            let refused = try await store.ingestEvents(
                [Self.session("x0", unit: "traveller", address: "203.0.113.7")],
                in: "rider", receivedAt: Self.t0, admission: Self.capped)
            #expect(refused.dropped == [EventDrop(id: "x0", reason: .addressCap)])
            // Had the refused session taken the unit's place, only one of these two would count.
            let elsewhere = try await store.ingestEvents(
                [
                    Self.session("x1", unit: "traveller", address: "198.51.100.9"),
                    Self.session("x2", unit: "traveller", address: "198.51.100.9"),
                ],
                in: "rider", receivedAt: Self.t0, admission: Self.capped)
            #expect(elsewhere.admitted.map(\.id) == ["x1", "x2"])
        }
    }

    /// An IPv6 source is capped at its /64, and at its /56 and /48 with 4 and 16 times the cap: a host that may pick
    /// any /64 of its /48 is 16 addresses' worth, not 65,536.
    @Test(arguments: StoreBackend.all)
    func anIPv6SourceIsCappedAtItsSlash64Slash56AndSlash48(backend: StoreBackend) async throws {
        try await backend.withStore { store in
            _ = try await store.createNamespace(Fixtures.rider(), reasonPolicy: .kills, request: Fixtures.request())
            let one = EventAdmission(
                window: .seconds(600), maximumSessionsPerUnit: nil, maximumSessionsPerAddress: 1, cities: nil,
                cohorts: nil, maximumScopeValues: nil)
            // 300 sessions, each from another /64 of one /48 (256 /56s' first /64s, then more /64s of the first /56).
            let events = (0..<300).map { index in
                let address =
                    index < 256
                    ? "2001:db8:77:\(String(index, radix: 16))00::/64"
                    : "2001:db8:77:\(String(index - 255, radix: 16))::/64"
                return Self.session("v\(index)", unit: "u\(index)", address: address)
            }
            let result = try await store.ingestEvents(events, in: "rider", receivedAt: Self.t0, admission: one)
            // The /48 holds 16: the first 16 /64s (each the first of its /56) count, the rest are over the /48's cap.
            #expect(result.admitted.map(\.id) == (0..<16).map { "v\($0)" })
            #expect(result.dropped.count == 284 && result.dropped.allSatisfy { $0.reason == .addressCap })
            // Within one /56 of another /48, four /64s count.
            let subnet = (0..<6).map { Self.session("w\($0)", unit: "w\($0)", address: "2001:db8:88:\($0)::/64") }
            let inOneSlash56 = try await store.ingestEvents(subnet, in: "rider", receivedAt: Self.t0, admission: one)
            #expect(inOneSlash56.admitted.map(\.id) == ["w0", "w1", "w2", "w3"])
        }
    }

    /// A session refused at its /64 takes no place of its /56 or /48: one /64 over its cap cannot fill its /48 for
    /// its neighbours.
    @Test(arguments: StoreBackend.all)
    func aSessionRefusedAtItsSlash64TakesNoPlaceOfItsSlash48(backend: StoreBackend) async throws {
        try await backend.withStore { store in
            _ = try await store.createNamespace(Fixtures.rider(), reasonPolicy: .kills, request: Fixtures.request())
            let one = EventAdmission(
                window: .seconds(600), maximumSessionsPerUnit: nil, maximumSessionsPerAddress: 1, cities: nil,
                cohorts: nil, maximumScopeValues: nil)
            let noisy = (0..<40).map { Self.session("n\($0)", unit: "n\($0)", address: "2001:db8:99:100::/64") }
            let refused = try await store.ingestEvents(noisy, in: "rider", receivedAt: Self.t0, admission: one)
            #expect(refused.admitted.map(\.id) == ["n0"] && refused.dropped.count == 39)
            // Fifteen neighbours, each in a /56 of its own: the /48 holds 16, one taken.
            let neighbours = (0..<15).map {
                Self.session("m\($0)", unit: "m\($0)", address: "2001:db8:99:\(String($0 + 2, radix: 16))00::/64")
            }
            let admitted = try await store.ingestEvents(neighbours, in: "rider", receivedAt: Self.t0, admission: one)
            #expect(admitted.admitted.count == 15, "\(admitted.dropped)")
        }
    }

    /// Exposures are counted under the values sessions ranked, also in a batch without sessions; a value a person
    /// named in the flag set is counted on its own whatever the window holds.
    @Test(arguments: StoreBackend.all)
    func exposuresKeepRankedValuesAndNamedValuesAreNeverFolded(backend: StoreBackend) async throws {
        try await backend.withStore { store in
            _ = try await store.createNamespace(Fixtures.rider(), reasonPolicy: .kills, request: Fixtures.request())
            var ranked = EventAdmission(
                window: .seconds(600), maximumSessionsPerUnit: nil, maximumSessionsPerAddress: nil,
                cities: nil, cohorts: nil, maximumScopeValues: 1)
            ranked.namedCities = ["nairobi"]
            _ = try await store.ingestEvents(
                [Self.session("s1", crashed: false, unit: "u1", address: nil, city: "paris")],
                in: "rider", receivedAt: Self.t0, admission: ranked)
            func exposure(_ id: String, city: String) -> StoredEvent {
                StoredEvent(
                    id: id, time: Self.t0, city: city, payload: .exposure(flag: "checkout_button", variant: "bold"),
                    unit: id)
            }
            let exposures = try await store.ingestEvents(
                [exposure("x1", city: "paris"), exposure("x2", city: "rome"), exposure("x3", city: "nairobi")],
                in: "rider", receivedAt: Self.t0, admission: ranked)
            #expect(exposures.admitted.map(\.city) == ["paris", CrashGuardPolicy.otherValue, "nairobi"])
            // A window full of made-up values (ten times max_scope_values) still counts a named one on its own.
            let madeUp = (0..<15).map {
                Self.session("f\($0)", crashed: false, unit: "f\($0)", address: nil, city: "made-up-\($0)")
            }
            _ = try await store.ingestEvents(madeUp, in: "rider", receivedAt: Self.t0, admission: ranked)
            let named = try await store.ingestEvents(
                [Self.session("k1", crashed: false, unit: "k1", address: nil, city: "nairobi")],
                in: "rider", receivedAt: Self.t0, admission: ranked)
            #expect(named.admitted.map(\.city) == ["nairobi"])
            // Named values take no row: the window's bound is for the others.
            let rows = try await store.scopeReach(in: "rider", from: Self.t0, until: Self.t0 + 600)
            #expect(
                rows[EventDimension(kind: .city, value: "nairobi")] == nil
                    && rows.count == ranked.maximumValuesPerWindow)
        }
    }

    /// A window writes at most `maximumValuesPerWindow` undeclared cities (and cohorts) however many a client makes
    /// up; a new value past them folds into `(other)` and writes nothing, while values with a row go on counting and
    /// ranking. Only sessions rank values (exposures are not capped per address).
    @Test(arguments: StoreBackend.all)
    func aWindowWritesABoundedNumberOfMadeUpValues(backend: StoreBackend) async throws {
        try await backend.withStore { store in
            _ = try await store.createNamespace(Fixtures.rider(), reasonPolicy: .kills, request: Fixtures.request())
            let ranked = EventAdmission(
                window: .seconds(600), maximumSessionsPerUnit: nil, maximumSessionsPerAddress: nil,
                cities: nil, cohorts: nil, maximumScopeValues: 2)
            #expect(ranked.maximumValuesPerWindow == 20)
            // Exposures name 50 made-up cohorts: none is written.
            let exposures = (0..<50).map { index in
                StoredEvent(
                    id: "e\(index)", time: Self.t0, cohorts: ["exposed-\(index)"],
                    payload: .exposure(flag: "checkout_button", variant: "bold"),
                    unit: "u\(index)", address: "203.0.113.1")
            }
            _ = try await store.ingestEvents(exposures, in: "rider", receivedAt: Self.t0, admission: ranked)
            #expect(try await store.scopeReach(in: "rider", from: Self.t0, until: Self.t0 + 600).isEmpty)
            // Sessions make up 30 cohorts, in batches of 10: 20 are written.
            for batch in 0..<3 {
                let events = (0..<10).map { index in
                    Self.session(
                        "s\(batch)-\(index)", crashed: false, unit: "u\(batch)-\(index)", address: "203.0.113.1",
                        cohorts: ["made-up-\(batch * 10 + index)"])
                }
                _ = try await store.ingestEvents(events, in: "rider", receivedAt: Self.t0, admission: ranked)
            }
            let written = try await store.scopeReach(in: "rider", from: Self.t0, until: Self.t0 + 600)
            #expect(written.keys.filter { $0.kind == .cohort }.count == 20)
            // A value past the bound folds however often it comes; one with a row rises to the top.
            var late: [StoredEvent] = []
            for index in 0..<5 {
                late.append(
                    Self.session(
                        "late-\(index)", crashed: false, unit: "l\(index)", address: "203.0.113.1",
                        cohorts: ["made-up-29"]))
                late.append(
                    Self.session(
                        "kept-\(index)", crashed: false, unit: "k\(index)", address: "203.0.113.1",
                        cohorts: ["made-up-3"]))
            }
            let result = try await store.ingestEvents(late, in: "rider", receivedAt: Self.t0, admission: ranked)
            #expect(Set(result.admitted.flatMap(\.cohorts)) == [CrashGuardPolicy.otherValue, "made-up-3"])
            #expect(
                try await store.scopeReach(in: "rider", from: Self.t0, until: Self.t0 + 600).keys.filter {
                    $0.kind == .cohort
                }.count == 20)
        }
    }

    /// Each written value keeps which units and networks reported it: a lower bound of each (one network however many
    /// of its addresses report), the same on every backend.
    @Test(arguments: StoreBackend.all)
    func eachValueKeepsTheUnitsAndNetworksThatReportedIt(backend: StoreBackend) async throws {
        try await backend.withStore { store in
            _ = try await store.createNamespace(Fixtures.rider(), reasonPolicy: .kills, request: Fixtures.request())
            let ranked = EventAdmission(
                window: .seconds(600), maximumSessionsPerUnit: nil, maximumSessionsPerAddress: nil,
                cities: nil, cohorts: nil, maximumScopeValues: 10)
            // Lagos: 30 units from 30 networks (/24s); a made-up city: 30 units from 30 addresses of one /24.
            var events: [StoredEvent] = []
            for index in 0..<30 {
                events.append(
                    Self.session(
                        "l\(index)", crashed: false, unit: "lagos-\(index)", address: "198.51.\(index).9", city: "lagos"
                    ))
                events.append(
                    Self.session(
                        "g\(index)", crashed: false, unit: "ghost-\(index)", address: "203.0.113.\(index)",
                        city: "ghost"))
            }
            for start in stride(from: 0, to: events.count, by: 20) {
                _ = try await store.ingestEvents(
                    Array(events[start..<start + 20]), in: "rider", receivedAt: Self.t0, admission: ranked)
            }
            let reach = try await store.scopeReach(in: "rider", from: Self.t0, until: Self.t0 + 600)
            var expected: [String: EventAdmission.Reach] = [:]
            for event in events {
                expected[event.city ?? "", default: EventAdmission.Reach()].formUnion(EventAdmission.Reach(event))
            }
            #expect(reach[EventDimension(kind: .city, value: "lagos")] == expected["lagos"])
            #expect(reach[EventDimension(kind: .city, value: "ghost")] == expected["ghost"])
            let ghost = try #require(reach[EventDimension(kind: .city, value: "ghost")])
            let lagos = try #require(reach[EventDimension(kind: .city, value: "lagos")])
            #expect(ghost.networkCount == 1)
            #expect(lagos.networkCount > 10 && lagos.networkCount <= 30, "\(lagos.networkCount)")
            #expect(lagos.unitCount > 10 && ghost.unitCount > 10)
            // Windows that start outside the range are not read.
            #expect(try await store.scopeReach(in: "rider", from: Self.t0 + 600, until: Self.t0 + 1200).isEmpty)
        }
    }

    @Test(arguments: StoreBackend.all)
    func crashedSessionsAreRecordedWithUnitAddressAndSwitchesUntilPruned(backend: StoreBackend) async throws {
        try await backend.withStore { store in
            _ = try await store.createNamespace(Fixtures.rider(), reasonPolicy: .kills, request: Fixtures.request())
            _ = try await store.ingestEvents(
                [
                    Self.session("x2", at: 61, unit: "u2", address: "203.0.113.9", cohorts: ["beta", "beta"]),
                    Self.session("x1", at: 5, unit: nil, address: "203.0.113.8", city: nil),
                    Self.session("x3", at: 7, crashed: false, unit: "u3", address: "203.0.113.8"),
                    Self.session("x4", at: 700, unit: "u4", address: nil, source: .reporter),
                ], in: "rider", receivedAt: Self.t0, admission: .unlimited)
            let records = try await store.crashRecords(in: "rider", from: Self.t0, until: Self.t0 + 600)
            #expect(
                records == [
                    CrashRecord(
                        id: "x1", source: .client, bucket: Self.t0.milliseconds, unit: "address:203.0.113.8",
                        address: "203.0.113.8",
                        city: nil, cohorts: [], switches: [Self.promos]),
                    CrashRecord(
                        id: "x2", source: .client, bucket: (Self.t0 + 60).milliseconds, unit: "u2",
                        address: "203.0.113.9",
                        city: "lagos", cohorts: ["beta"], switches: [Self.promos]),
                ])
            #expect(
                try await store.crashRecords(in: "rider", from: Self.t0 + 600, until: Self.t0 + 3600).map(\.id) == [
                    "x4"
                ])
            #expect(try await store.crashRecords(in: "other", from: Self.t0, until: Self.t0 + 3600).isEmpty)
            #expect(try await store.pruneEventRecords(before: Self.t0 + 600) >= 2)
            #expect(try await store.crashRecords(in: "rider", from: Self.t0, until: Self.t0 + 3600).map(\.id) == ["x4"])
        }
    }
}

/// The admission's decisions in memory: the same as a backend's.
struct EventAdmissionTests {
    @Test func theLedgerAdmitsAsTheStoresDo() {
        var ledger = EventAdmission.Ledger()
        let events = (0..<5).map {
            EventAdmissionConformanceTests.session("e\($0)", unit: $0 < 3 ? "same" : "u\($0)", address: "203.0.113.1")
        }
        let admitted = ledger.admit(events, admission: EventAdmissionConformanceTests.capped)
        // e2 is over its unit's cap, and still takes the address's third place: e3 and e4 are over the address's.
        #expect(admitted.events.map(\.id) == ["e0", "e1"])
        #expect(
            admitted.dropped == [
                EventDrop(id: "e2", reason: .unitCap), EventDrop(id: "e3", reason: .addressCap),
                EventDrop(id: "e4", reason: .addressCap),
            ])
    }

    @Test func windowsAreAlignedOnTheEpochAndUnitlessSessionsShareTheirAddresssUnit() {
        let admission = EventAdmission(
            window: .seconds(600), maximumSessionsPerUnit: 1, maximumSessionsPerAddress: nil, cities: nil,
            cohorts: nil, maximumScopeValues: nil)
        #expect(admission.windowStart(of: Date(timeIntervalSince1970: 1_799_999_999)) == 1_799_999_400_000)
        #expect(
            EventAdmission.unitKey(
                of: StoredEvent(id: "a", time: .now, payload: .exposure(flag: "f", variant: "v"), address: "192.0.2.1"))
                == "address:192.0.2.1")
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
        let event = StoredEvent(
            id: "s", time: Date(timeIntervalSince1970: 60), city: "lagos", cohorts: ["beta", "beta", "staff"],
            payload: .session(crashed: true, switches: ["sw", "sw"], variants: ["exp": "b"]))
        let increments = EventAggregation.increments(of: [event])
        // 3 subjects × (all, city, 2 distinct cohorts).
        #expect(increments.count == 12)
        #expect(
            increments.allSatisfy { $0.tally == EventTally(sessions: 1, crashedSessions: 1) && $0.key.bucket == 60_000 }
        )
        #expect(increments.map(\.key) == increments.map(\.key).sorted())
    }
}
