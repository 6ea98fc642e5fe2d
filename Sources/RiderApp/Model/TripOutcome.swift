public import SwitchyardPlugins

/// The stages of the core trip flow, in order.
public enum TripStage: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    case requested, confirmed, dispatched
    case onTrip = "on_trip"
    case completed

    public var description: String { rawValue }
}

/// Where one plugin point routed during a trip.
public struct PointRoute: Sendable, Hashable, CustomStringConvertible {
    /// The plugin point's name.
    public let point: String
    /// The switches whose plugins served, in the point's order; empty means the core flow.
    public let servedBy: [PluginSwitch]

    public init(point: String, servedBy: [PluginSwitch]) {
        self.point = point
        self.servedBy = servedBy
    }

    public var isCoreFlow: Bool { servedBy.isEmpty }

    /// `plugin_switch_feed_promos, plugin_switch_feed_safety_tips`, or `core flow`.
    public var description: String {
        isCoreFlow ? "core flow" : servedBy.map(\.key).joined(separator: ", ")
    }
}

/// What a trip through the core flow came to: the stages it went through, where each plugin point routed,
/// and the fare. Checkable: a trip under any switch states completes, and charges the quoted fare minus the
/// discount a promotion gave.
public struct TripOutcome: Sendable, Hashable {
    /// The scenario's name.
    public var scenario: String
    /// The stages passed, in order.
    public var stages: [TripStage] = []
    /// Per plugin point, in the catalogue's order.
    public var routes: [PointRoute] = []
    /// The fare quoted at request time.
    public var quote = Money(cents: 0)
    /// The promotion's discount, if the promo add-on applied one.
    public var discount = Money(cents: 0)
    /// What the rider paid in all.
    public var charged = Money(cents: 0)
    /// Riders sharing the fare (1 unless the split-fare add-on split it).
    public var splitWays = 1
    /// The confirm button's copy (an experiment).
    public var buttonCopy = ""
    /// The driver dispatched.
    public var driver = ""
    /// What each screen showed, for people: `home: Where to? | card: Recent trips`.
    public var screens: [String] = []

    /// Whether the trip reached its last stage.
    public var completed: Bool { stages == TripStage.allCases }

    /// The route of a plugin point by name.
    public func route(of point: String) -> PointRoute? {
        routes.first { $0.point == point }
    }

    /// Every switch whose plugin served somewhere in the trip.
    public var servingSwitches: [PluginSwitch] {
        routes.flatMap(\.servedBy)
    }
}
