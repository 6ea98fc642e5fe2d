import Foundation
import RiderApp
import SwitchyardCore
import SwitchyardPlugins
import Testing

/// The rider app's declarations agree with `Flags/rider.yaml`.
struct RiderCatalogueTests {
    @Test func everyPluginPointInCodeMatchesTheFlagFile() throws {
        let flagSet = try RiderFlags.flagSet()
        let app = RiderApp(states: SwitchAssignment.allOff)
        #expect(app.preferencesHub.declarationProblems(in: flagSet).isEmpty)
        #expect(app.confirmationAddons.declarationProblems(in: flagSet).isEmpty)
        #expect(app.homeFeed.declarationProblems(in: flagSet).isEmpty)
        #expect(app.mapLayers.declarationProblems(in: flagSet).isEmpty)
        #expect(app.pluginPointSwitches.map(\.point) == flagSet.pluginPoints.map(\.name))
    }

    @Test func theCatalogueListsTheFilesSwitchesAndKillSwitchesInOrder() throws {
        let flagSet = try RiderFlags.flagSet()
        #expect(RiderCatalogue.pluginPoints.map(\.name) == flagSet.pluginPoints.map(\.name))
        #expect(RiderCatalogue.pluginPoints.map(\.killSwitch) == flagSet.pluginPoints.map { $0.killSwitch ?? "" })
        #expect(RiderSwitches.all.map(\.key) == flagSet.pluginPoints.flatMap(\.switches))
        #expect(Set(RiderCatalogue.killSwitches) == Set(flagSet.killSwitches.map(\.key)))
        #expect(RiderCatalogue.killSwitches.first == KillSwitch.masterKey)
        // The budget the flag file states: 12 switches + 4 groups + the master.
        #expect(RiderSwitches.all.count + RiderCatalogue.killSwitches.count == 17)
        #expect(RiderSwitches.named("plugin_switch_split_fare") == RiderSwitches.splitFare)
        #expect(RiderSwitches.named("plugin_switch_nope") == nil)
        #expect(RiderCatalogue.pluginPoint(of: RiderSwitches.mapScooters)?.name == "map_layers")
        let experiment = try #require(flagSet.flag(RiderExperiments.confirmationButtonCopy.key)?.experiment)
        #expect(
            experiment.variants.first { $0.key == experiment.defaultVariant }?.value
                == .string(RiderExperiments.confirmationButtonCopy.defaultValue))
    }
}

/// The core trip flow and the plugin points over explicit switch states.
struct RiderTripTests {
    @Test(arguments: TripScenario.all)
    func everySwitchOffRunsTheCoreFlowAtEveryPoint(scenario: TripScenario) throws {
        let outcome = try RiderApp(states: SwitchAssignment.allOff).runTrip(scenario)
        #expect(outcome.completed)
        #expect(outcome.stages == [.requested, .confirmed, .dispatched, .onTrip, .completed])
        #expect(outcome.routes.map(\.point) == RiderCatalogue.pluginPoints.map(\.name))
        #expect(outcome.routes.allSatisfy { $0.isCoreFlow })
        #expect(outcome.charged == outcome.quote)
        #expect(outcome.discount == Money(cents: 0))
        #expect(outcome.splitWays == 1)
        #expect(outcome.buttonCopy == "Confirm ride")
    }

