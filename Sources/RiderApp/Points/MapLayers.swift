import SwitchyardPlugins

/// What the home map shows: the core flow draws the base map and the rider's position; overlays add to it.
public struct MapScene: Sendable, Hashable {
    public var city: String?
    /// Suggested pickup spots known near the rider.
    public var pickupSpots: [String]
    /// Shared scooters within walking distance.
    public var scootersNearby: Int
    /// Layers drawn, bottom up.
    public var layers: [String] = ["base map", "your position"]
}

/// An overlay on the home map.
public protocol MapLayer {
    /// Draws the overlay. Throws when the plugin crashes (simulated).
    func draw(on scene: inout MapScene) throws(SimulatedCrash)
}

/// Live traffic: everywhere.
struct MapTrafficFactory: PluginFactory {
    var pluginSwitch: PluginSwitch { RiderSwitches.mapTraffic }
    let faults: Faults
    let screens: RiderScreens

    func build(for scene: MapScene) throws -> any MapLayer {
        try faults.build(pluginSwitch)
        return Layer(faults: faults, pluginSwitch: pluginSwitch, scene: scene, screens: screens) {
            $0.layers.append("traffic")
        }
    }
}

/// Suggested pickup spots: applicable where spots are mapped near the rider.
struct MapPickupSpotsFactory: PluginFactory {
    var pluginSwitch: PluginSwitch { RiderSwitches.mapPickupSpots }
    let faults: Faults
    let screens: RiderScreens

    func isApplicable(to scene: MapScene) -> Bool { !scene.pickupSpots.isEmpty }

    func build(for scene: MapScene) throws -> any MapLayer {
        try faults.build(pluginSwitch)
        return Layer(faults: faults, pluginSwitch: pluginSwitch, scene: scene, screens: screens) {
            $0.layers.append("pickup spots: " + $0.pickupSpots.joined(separator: ", "))
        }
    }
}

/// Shared scooters: applicable when some are within walking distance.
struct MapScootersFactory: PluginFactory {
    var pluginSwitch: PluginSwitch { RiderSwitches.mapScooters }
    let faults: Faults
    let screens: RiderScreens

    func isApplicable(to scene: MapScene) -> Bool { scene.scootersNearby > 0 }

    func build(for scene: MapScene) throws -> any MapLayer {
        try faults.build(pluginSwitch)
        return Layer(faults: faults, pluginSwitch: pluginSwitch, scene: scene, screens: screens) {
            $0.layers.append("\($0.scootersNearby) scooters")
        }
    }
}

private final class Layer: MapLayer, LivePlugin {
    let faults: Faults
    let pluginSwitch: PluginSwitch
    /// The scene the overlay was built for (what it draws when attached live).
    let scene: MapScene
    let screens: RiderScreens
    let change: (inout MapScene) -> Void

    init(
        faults: Faults, pluginSwitch: PluginSwitch, scene: MapScene, screens: RiderScreens,
        change: @escaping (inout MapScene) -> Void
    ) {
        self.faults = faults
        self.pluginSwitch = pluginSwitch
        self.scene = scene
        self.screens = screens
        self.change = change
    }

    func draw(on scene: inout MapScene) throws(SimulatedCrash) {
        try faults.use(pluginSwitch, at: RiderCatalogue.mapLayers.name)
        change(&scene)
    }

    /// Draws the overlay on the home map until detached.
    func attach(to scope: PluginScope) {
        var drawn = MapScene(
            city: scene.city, pickupSpots: scene.pickupSpots, scootersNearby: scene.scootersNearby, layers: [])
        change(&drawn)
        for overlay in drawn.layers { screens.show(overlay, on: .map, scope: scope) }
    }
}
