import Foundation
import SwitchyardCore
import SwitchyardStorage
import Testing

/// What every backend must do with experiments' units and metric totals (`EventStore.ingestEvents`,
/// `experimentUnits`, `pruneExperimentRecords`); runs against each backend in `StoreBackend.all`.
@Suite(.serialized) struct ExperimentStoreConformanceTests {
    static let t0 = EventStoreConformanceTests.t0
    static let promos = "plugin_switch_feed_promos"
    static let button = "checkout_button"

    /// A switch at 25 % and an experiment flag split 50/50.
    static func admission(phase: String = "25%", unitsPerArm: Int? = nil) -> EventAdmission {
        var admission = EventAdmission.unlimited
        admission.experiments = [
            promos: ExperimentDesign(
                key: promos, arms: ["without", "with"], control: "without",
                shares: ["with": 0.25, "without": 0.75], phase: phase, isPluginSwitch: true),
            button: ExperimentDesign(
                key: button, arms: ["control", "bold"], control: "control",
                shares: ["control": 0.5, "bold": 0.5], phase: "1/1", isPluginSwitch: false),
        ]
        admission.maximumUnitsPerArm = unitsPerArm
        return admission
    }

    static func metric(
        _ id: String, unit: String?, _ name: String, _ value: Double = 1, at seconds: TimeInterval = 0,
        splits: [String: Bool] = [:], variants: [String: String] = [:], address: String? = nil
    ) -> StoredEvent {
        StoredEvent(
            id: id, time: t0 + seconds, payload: .metric(name: name, value: value, switches: [], variants: variants),
            unit: unit, address: address, splits: splits)
    }

    static func session(
        _ id: String, unit: String?, crashed: Bool = false, at seconds: TimeInterval = 0, splits: [String: Bool] = [:],
        variants: [String: String] = [:]
    ) -> StoredEvent {
        StoredEvent(
            id: id, time: t0 + seconds, payload: .session(crashed: crashed, switches: [], variants: variants),
            unit: unit,
            splits: splits)
    }

    func units(_ store: any FlagStore, _ experiment: String) async throws -> [String: ExperimentUnitRecord] {
        Dictionary(
            uniqueKeysWithValues: try await store.experimentUnits(in: "rider", experiment: experiment).map {
                ($0.phase + "/" + $0.unit, $0)
            })
    }

