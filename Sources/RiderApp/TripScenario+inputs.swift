/// What each plugin point routes in a trip, built as ``RiderApp/runTrip(_:)`` builds it: the combination matrix
/// routes these inputs through the points on their own.
extension TripScenario {
    /// The confirmation screen before any add-on: the core flow's quote, the surge and the promotion.
    public var confirmation: Confirmation {
        Confirmation(quote: RiderApp.quote(for: self), surgePercent: surgePercent, promotion: promotion)
    }

    /// The home map before any overlay.
    public var mapScene: MapScene {
        MapScene(city: rider.city, pickupSpots: pickupSpots, scootersNearby: scootersNearby)
    }
}
