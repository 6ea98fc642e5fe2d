import SwitchyardPlugins

/// A widget of the preferences hub, below the account header. The core flow shows no widget.
public protocol PreferencesWidget {
    /// The widget's text. Throws when the plugin crashes (simulated).
    func render(for rider: RiderProfile) throws(SimulatedCrash) -> String
}

/// Saved places for one-tap destinations: applicable when the rider has saved some.
struct SavedPlacesFactory: PluginFactory {
    var pluginSwitch: PluginSwitch { RiderSwitches.prefsSavedPlaces }
    let faults: Faults
    let screens: RiderScreens

    func isApplicable(to rider: RiderProfile) -> Bool { !rider.savedPlaces.isEmpty }

    func build(for rider: RiderProfile) throws -> any PreferencesWidget {
        try faults.build(pluginSwitch)
        return TextPlugin(
            pluginSwitch, of: RiderCatalogue.preferencesHub, on: .preferences, faults: faults, rider: rider,
            screens: screens
        ) {
            "Saved places: " + $0.savedPlaces.joined(separator: ", ")
        }
    }
}

/// The Ride Pass offer: applicable to riders who hold no pass yet (where it is sold is the switch's rule).
struct RidePassFactory: PluginFactory {
    var pluginSwitch: PluginSwitch { RiderSwitches.prefsRidePass }
    let faults: Faults
    let screens: RiderScreens

    func isApplicable(to rider: RiderProfile) -> Bool { !rider.hasRidePass }

    func build(for rider: RiderProfile) throws -> any PreferencesWidget {
        try faults.build(pluginSwitch)
        return TextPlugin(
            pluginSwitch, of: RiderCatalogue.preferencesHub, on: .preferences, faults: faults, rider: rider,
            screens: screens
        ) { _ in
            "Ride Pass: save on every ride"
        }
    }
}

/// Accessibility preferences: for every rider.
struct AccessibilityFactory: PluginFactory {
    var pluginSwitch: PluginSwitch { RiderSwitches.prefsAccessibility }
    let faults: Faults
    let screens: RiderScreens

    func build(for rider: RiderProfile) throws -> any PreferencesWidget {
        try faults.build(pluginSwitch)
        return TextPlugin(
            pluginSwitch, of: RiderCatalogue.preferencesHub, on: .preferences, faults: faults, rider: rider,
            screens: screens
        ) { _ in
            "Accessibility: wheelchair-accessible vehicles, assistance"
        }
    }
}
