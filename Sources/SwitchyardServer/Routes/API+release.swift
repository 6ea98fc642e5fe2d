import Foundation
import Hummingbird
import SwitchyardCore
import SwitchyardGuard
import SwitchyardStorage
import SwitchyardWire

extension API {
    /// The release plans' runner the release routes read.
    var releaseRunner: ReleasePlanRunner {
        get throws {
            guard let releasePlans else {
                throw APIError(
                    .serviceUnavailable, "no-release-plans", "No release plans", "this server runs no release plans")
            }
            return releasePlans
        }
    }

    /// `GET /v1/namespaces/{namespace}/releases`: every switch with a release plan, with where it is and what it waits for.
    func listReleases(_ request: Request, context: FlagsRequestContext) async throws -> Response {
        let (namespace, state) = try await readableState(request, context)
        var releases: [ReleaseStatusBody] = []
        for flag in state.flagSet.flags where flag.pluginSwitch?.release != nil {
            releases.append(try await releaseStatus(flag.key, in: state, timeline: 0))
        }
        return .json(
            ListBody(items: releases, namespace: (namespace, state.record.version)).json,
            headers: etagHeaders(state.record))
    }

    /// `GET /v1/namespaces/{namespace}/flags/{key}/release`: the plan, its stage and time in it, the sessions and crash
    /// rates with and without the switch, the next decision and what it waits for, and the plan's timeline.
    func getRelease(_ request: Request, context: FlagsRequestContext) async throws -> Response {
        let (namespace, state) = try await readableState(request, context)
        let key = try parameter("key", context)
        let (_, gate) = try state.flagSet.switchIndex(key, for: "a release plan")
        guard gate.release != nil else {
            throw APIError.notFound(
                "'\(key)' has no release plan in namespace '\(namespace)' (start one with POST /v1/namespaces/\(namespace)/flags/\(key)/release/start)"
            )
        }
        let limit = Int(try queryInteger(request, "timeline", default: 50, in: 0...500)!)
        return .json(try await releaseStatus(key, in: state, timeline: limit).json, headers: etagHeaders(state.record))
    }

    /// `POST /v1/namespaces/{namespace}/flags/{key}/release/{start|pause|resume|advance|abort}`: `{"reason"?}`, and
    /// for `start` an optional `plan` (as under `release:`, rollouts in basis points; without it, the declared plan)
    /// and optional `guardrails` (as under `release:`: `{"trip_booked": "-0.5pp"}`), which replace the plan's.
    func releaseAction(_ request: Request, context: FlagsRequestContext, action: ReleaseAction) async throws -> Response
    {
        let (namespace, token, input) = try await writeInput(request, context) {
            ReleaseActionRequest.read(&$0, action: action)
        }
        let key = try parameter("key", context)
        let (newPlan, newGuardrails, reason) = (input.plan, input.guardrails, input.reason)
        let now = Int64(app.store.now().timeIntervalSince1970)
        let by = reason.map { "\(token.name): \($0)" } ?? token.name
        let change = try changeRequest(
            request, token: token, reason: reason, summary: "release \(action.rawValue) \(key)")
        let result = try await app.service.change(namespace, change) { flagSet in
            try flagSet.applying(
                action, to: key, plan: newPlan, guardrails: newGuardrails, at: now, note: "\(action.pastTense) by \(by)"
            )
        }
        let status = try await releaseStatus(key, in: result.state, timeline: 0)
        return committedResponse(result) { $0.release = status }
    }

    /// `POST /v1/namespaces/{namespace}/flags/{key}/release/proposals/{id}/confirm`: `{"reason"?}`; rolls the plan
    /// back to off as the caller's change, with the proposal's evidence.
    func confirmReleaseProposal(_ request: Request, context: FlagsRequestContext) async throws -> Response {
        let (namespace, id, decision) = try await proposalDecision(request, context: context, reasonRequired: false)
        var change = decision
        change.summary = "confirm release proposal \(id)"
        let key = try parameter("key", context)
        let result = try await releaseRunner.confirm(id, of: key, in: namespace, by: change.author)
        let status = try await releaseStatus(key, in: result.state, timeline: 0)
        return committedResponse(result) { $0.release = status }
    }

    /// `POST /v1/namespaces/{namespace}/flags/{key}/release/proposals/{id}/dismiss`: `{"reason"}`; the switch stays
    /// where it is and the stage holds for a person.
    func dismissReleaseProposal(_ request: Request, context: FlagsRequestContext) async throws -> Response {
        let (namespace, id, change) = try await proposalDecision(request, context: context, reasonRequired: true)
        let key = try parameter("key", context)
        let entry = try await releaseRunner.dismiss(id, of: key, in: namespace, by: change.author)
        guard let state = try await store.namespace(namespace) else { throw APIError.namespaceNotFound(namespace) }
        return .json(
            ReleaseDismissalBody(
                namespace: namespace, proposal: id, auditID: entry.id,
                release: try await releaseStatus(key, in: state, timeline: 0)
            ).json)
    }