    @Test func everySwitchOnServesEveryApplicablePluginInOrder() throws {
        let outcome = try RiderApp(states: SwitchAssignment(on: RiderSwitches.all)).runTrip(.standard())
        #expect(outcome.completed)
        #expect(
            outcome.served("preferences_hub") == [
                "plugin_switch_prefs_saved_places", "plugin_switch_prefs_ride_pass",
                "plugin_switch_prefs_accessibility",
            ])
        // One slot: the first eligible add-on serves.
        #expect(outcome.served("confirmation_addons") == ["plugin_switch_surge_notice"])
        #expect(
            outcome.served("home_feed") == [
                "plugin_switch_feed_promos", "plugin_switch_feed_trip_history",
                "plugin_switch_feed_safety_tips",
            ])
        #expect(
            outcome.served("map_layers") == [
                "plugin_switch_map_traffic", "plugin_switch_map_pickup_spots",
                "plugin_switch_map_scooters",
            ])
        #expect(outcome.quote == Money(cents: 1610))  // (2.50 + 8.4 km × 1.30) × 1.2
        #expect(outcome.charged == outcome.quote)
        #expect(
            outcome.screens.contains(
                "map: base map | your position | traffic | pickup spots: north gate, bus stop 4 | 3 scooters"))
    }

    @Test func theConfirmationSlotFallsBackInTheDeclaredOrder() throws {
        var states = SwitchAssignment(on: [RiderSwitches.confirmationPromo, RiderSwitches.splitFare])
        let promo = try RiderApp(states: states).runTrip(.standard())
        #expect(promo.served("confirmation_addons") == ["plugin_switch_confirmation_promo"])
        #expect(promo.discount == Money(cents: 161))
        #expect(promo.charged == Money(cents: 1449))

        states.set(RiderSwitches.confirmationPromo, on: false)
        let split = try RiderApp(states: states).runTrip(.standard())
        #expect(split.served("confirmation_addons") == ["plugin_switch_split_fare"])
        #expect(split.splitWays == 2)
        #expect(split.charged == split.quote)
    }

    @Test func pluginsThatDoNotApplyLeaveTheirPointToTheOthersOrTheCoreFlow() throws {
        // A new rider with a pass, no saved places, no surge, no promo, a fare below the split threshold,
        // no pickup spots and no scooters.
        let outcome = try RiderApp(states: SwitchAssignment(on: RiderSwitches.all)).runTrip(.shortHop())
        #expect(outcome.quote < Money(cents: 1500))
        #expect(outcome.served("preferences_hub") == ["plugin_switch_prefs_accessibility"])
        #expect(outcome.route(of: "confirmation_addons")?.isCoreFlow == true)
        #expect(outcome.served("home_feed") == ["plugin_switch_feed_promos", "plugin_switch_feed_safety_tips"])
        #expect(outcome.served("map_layers") == ["plugin_switch_map_traffic"])
        #expect(outcome.completed)
    }

    @Test func aThrowingFactoryIsSkippedReportedAndTheNextEligibleOneServes() throws {
        let states = RecordingStates(SwitchAssignment(on: RiderSwitches.all))
        let app = RiderApp(
            states: states,
            faults: Faults(failingFactories: [RiderSwitches.surgeNotice.key, RiderSwitches.feedPromos.key]))
        let outcome = try app.runTrip(.standard())
        #expect(outcome.served("confirmation_addons") == ["plugin_switch_confirmation_promo"])
        #expect(outcome.served("home_feed") == ["plugin_switch_feed_trip_history", "plugin_switch_feed_safety_tips"])
        #expect(outcome.completed)
        #expect(
            states.failed == [
                "home_feed: plugin_switch_feed_promos: simulated failure of the factory of plugin_switch_feed_promos",
                "confirmation_addons: plugin_switch_surge_notice: simulated failure of the factory of plugin_switch_surge_notice",
            ])
    }

    @Test func aPluginSetToCrashThrowsWhenUsedAndOnlyThen() throws {
        let faults = Faults(crashIn: [RiderSwitches.splitFare.key])
        let onlySplit = SwitchAssignment(on: [RiderSwitches.splitFare])
        let error = #expect(throws: SimulatedCrash.self) {
            try RiderApp(states: onlySplit, faults: faults).runTrip(.standard())
        }
        #expect(error?.pluginSwitch == RiderSwitches.splitFare)
        #expect(error?.pluginPoint == "confirmation_addons")
        // Off, not applicable, or behind an earlier add-on: never used, never crashes.
        #expect(try RiderApp(states: SwitchAssignment.allOff, faults: faults).runTrip(.standard()).completed)
        #expect(try RiderApp(states: onlySplit, faults: faults).runTrip(.shortHop()).completed)
        let surgeFirst = SwitchAssignment(on: [RiderSwitches.surgeNotice, RiderSwitches.splitFare])
        #expect(try RiderApp(states: surgeFirst, faults: faults).runTrip(.standard()).completed)
    }

    @Test func theSwitchesActiveInASessionAreRecordedBeforeAPluginIsBuilt() throws {
        let states = RecordingStates(SwitchAssignment(on: [RiderSwitches.mapScooters, RiderSwitches.feedPromos]))
        let error = #expect(throws: SimulatedCrash.self) {
            try RiderApp(states: states, faults: Faults(crashIn: [RiderSwitches.mapScooters.key])).runTrip(.standard())
        }
        #expect(error?.pluginSwitch == RiderSwitches.mapScooters)
        #expect(states.created == ["plugin_switch_feed_promos", "plugin_switch_map_scooters"])
    }

    @Test func aBookedTripReportsItsOutcomesFromTheCoreFlow() throws {
        let outcomes = RecordingOutcomes()
        let states = SwitchAssignment(on: [RiderSwitches.confirmationPromo])
        let trip = try RiderApp(states: states, outcomes: outcomes, openedAt: .now - .seconds(30)).runTrip(.standard())
        #expect(outcomes.tracked.map(\.metric) == RiderMetrics.all)
        #expect(outcomes.tracked[0].value == nil && outcomes.tracked[1].value == nil)
        // The fare the rider pays: the quote minus the promotion's discount.
        #expect(trip.charged == Money(cents: 1449))
        #expect(outcomes.tracked[2].value == 14.49)
        let timeToBook = try #require(outcomes.tracked[3].value)
        #expect(timeToBook >= 30)
    }

    @Test func aTripThatCrashesBeforeConfirmingBooksNothing() {
        let outcomes = RecordingOutcomes()
        let app = RiderApp(
            states: SwitchAssignment(on: [RiderSwitches.feedPromos]),
            faults: Faults(crashIn: [RiderSwitches.feedPromos.key]), outcomes: outcomes)
        #expect(throws: SimulatedCrash.self) { try app.runTrip(.standard()) }
        #expect(outcomes.tracked.isEmpty)
    }

    @Test func theSameStatesAndScenarioAlwaysGiveTheSameOutcome() throws {
        let states = SwitchAssignment(on: [
            RiderSwitches.feedPromos, RiderSwitches.confirmationPromo, RiderSwitches.mapPickupSpots,
        ])
        let first = try RiderApp(states: states).runTrip(.standard(unitID: "rider-9", city: "paris"))
        let second = try RiderApp(states: states).runTrip(.standard(unitID: "rider-9", city: "paris"))
        #expect(first == second)
        #expect(!first.driver.isEmpty)
    }
}

