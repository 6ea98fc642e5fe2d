import Foundation
import SwitchyardCore
import SwitchyardGuard
import SwitchyardStorage
import SwitchyardWire

/// The crash guard's records as the API's bodies (`SwitchyardWire`'s `Guard…Body`, which flagctl reads too).
extension View {
    /// A plugin switch as the guard sees it now: the counts of the source shown first (`source`: the one that trips,
    /// else the allowed one with the most sessions), each source's, the trips and proposals in force.
    ///
    /// - Throws: `WireError` when the evidence of one of its trips is not what this flagsd writes.
    static func switchStatus(_ status: SwitchStatus) throws(WireError) -> GuardSwitchStatusBody {
        let assessment = status.assessment
        let primary = assessment.primary
        return GuardSwitchStatusBody(
            key: status.key, state: status.state, source: primary.source.rawValue, check: primary.overall.body,
            window: GuardDurationText.text(assessment.policy.window), from: status.from.iso8601,
            until: status.until.iso8601,
            disabled: status.gate.disabled, disabledScopes: status.gate.disabledScopes,
            coolingDownUntil: status.coolingDownUntil?.iso8601,
            wouldTrip: assessment.trip.map {
                GuardSwitchStatusBody.WouldTrip(scope: $0.scope, scopeText: $0.scopeText)
            },
            scopes: assessment.exceedingScopes.map {
                .init(kind: $0.dimension.kind.rawValue, value: $0.dimension.value, check: $0.check.body)
            },
            sources: assessment.sources.map {
                .init(source: $0.source.rawValue, mayTrip: $0.allowed, check: $0.overall.body)
            },
            openTrips: try status.openTrips.map { trip throws(WireError) in try Self.trip(trip) },
            openProposals: status.openProposals.map(\.id),
            lastTrip: try status.latestTrip.map { trip throws(WireError) in try Self.trip(trip) },
            policy: assessment.policy.policy)
    }

    /// A trip: when, where, why, and whether a person has turned the switch back on (and, on the trips route,
    /// whether it is still in force).
    static func trip(_ trip: GuardHistory.Trip, inForce: Bool? = nil) throws(WireError) -> GuardTripBody {
        GuardTripBody(
            key: trip.key, scope: trip.scope, version: trip.version, time: trip.time.iso8601, actor: trip.actor,
            automatic: trip.isAutomatic, proposal: trip.proposal, reason: trip.reason,
            evidence: try GuardEvidenceBody(json: trip.evidence),
            reenabled: trip.reenabled.map {
                .init(version: $0.version, time: $0.time.iso8601, actor: $0.actor, deleted: $0.deleted)
            },
            inForce: inForce)
    }

    /// A proposal and what became of it.
    static func proposal(_ proposal: GuardHistory.Proposal, state: GuardHistory.ProposalState, namespace: String)
        throws(WireError) -> GuardProposalBody
    {
        GuardProposalBody(
            id: proposal.id, key: proposal.key, scope: proposal.scope, scopeText: proposal.scope.guardText,
            time: proposal.time.iso8601, state: state.rawValue, proposedBecause: proposal.why, reason: proposal.reason,
            evidence: try GuardEvidenceBody(json: proposal.evidence),
            apply: "flagctl guard apply \(proposal.id) -n \(namespace)",
            dismissed: proposal.dismissed.map { .init(time: $0.time.iso8601, actor: $0.actor, reason: $0.reason) })
    }
}
