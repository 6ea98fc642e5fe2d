import Foundation
import Hummingbird
import SwitchyardCore
import SwitchyardGuard
import SwitchyardStorage
import SwitchyardWire

extension API {
    /// The crash guard the guard routes read.
    var crashGuard: CrashGuard {
        get throws {
            guard let guardService else {
                throw APIError(
                    .serviceUnavailable, "no-crash-guard", "No crash guard", "this server runs no crash guard")
            }
            return guardService
        }
    }

    /// `GET /v1/namespaces/{namespace}/guard`: every plugin switch as the crash guard sees it now: sessions,
    /// crashes, rate, lower bound, bound, threshold, state, trips in force, and the cities and cohorts above it;
    /// the trip budget, and the proposals waiting for a person.
    func guardStatus(_ request: Request, context: FlagsRequestContext) async throws -> Response {
        let (namespace, state) = try await readableState(request, context)
        let only = request.uri.queryParameters.get("switch")
        if let only, state.flagSet.flag(only)?.pluginSwitch == nil {
            throw APIError.notFound(
                "namespace '\(namespace)' has no plugin switch '\(only)' (list them with GET /v1/namespaces/\(namespace)/guard)"
            )
        }
        let overview = try await crashGuard.status(of: state)
        let statuses = overview.switches.filter { only == nil || $0.key == only }
        let proposals = overview.proposals.filter { only == nil || $0.key == only }
        return .json(
            GuardOverviewBody(
                namespace: namespace, version: state.record.version, time: Date().iso8601, rule: "wilson-lower-bound",
                maximumTripsPerHour: overview.maximumTripsPerHour, tripsLastHour: overview.tripsLastHour,
                maximumScopedTripsPerHour: overview.maximumScopedTripsPerHour,
                scopedTripsLastHour: overview.scopedTripsLastHour,
                proposals: try proposals.map { proposal throws(WireError) in
                    try View.proposal(proposal, state: .open, namespace: namespace)
                },
                switches: try statuses.map { status throws(WireError) in try View.switchStatus(status) }
            ).json, headers: etagHeaders(state.record))
    }

    /// `GET /v1/namespaces/{namespace}/guard/proposals?state=&switch=&limit=`: the disables the guard proposed
    /// past its budget, newest first, with what became of each (`open`, `applied`, `dismissed`, `superseded`).
    func guardProposals(_ request: Request, context: FlagsRequestContext) async throws -> Response {
        let (namespace, state) = try await readableState(request, context)
        let limit = Int(try queryInteger(request, "limit", default: 50, in: 1...1000)!)
        let only = request.uri.queryParameters.get("switch")
        let wanted = request.uri.queryParameters.get("state") ?? "all"
        let states = ["all", "open", "applied", "dismissed", "superseded"]
        guard states.contains(wanted) else {
            throw APIError.badRequest(
                "query parameter state='\(wanted)' is not one of \(states.joined(separator: ", "))", path: "state")
        }
        let proposals = try await crashGuard.proposals(of: state)
            .filter { (only == nil || $0.proposal.key == only) && (wanted == "all" || $0.state.rawValue == wanted) }
            .prefix(limit)
        return .json(
            GuardProposalsBody(
                namespace: namespace, version: state.record.version,
                proposals: try proposals.map { entry throws(WireError) in
                    try View.proposal(entry.proposal, state: entry.state, namespace: namespace)
                }
            ).json, headers: etagHeaders(state.record))
    }

    /// `POST /v1/namespaces/{namespace}/guard/proposals/{id}/apply`: `{"reason"?}`; disables the proposal's switch
    /// in its scope as the caller's change (source `crash-guard`, the proposal's evidence).
    func applyGuardProposal(_ request: Request, context: FlagsRequestContext) async throws -> Response {
        let (namespace, id, change) = try await proposalDecision(request, context: context, reasonRequired: false)
        let (proposal, result) = try await crashGuard.apply(id, in: namespace, by: change.author)
        let body = try View.proposal(proposal, state: .applied, namespace: namespace)
        return committedResponse(result) { $0.proposal = body }
    }

    /// `POST /v1/namespaces/{namespace}/guard/proposals/{id}/dismiss`: `{"reason"}`; the guard leaves the
    /// proposal's switch and scope alone for its cool-down.
    func dismissGuardProposal(_ request: Request, context: FlagsRequestContext) async throws -> Response {
        let (namespace, id, change) = try await proposalDecision(request, context: context, reasonRequired: true)
        let (proposal, entry) = try await crashGuard.dismiss(id, in: namespace, by: change.author)
        return .json(
            GuardDismissalBody(
                namespace: namespace, dismissed: entry != nil,
                proposal: try View.proposal(proposal, state: .dismissed, namespace: namespace),
                auditID: entry?.id
            ).json)
    }

    /// A person's decision on a proposal (the crash guard's or a release plan's): its namespace, its id and the change
    /// the decision is made as. The body is `{"reason"}`; a dismissal must say why the switch should stay on.
    func proposalDecision(
        _ request: Request, context: FlagsRequestContext,
        reasonRequired: Bool
    ) async throws -> (namespace: String, id: Int64, change: ChangeRequest) {
        let why = reasonRequired ? "say why the switch should stay on (it is recorded in the audit log)" : nil
        let (namespace, token, input) = try await writeInput(request, context) {
            ReasonRequest.read(&$0, requiredBecause: why)
        }
        let id = try proposalID(context)
        return (namespace, id, try changeRequest(request, token: token, reason: input.reason))
    }

    func proposalID(_ context: FlagsRequestContext) throws -> Int64 {
        let text = try parameter("id", context)
        guard let id = Int64(text), id > 0 else {
            throw APIError.badRequest(
                "'\(text)' is not a proposal id (a whole number, as 'flagctl guard status' lists them)", path: "id")
        }
        return id
    }

    /// `GET /v1/namespaces/{namespace}/guard/trips?switch=&limit=`: the guard's trips, newest first, with their
    /// evidence and whether a person has turned the switch back on.
    func guardTrips(_ request: Request, context: FlagsRequestContext) async throws -> Response {
        let (namespace, state) = try await readableState(request, context)
        let limit = Int(try queryInteger(request, "limit", default: 50, in: 1...1000)!)
        let only = request.uri.queryParameters.get("switch")
        let trips = try await crashGuard.trips(of: state).filter { only == nil || $0.key == only }.prefix(limit)
        return .json(
            GuardTripsBody(
                namespace: namespace, version: state.record.version,
                trips: try trips.map { trip throws(WireError) in
                    try View.trip(
                        trip,
                        inForce: trip.reenabled == nil
                            && (state.flagSet.flag(trip.key)?.pluginSwitch?.isDisabled(in: trip.scope) ?? false))
                }
            ).json, headers: etagHeaders(state.record))
    }
}
