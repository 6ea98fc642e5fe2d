import Foundation
public import SwitchyardCore

extension FlagClient {
    /// Whether a plugin switch is on for the current context.
    ///
    /// Synchronous and thread-safe; no I/O, no string lookup, no allocation. Off when there is no snapshot, the
    /// flag is missing or is not a plugin switch, the snapshot is stale under the staleness policy, or the
    /// crash-loop guard holds the switch off on this device.
    @inline(__always)
    public func isEnabled(_ pluginSwitch: PluginSwitch) -> Bool {
        var state = shared.withLock { $0.state }
        if state.lacksSlot(pluginSwitch.slot) { state = stateWithCurrentSlots() }
        return state.isEnabled(slot: pluginSwitch.slot, key: pluginSwitch.key, wallClock: wallClock)
    }

    /// A plugin switch's value with its reason, variant and metadata (for logs, debug screens, `explain`).
    ///
    /// The reason is `CACHED` while the snapshot comes from the bundle or the disk, `STALE` past the
    /// staleness limit, and `DISABLED` with `crash_loop_guard` metadata when the crash-loop guard holds the switch
    /// off. Allocates; use ``isEnabled(_:)`` on hot paths.
    public func details(for pluginSwitch: PluginSwitch) -> EvaluationDetails {
        switchDetails(key: pluginSwitch.key, slot: pluginSwitch.slot)
    }

    func switchDetails(key: String, slot: Int32) -> EvaluationDetails {
        let state = shared.withLock { $0.state }
        guard let evaluator = state.evaluator, let compiled = state.compiled else {
            return Self.noSnapshotDetails(key)
        }
        let now = wallClock()
        if state.isStale(now: now) {
            return staleDetails(key, state: state, value: .boolean(false), variant: "off")
        }
        let handle = state.handle(slot: slot, key: key)
        guard handle.index >= 0 else { return evaluator.details(for: key) }
        var details = evaluator.details(for: handle, evaluation: evaluator.evaluateSwitch(handle))
        if state.isQuarantined(handle) {
            let crashes =
                shared.withLock { $0.guardState.quarantined[key]?.crashes }
                ?? configuration.crashLoopGuard.consecutiveCrashes
            details.value = .boolean(false)
            details.variant = "off"
            details.reason = .disabled
            details.errorCode = nil
            details.decidedBy =
                "the on-device crash-loop guard: the switch was active in \(crashes) crashed sessions in a row on this device"
            details.metadata["crash_loop_guard"] = .bool(true)
            details.metadata["consecutive_crashes"] = .int(crashes)
            return details
        }
        return markCached(details, state: state, compiled: compiled)
    }

    /// An experiment flag's value for the current context; the flag's code default when there is no snapshot,
    /// the flag is missing or has another type, or the snapshot is stale.
    ///
    /// Synchronous and thread-safe. Records the variant in the session (its `session` event lists the variants
    /// served, for per-variant crash rates) and reports an exposure (once per flag, variant, snapshot version
    /// and context) unless ``EventPolicy/recordsExposures`` is off.
    public func value<Value>(of flag: ExperimentFlag<Value>) -> Value {
        var state = shared.withLock { $0.state }
        if state.lacksSlot(flag.slot) { state = stateWithCurrentSlots() }
        guard let compiled = state.compiled else { return flag.defaultValue }
        if state.staleAfter != nil && state.isStale(now: wallClock()) { return flag.defaultValue }
        let handle = state.handle(slot: flag.slot, key: flag.key)
        guard handle.index >= 0, let experiment = compiled.snapshot.flagSet.flags[Int(handle.index)].experiment else {
            return flag.defaultValue
        }
        let evaluation = state.preparedEvaluator.evaluate(handle)
        let index = Int(evaluation.variantIndex)
        guard experiment.variants.indices.contains(index),
            let value = Value(flagValue: experiment.variants[index].value)
        else {
            return flag.defaultValue
        }
        if evaluation.reason == .split || evaluation.reason == .targetingMatch {
            recordServed(
                slot: flag.slot, key: flag.key, variantIndex: evaluation.variantIndex,
                variant: experiment.variants[index].key, state: state, compiled: compiled)
        }
        return value
    }

    /// An experiment flag's evaluation with its variant, reason and metadata. Reports no exposure.
    public func details<Value>(for flag: ExperimentFlag<Value>) -> EvaluationDetails {
        let state = shared.withLock { $0.state }
        guard let evaluator = state.evaluator, let compiled = state.compiled else {
            return Self.noSnapshotDetails(flag.key, value: FlagValue.boolean(false))
        }
        if state.isStale(now: wallClock()) {
            return staleDetails(flag.key, state: state, value: .boolean(false), variant: "default")
        }
        return markCached(evaluator.details(for: flag.key), state: state, compiled: compiled)
    }

