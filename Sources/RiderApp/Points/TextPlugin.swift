import SwitchyardPlugins

/// A plugin that shows one line of text on a screen: a card of the home feed or a widget of the preferences hub.
/// The two points differ only in where the line goes and which point reports a crash.
final class TextPlugin: FeedCard, PreferencesWidget, LivePlugin {
    let faults: Faults
    let pluginSwitch: PluginSwitch
    /// The point the plugin belongs to (where a simulated crash is reported).
    let point: String
    /// Where the line shows when attached live.
    let place: RiderScreens.Place
    /// The rider the plugin was built for (what it shows when attached live).
    let rider: RiderProfile
    let screens: RiderScreens
    let text: (RiderProfile) -> String

    init(
        _ pluginSwitch: PluginSwitch, of point: RiderCatalogue.PluginPointInfo, on place: RiderScreens.Place,
        faults: Faults, rider: RiderProfile, screens: RiderScreens, text: @escaping (RiderProfile) -> String
    ) {
        self.faults = faults
        self.pluginSwitch = pluginSwitch
        self.point = point.name
        self.place = place
        self.rider = rider
        self.screens = screens
        self.text = text
    }

    func render(for rider: RiderProfile) throws(SimulatedCrash) -> String {
        try faults.use(pluginSwitch, at: point)
        return text(rider)
    }

    /// Shows the line on its screen until detached.
    func attach(to scope: PluginScope) {
        screens.show(text(rider), on: place, scope: scope)
    }
}
