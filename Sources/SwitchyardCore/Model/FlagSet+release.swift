/// Edits of release plans: what people ask for (start, pause, resume, advance, abort) and what flagsd's runner
/// decides (advance, complete, roll back). Each sets the plan's state and, when the stage changes, the switch's
/// targeting, in one flag set: one change, one version, one audit entry. Times are seconds since 1970 (UTC).
///
/// ```swift
/// let after = try flagSet.advancingRelease("plugin_switch_feed_promos", at: now, note: "stage 1 passed: …")
/// ```
/// What a person may do to a release plan: the API's routes and flagctl's subcommands.
public enum ReleaseAction: String, Sendable, CaseIterable {
    case start, pause, resume, advance, abort

    /// `started`, `paused`, `resumed`, `advanced`, `aborted`.
    public var pastTense: String {
        switch self {
        case .start: "started"
        case .pause: "paused"
        case .resume: "resumed"
        case .advance: "advanced"
        case .abort: "aborted"
        }
    }
}

extension FlagSet {
    /// A person's action on a switch's plan (`plan`: for `start`, the plan to start instead of the declared one).
    /// flagsd applies it; flagctl tries it on the flag set it read, to refuse what flagsd would before asking.
    public func applying(
        _ action: ReleaseAction, to key: String, plan: ReleasePlan? = nil, guardrails: [ReleaseGuardrail]? = nil,
        at now: Int64, note: String?
    ) throws(FlagEditError) -> FlagSet {
        switch action {
        case .start: try startingRelease(key, plan: plan, guardrails: guardrails, at: now, note: note)
        case .pause: try pausingRelease(key, at: now, note: note)
        case .resume: try resumingRelease(key, at: now, note: note)
        case .advance: try advancingRelease(key, at: now, note: note)
        case .abort: try abortingRelease(key, at: now, note: note)
        }
    }

    /// Starts a switch's plan at its first stage (a new plan when given, else the declared one): sets the first
    /// stage's targeting. A plan that is already running is refused (pause or abort it first).
    ///
    /// - Parameter guardrails: when given, they replace the plan's (the declared one's or the given one's).
    public func startingRelease(
        _ key: String, plan: ReleasePlan?, guardrails: [ReleaseGuardrail]? = nil, at now: Int64,
        note: String? = nil
    ) throws(FlagEditError) -> FlagSet {
        var result = self
        var (index, gate) = try switchIndex(key, for: "a release plan")
        guard var started = plan?.declared ?? gate.release?.declared else {
            throw FlagEditError.invalid(
                "'\(key)' has no release plan; pass the stages (flagctl release start \(key) --stage …) or declare release: in its flag file",
                path: "plan")
        }
        if let guardrails { started.guardrails = guardrails }
        if let state = gate.release?.state, state.isActive {
            throw FlagEditError(
                .conflict,
                "the release plan of '\(key)' is \(state.status.rawValue) at stage \(state.stage.map(String.init) ?? "none"); resume, advance or abort it instead of starting it again"
            )
        }
        guard !started.stages.isEmpty else {
            throw FlagEditError.invalid("a release plan needs at least one stage", path: "plan.stages")
        }
        // A switch that reaches nobody has no limits of its own to give; one its last plan left off keeps that plan's.
        let standing = ReleaseLimits(rules: gate.rules, rollout: gate.rollout)
        let reachesNobody = gate.rollout == .off && gate.rules.allSatisfy { $0.rollout == .off }
        let limits = reachesNobody ? gate.release?.state?.limits ?? standing : standing
        started.state = ReleaseState(status: .running, stage: 0, since: now, note: note, limits: limits)
        gate.release = started
        (gate.rules, gate.rollout) = started.targeting(at: 0)
        result.flags[index].pluginSwitch = gate
        return result
    }

    /// Stops a running plan where it is, for a person.
    public func pausingRelease(_ key: String, at now: Int64, note: String?) throws(FlagEditError) -> FlagSet {
        try editingRelease(key, allowed: [.running], verb: "pause") { plan, _ in
            plan.enter(.paused, stage: plan.state?.stage, at: now, note: note)
        }
    }

    /// Runs a paused or rolled-back plan again from its stage: puts the stage's targeting back (a person may have
    /// changed it) and counts the stage's evidence from now on.
    public func resumingRelease(_ key: String, at now: Int64, note: String?) throws(FlagEditError) -> FlagSet {
        try editingRelease(key, allowed: [.paused, .rolledBack], verb: "resume") { plan, gate in
            let stage = plan.state?.stage ?? 0
            plan.enter(.running, stage: stage, at: now, note: note)
            (gate.rules, gate.rollout) = plan.targeting(at: stage)
        }
    }

    /// Moves a plan to its next stage (a person's decision or the runner's), or completes it after the last one.
    public func advancingRelease(_ key: String, at now: Int64, note: String?) throws(FlagEditError) -> FlagSet {
        try editingRelease(key, allowed: [.running, .paused, .rolledBack], verb: "advance") { plan, gate in
            let next = plan.state?.stage.map { $0 + 1 } ?? 0
            if next >= plan.stages.count {
                plan.enter(.completed, stage: plan.stages.count - 1, at: now, note: note)
                (gate.rules, gate.rollout) = plan.completedTargeting
            } else {
                plan.enter(.running, stage: next, at: now, note: note)
                (gate.rules, gate.rollout) = plan.targeting(at: next)
            }
        }
    }

