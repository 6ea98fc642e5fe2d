public import SwitchyardPlugins

/// Every plugin switch of the rider app, as code names them: one per plugin factory, in the order of
/// `Flags/rider.yaml` (plugin point by plugin point, each point's switches in the order it tries them).
///
/// Declared once as static values, so each resolves its key to a slot once (see ``PluginSwitch``).
public enum RiderSwitches {
    // preferences_hub
    public static let prefsSavedPlaces = PluginSwitch("plugin_switch_prefs_saved_places")
    public static let prefsRidePass = PluginSwitch("plugin_switch_prefs_ride_pass")
    public static let prefsAccessibility = PluginSwitch("plugin_switch_prefs_accessibility")
    // confirmation_addons
    public static let surgeNotice = PluginSwitch("plugin_switch_surge_notice")
    public static let confirmationPromo = PluginSwitch("plugin_switch_confirmation_promo")
    public static let splitFare = PluginSwitch("plugin_switch_split_fare")
    // home_feed
    public static let feedPromos = PluginSwitch("plugin_switch_feed_promos")
    public static let feedTripHistory = PluginSwitch("plugin_switch_feed_trip_history")
    public static let feedSafetyTips = PluginSwitch("plugin_switch_feed_safety_tips")
    // map_layers
    public static let mapTraffic = PluginSwitch("plugin_switch_map_traffic")
    public static let mapPickupSpots = PluginSwitch("plugin_switch_map_pickup_spots")
    public static let mapScooters = PluginSwitch("plugin_switch_map_scooters")

    /// Every plugin switch, in the flag file's order.
    public static var all: [PluginSwitch] {
        RiderCatalogue.pluginPoints.flatMap(\.switches)
    }

    /// The switch with a flag key, if the rider app has one.
    public static func named(_ key: String) -> PluginSwitch? {
        all.first { $0.key == key }
    }
}

/// The experiment flags the rider app reads.
public enum RiderExperiments {
    /// The confirm button's copy; the core flow's copy is the default.
    public static let confirmationButtonCopy = ExperimentFlag("confirmation_button_copy", default: "Confirm ride")
}

/// What the rider app declares: its plugin points in the order the trip visits them, each with its group kill
/// switch and its plugin switches in the order the point tries them, and the master kill switch over all of
/// them. The combination matrix counts its gates from here: 12 plugin switches + 4 group kill switches + the
/// master = 17.
public enum RiderCatalogue {
    /// The master kill switch's key: killed, every plugin point yields its core flow.
    public static let masterKillSwitch = "master"

    /// One plugin point as the app declares it.
    public struct PluginPointInfo: Sendable, Hashable, CustomStringConvertible {
        /// The point's name, as in the flag file.
        public let name: String
        /// The key of the point's group kill switch.
        public let killSwitch: String
        /// The point's switches, in the order it tries them.
        public let switches: [PluginSwitch]
        /// Whether the point shows every eligible plugin (`createPlugins`: feed cards, map overlays) or only the
        /// first (`createPlugin`: one slot on a screen).
        public let combinesPlugins: Bool

        public var description: String { name }
    }

    public static let preferencesHub = PluginPointInfo(
        name: "preferences_hub", killSwitch: "kill_preferences_hub",
        switches: [RiderSwitches.prefsSavedPlaces, RiderSwitches.prefsRidePass, RiderSwitches.prefsAccessibility],
        combinesPlugins: true)
    public static let confirmationAddons = PluginPointInfo(
        name: "confirmation_addons", killSwitch: "kill_confirmation_addons",
        switches: [RiderSwitches.surgeNotice, RiderSwitches.confirmationPromo, RiderSwitches.splitFare],
        combinesPlugins: false)
    public static let homeFeed = PluginPointInfo(
        name: "home_feed", killSwitch: "kill_home_feed",
        switches: [RiderSwitches.feedPromos, RiderSwitches.feedTripHistory, RiderSwitches.feedSafetyTips],
        combinesPlugins: true)
    public static let mapLayers = PluginPointInfo(
        name: "map_layers", killSwitch: "kill_map_layers",
        switches: [RiderSwitches.mapTraffic, RiderSwitches.mapPickupSpots, RiderSwitches.mapScooters],
        combinesPlugins: true)

    /// Every plugin point, in the flag file's order.
    public static let pluginPoints: [PluginPointInfo] = [preferencesHub, confirmationAddons, homeFeed, mapLayers]

    /// Every kill switch: the master first, then each point's group kill switch in the file's order.
    public static var killSwitches: [String] {
        [masterKillSwitch] + pluginPoints.map(\.killSwitch)
    }

    /// The plugin point a switch belongs to.
    public static func pluginPoint(of pluginSwitch: PluginSwitch) -> PluginPointInfo? {
        pluginPoints.first { $0.switches.contains(pluginSwitch) }
    }
}
