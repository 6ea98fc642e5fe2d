public import SwitchyardPlugins

/// Where the app reports what riders do: a ``FlagClient`` in the app (``FlagClient/track(_:value:)`` queues a
/// `metric` event), nothing in tests and the combination matrix (``NoOutcomes``).
///
/// Only the core flow reports outcomes, never a plugin: an outcome counts whatever plugins served, so comparing
/// riders with and without a plugin measures what the plugin does to it.
public protocol OutcomeReporter: Sendable {
    /// Reports an outcome; nil means one occurrence. Must not block or throw.
    func track(_ metric: String, value: Double?)
}

extension FlagClient: OutcomeReporter {}

/// Reports nothing.
public struct NoOutcomes: OutcomeReporter {
    public init() {}

    public func track(_ metric: String, value: Double?) {}
}

/// The outcome metrics the rider app reports when a rider books a trip.
public enum RiderMetrics {
    /// A conversion: the rider booked a trip.
    public static let tripBooked = "trip_booked"
    /// A count: one more trip.
    public static let trips = "trips"
    /// A value: the fare the rider pays (after a promotion's discount), in currency units.
    public static let fare = "fare"
    /// A value, lower is better: seconds from opening the app to booking.
    public static let timeToBook = "time_to_book"

    public static let all = [tripBooked, trips, fare, timeToBook]
}