    /// Any flag by key, with reasons as ``details(for:)-(PluginSwitch)`` gives them.
    public func details(forKey key: String) -> EvaluationDetails {
        let state = shared.withLock { $0.state }
        if let compiled = state.compiled, compiled.snapshot.flagSet.flag(key)?.experiment == nil {
            return switchDetails(key: key, slot: -1)
        }
        guard let evaluator = state.evaluator, let compiled = state.compiled else { return Self.noSnapshotDetails(key) }
        if state.isStale(now: wallClock()) {
            return staleDetails(key, state: state, value: .boolean(false), variant: "default")
        }
        return markCached(evaluator.details(for: key), state: state, compiled: compiled)
    }

    // MARK: Helpers

    static func noSnapshotDetails(_ key: String, value: FlagValue = .boolean(false)) -> EvaluationDetails {
        EvaluationDetails(
            flagKey: key, value: value, variant: "off", reason: .error, errorCode: .providerNotReady,
            errorMessage: "no snapshot yet: no bundled snapshot, no usable cache and no answer from the server",
            decidedBy: "no snapshot: the core flow")
    }

    func staleDetails(_ key: String, state: ClientState, value: FlagValue, variant: String) -> EvaluationDetails {
        var metadata = JSONObject()
        metadata["stale"] = .bool(true)
        if let reference = state.verifiedAt ?? state.fetchedAt {
            metadata["age_seconds"] = .int64(Int64(wallClock().timeIntervalSince(reference)))
        }
        let limit = configuration.stalenessLimit.map { Int64($0.secondsValue) } ?? 0
        return EvaluationDetails(
            flagKey: key, value: value, variant: variant, reason: .stale,
            decidedBy:
                "the snapshot has not been confirmed by the server for more than \(limit) s (the staleness policy)",
            metadata: metadata)
    }

    func markCached(_ details: EvaluationDetails, state: ClientState, compiled: CompiledSnapshot) -> EvaluationDetails {
        var details = details
        details.metadata["snapshot_version"] = .int64(compiled.version)
        if let origin = state.origin { details.metadata["snapshot_origin"] = .string(origin.rawValue) }
        if state.origin != .server && details.errorCode == nil {
            details.metadata["cached_reason"] = .string(details.reason.openFeatureName)
            details.reason = .cached
        }
        return details
    }

    /// Records a variant served: in the session record (the first variant of each flag) and, unless exposures
    /// are off, as an exposure event. Once per flag, variant, snapshot version and context; later calls only
    /// take a lock.
    func recordServed(
        slot: Int32, key: String, variantIndex: Int32, variant: String, state: ClientState,
        compiled: CompiledSnapshot
    ) {
        let exposureKey = ExposureKey(
            slot: slot, variant: variantIndex, version: compiled.version,
            contextGeneration: state.contextGeneration)
        let isNew = exposures.withLock { seen in
            if seen.count > 10_000 { seen.removeAll(keepingCapacity: true) }
            return seen.insert(exposureKey).inserted
        }
        guard isNew else { return }
        recordVariant(variant, of: key)
        guard configuration.events.recordsExposures else { return }
        let context = shared.withLock { $0.context }
        let now = wallClock()
        enqueue(
            ClientEvent.exposure(
                flag: key, variant: variant, epoch: compiled.epoch, version: compiled.version,
                unit: unitDigest(of: context), context: context, id: ClientEvent.newID(at: now), time: now))
    }
}

/// The plugin switch states of a client as they were at one moment: later snapshots, context changes and crash
/// guard decisions do not change what it answers. A plugin host re-routes every point of one step through one of
/// these, so no point sees an older state than another.
package struct FrozenSwitchStates: Sendable {
    private let state: ClientState
    private let wallClock: @Sendable () -> Date

    fileprivate init(state: ClientState, wallClock: @escaping @Sendable () -> Date) {
        self.state = state
        self.wallClock = wallClock
    }

    /// ``FlagClient/isEnabled(_:)`` in the frozen state (staleness is still judged against the wall clock).
    @inline(__always)
    package func isEnabled(_ pluginSwitch: PluginSwitch) -> Bool {
        state.isEnabled(slot: pluginSwitch.slot, key: pluginSwitch.key, wallClock: wallClock)
    }
}

extension FlagClient {
    /// The current plugin switch states, frozen (see ``FrozenSwitchStates``).
    package func frozenSwitchStates() -> FrozenSwitchStates {
        FrozenSwitchStates(state: stateWithCurrentSlots(), wallClock: wallClock)
    }
}
