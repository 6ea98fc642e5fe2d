/// An amount of money in minor units (cents), so fares add up exactly.
public struct Money: Sendable, Hashable, Comparable, CustomStringConvertible {
    public var cents: Int

    public init(cents: Int) { self.cents = cents }

    public static func < (lhs: Money, rhs: Money) -> Bool { lhs.cents < rhs.cents }
    public static func + (lhs: Money, rhs: Money) -> Money { Money(cents: lhs.cents + rhs.cents) }
    public static func - (lhs: Money, rhs: Money) -> Money { Money(cents: lhs.cents - rhs.cents) }

    /// `18.40`.
    public var description: String {
        let sign = cents < 0 ? "-" : ""
        let magnitude = abs(cents)
        let fraction = magnitude % 100
        return "\(sign)\(magnitude / 100).\(fraction < 10 ? "0" : "")\(fraction)"
    }
}

/// The rider: what the preferences hub and the home feed read.
public struct RiderProfile: Sendable, Hashable {
    public var unitID: String
    public var city: String?
    /// Saved places (home, work, favourites).
    public var savedPlaces: [String]
    /// Whether the rider holds a Ride Pass already (then there is nothing to sell them).
    public var hasRidePass: Bool
    /// Trips taken before this one.
    public var tripsTaken: Int

    public init(
        unitID: String, city: String? = nil, savedPlaces: [String] = [], hasRidePass: Bool = false, tripsTaken: Int = 0
    ) {
        self.unitID = unitID
        self.city = city
        self.savedPlaces = savedPlaces
        self.hasRidePass = hasRidePass
        self.tripsTaken = tripsTaken
    }
}

/// One trip to run through the core flow: the rider, where they go, and what the city offers around them.
///
/// Everything is given, nothing is random: the same scenario and switch states always give the same outcome.
public struct TripScenario: Sendable, Hashable, CustomStringConvertible {
    /// A short name for output (`standard`, `short hop`).
    public var name: String
    public var rider: RiderProfile
    public var pickup: String
    public var destination: String
    /// Trip length in metres.
    public var distanceMeters: Int
    /// Surge in percent: 100 is no surge, 130 is 1.3×.
    public var surgePercent: Int
    /// A promotion the rider may apply, if any.
    public var promotion: Promotion?
    /// Suggested pickup spots near the rider (mapped cities only).
    public var pickupSpots: [String]
    /// Shared scooters within walking distance.
    public var scootersNearby: Int

    /// A promotion: a percentage off, capped.
    public struct Promotion: Sendable, Hashable {
        public var code: String
        public var percentOff: Int
        public var cap: Money

        public init(code: String, percentOff: Int, cap: Money) {
            self.code = code
            self.percentOff = percentOff
            self.cap = cap
        }
    }

    public init(
        name: String, rider: RiderProfile, pickup: String, destination: String, distanceMeters: Int,
        surgePercent: Int = 100, promotion: Promotion? = nil, pickupSpots: [String] = [], scootersNearby: Int = 0
    ) {
        self.name = name
        self.rider = rider
        self.pickup = pickup
        self.destination = destination
        self.distanceMeters = distanceMeters
        self.surgePercent = surgePercent
        self.promotion = promotion
        self.pickupSpots = pickupSpots
        self.scootersNearby = scootersNearby
    }

    public var description: String { name }

    /// A regular rider's 8.4 km trip at 1.2× surge with a promotion available, pickup spots and scooters nearby:
    /// every plugin of the app is applicable, so the switches alone decide what serves.
    public static func standard(unitID: String = "rider-42", city: String? = "lagos") -> TripScenario {
        TripScenario(
            name: "standard",
            rider: RiderProfile(unitID: unitID, city: city, savedPlaces: ["home", "work"], tripsTaken: 7),
            pickup: "home", destination: "work", distanceMeters: 8_400, surgePercent: 120,
            promotion: Promotion(code: "RIDE10", percentOff: 10, cap: Money(cents: 500)),
            pickupSpots: ["north gate", "bus stop 4"], scootersNearby: 3)
    }

    /// A new rider's 1.2 km hop without surge, promotion, saved places, pickup spots or scooters: a fare below
    /// the split-fare threshold, so most plugins are not applicable whatever their switches say.
    public static func shortHop(unitID: String = "rider-7", city: String? = "berlin") -> TripScenario {
        TripScenario(
            name: "short hop", rider: RiderProfile(unitID: unitID, city: city, hasRidePass: true),
            pickup: "hotel", destination: "station", distanceMeters: 1_200)
    }

    /// The scenarios a test kit runs every combination through.
    public static var all: [TripScenario] { [.standard(), .shortHop()] }
}