/// The rider app over a real client holding `Flags/rider.yaml`: evaluation decides, kill switches win.
struct RiderAppOverAClientTests {
    static let lagos = EvaluationContext(
        unitId: "rider-42", city: "lagos", cohorts: [], appVersion: "5.12.0", platform: "ios")

    @Test func theFlagFileRoutesALagosRider() throws {
        let client = try RiderFlags.client(context: Self.lagos)
        let outcome = try RiderApp(states: client, experiments: client).runTrip(.standard())
        // Ride Pass is sold in lagos; split fare needs 5.12.0; scooters are not in lagos; pickup spots are mapped there.
        #expect(
            outcome.served("preferences_hub") == [
                "plugin_switch_prefs_saved_places", "plugin_switch_prefs_ride_pass",
                "plugin_switch_prefs_accessibility",
            ])
        #expect(outcome.served("map_layers") == ["plugin_switch_map_traffic", "plugin_switch_map_pickup_spots"])
        #expect(outcome.served("confirmation_addons") == ["plugin_switch_surge_notice"])
        #expect(outcome.completed)
    }

    @Test func theMasterKillSwitchLeavesTheCoreFlowAtEveryPoint() throws {
        let client = try RiderFlags.client(context: Self.lagos) { flagSet in
            let index = flagSet.killSwitches.firstIndex { $0.isMaster }!
            flagSet.killSwitches[index].entries.append(.everywhere)
        }
        for scenario in TripScenario.all {
            let outcome = try RiderApp(states: client, experiments: client).runTrip(scenario)
            #expect(outcome.routes.allSatisfy { $0.isCoreFlow }, "\(scenario): \(outcome.routes)")
            #expect(outcome.completed)
            #expect(outcome.buttonCopy == "Confirm ride")
        }
    }

    @Test func theCoreOnlyCohortGetsTheCoreFlowEveryDay() throws {
        var context = Self.lagos
        context.cohorts = ["core_only"]
        let client = try RiderFlags.client(context: context)
        let outcome = try RiderApp(states: client, experiments: client).runTrip(.standard())
        #expect(outcome.routes.allSatisfy { $0.isCoreFlow })
    }

    @Test(arguments: RiderCatalogue.pluginPoints)
    func aGroupKillSwitchLeavesItsPointToTheCoreFlowAndNoOtherPoint(point: RiderCatalogue.PluginPointInfo) throws {
        let client = try RiderFlags.client(context: Self.lagos) { flagSet in
            let index = flagSet.killSwitches.firstIndex { $0.key == point.killSwitch }!
            flagSet.killSwitches[index].entries.append(.everywhere)
        }
        let outcome = try RiderApp(states: client, experiments: client).runTrip(.standard())
        #expect(outcome.route(of: point.name)?.isCoreFlow == true)
        #expect(outcome.routes.filter { !$0.isCoreFlow }.count == 3)
        #expect(outcome.completed)
    }

    @Test func theBookedTripsOutcomesAreQueuedAsMetricEvents() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "rider-outcomes-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let client = try RiderFlags.client(context: Self.lagos, directory: directory)
        let before = client.status.queuedEvents
        let trip = try RiderApp(states: client, experiments: client, outcomes: client).runTrip(.standard())
        #expect(client.status.queuedEvents == before + 4)
        client.endSession()  // writes the queue to disk
        let lines = try String(contentsOf: directory.appendingPathComponent("events.jsonl"), encoding: .utf8)
            .split(separator: "\n").map { try JSONValue.parse(Array($0.utf8)) }
        let metrics = lines.filter { $0["type"] == .string("metric") }
        #expect(metrics.compactMap { $0["metric"]?.stringValue } == RiderMetrics.all)
        #expect(metrics[2]["value"] == .double(Double(trip.charged.cents) / 100))
        // Attributed to the plugins that served in the trip.
        let switches = Set(metrics[0]["switches"]?.arrayValue?.compactMap(\.stringValue) ?? [])
        #expect(switches == Set(trip.servingSwitches.map(\.key)))
        #expect(metrics.allSatisfy { $0["unit"]?.stringValue?.count == 32 })
    }

    @Test func employeesSeeTheDogfoodCopyOnTheConfirmButton() throws {
        var context = Self.lagos
        context.cohorts = ["employees"]
        let client = try RiderFlags.client(context: context)
        #expect(try RiderApp(states: client, experiments: client).runTrip(.standard()).buttonCopy == "Let's go")
    }
}