    @Test(arguments: StoreBackend.all)
    func aUnitEntersItsArmOnceWithItsTotalsBeforeAsPreExposureValues(backend: StoreBackend) async throws {
        try await backend.withStore { store in
            _ = try await store.createNamespace(Fixtures.rider(), reasonPolicy: .kills, request: Fixtures.request())
            let admission = Self.admission()
            // Before u1 enters anything: a booking and a session (its pre-exposure values).
            _ = try await store.ingestEvents(
                [
                    Self.metric("m1", unit: "u1", "fare", 12.5),
                    Self.session("s1", unit: "u1"),
                ], in: "rider", receivedAt: Self.t0, admission: admission)
            // u1 enters `with` (its split says so), u2 `without`; the event that enters a unit counts after its entry.
            _ = try await store.ingestEvents(
                [
                    Self.metric(
                        "m2", unit: "u1", "fare", 20, at: 60, splits: [Self.promos: true], address: "203.0.113.9"),
                    Self.session(
                        "s2", unit: "u2", crashed: true, at: 61, splits: [Self.promos: false],
                        variants: [Self.button: "bold"]),
                    Self.metric("m3", unit: "u1", "fare", 5, at: 62, splits: [Self.promos: false]),
                    Self.metric("m4", unit: nil, "fare", 99, at: 63, splits: [Self.promos: true]),
                    Self.metric("m5", unit: "u2", "trip_booked", at: 64),
                ], in: "rider", receivedAt: Self.t0 + 60, admission: admission)

            let promos = try await units(store, Self.promos)
            #expect(promos.count == 2)
            let u1 = try #require(promos["25%/u1"])
            #expect(u1.arm == "with", "a unit stays in the arm it entered, whatever a later event says")
            #expect(u1.entered == Self.t0 + 60)
            #expect(u1.address == "203.0.113.9", "the address of the event that entered it")
            #expect(u1.pre == ["fare": 12.5, "sessions": 1])
            #expect(u1.value("fare") == 25)
            #expect(u1.preValue("fare") == 12.5)
            #expect(u1.value("sessions") == 0)
            let u2 = try #require(promos["25%/u2"])
            #expect(u2.arm == "without" && u2.address == nil)
            #expect(u2.pre.isEmpty)
            #expect(u2.value("sessions") == 1)
            #expect(u2.value("crashed_sessions") == 1)
            #expect(u2.value("trip_booked") == 1)
            let button = try await units(store, Self.button)
            #expect(
                button.mapValues(\.arm) == ["1/1/u2": "bold"],
                "a variant not served (u1) enters no arm; a unitless event none")
            // Events before an experiment is designed enter nothing.
            #expect(try await store.experimentUnits(in: "rider", experiment: "plugin_switch_feed_weather").isEmpty)
        }
    }

    @Test(arguments: StoreBackend.all)
    func aNewPhaseTakesUnitsAnewWithTheirTotalsAtThatTime(backend: StoreBackend) async throws {
        try await backend.withStore { store in
            _ = try await store.createNamespace(Fixtures.rider(), reasonPolicy: .kills, request: Fixtures.request())
            _ = try await store.ingestEvents(
                [Self.metric("m1", unit: "u1", "fare", 10, splits: [Self.promos: false])],
                in: "rider", receivedAt: Self.t0, admission: Self.admission())
            _ = try await store.ingestEvents(
                [Self.metric("m2", unit: "u1", "fare", 4, at: 60, splits: [Self.promos: true])],
                in: "rider", receivedAt: Self.t0 + 60, admission: Self.admission(phase: "50%"))
            let promos = try await units(store, Self.promos)
            #expect(promos.mapValues(\.arm) == ["25%/u1": "without", "50%/u1": "with"])
            #expect(promos["25%/u1"]?.value("fare") == 14)
            #expect(promos["50%/u1"]?.preValue("fare") == 10)
            #expect(promos["50%/u1"]?.value("fare") == 4)
            // Oldest entry first.
            #expect(
                try await store.experimentUnits(in: "rider", experiment: Self.promos).map(\.phase) == ["25%", "50%"])
        }
    }

    @Test(arguments: StoreBackend.all)
    func onceAnArmIsFullNoUnitEntersThePhaseAcrossBatches(backend: StoreBackend) async throws {
        try await backend.withStore { store in
            _ = try await store.createNamespace(Fixtures.rider(), reasonPolicy: .kills, request: Fixtures.request())
            let admission = Self.admission(unitsPerArm: 2)
            _ = try await store.ingestEvents(
                [
                    Self.session("s1", unit: "a", splits: [Self.promos: true]),
                    Self.session("s2", unit: "b", splits: [Self.promos: false]),
                ], in: "rider", receivedAt: Self.t0, admission: admission)
            _ = try await store.ingestEvents(
                [
                    Self.session("s3", unit: "c", at: 1, splits: [Self.promos: true]),
                    Self.session("s4", unit: "d", at: 2, splits: [Self.promos: false]),
                    Self.session("s5", unit: "a", at: 3, splits: [Self.promos: true]),
                ], in: "rider", receivedAt: Self.t0 + 1, admission: admission)
            let promos = try await units(store, Self.promos)
            // `with` is full after c: d, though `without` has room, enters no more (the split stays fair).
            #expect(promos.mapValues(\.arm) == ["25%/a": "with", "25%/b": "without", "25%/c": "with"])
            #expect(promos["25%/a"]?.value("sessions") == 2, "a unit in the phase keeps counting")
            // The units left out still have totals (their pre-exposure values, should a later phase take them).
            _ = try await store.ingestEvents(
                [Self.session("s6", unit: "d", at: 4, splits: [Self.promos: true])],
                in: "rider", receivedAt: Self.t0 + 4, admission: Self.admission(phase: "50%", unitsPerArm: 2))
            #expect(try await units(store, Self.promos)["50%/d"]?.pre == ["sessions": 1])
        }
    }

    @Test(arguments: StoreBackend.all)
    func pruningForgetsPhasesOverAndQuietUnitsTotalsButNotALivePhasesUnits(backend: StoreBackend) async throws {
        try await backend.withStore { store in
            _ = try await store.createNamespace(Fixtures.rider(), reasonPolicy: .kills, request: Fixtures.request())
            _ = try await store.ingestEvents(
                [
                    Self.session("s1", unit: "old", splits: [Self.promos: true]),
                    Self.session("s2", unit: "quiet"),
                ], in: "rider", receivedAt: Self.t0, admission: Self.admission())
            _ = try await store.ingestEvents(
                [Self.session("s3", unit: "new", at: 10_800, splits: [Self.promos: true])],
                in: "rider", receivedAt: Self.t0 + 10_800, admission: Self.admission(phase: "50%"))
            // Two hours on: quiet's total is past its hour of slack too.
            let removed = try await store.pruneExperimentRecords(before: Self.t0 + 7200)
            // The 25 % phase (unit, arm count), old's and quiet's totals.
            #expect(removed == 4)
            let left = try await store.experimentUnits(in: "rider", experiment: Self.promos)
            #expect(left.map(\.unit) == ["new"])
            #expect(left.first?.value("sessions") == 1)
            #expect(try await store.pruneExperimentRecords(before: Self.t0 + 7200) == 0)
        }
    }

    @Test(arguments: StoreBackend.all)
    func aTotalIsNeverForgottenBeforeItsUnitWasQuietSinceTheDateThoughItsTimeMovesHourly(backend: StoreBackend)
        async throws
    {
        try await backend.withStore { store in
            _ = try await store.createNamespace(Fixtures.rider(), reasonPolicy: .kills, request: Fixtures.request())
            func report(_ id: String, _ unit: String, at seconds: TimeInterval) async throws {
                _ = try await store.ingestEvents(
                    [Self.session(id, unit: unit, at: seconds)], in: "rider", receivedAt: Self.t0 + seconds,
                    admission: Self.admission())
            }
            try await report("s1", "busy", at: 0)
            try await report("s2", "quiet", at: 0)
            // Within the hour: busy's total keeps its time (t0), yet it was added to after the date below.
            try await report("s3", "busy", at: 1800)
            #expect(try await store.pruneExperimentRecords(before: Self.t0 + 1200) == 0)
            // Past the hour its time moves: quiet goes at a date just past its last addition and its slack, busy stays.
            try await report("s4", "busy", at: 4000)
            #expect(try await store.pruneExperimentRecords(before: Self.t0 + 3601) == 1)
            #expect(try await store.pruneExperimentRecords(before: Self.t0 + 7600) == 0)
            #expect(try await store.pruneExperimentRecords(before: Self.t0 + 7601) == 1)
        }
    }

    @Test func designsFollowTheSplitOfTheFlag() {
        func switchAt(_ key: String, _ basisPoints: Int, rules: [(String, Int)] = []) -> FlagDefinition {
            FlagDefinition(
                key: key,
                kind: .pluginSwitch(
                    PluginSwitchDefinition(
                        rules: rules.map {
                            SwitchRule(conditions: Conditions(cities: [$0.0]), rollout: Rollout(basisPoints: $0.1)!)
                        },
                        rollout: Rollout(basisPoints: basisPoints)!)))
        }
        let flagSet = FlagSet(
            namespace: "rider",
            flags: [
                switchAt("plugin_switch_a", 2500),
                switchAt("plugin_switch_b", 10_000),
                switchAt("plugin_switch_c", 0, rules: [("paris", 5000), ("lagos", 1000)]),
                FlagDefinition(
                    key: "exp",
                    kind: .experiment(
                        Experiment(
                            valueType: .string,
                            variants: [
                                Variant(key: "a", value: .string("A")), Variant(key: "b", value: .string("B")),
                                Variant(key: "control", value: .string("C")),
                            ],
                            defaultVariant: "a", weights: ["a": 1, "b": 1, "control": 2]))),
            ])
        let designs = ExperimentDesign.designs(of: flagSet)
        #expect(
            designs.keys.sorted() == ["exp", "plugin_switch_a", "plugin_switch_c"], "a switch at 100 % splits no unit")
        #expect(designs["plugin_switch_a"]?.phase == "25%")
        #expect(designs["plugin_switch_a"]?.shares == ["with": 0.25, "without": 0.75])
        #expect(designs["plugin_switch_c"]?.phase == "10%|50%")
        #expect(designs["plugin_switch_c"]?.shares == nil, "rules at different rates declare no one share")
        #expect(designs["exp"]?.arms == ["control", "a", "b"])
        #expect(designs["exp"]?.shares == ["a": 0.25, "b": 0.25, "control": 0.5])
        let session = StoredEvent(
            id: "s", time: Self.t0, payload: .session(crashed: false, switches: [], variants: ["exp": "b"]),
            unit: "u", splits: ["plugin_switch_a": false, "plugin_switch_b": true])
        #expect(designs["exp"]?.arm(of: session) == "b")
        #expect(designs["plugin_switch_a"]?.arm(of: session) == "without")
        #expect(designs["plugin_switch_c"]?.arm(of: session) == nil)
    }
}
