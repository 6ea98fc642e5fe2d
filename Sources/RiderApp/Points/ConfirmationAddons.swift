import SwitchyardPlugins

/// The ride confirmation screen: the quote, and what add-ons change on it before the rider confirms.
public struct Confirmation: Sendable, Hashable {
    /// The fare quoted by the core flow.
    public var quote: Money
    /// The surge in percent (100: none).
    public var surgePercent: Int
    /// A promotion the rider may apply.
    public var promotion: TripScenario.Promotion?
    /// Discount applied by an add-on.
    public var discount = Money(cents: 0)
    /// Riders sharing the fare.
    public var splitWays = 1
    /// Lines the screen shows above the confirm button.
    public var notes: [String] = []

    /// What the rider pays in all.
    public var total: Money { quote - discount }
}

/// An add-on of the confirmation screen, in the one slot above the confirm button. The core flow confirms
/// the ride with the price alone, so an add-on may vanish without blocking a booking.
public protocol ConfirmationAddon {
    /// Changes the confirmation. Throws when the plugin crashes (simulated).
    func apply(to confirmation: inout Confirmation) throws(SimulatedCrash)
}

/// Explains surge pricing: applicable only while a surge applies.
struct SurgeNoticeFactory: PluginFactory {
    var pluginSwitch: PluginSwitch { RiderSwitches.surgeNotice }
    let faults: Faults
    let screens: RiderScreens

    func isApplicable(to confirmation: Confirmation) -> Bool { confirmation.surgePercent > 100 }

    func build(for confirmation: Confirmation) throws -> any ConfirmationAddon {
        try faults.build(pluginSwitch)
        return Addon(faults: faults, pluginSwitch: pluginSwitch, confirmation: confirmation, screens: screens) {
            confirmation in
            let surge = confirmation.surgePercent
            confirmation.notes.append(
                "Fares are \(surge / 100).\(surge % 100 < 10 ? "0" : "")\(surge % 100)× higher than usual right now")
        }
    }
}

/// Applies the best promotion: applicable when the rider has one.
struct ConfirmationPromoFactory: PluginFactory {
    var pluginSwitch: PluginSwitch { RiderSwitches.confirmationPromo }
    let faults: Faults
    let screens: RiderScreens

    func isApplicable(to confirmation: Confirmation) -> Bool { confirmation.promotion != nil }

    func build(for confirmation: Confirmation) throws -> any ConfirmationAddon {
        try faults.build(pluginSwitch)
        return Addon(faults: faults, pluginSwitch: pluginSwitch, confirmation: confirmation, screens: screens) {
            confirmation in
            guard let promotion = confirmation.promotion else { return }
            let discount = min(Money(cents: confirmation.quote.cents * promotion.percentOff / 100), promotion.cap)
            confirmation.discount = discount
            confirmation.notes.append("Promo \(promotion.code): -\(discount)")
        }
    }
}

/// Splits the fare with a friend: applicable only to fares of ``threshold`` and more.
struct SplitFareFactory: PluginFactory {
    /// The smallest fare worth splitting.
    static let threshold = Money(cents: 15_00)

    var pluginSwitch: PluginSwitch { RiderSwitches.splitFare }
    let faults: Faults
    let screens: RiderScreens

    func isApplicable(to confirmation: Confirmation) -> Bool { confirmation.quote >= Self.threshold }

    func build(for confirmation: Confirmation) throws -> any ConfirmationAddon {
        try faults.build(pluginSwitch)
        return Addon(faults: faults, pluginSwitch: pluginSwitch, confirmation: confirmation, screens: screens) {
            confirmation in
            confirmation.splitWays = 2
            confirmation.notes.append("Split with a friend: \(Money(cents: (confirmation.total.cents + 1) / 2)) each")
        }
    }
}

private final class Addon: ConfirmationAddon, LivePlugin {
    let faults: Faults
    let pluginSwitch: PluginSwitch
    /// The confirmation the add-on was built for (what it shows when attached live).
    let confirmation: Confirmation
    let screens: RiderScreens
    let change: (inout Confirmation) -> Void

    init(
        faults: Faults, pluginSwitch: PluginSwitch, confirmation: Confirmation, screens: RiderScreens,
        change: @escaping (inout Confirmation) -> Void
    ) {
        self.faults = faults
        self.pluginSwitch = pluginSwitch
        self.confirmation = confirmation
        self.screens = screens
        self.change = change
    }

    func apply(to confirmation: inout Confirmation) throws(SimulatedCrash) {
        try faults.use(pluginSwitch, at: RiderCatalogue.confirmationAddons.name)
        change(&confirmation)
    }

    /// Shows the add-on's note in the slot above the confirm button until detached.
    func attach(to scope: PluginScope) {
        var applied = confirmation
        change(&applied)
        screens.showAddon(applied.notes.joined(separator: " | "), scope: scope)
    }
}
