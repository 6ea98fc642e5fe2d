package import Foundation
import HTTPTypes
import Logging
import Metrics
package import SwitchyardCore
import SwitchyardGuard
package import SwitchyardStorage

/// A roll-back to off the runner proposes instead of making: the plan's stage is shown worse on clients' sessions
/// alone, whose token ships in every app, so a person confirms before the switch goes off (docs/release-statistics.md).
///
/// A proposal is an audit entry `release.propose` (actor `release-plan`, the check as evidence, with the stage's
/// start `plan_since`); a person confirms it (the plan rolls back to off as their change, evidence naming the
/// proposal) or dismisses it (an audit entry `release.dismiss`). The runner proposes once per stage: while the
/// proposal is open, or after it was dismissed, the stage holds (a person advances, pauses or aborts it).
package struct ReleaseProposal: Sendable, Hashable {
    /// What became of a proposal.
    package enum State: String, Sendable {
        /// Waiting for a person.
        case open
        /// A person confirmed it: the plan rolled back to off.
        case confirmed
        /// A person dismissed it.
        case dismissed
        /// The plan moved on (a person paused, advanced or aborted it) before anyone decided.
        case superseded
    }

    /// The id of its audit entry.
    package var id: Int64
    package var key: String
    package var time: Date
    /// The stage (from 0) it proposes rolling back from.
    package var stage: Int
    /// When that stage began (seconds since 1970): a proposal belongs to one stage of one run.
    package var planSince: Int64
    package var reason: String?
    package var evidence: JSONValue
    package var state: State
    /// Who dismissed it, when and why.
    package var dismissal: (actor: String, time: Date, reason: String?)?

    package static func == (lhs: Self, rhs: Self) -> Bool { lhs.id == rhs.id && lhs.state == rhs.state }
    package func hash(into hasher: inout Hasher) { hasher.combine(id) }

    /// The proposal as JSON, for the API.
    package func json(namespace: String) -> JSONValue {
        var object = JSONObject([
            ("id", .int64(id)), ("switch", .string(key)), ("time", .string(time.iso8601)),
            ("state", .string(state.rawValue)),
            ("proposes", .string("roll_back_to_off")), ("stage", .int(stage)),
            ("reason", reason.map(JSONValue.string) ?? .null),
            ("evidence", evidence),
            ("confirm", .string("flagctl release confirm \(key) \(id) -n \(namespace)")),
            ("dismiss", .string("flagctl release dismiss \(key) \(id) --reason … -n \(namespace)")),
        ])
        if let dismissal {
            object["dismissed_by"] = .string(dismissal.actor)
            object["dismissed_at"] = .string(dismissal.time.iso8601)
            object["dismissed_because"] = dismissal.reason.map(JSONValue.string) ?? .null
        }
        return .object(object)
    }
}

extension ReleasePlanRunner {
    /// A switch's roll-back proposals (newest first), with what became of each given the plan as it is now.
    package func proposals(of key: String, in state: NamespaceState) async throws -> [ReleaseProposal] {
        let page = try await app.store.audit(
            AuditQuery(
                namespace: state.record.name, target: key,
                actions: [.releasePropose, .releaseDismiss], limit: 200))
        var dismissals: [Int64: (actor: String, time: Date, reason: String?)] = [:]
        for entry in page.entries where entry.action == .releaseDismiss {
            if let id = entry.evidence?["proposal"]?.int64Value {
                dismissals[id] = (entry.actor, entry.time, entry.reason)
            }
        }
        let plan = state.flagSet.flag(key)?.pluginSwitch?.release
        return page.entries.compactMap { entry -> ReleaseProposal? in
            guard entry.action == .releasePropose, let evidence = entry.evidence,
                evidence["switch"]?.stringValue == key,
                let since = evidence["plan_since"]?.int64Value, let stage = evidence["stage"]?.int64Value
            else { return nil }
            var proposal = ReleaseProposal(
                id: entry.id, key: key, time: entry.time, stage: Int(stage), planSince: since,
                reason: entry.reason, evidence: evidence, state: .open, dismissal: dismissals[entry.id])
            if proposal.dismissal != nil {
                proposal.state = .dismissed
            } else if let planState = plan?.state, planState.status == .rolledBack,
                planState.note?.contains("proposal \(entry.id) ") == true
            {
                proposal.state = .confirmed
            } else if plan?.state?.status != .running || plan?.state?.since != since {
                proposal.state = .superseded
            }
            return proposal
        }
    }

