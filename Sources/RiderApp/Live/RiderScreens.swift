public import SwitchyardPlugins

/// What the rider app shows on its screens while plugins are live: the home feed's cards, the map's overlays,
/// the preferences hub's widgets and the add-on slot of the confirmation screen. Live plugins add themselves
/// here when a ``PluginHost`` attaches them and remove themselves through their ``PluginScope`` when it detaches
/// them; the core flow's parts ("Where to?", the base map, the account header) are always there.
///
/// Not thread-safe: it belongs to the host's executor (the main actor in an app).
public final class RiderScreens {
    /// One surface: items kept in their plugins' declared order, whichever attached first.
    public struct Surface: Sendable, Hashable {
        /// What the core flow always shows.
        public let core: [String]
        private(set) var items: [Item] = []

        struct Item: Sendable, Hashable {
            let position: Int
            let text: String
        }

        init(core: [String]) { self.core = core }

        /// The core parts, then the plugins' items in declared order.
        public var shown: [String] { core + items.map(\.text) }

        /// The plugins' items alone, in declared order.
        public var pluginItems: [String] { items.map(\.text) }

        mutating func insert(_ text: String, at position: Int) {
            let index = items.firstIndex { $0.position > position } ?? items.count
            items.insert(Item(position: position, text: text), at: index)
        }

        mutating func remove(at position: Int) {
            items.removeAll { $0.position == position }
        }
    }

    /// The home feed: "Where to?" and the cards below it.
    public private(set) var home = Surface(core: ["Where to?"])
    /// The home map: the base map, the rider's position, and the overlays.
    public private(set) var map = Surface(core: ["base map", "your position"])
    /// The preferences hub: the account header and the widgets below it.
    public private(set) var preferences = Surface(core: ["Account"])
    /// The note of the add-on shown above the confirm button; nil when the slot is empty (the core flow).
    public var confirmationAddon: String? { confirmationAddons.first }
    /// Every add-on note shown, in the order shown: one at most while one live point holds the slot (a host detaches
    /// before it attaches); the combination matrix holds the point once per input, each adding its own.
    public private(set) var confirmationAddons: [String] = []
    /// Every change, in order: `+home: Promotions near you`, `-map: traffic`.
    public private(set) var log: [String] = []

    public init() {}

    /// The screens as lines, in the form a trip's ``TripOutcome/screens`` takes for the same parts.
    public var lines: [String] {
        [
            "home: " + home.shown.joined(separator: " | "), "map: " + map.shown.joined(separator: " | "),
            "preferences: " + preferences.shown.joined(separator: " | "),
        ]
    }

    enum Place: String {
        case home, map, preferences
    }

    /// Shows a plugin's item, and registers its removal with the plugin's scope.
    func show(_ text: String, on place: Place, scope: PluginScope) {
        let position = scope.position
        change(place) { $0.insert(text, at: position) }
        log.append("+\(place): \(text)")
        scope.register("\(place) item '\(text)'") { [weak self] in
            self?.change(place) { $0.remove(at: position) }
            self?.log.append("-\(place): \(text)")
        }
    }

    /// Fills the confirmation's add-on slot, and registers emptying it with the plugin's scope.
    func showAddon(_ note: String, scope: PluginScope) {
        confirmationAddons.append(note)
        log.append("+confirm: \(note)")
        scope.register("confirmation add-on '\(note)'") { [weak self] in
            guard let self, let index = confirmationAddons.firstIndex(of: note) else { return }
            confirmationAddons.remove(at: index)
            log.append("-confirm: \(note)")
        }
    }

    private func change(_ place: Place, _ body: (inout Surface) -> Void) {
        switch place {
        case .home: body(&home)
        case .map: body(&map)
        case .preferences: body(&preferences)
        }
    }
}

@available(*, unavailable, message: "the screens belong to the plugin host's executor")
extension RiderScreens: Sendable {}

/// The rider app's four plugin points held live by a ``PluginHost`` for one trip scenario.
///
/// ```swift
/// let host = PluginHost(states: client)
/// let live = RiderLivePoints(app: app, scenario: .standard(), host: host)
/// await host.run(changes: client.changes)     // app.screens follow every switch
/// ```
public struct RiderLivePoints {
    public let preferencesHub: LivePoint<RiderProfile, any PreferencesWidget>
    public let confirmationAddons: LivePoint<Confirmation, any ConfirmationAddon>
    public let homeFeed: LivePoint<RiderProfile, any FeedCard>
    public let mapLayers: LivePoint<MapScene, any MapLayer>

    /// Adds the app's points to the host, with the scenario's inputs, serving as the trip serves them.
    public init(app: RiderApp, scenario: TripScenario, host: PluginHost) {
        preferencesHub = host.add(app.preferencesHub, input: scenario.rider, serving: .everyEligible)
        confirmationAddons = host.add(app.confirmationAddons, input: scenario.confirmation, serving: .firstEligible)
        homeFeed = host.add(app.homeFeed, input: scenario.rider, serving: .everyEligible)
        mapLayers = host.add(app.mapLayers, input: scenario.mapScene, serving: .everyEligible)
    }

    /// What each point holds, in the catalogue's order: the same form as a trip's routes.
    public var routes: [PointRoute] {
        [
            PointRoute(point: preferencesHub.name, servedBy: preferencesHub.attachedSwitches),
            PointRoute(point: confirmationAddons.name, servedBy: confirmationAddons.attachedSwitches),
            PointRoute(point: homeFeed.name, servedBy: homeFeed.attachedSwitches),
            PointRoute(point: mapLayers.name, servedBy: mapLayers.attachedSwitches),
        ]
    }
}

@available(*, unavailable, message: "live points belong to their host's executor")
extension RiderLivePoints: Sendable {}