    /// A switch's release status at a state of its namespace, with up to `timeline` steps of its history.
    func releaseStatus(_ key: String, in state: NamespaceState, timeline limit: Int) async throws -> ReleaseStatusBody {
        let (_, gate) = try state.flagSet.switchIndex(key, for: "a release plan")
        guard let plan = gate.release else { throw APIError.notFound("'\(key)' has no release plan") }
        let runner = try releaseRunner
        let now = runner.options.now()
        var assessmentBody: ReleaseStatusBody.Assessment?
        var next: String
        let planState = plan.state
        switch planState?.status {
        case nil:
            next = "not started: flagctl release start \(key) (or POST …/flags/\(key)/release/start)"
        case .running?:
            if let assessment = try await runner.assess(key, plan: plan, in: state) {
                assessmentBody = ReleaseStatusBody.Assessment(
                    from: assessment.from.iso8601, until: assessment.until.iso8601,
                    dimensions: assessment.dimensions.map(\.description),
                    with: .init(
                        sessions: assessment.check.with.sessions, crashes: assessment.check.with.crashedSessions),
                    without: .init(
                        sessions: assessment.check.without.sessions, crashes: assessment.check.without.crashedSessions),
                    control: assessment.check.control.rawValue, verdict: assessment.verdict.rawValue,
                    reasons: assessment.reasons,
                    decidedBy: assessment.decidedBy, guardrails: assessment.guardrails.map(\.body),
                    evidence: .object(assessment.evidence))
                let stage = assessment.stage
                let reasons = assessment.reason
                switch assessment.verdict {
                case .hold:
                    next =
                        stage + 1 < plan.stages.count
                        ? "advances to stage \(stage + 2) of \(plan.stages.count) (\(plan.stages[stage + 1])); held by: \(reasons)"
                        : "completes; held by: \(reasons)"
                case .advance:
                    next =
                        stage + 1 < plan.stages.count
                        ? "advances to stage \(stage + 2) of \(plan.stages.count) (\(plan.stages[stage + 1])) at the next look"
                        : "completes at the next look"
                case .rollBack:
                    let toOff = plan.onBadSignal == .off || stage == 0
                    next =
                        toOff && assessment.source == .client
                        ? "proposes rolling back to off (a person confirms: clients' evidence alone): \(reasons)"
                        : "rolls back at the next look: \(reasons)"
                }
            } else {
                next = "running"
            }
        case .paused?:
            next =
                "paused; resume with flagctl release resume \(key) (the stage's targeting is put back, its evidence counted anew)"
        case .rolledBack?:
            let stage = planState?.stage.map { "stage \($0 + 1) (\(plan.stages[$0]))" } ?? "off"
            next = "rolled back to \(stage); resume to run it again from there, or abort"
        case .completed?:
            next = "completed: every stage passed"
        case .aborted?:
            next = "aborted; start it again with flagctl release start \(key)"
        }
        let seconds = planState.map { Int64(now.timeIntervalSince1970) - $0.since }
        let proposals = try await runner.proposals(of: key, in: state).filter {
            $0.planSince == planState?.since || $0.state == .confirmed
        }
        if let open = proposals.first(where: { $0.state == .open }) {
            next =
                "waits for a person: proposal \(open.id) rolls \(key) back to off on clients' evidence alone "
                + "(flagctl release confirm \(key) \(open.id), or flagctl release dismiss \(key) \(open.id) --reason …)"
        } else if planState?.status == .running, let dismissed = proposals.first(where: { $0.state == .dismissed }) {
            next =
                "holds: proposal \(dismissed.id) to roll back to off was dismissed by \(dismissed.dismissal?.actor ?? "someone"); "
                + "advance, pause or abort it by hand (it is not proposed again in this stage)"
        }
        var body = ReleaseStatusBody(
            namespace: state.record.name, key: key, version: state.record.version, plan: plan,
            secondsInState: seconds, assessment: assessmentBody, next: next,
            timeline: limit > 0 ? try await releaseTimeline(key, namespace: state.record.name, limit: limit) : [])
        body.proposals = proposals.prefix(5).map { proposal in
            ReleaseStatusBody.Proposal(
                id: proposal.id, time: proposal.time.iso8601, state: proposal.state.rawValue, stage: proposal.stage,
                reason: proposal.reason)
        }
        return body
    }

    /// The changes that moved a switch's plan (its state before and after differ), newest first.
    func releaseTimeline(_ key: String, namespace: String, limit: Int) async throws -> [ReleaseStatusBody.Event] {
        let page = try await store.audit(AuditQuery(namespace: namespace, target: key, limit: 500))
        var events: [ReleaseStatusBody.Event] = []
        for entry in page.entries {
            guard let change = entry.changes.first(where: { $0.kind == .flag && $0.key == key }) else { continue }
            let before = change.before?["release"]?["state"]
            let after = change.after?["release"]?["state"]
            guard before != after else { continue }
            events.append(
                ReleaseStatusBody.Event(
                    time: entry.time.iso8601, actor: entry.actor, source: entry.source.rawValue, version: entry.version,
                    summary: entry.summary, reason: entry.reason, state: after.flatMap { try? ReleaseState(tree: $0) },
                    evidence: entry.evidence))
            if events.count >= limit { break }
        }
        return events
    }
}
