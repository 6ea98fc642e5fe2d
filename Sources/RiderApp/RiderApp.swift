public import SwitchyardPlugins

/// The sample rider app: a core trip flow (request → confirm → dispatch → on trip → complete) and the four
/// plugin points of `Flags/rider.yaml` in front of it.
///
/// ```swift
/// let app = RiderApp(states: client, experiments: client, outcomes: client)   // a FlagClient in the app
/// let outcome = try app.runTrip(.standard(unitID: "rider-42", city: "lagos"))  // books: reports trip_booked, …
/// outcome.route(of: "home_feed")                                       // which plugins served, or the core flow
///
/// let matrixRun = RiderApp(states: SwitchAssignment(on: [RiderSwitches.feedPromos]))   // no server
/// ```
///
/// Over any switch states the trip completes: each plugin point serves its eligible plugins, or its core
/// flow. The app is cheap to build and run (the combination matrix runs it for every combination), and
/// deterministic: the same scenario and states give the same ``TripOutcome``.
public struct RiderApp {
    /// Where plugin points read switch states.
    public let states: any SwitchStates
    /// Where the app reads experiment values.
    public let experiments: any ExperimentValues
    /// Faults injected into plugins.
    public let faults: Faults
    /// Where live plugins show themselves when a ``PluginHost`` attaches them (``RiderLivePoints``).
    public let screens: RiderScreens
    /// Where the core flow reports a booking's outcomes (``RiderMetrics``); settable, so an app that runs a trip
    /// again only to show it re-routed books nothing the second time.
    public var outcomes: any OutcomeReporter
    /// When the rider opened the app: `time_to_book` counts from here.
    public let openedAt: ContinuousClock.Instant

    /// Widgets of the preferences hub (every eligible one shows).
    public let preferencesHub: PluginPoint<RiderProfile, any PreferencesWidget>
    /// The add-on slot above the confirm button (the first eligible add-on serves).
    public let confirmationAddons: PluginPoint<Confirmation, any ConfirmationAddon>
    /// Cards of the home feed (every eligible one shows).
    public let homeFeed: PluginPoint<RiderProfile, any FeedCard>
    /// Overlays of the home map (every eligible one draws).
    public let mapLayers: PluginPoint<MapScene, any MapLayer>

    /// Builds every plugin point over some switch states.
    ///
    /// - Parameters:
    ///   - states: a ``FlagClient``, or an explicit ``SwitchAssignment``.
    ///   - experiments: a ``FlagClient``, or ``CodeDefaults``.
    ///   - faults: plugins to crash or factories to fail.
    ///   - screens: where live plugins show themselves; new, empty screens by default.
    ///   - outcomes: where a booked trip's outcomes go: a ``FlagClient``, or ``NoOutcomes`` (the default).
    ///   - openedAt: when the rider opened the app (now by default), for `time_to_book`.
    public init(
        states: any SwitchStates, experiments: any ExperimentValues = CodeDefaults(), faults: Faults = .none,
        screens: RiderScreens = RiderScreens(), outcomes: any OutcomeReporter = NoOutcomes(),
        openedAt: ContinuousClock.Instant = .now
    ) {
        self.states = states
        self.experiments = experiments
        self.faults = faults
        self.screens = screens
        self.outcomes = outcomes
        self.openedAt = openedAt
        preferencesHub = PluginPoint(
            RiderCatalogue.preferencesHub.name, states: states,
            factories: [
                SavedPlacesFactory(faults: faults, screens: screens), RidePassFactory(faults: faults, screens: screens),
                AccessibilityFactory(faults: faults, screens: screens),
            ])
        confirmationAddons = PluginPoint(
            RiderCatalogue.confirmationAddons.name, states: states,
            factories: [
                SurgeNoticeFactory(faults: faults, screens: screens),
                ConfirmationPromoFactory(faults: faults, screens: screens),
                SplitFareFactory(faults: faults, screens: screens),
            ])
        homeFeed = PluginPoint(
            RiderCatalogue.homeFeed.name, states: states,
            factories: [
                FeedPromosFactory(faults: faults, screens: screens),
                FeedTripHistoryFactory(faults: faults, screens: screens),
                FeedSafetyTipsFactory(faults: faults, screens: screens),
            ])
        mapLayers = PluginPoint(
            RiderCatalogue.mapLayers.name, states: states,
            factories: [
                MapTrafficFactory(faults: faults, screens: screens),
                MapPickupSpotsFactory(faults: faults, screens: screens),
                MapScootersFactory(faults: faults, screens: screens),
            ])
    }

    /// The switches of each plugin point in code, by point name, in the order the points try them (to compare
    /// with the flag file's `plugin_points`).
    public var pluginPointSwitches: [(point: String, switches: [PluginSwitch])] {
        [
            (preferencesHub.name, preferencesHub.switches), (confirmationAddons.name, confirmationAddons.switches),
            (homeFeed.name, homeFeed.switches), (mapLayers.name, mapLayers.switches),
        ]
    }

