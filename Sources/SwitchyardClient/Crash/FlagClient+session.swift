import Foundation
import SwitchyardCore

extension FlagClient {
    /// Records that a plugin behind this switch is being created in this session, for crash attribution.
    ///
    /// Plugin points call it before building a plugin. The first call per switch and session rewrites the small
    /// session record on disk (so a crash right after still names the switch); later calls only take a lock.
    public func recordActive(_ pluginSwitch: PluginSwitch) {
        let state = shared.withLock { $0.state }
        // The record is written under the lock (so writes land in order); failures are reported after it.
        let failure: ClientError? = session.withLock { session in
            guard session.record.end != nil || !session.activeSlots.contains(pluginSwitch.slot) else { return nil }
            if !session.activeSlots.contains(pluginSwitch.slot) {
                session.activeSlots.insert(pluginSwitch.slot)
                let definition = state.compiled?.snapshot.flagSet.flag(pluginSwitch.key)
                session.record.switches.append(
                    SessionRecord.ActiveSwitch(
                        key: pluginSwitch.key, epoch: state.compiled?.epoch, version: state.compiled?.version,
                        definition: definition?.fingerprint))
            }
            session.record.end = nil
            session.record.updated = wallClock()
            return session.file.flatMap { Self.write(session.record.json, to: $0, sync: false) }
        }
        if let failure { report(ClientReport(kind: .storageFailed, message: failure.message, error: failure)) }
    }

    /// Records the variant of an experiment flag served in this session (the first one per flag), so the
    /// `session` event can say which variants its crash counts belong to. Rewrites the session record when the
    /// flag is new to the session.
    func recordVariant(_ variant: String, of flag: String) {
        let failure: ClientError? = session.withLock { session in
            guard session.record.variants[flag] == nil else { return nil }
            session.record.variants[flag] = variant
            session.record.end = nil
            session.record.updated = wallClock()
            return session.file.flatMap { Self.write(session.record.json, to: $0, sync: false) }
        }
        if let failure { report(ClientReport(kind: .storageFailed, message: failure.message, error: failure)) }
    }

    /// Adds to the session record the plugin switches whose state the unit's rollout split decides now (the first
    /// decision per switch stays), so the `session` event enters the unit in their experiments, with or without the
    /// plugin, whether or not it ever reached the plugin point. Rewrites the record when a switch is new to it.
    ///
    /// Runs when the session starts, when a snapshot is installed and when an outcome is tracked (never on a plugin
    /// point's path): it evaluates every plugin switch of the snapshot (no allocation but for the switches listed).
    func recordSplits() {
        let state = shared.withLock { $0.state }
        let splits = state.splitSwitches(now: wallClock(), limit: Self.maximumSplits)
        guard !splits.isEmpty else { return }
        let failure: ClientError? = session.withLock { session in
            var added = false
            for (key, isOn) in splits
            where session.record.splits[key] == nil && session.record.splits.count < Self.maximumSplits {
                session.record.splits[key] = isOn
                added = true
            }
            guard added, session.record.end == nil else { return nil }
            return session.file.flatMap { Self.write(session.record.json, to: $0, sync: false) }
        }
        if let failure { report(ClientReport(kind: .storageFailed, message: failure.message, error: failure)) }
    }

    /// The plugin switches a rollout split decided in the current session, with whether it put the unit in.
    public var sessionSplits: [String: Bool] {
        session.withLock { $0.record.splits }
    }

    /// The variants of experiment flags served in the current session, by flag key.
    public var servedVariants: [String: String] {
        session.withLock { $0.record.variants }
    }

    /// Reports a plugin factory that threw; the plugin point moves on to the next eligible factory.
    public func reportFactoryFailure(pluginPoint: String, pluginSwitch: PluginSwitch, error: any Error) {
        report(
            ClientReport(
                kind: .pluginFactoryFailed,
                message:
                    "plugin point '\(pluginPoint)': the factory of \(pluginSwitch.key) threw (\(error)); using the next eligible plugin or the core flow",
                flagKeys: [pluginSwitch.key], pluginPoint: pluginPoint, error: error))
    }

    /// Marks the session as ended cleanly, so the next launch reports it as not crashed.
    ///
    /// Call it when the app terminates normally, and on iOS when it moves to the background (a background
    /// app may be killed without notice, which is not a crash). Creating a plugin afterwards reopens the session.
    public func endSession() {
        let failure: ClientError? = session.withLock { session in
            let now = wallClock()
            session.record.end = now
            session.record.updated = now
            return session.file.flatMap { Self.write(session.record.json, to: $0, sync: true) }
        }
        if let failure { report(ClientReport(kind: .storageFailed, message: failure.message, error: failure)) }
        persistQueue()
    }

    /// The id of the current session (the `session_id` of its event at the next launch).
    public var sessionID: String {
        session.withLock { $0.record.id }
    }

    /// The unit of the current session as its event names it (`unit`): a digest of the namespace and the unit id,
    /// never the id itself; nil when the context has no unit id. A crash pipeline that reports sessions with a
    /// reporter token sends the same value (docs/crash-guard.md, "Wiring a crash pipeline").
    public var sessionUnit: String? {
        session.withLock { $0.record.unit }
    }

    /// The plugin switches recorded as active in the current session.
    public var activeSwitches: [String] {
        session.withLock { $0.record.switches.map(\.key) }
    }
}
