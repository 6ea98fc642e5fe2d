import Foundation
import SwitchyardCore
import SwitchyardGuard
package import SwitchyardStorage
import Synchronization

/// The crash guard's views for the API: every switch on the store's counts, the proposals, the trips.
extension CrashGuard {
    /// The guard's view of every plugin switch of a namespace, on the store's counts, with its trip budget and
    /// proposals (for the API).
    package func status(of state: NamespaceState) async throws -> GuardOverview {
        try await updateHistory(state.record.name, state: state)
        let now = options.now()
        let longest = GuardCore.longestWindow(state.flagSet)
        let counts = try await store.eventCounts(
            EventCountQuery(
                namespace: state.record.name, from: now - longest.timeInterval, until: now + 86_400,
                subjects: [.pluginSwitch, .baseline], perBucket: true))
        let crashes = try await store.crashRecords(
            in: state.record.name, from: now - longest.timeInterval, until: now + 86_400)
        let window = WindowCounts(counts, crashes: crashes)
        let history = shared.withLock { $0.namespaces[state.record.name]?.history } ?? GuardHistory()
        let scopes = try await scopes(
            of: state.flagSet, in: state.record.name, from: now - longest.timeInterval, until: now)
        return GuardCore.overview(of: state.flagSet, window: window, scopes: scopes, history: history, now: now)
    }

    /// The proposals of a namespace, newest first, with what became of each (for the API).
    func proposals(of state: NamespaceState) async throws -> [(
        proposal: GuardHistory.Proposal, state: GuardHistory.ProposalState
    )] {
        try await updateHistory(state.record.name, state: state)
        let history = shared.withLock { $0.namespaces[state.record.name]?.history } ?? GuardHistory()
        return history.proposals.values.sorted { $0.id > $1.id }.map { proposal in
            (proposal, history.state(of: proposal, gate: state.flagSet.flag(proposal.key)?.pluginSwitch))
        }
    }

    /// The trips of a namespace, newest first (for the API).
    func trips(of state: NamespaceState) async throws -> [GuardHistory.Trip] {
        try await updateHistory(state.record.name, state: state)
        let history = shared.withLock { $0.namespaces[state.record.name]?.history } ?? GuardHistory()
        return history.trips.values.sorted { $0.version > $1.version }
    }
}

/// A namespace as the crash guard sees it: every plugin switch, the proposals waiting for a person, and the trip
/// budget.
package struct GuardOverview: Sendable {
    var switches: [SwitchStatus]
    var proposals: [GuardHistory.Proposal]
    /// The guard's own global disables in the last hour.
    var tripsLastHour: Int
    var maximumTripsPerHour: Int
    /// The guard's own scoped disables in the last hour.
    var scopedTripsLastHour: Int
    var maximumScopedTripsPerHour: Int
}

/// One plugin switch as the guard sees it now.
package struct SwitchStatus: Sendable {
    var key: String
    var gate: PluginSwitchDefinition
    var assessment: GuardAssessment
    var from: Date
    var until: Date
    var coolingDownUntil: Date?
    var openTrips: [GuardHistory.Trip]
    var latestTrip: GuardHistory.Trip?
    var openProposals: [GuardHistory.Proposal]

    /// `off` (the policy), `tripped`, `proposed` (a person decides), `disabled` (by a person), `cooling_down`,
    /// `tripping`, `watching`.
    var state: String {
        if !assessment.policy.enabled { return "off" }
        if !openTrips.isEmpty { return "tripped" }
        if !openProposals.isEmpty { return "proposed" }
        if gate.disabled { return "disabled" }
        if coolingDownUntil != nil { return "cooling_down" }
        if assessment.trip != nil { return "tripping" }
        return "watching"
    }
}