    /// The fare the core flow quotes: 2.50 plus 1.30 per km, times the surge.
    public static func quote(for scenario: TripScenario) -> Money {
        let base = 250 + scenario.distanceMeters * 130 / 1000
        return Money(cents: (base * scenario.surgePercent + 50) / 100)
    }

    /// Runs one trip through the core flow, routing every plugin point on the way.
    ///
    /// The home screen shows the feed and the map, the rider opens the preferences hub, requests a ride,
    /// confirms it (with the add-on, if one serves), is dispatched a driver, rides, and pays.
    ///
    /// Confirming books the trip: the core flow reports `trip_booked`, `trips`, `fare` (what the rider pays, in
    /// currency units) and `time_to_book` (seconds since ``openedAt``) to ``outcomes``.
    ///
    /// - Returns: the stages passed, where each point routed, and the fare.
    /// - Throws: ``SimulatedCrash`` when a plugin set to crash (``Faults/crashIn``) is used.
    public func runTrip(_ scenario: TripScenario) throws(SimulatedCrash) -> TripOutcome {
        var outcome = TripOutcome(scenario: scenario.name)
        let rider = scenario.rider

        // Home: the "Where to?" box (core) with the feed's cards, over the map with its overlays.
        var home = ["Where to?"]
        let cards = homeFeed.servingPlugins(for: rider)
        for card in cards { home.append(try card.plugin.render(for: rider)) }
        var map = MapScene(city: rider.city, pickupSpots: scenario.pickupSpots, scootersNearby: scenario.scootersNearby)
        let layers = mapLayers.servingPlugins(for: map)
        for layer in layers { try layer.plugin.draw(on: &map) }
        outcome.screens.append("home: " + home.joined(separator: " | "))
        outcome.screens.append("map: " + map.layers.joined(separator: " | "))

        // Preferences hub: the account header (core) and the widgets below it.
        var hub = ["Account"]
        let widgets = preferencesHub.servingPlugins(for: rider)
        for widget in widgets { hub.append(try widget.plugin.render(for: rider)) }
        outcome.screens.append("preferences: " + hub.joined(separator: " | "))

        // Request: the core flow quotes the fare.
        outcome.quote = Self.quote(for: scenario)
        outcome.stages.append(.requested)

        // Confirm: the price (core), the add-on if one serves, and the button.
        var confirmation = Confirmation(
            quote: outcome.quote, surgePercent: scenario.surgePercent, promotion: scenario.promotion)
        let addon = confirmationAddons.route(for: confirmation)
        try addon.plugin?.apply(to: &confirmation)
        outcome.buttonCopy = experiments.value(of: RiderExperiments.confirmationButtonCopy)
        outcome.screens.append(
            "confirm: "
                + (["\(scenario.pickup) → \(scenario.destination): \(confirmation.quote)"]
                + confirmation.notes + ["[\(outcome.buttonCopy)]"]).joined(separator: " | "))
        outcome.discount = confirmation.discount
        outcome.splitWays = confirmation.splitWays
        outcome.stages.append(.confirmed)
        reportBooking(fare: confirmation.total)

        // Dispatch, ride, pay: core only.
        outcome.driver = Self.driver(for: rider.unitID)
        outcome.stages.append(.dispatched)
        outcome.stages.append(.onTrip)
        outcome.charged = confirmation.total
        outcome.stages.append(.completed)
        outcome.screens.append(
            "trip: \(outcome.driver) drove \(scenario.distanceMeters) m; charged \(outcome.charged)"
                + (outcome.splitWays > 1 ? " split \(outcome.splitWays) ways" : ""))

        outcome.routes = [
            PointRoute(point: preferencesHub.name, servedBy: widgets.map(\.pluginSwitch)),
            PointRoute(point: confirmationAddons.name, servedBy: addon.pluginSwitch.map { [$0] } ?? []),
            PointRoute(point: homeFeed.name, servedBy: cards.map(\.pluginSwitch)),
            PointRoute(point: mapLayers.name, servedBy: layers.map(\.pluginSwitch)),
        ]
        return outcome
    }

    /// The core flow's report of a booked trip (plugins report no outcomes).
    private func reportBooking(fare: Money) {
        let elapsed = ContinuousClock.now - openedAt
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        outcomes.track(RiderMetrics.tripBooked, value: nil)
        outcomes.track(RiderMetrics.trips, value: nil)
        outcomes.track(RiderMetrics.fare, value: Double(fare.cents) / 100)
        outcomes.track(RiderMetrics.timeToBook, value: max(0, seconds))
    }

    private static let drivers = ["Ade", "Bea", "Chidi", "Dana", "Emeka", "Femi", "Gus", "Hana"]

    /// A driver picked from the unit id, the same every run.
    static func driver(for unitID: String) -> String {
        var sum = 0
        for byte in unitID.utf8 { sum = (sum &* 31 &+ Int(byte)) & 0xFFFF }
        return drivers[sum % drivers.count]
    }
}

@available(
    *, unavailable, message: "plugin points hold factories that need not be Sendable; build a RiderApp where it is used"
)
extension RiderApp: Sendable {}