    /// Proposes rolling a plan back to off, once per stage; false when this stage has a proposal already (open
    /// or dismissed: the stage holds for a person).
    func proposeRollback(_ key: String, plan: ReleasePlan, assessment: Assessment, in state: NamespaceState)
        async throws -> Bool
    {
        guard let since = plan.state?.since else { return false }
        let namespace = state.record.name
        if try await proposals(of: key, in: state).contains(where: { $0.planSince == since }) { return false }
        var evidence = assessment.evidence
        evidence["switch"] = .string(key)
        evidence["plan_since"] = .int64(since)
        evidence["proposes"] = .string("roll_back_to_off")
        let sentence =
            "clients' sessions alone show \(key) worse in stage \(assessment.stage + 1) of \(plan.stages.count); "
            + "rolling it back to off waits for a person"
        let entry = try await app.store.recordAudit(
            AuditNote(
                author: ChangeAuthor(
                    actor: Self.actor, source: .releasePlan, reason: "\(sentence): \(assessment.reason)"),
                action: .releasePropose, namespace: namespace,
                summary: "release plan: propose rolling \(key) back to off", targets: [key],
                evidence: .object(evidence)))
        Counter(
            label: "switchyard_release_steps_total",
            dimensions: [("namespace", namespace), ("switch", key), ("action", "proposed")],
            factory: app.metricsFactory
        ).increment()
        logger.warning(
            "release plan proposes rolling \(key) back to off: \(sentence)",
            metadata: [
                "namespace": .string(namespace), "proposal": .stringConvertible(entry.id), "switch": .string(key),
                "confirm": .string("flagctl release confirm \(key) \(entry.id) -n \(namespace)"),
            ])
        webhook?.announce(
            .object(
                JSONObject([
                    ("event", .string("release_plan.proposed")), ("namespace", .string(namespace)),
                    ("switch", .string(key)),
                    ("proposal", .int64(entry.id)), ("time", .string(entry.time.iso8601)),
                    ("summary", .string(entry.summary)),
                    ("reason", entry.reason.map(JSONValue.string) ?? .null), ("evidence", .object(evidence)),
                    ("confirm", .string("flagctl release confirm \(key) \(entry.id) -n \(namespace)")),
                ])))
        return true
    }

    /// A proposal of a switch, by id, and the namespace it was read at.
    ///
    /// - Throws: `APIError` 404 for an unknown proposal, 409 for one no longer open.
    func openProposal(_ id: Int64, of key: String, in namespace: String) async throws -> (
        ReleaseProposal, NamespaceState
    ) {
        guard let state = try await app.store.namespace(namespace) else {
            throw APIError.namespaceNotFound(namespace)
        }
        guard let proposal = try await proposals(of: key, in: state).first(where: { $0.id == id }) else {
            throw APIError.notFound(
                "'\(key)' has no release proposal \(id) in namespace '\(namespace)' (flagctl release status \(key) lists them)"
            )
        }
        guard proposal.state == .open else {
            throw APIError(
                .conflict, "proposal-settled", "Proposal settled",
                "release proposal \(id) is \(proposal.state.rawValue); see flagctl release status \(key)")
        }
        return (proposal, state)
    }

    /// Confirms a proposal for a person: the plan rolls back to off as their change (source of their token, the
    /// proposal's evidence and id).
    package func confirm(_ id: Int64, of key: String, in namespace: String, by author: ChangeAuthor) async throws
        -> CommittedChange
    {
        let (proposal, state) = try await openProposal(id, of: key, in: namespace)
        var evidence = proposal.evidence.objectValue ?? JSONObject()
        evidence["proposal"] = .int64(id)
        var author = author
        if author.reason?.isEmpty ?? true { author.reason = "confirmed release proposal \(id)" }
        let now = Int64(options.now().timeIntervalSince1970)
        let note =
            "rolled back to off: proposal \(id) confirmed by \(author.actor); resume or abort it (flagctl release resume|abort \(key))"
        let since = proposal.planSince
        let request = ChangeRequest(
            author: author, basedOn: state.record.snapshotVersion,
            summary: "confirm release proposal \(id): roll \(key) back to off", evidence: .object(evidence))
        return try await app.service.change(namespace, request) { flagSet in
            guard let plan = flagSet.flag(key)?.pluginSwitch?.release, plan.state?.status == .running,
                plan.state?.since == since
            else {
                throw APIError(
                    .conflict, "proposal-settled", "Proposal settled",
                    "the release plan of '\(key)' moved on since proposal \(id)")
            }
            // The plan's own rule for a roll-back from here is off (on_bad_signal: off, or the first stage).
            return try flagSet.rollingBackRelease(key, at: now, note: note)
        }
    }

    /// Dismisses a proposal for a person: the switch stays where it is and the stage holds (they advance, pause or
    /// abort it); the reason goes into the audit log.
    package func dismiss(_ id: Int64, of key: String, in namespace: String, by author: ChangeAuthor) async throws
        -> AuditEntry
    {
        _ = try await openProposal(id, of: key, in: namespace)
        return try await app.store.recordAudit(
            AuditNote(
                author: author, action: .releaseDismiss, namespace: namespace,
                summary: "dismiss release proposal \(id) (roll \(key) back to off)", targets: [key],
                evidence: .object(JSONObject([("proposal", .int64(id)), ("switch", .string(key))]))))
    }
}