    /// Steps a running plan back on a bad signal: to the previous stage (off before the first) or off, per plan;
    /// it then waits for a person (`rolled_back`).
    public func rollingBackRelease(_ key: String, at now: Int64, note: String?) throws(FlagEditError) -> FlagSet {
        try editingRelease(key, allowed: [.running], verb: "roll back") { plan, gate in
            let current = plan.state?.stage ?? 0
            let target: Int? = plan.onBadSignal == .off || current == 0 ? nil : current - 1
            plan.enter(.rolledBack, stage: target, at: now, note: note)
            (gate.rules, gate.rollout) = plan.targeting(at: target)
        }
    }

    /// Stops a plan for good; the switch's targeting stays as it is.
    public func abortingRelease(_ key: String, at now: Int64, note: String?) throws(FlagEditError) -> FlagSet {
        try editingRelease(key, allowed: [.running, .paused, .rolledBack], verb: "abort") { plan, _ in
            plan.enter(.aborted, stage: plan.state?.stage, at: now, note: note)
        }
    }

    private func editingRelease(
        _ key: String, allowed: Set<ReleaseState.Status>, verb: String,
        _ edit: (inout ReleasePlan, inout PluginSwitchDefinition) -> Void
    ) throws(FlagEditError) -> FlagSet {
        var result = self
        var (index, gate) = try switchIndex(key, for: "a release plan")
        guard var plan = gate.release else {
            throw FlagEditError.notFound(
                "'\(key)' has no release plan (start one with flagctl release start \(key) --stage …)")
        }
        guard let state = plan.state, allowed.contains(state.status) else {
            let status = plan.state?.status.rawValue ?? "not started"
            throw FlagEditError(
                .conflict,
                "the release plan of '\(key)' is \(status); only a \(allowed.map(\.rawValue).sorted().joined(separator: " or ")) plan can \(verb)"
            )
        }
        edit(&plan, &gate)
        gate.release = plan
        result.flags[index].pluginSwitch = gate
        return result
    }

    /// The plans an edit by someone other than the plan's runner interrupted, stopped and saying why: a running
    /// plan whose switch's targeting or disables changed is paused (`by crash guard`: aborted).
    ///
    /// - Parameters:
    ///   - before: the flag set before the edit.
    ///   - actor: who made it (named in the note).
    ///   - summary: what the edit was (named in the note).
    ///   - isCrashGuard: whether the edit is the crash guard's trip (it aborts instead of pausing).
    public func stoppingInterruptedReleases(
        since before: FlagSet, actor: String, summary: String?, isCrashGuard: Bool,
        at now: Int64
    ) -> FlagSet {
        var result = self
        // Most switches have no running plan: they are passed over without copying them.
        for index in result.flags.indices where result.flags[index].hasRunningRelease {
            guard var gate = result.flags[index].pluginSwitch, var plan = gate.release,
                let old = before.flag(result.flags[index].key)?.pluginSwitch, old.release?.state == plan.state
            else { continue }
            guard
                old.disabled != gate.disabled || old.disabledScopes != gate.disabledScopes || old.rules != gate.rules
                    || old.rollout != gate.rollout
            else { continue }
            let what = summary.map { " (\($0))" } ?? ""
            plan.enter(
                isCrashGuard ? .aborted : .paused, stage: plan.state?.stage, at: now,
                note: isCrashGuard
                    ? "aborted: the crash guard disabled the switch\(what)"
                    : "paused: \(actor) changed the switch\(what); resume to put the stage's targeting back")
            gate.release = plan
            result.flags[index].pluginSwitch = gate
        }
        return result
    }

    /// A flag set restored from history (a revert) with the release states of `current`: a plan's progress is flagsd's,
    /// never restored. A restored plan declared as the switch's plan is now keeps that plan's state (so a revert of its
    /// targeting is a person's change, which pauses it); one declared otherwise is not started.
    public func keepingReleaseStates(of current: FlagSet) -> FlagSet {
        var result = self
        for index in result.flags.indices {
            guard var gate = result.flags[index].pluginSwitch, let plan = gate.release else { continue }
            let now = current.flag(result.flags[index].key)?.pluginSwitch?.release
            let state = now.flatMap { $0.declared == plan.declared ? $0.state : nil }
            guard state != plan.state else { continue }
            gate.release?.state = state
            result.flags[index].pluginSwitch = gate
        }
        return result
    }

    /// An incoming flag set (`flagctl apply`, a whole document) with the release progress of `current` kept: for
    /// every switch it declares the same plan for (stages and settings) without a state, the plan's state (with its
    /// limits) and the targeting the plan set, whether it runs, waits, completed or was aborted: a document repeating
    /// a started plan never fights it. A plan declared differently starts over (not started), with the document's
    /// targeting.
    public func keepingReleaseProgress(of current: FlagSet) -> FlagSet {
        var result = self
        for index in result.flags.indices {
            guard var gate = result.flags[index].pluginSwitch, let plan = gate.release, plan.state == nil,
                let old = current.flag(result.flags[index].key)?.pluginSwitch, let oldPlan = old.release,
                let state = oldPlan.state, plan.declared == oldPlan.declared
            else { continue }
            gate.release?.state = state
            gate.rules = old.rules
            gate.rollout = old.rollout
            result.flags[index].pluginSwitch = gate
        }
        return result
    }
}

extension ReleasePlan {
    /// Puts the plan in a status and stage from now, keeping the limits it started with.
    fileprivate mutating func enter(_ status: ReleaseState.Status, stage: Int?, at now: Int64, note: String?) {
        state = ReleaseState(status: status, stage: stage, since: now, note: note, limits: state?.limits ?? .none)
    }
}
