import Foundation
import SwitchyardCore

/// What the evaluation front end reads: an immutable compiled snapshot, the evaluator prepared for the current
/// context, the slot → handle table, and the local overrides (staleness, crash guard). A new one replaces it on
/// every change; readers hold on to the one they read.
final class ClientState: Sendable {
    let compiled: CompiledSnapshot?
    /// Prepared for the context; over an empty snapshot when there is none (every handle is then missing), so the
    /// hot path reads it in place instead of copying it out of an optional.
    let preparedEvaluator: Evaluator
    /// Slot of a ``PluginSwitch`` or ``ExperimentFlag`` → handle in `compiled`; index -1 when absent.
    let slots: [FlagHandle]
    let origin: SnapshotOrigin?
    let fetchedAt: Date?
    let verifiedAt: Date?
    /// Past this wall-clock time every plugin switch is off (the opt-in staleness policy).
    let staleAfter: Date?
    /// By flag index: forced off by the crash-loop guard. Empty when nothing is.
    let quarantined: [Bool]
    let quarantinedKeys: Set<String>
    let contextGeneration: UInt64

    static let missing = FlagHandle(index: -1)
    /// No snapshot: the core flow.
    static let none = ClientState(
        compiled: nil, context: EvaluationContext(), origin: nil, fetchedAt: nil, verifiedAt: nil,
        stalenessLimit: nil, quarantinedKeys: [], contextGeneration: 0)
    static let empty = CompiledSnapshot(Snapshot(epoch: "", version: -1, flagSet: FlagSet(namespace: "")))

    /// The evaluator, when there is a snapshot.
    var evaluator: Evaluator? { compiled == nil ? nil : preparedEvaluator }

    /// The hot path of ``FlagClient/isEnabled(_:)``.
    @inline(__always)
    func isEnabled(slot: Int32, key: String, wallClock: () -> Date) -> Bool {
        if staleAfter != nil && isStale(now: wallClock()) { return false }
        let handle = handle(slot: slot, key: key)
        guard handle.index >= 0, !isQuarantined(handle) else { return false }
        return preparedEvaluator.isEnabled(handle)
    }

    init(
        compiled: CompiledSnapshot?, context: EvaluationContext, origin: SnapshotOrigin?, fetchedAt: Date?,
        verifiedAt: Date?, stalenessLimit: Duration?, quarantinedKeys: Set<String>, contextGeneration: UInt64
    ) {
        self.compiled = compiled
        preparedEvaluator = (compiled ?? Self.empty).evaluator(for: context)
        self.origin = origin
        self.fetchedAt = fetchedAt
        self.verifiedAt = verifiedAt
        self.contextGeneration = contextGeneration
        self.quarantinedKeys = quarantinedKeys
        if let compiled {
            slots = SlotRegistry.shared.keys.map { compiled.handle(for: $0) ?? Self.missing }
            if quarantinedKeys.isEmpty {
                quarantined = []
            } else {
                var flags = [Bool](repeating: false, count: compiled.flagCount)
                for key in quarantinedKeys {
                    if let handle = compiled.handle(for: key) { flags[Int(handle.index)] = true }
                }
                quarantined = flags
            }
            let reference = verifiedAt ?? fetchedAt
            staleAfter = stalenessLimit.flatMap { limit in reference.map { $0.addingTimeInterval(limit.secondsValue) } }
        } else {
            slots = []
            quarantined = []
            staleAfter = nil
        }
    }

    /// The same state with a slot table covering every switch registered so far.
    init(extending other: ClientState) {
        compiled = other.compiled
        preparedEvaluator = other.preparedEvaluator
        origin = other.origin
        fetchedAt = other.fetchedAt
        verifiedAt = other.verifiedAt
        staleAfter = other.staleAfter
        quarantined = other.quarantined
        quarantinedKeys = other.quarantinedKeys
        contextGeneration = other.contextGeneration
        if let compiled = other.compiled {
            slots = SlotRegistry.shared.keys.map { compiled.handle(for: $0) ?? Self.missing }
        } else {
            slots = []
        }
    }

    /// Whether a slot lies beyond the table (a switch created after this state was built).
    @inline(__always)
    func lacksSlot(_ slot: Int32) -> Bool {
        compiled != nil && Int(UInt32(bitPattern: slot)) >= slots.count
    }

    /// The handle of a slot (a string lookup only for keys registered after this state was built).
    @inline(__always)
    func handle(slot: Int32, key: String) -> FlagHandle {
        let index = Int(UInt32(bitPattern: slot))
        if index < slots.count { return slots[index] }
        return compiled?.handle(for: key) ?? Self.missing
    }

    @inline(__always)
    func isQuarantined(_ handle: FlagHandle) -> Bool {
        !quarantined.isEmpty && quarantined[Int(handle.index)]
    }

    @inline(__always)
    func isStale(now: Date) -> Bool {
        guard let staleAfter else { return false }
        return now >= staleAfter
    }

    /// The plugin switches whose evaluation for the prepared context a rollout split decided (reason `SPLIT`), in
    /// snapshot order, each with whether the split put the unit in; at most `limit`.
    ///
    /// Empty without a snapshot or past the staleness limit (every switch is then off whatever its split says);
    /// switches the crash-loop guard holds off are left out for the same reason. Walks the compiled table through
    /// handles: no string lookup, and allocation only for the switches it lists.
    func splitSwitches(now: Date, limit: Int) -> [(key: String, isOn: Bool)] {
        guard let compiled, limit > 0, !isStale(now: now) else { return [] }
        let flags = compiled.snapshot.flagSet.flags
        var splits: [(key: String, isOn: Bool)] = []
        for index in 0..<Int32(min(compiled.flagCount, flags.count)) {
            let handle = FlagHandle(index: index)
            let evaluation = preparedEvaluator.evaluateSwitch(handle)
            guard evaluation.reason == .split, !isQuarantined(handle) else { continue }
            splits.append((flags[Int(index)].key, evaluation.isOn))
            if splits.count == limit { break }
        }
        return splits
    }

    var snapshotInfo: SnapshotInfo? {
        guard let compiled, let origin else { return nil }
        return SnapshotInfo(
            namespace: compiled.namespace, epoch: compiled.epoch, version: compiled.version, origin: origin,
            fetchedAt: fetchedAt ?? Date(timeIntervalSince1970: 0))
    }
}
