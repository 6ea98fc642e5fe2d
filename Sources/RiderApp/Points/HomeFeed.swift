import SwitchyardPlugins

/// A card of the home feed, under the "Where to?" box. The core flow shows the box alone.
public protocol FeedCard {
    /// The card's text. Throws when the plugin crashes (simulated).
    func render(for rider: RiderProfile) throws(SimulatedCrash) -> String
}

/// Promotions: for every rider (where it ramps is the switch's rule).
struct FeedPromosFactory: PluginFactory {
    var pluginSwitch: PluginSwitch { RiderSwitches.feedPromos }
    let faults: Faults
    let screens: RiderScreens

    func build(for rider: RiderProfile) throws -> any FeedCard {
        try faults.build(pluginSwitch)
        return TextPlugin(
            pluginSwitch, of: RiderCatalogue.homeFeed, on: .home, faults: faults, rider: rider, screens: screens
        ) { _ in
            "Promotions near you"
        }
    }
}

/// Recent trips with one-tap rebooking: applicable once the rider has taken a trip.
struct FeedTripHistoryFactory: PluginFactory {
    var pluginSwitch: PluginSwitch { RiderSwitches.feedTripHistory }
    let faults: Faults
    let screens: RiderScreens

    func isApplicable(to rider: RiderProfile) -> Bool { rider.tripsTaken > 0 }

    func build(for rider: RiderProfile) throws -> any FeedCard {
        try faults.build(pluginSwitch)
        return TextPlugin(
            pluginSwitch, of: RiderCatalogue.homeFeed, on: .home, faults: faults, rider: rider, screens: screens
        ) {
            "Your \($0.tripsTaken) recent trips"
        }
    }
}

/// Safety tips: for every rider (who sees it is the switch's rules).
struct FeedSafetyTipsFactory: PluginFactory {
    var pluginSwitch: PluginSwitch { RiderSwitches.feedSafetyTips }
    let faults: Faults
    let screens: RiderScreens

    func build(for rider: RiderProfile) throws -> any FeedCard {
        try faults.build(pluginSwitch)
        return TextPlugin(
            pluginSwitch, of: RiderCatalogue.homeFeed, on: .home, faults: faults, rider: rider, screens: screens
        ) { _ in
            "Safety tip: check the plate before you get in"
        }
    }
}
