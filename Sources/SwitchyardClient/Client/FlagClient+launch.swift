import Foundation
import SwitchyardCore

/// What a client restores at launch, in the order `init` runs it.
extension FlagClient {
    /// A snapshot restored at launch.
    struct Restored {
        var snapshot: Snapshot
        var origin: SnapshotOrigin
        var fetchedAt: Date
        var verifiedAt: Date?
        /// Compiled already, with its digest sums, when deltas were replayed onto the cached snapshot.
        var compiled: (snapshot: CompiledSnapshot, digest: SnapshotDigest)?
    }

    /// The bundled snapshot, replaced by the last known good one from disk unless that one is older (same
    /// epoch, lower version). Unusable ones are reported and ignored.
    static func restoreSnapshot(
        _ configuration: Configuration, cache: SnapshotCache?, now: Date,
        report: (ClientReport) -> Void
    ) -> Restored? {
        var restored: Restored?
        if let bytes = configuration.bundledSnapshot {
            do {
                let snapshot = try SnapshotDocument.decode(bytes)
                if snapshot.namespace == configuration.namespace {
                    restored = Restored(snapshot: snapshot, origin: .bundled, fetchedAt: now, verifiedAt: nil)
                } else {
                    report(
                        ClientReport(
                            kind: .snapshotIgnored,
                            message:
                                "the bundled snapshot is for namespace '\(snapshot.namespace)', not '\(configuration.namespace)'; ignoring it"
                        ))
                }
            } catch {
                report(
                    ClientReport(
                        kind: .snapshotIgnored, message: "the bundled snapshot is unusable (\(error)); ignoring it",
                        error: error))
            }
        }
        guard let cache else { return restored }
        do {
            guard let entry = try cache.load() else { return restored }
            if let bundled = restored?.snapshot, bundled.epoch == entry.snapshot.epoch,
                entry.snapshot.version < bundled.version
            {
                report(
                    ClientReport(
                        kind: .snapshotIgnored,
                        message:
                            "the cached snapshot (version \(entry.snapshot.version)) is older than the bundled one (version \(bundled.version)); using the bundled one"
                    ))
                return restored
            }
            return Restored(
                snapshot: entry.snapshot, origin: .cache, fetchedAt: entry.fetchedAt, verifiedAt: entry.verifiedAt,
                compiled: entry.compiled)
        } catch {
            report(ClientReport(kind: .snapshotIgnored, message: error.message, error: error))
            return restored
        }
    }

    /// The crash-loop guard's state as the last launch left it; a fresh one when the file is missing or unreadable.
    static func restoreCrashGuard(_ directory: URL?, report: (ClientReport) -> Void) -> CrashLoopGuardState {
        guard let url = directory?.appendingPathComponent(CrashLoopGuardState.fileName) else {
            return CrashLoopGuardState()
        }
        do {
            guard let bytes = try FileIO.read(url, limit: 1 << 20) else { return CrashLoopGuardState() }
            if let json = try? JSONValue.parse(bytes), let state = CrashLoopGuardState(json: json) { return state }
            report(
                ClientReport(
                    kind: .storageFailed,
                    message: "\(url.path) is not a crash-guard state file; starting the crash-loop guard afresh"))
        } catch {
            report(ClientReport(kind: .storageFailed, message: error.message, error: error))
        }
        return CrashLoopGuardState()
    }

    /// Reports each ended session (crashed when it did not end cleanly) as a `session` event, oldest first, lets the
    /// crash guard count it, lifts quarantines whose TTL passed or whose switch the restored snapshot changed, and
    /// persists the queue and the guard before anything else can go wrong.
    ///
    /// A session concluded by a launch that ended before it removed the session's files is concluded again, once:
    /// its event is not queued a second time when the queue holds it already, and the crash-loop guard counts a
    /// session once (``CrashLoopGuardState/concluded``), whichever of the two files that launch wrote.
    static func concludePreviousSessions(
        _ ended: [SessionRecord], configuration: Configuration, queue: EventQueue,
        guardState: inout CrashLoopGuardState, installed: Snapshot?, now: Date,
        report: (ClientReport) -> Void
    ) {
        let directory = configuration.directory
        var guardChanged = false
        let queued = Set(queue.entries.map(\.id))
        for previous in ended.sorted(by: { ($0.updated, $0.id) < ($1.updated, $1.id) }) {
            let crashed = !previous.isClean
            if !queued.contains(previous.id) {
                queue.enqueue(ClientEvent.session(previous, crashed: crashed, id: previous.id, time: now))
            }
            let policy = configuration.crashLoopGuard
            // Counted before by a launch that ended before removing the session's files: reported then too.
            guard let tripped = guardState.record(previous, crashed: crashed, now: now, policy: policy) else {
                continue
            }
            guardChanged = true
            let keys = previous.switches.map(\.key)
            if crashed {
                report(
                    ClientReport(
                        kind: .previousSessionCrashed,
                        message:
                            "the previous session (\(previous.id)) ended without endSession(): reporting a crash with \(keys.isEmpty ? "no plugin switch" : keys.joined(separator: ", ")) active",
                        flagKeys: keys))
            }
            if !tripped.isEmpty {
                report(
                    ClientReport(
                        kind: .crashGuardTripped,
                        message:
                            "the crash-loop guard forces \(tripped.joined(separator: ", ")) off on this device: active in \(policy.consecutiveCrashes) crashed sessions in a row; it stays off until a newer snapshot changes its definition or \(Int(policy.ttl.secondsValue)) s pass",
                        flagKeys: tripped))
            }
        }
        var lifted = guardState.liftExpired(now: now, ttl: configuration.crashLoopGuard.ttl)
        if let installed { lifted += guardState.liftChanged(by: installed) }
        if !lifted.isEmpty {
            guardChanged = true
            report(
                ClientReport(
                    kind: .crashGuardLifted, message: "the crash-loop guard released \(lifted.joined(separator: ", "))",
                    flagKeys: lifted))
        }
        if guardChanged, let url = directory?.appendingPathComponent(CrashLoopGuardState.fileName) {
            write(guardState.json, to: url, sync: true, report: report)
        }
        do { try queue.persist() } catch {
            report(
                ClientReport(
                    kind: .storageFailed, message: "\(error.message); queued events stay in memory", error: error))
        }
    }

    static func readSession(_ url: URL, namespace: String, report: (ClientReport) -> Void) -> SessionRecord? {
        do {
            guard let bytes = try FileIO.read(url, limit: 1 << 20) else { return nil }
            guard let json = try? JSONValue.parse(bytes), let record = SessionRecord(json: json) else {
                report(
                    ClientReport(
                        kind: .storageFailed,
                        message:
                            "\(url.path) is not a session record (torn or edited); the previous session is not reported"
                    ))
                return nil
            }
            guard record.namespace == namespace else {
                report(
                    ClientReport(
                        kind: .storageFailed,
                        message:
                            "\(url.path) records a session of namespace '\(record.namespace)', not '\(namespace)'; give each namespace its own directory"
                    ))
                return nil
            }
            return record
        } catch {
            report(ClientReport(kind: .storageFailed, message: error.message, error: error))
            return nil
        }
    }
}
