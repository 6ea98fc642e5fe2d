public import Foundation
public import SwitchyardCore

/// The bounded blast radius of the crash guard: what it does with a trip the rule decided.
///
/// It disables by itself at most `max_trips_per_hour` switches everywhere and, apart, `max_scoped_trips_per_hour`
/// switches in a city or cohort in any hour per namespace, and keeps at most `max_scoped_disables` scoped disables on
/// one switch; past any of them, it proposes the disable instead, and a person applies or dismisses the proposal.
/// The two budgets are apart so that trips in small scopes (the cheapest for a forger to make up) never leave a crash
/// loop everywhere to a proposal. A proposal open for the same switch and scope holds further action on it
/// (the person decides), and so does a dismissal for the cool-down after it.
public enum GuardBudget {
    /// What to do with a trip.
    public enum Action: Sendable, Hashable {
        /// Disable the switch now.
        case trip
        /// Propose the disable to a person, for this reason.
        case propose(ProposalReason)
        /// Nothing: a proposal for it is open, or a person dismissed one within the cool-down.
        case hold
    }

    /// Why the guard proposes instead of acting: a metric label and a sentence.
    public struct ProposalReason: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
        public let rawValue: String

        public init(rawValue: String) { self.rawValue = rawValue }

        /// The namespace's budget of global trips for the hour is spent.
        public static let budget = ProposalReason(rawValue: "budget")
        /// The namespace's budget of scoped trips for the hour is spent.
        public static let scopedBudget = ProposalReason(rawValue: "scoped_budget")
        /// The switch has as many scoped disables by the guard as its policy allows.
        public static let scopedDisables = ProposalReason(rawValue: "scoped_disables")

        public var description: String { rawValue }
    }

    /// The length of the budget's window.
    public static let period: TimeInterval = 3600

    /// Decides what to do with a trip.
    ///
    /// - Parameters:
    ///   - trip: the trip the rule decided.
    ///   - tripsInLastHour: the guard's own disables in the namespace in the last hour of the trip's kind (global, or
    ///     scoped).
    ///   - openScopedDisables: the scoped disables the guard made on this switch that are still in force.
    ///   - pending: whether a proposal for this switch and scope is open, or was dismissed within the cool-down.
    public static func decide(_ trip: GuardTrip, tripsInLastHour: Int, openScopedDisables: Int, pending: Bool) -> Action
    {
        if pending { return .hold }
        if trip.scope.isEverywhere, tripsInLastHour >= trip.policy.maximumTripsPerHour { return .propose(.budget) }
        if !trip.scope.isEverywhere, tripsInLastHour >= trip.policy.maximumScopedTripsPerHour {
            return .propose(.scopedBudget)
        }
        if !trip.scope.isEverywhere, openScopedDisables >= trip.policy.maximumScopedDisables {
            return .propose(.scopedDisables)
        }
        return .trip
    }

    /// `3 automatic disables in the last hour, the namespace's max_trips_per_hour`.
    public static func sentence(_ reason: ProposalReason, policy: ResolvedCrashGuardPolicy) -> String {
        switch reason {
        case .budget:
            "the crash guard made \(policy.maximumTripsPerHour) automatic global disable\(policy.maximumTripsPerHour == 1 ? "" : "s") in the last hour (max_trips_per_hour); a person decides on more"
        case .scopedBudget:
            "the crash guard made \(policy.maximumScopedTripsPerHour) automatic scoped disable\(policy.maximumScopedTripsPerHour == 1 ? "" : "s") in the last hour (max_scoped_trips_per_hour); a person decides on more"
        case .scopedDisables:
            "the crash guard keeps \(policy.maximumScopedDisables) scoped disable\(policy.maximumScopedDisables == 1 ? "" : "s") on this switch already (max_scoped_disables); a person decides on more"
        default:
            reason.rawValue
        }
    }
}
