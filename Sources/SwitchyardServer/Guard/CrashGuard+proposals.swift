import Foundation
import HTTPTypes
import Logging
import Metrics
import SwitchyardCore
import SwitchyardGuard
import SwitchyardStorage
import SwitchyardWire
import Synchronization

/// The crash guard's proposals: past its budget it proposes a trip instead of making it (an audit entry, a metric,
/// the webhook), and a person applies or dismisses the proposal.
extension CrashGuard {
    /// Records a proposal instead of a trip: an audit entry, a metric, a log line and the webhook.
    func propose(
        _ trip: GuardTrip, because reason: GuardBudget.ProposalReason, in state: NamespaceState, from: Date, now: Date
    ) async throws {
        let namespace = state.record.name
        var evidence = trip.evidence(from: from, until: now)
        evidence.proposedBecause = reason.rawValue
        let where_ = trip.scope.guardWhere
        let sentence = GuardBudget.sentence(reason, policy: trip.policy)
        let entry = try await store.recordAudit(
            AuditNote(
                author: ChangeAuthor(actor: Self.actor, source: .crashGuard, reason: "\(sentence); \(trip.reason)"),
                action: .guardPropose,
                namespace: namespace, summary: "crash guard: propose disabling \(trip.key) \(where_)",
                targets: [trip.key],
                evidence: evidence.json))
        let proposal = GuardHistory.Proposal(
            id: entry.id, key: trip.key, scope: trip.scope, time: entry.time, why: reason.rawValue,
            reason: entry.reason, evidence: evidence.json)
        let open = shared.withLock { shared -> Int in
            shared.namespaces[namespace]?.history.proposals[entry.id] = proposal
            return shared.namespaces[namespace]?.history.openProposals(in: state.flagSet).count ?? 1
        }
        let factory = app.metricsFactory
        Counter(
            label: "switchyard_guard_proposals_total",
            dimensions: [("namespace", namespace), ("switch", trip.key), ("reason", reason.rawValue)], factory: factory
        ).increment()
        count(namespace, "proposed")
        recordOpenProposals(namespace, open)
        logger.warning(
            "crash guard proposes disabling \(trip.key) \(where_): \(sentence)",
            metadata: [
                "namespace": .string(namespace), "proposal": .stringConvertible(entry.id), "switch": .string(trip.key),
                "apply": .string("flagctl guard apply \(entry.id) -n \(namespace)"),
            ])
        webhook?.announce(GuardWebhook.payload(proposal, namespace: namespace, entry: entry))
    }

    /// Applies a proposal for a person: disables its switch in its scope as their change (source `crash-guard`,
    /// with the proposal's evidence and id).
    ///
    /// - Returns: the proposal and the change (nil when the switch was off in that scope already).
    /// - Throws: `APIError` 404 for an unknown proposal, 409 for a dismissed one; a `StorageError`.
    func apply(_ id: Int64, in namespace: String, by author: ChangeAuthor) async throws -> (
        GuardHistory.Proposal, CommittedChange
    ) {
        let (proposal, state) = try await proposal(id, in: namespace)
        if case .dismissed = state {
            throw APIError(
                .conflict, "proposal-dismissed", "Proposal dismissed",
                "crash guard proposal \(id) was dismissed by \(proposal.dismissed?.actor ?? "someone") at \(proposal.dismissed?.time.iso8601 ?? "?"); disable the switch yourself if it should be off"
            )
        }
        var evidence = try GuardEvidenceBody(json: proposal.evidence)
        evidence.proposal = id
        evidence.appliedThrough = author.source.rawValue
        let where_ = proposal.scope.guardWhere
        var author = author
        if author.reason?.isEmpty ?? true { author.reason = "applied crash guard proposal \(id)" }
        let request = ChangeRequest(
            author: ChangeAuthor(actor: author.actor, source: .crashGuard, reason: author.reason),
            summary: "apply crash guard proposal \(id): disable \(proposal.key) \(where_)", evidence: evidence.json)
        let result = try await app.service.change(namespace, request) { current in
            try GuardCore.disabling(proposal.key, in: proposal.scope, expecting: nil, current)
        }
        if let record = result.record {
            shared.withLock { shared in shared.namespaces[namespace]?.history.add(committed: record) }
        }
        await refreshOpenProposals(namespace)
        return (proposal, result)
    }

    /// Dismisses a proposal for a person (and every open proposal of the same switch and scope): the guard leaves
    /// that switch and scope alone for the policy's cool-down.
    ///
    /// - Returns: the proposal, and the audit entry (nil when it was dismissed already).
    /// - Throws: `APIError` 404 for an unknown proposal, 409 for one applied or superseded.
    func dismiss(_ id: Int64, in namespace: String, by author: ChangeAuthor) async throws -> (
        GuardHistory.Proposal, AuditEntry?
    ) {
        let (proposal, state) = try await proposal(id, in: namespace)
        switch state {
        case .dismissed:
            return (proposal, nil)
        case .applied, .superseded:
            throw APIError(
                .conflict, "proposal-settled", "Proposal settled",
                "crash guard proposal \(id) is \(state.rawValue): \(proposal.key) is off \(proposal.scope.guardWhere) already; to turn it back on, 'flagctl enable \(proposal.key)'"
            )
        case .open:
            break
        }
        let where_ = proposal.scope.guardWhere
        let entry = try await store.recordAudit(
            AuditNote(
                author: author, action: .guardDismiss, namespace: namespace,
                summary: "dismiss crash guard proposal \(id) (disable \(proposal.key) \(where_))",
                targets: [proposal.key],
                evidence: .object(
                    JSONObject([
                        ("proposal", .int64(id)), ("switch", .string(proposal.key)),
                        ("scope", .object(proposal.scope.tree)),
                    ]))))
        await refreshOpenProposals(namespace)
        return (proposal, entry)
    }

    /// A proposal of a namespace and what became of it.
    func proposal(_ id: Int64, in namespace: String) async throws -> (GuardHistory.Proposal, GuardHistory.ProposalState)
    {
        guard let state = try await store.namespace(namespace) else { throw APIError.namespaceNotFound(namespace) }
        try await updateHistory(namespace, state: state)
        let history = shared.withLock { $0.namespaces[namespace]?.history } ?? GuardHistory()
        guard let proposal = history.proposals[id] else {
            throw APIError.notFound(
                "namespace '\(namespace)' has no crash guard proposal \(id) in the last 8 days (list them with GET /v1/namespaces/\(namespace)/guard/proposals)"
            )
        }
        return (proposal, history.state(of: proposal, gate: state.flagSet.flag(proposal.key)?.pluginSwitch))
    }

    func refreshOpenProposals(_ namespace: String) async {
        guard let state = try? await store.namespace(namespace) else { return }
        try? await updateHistory(namespace, state: state)
        let open = shared.withLock { $0.namespaces[namespace]?.history.openProposals(in: state.flagSet).count } ?? 0
        recordOpenProposals(namespace, open)
    }

    func recordOpenProposals(_ namespace: String, _ count: Int) {
        Gauge(
            label: "switchyard_guard_open_proposals", dimensions: [("namespace", namespace)],
            factory: app.metricsFactory
        ).record(count)
    }
}
