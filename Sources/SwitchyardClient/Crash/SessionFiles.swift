import Foundation
import SwitchyardCore

/// The session records in a client's directory: one per running process, each beside a lock that its process holds
/// for as long as it runs.
///
/// `session-<id>.json` is the record and `session-<id>.lock` its lock. At launch a client concludes every record whose
/// lock it can take (its process has ended: cleanly when the record says so, else a crash) and leaves alone the ones
/// another process still holds, so two processes sharing a directory (an app and its extension, a sample run twice)
/// never report each other's live sessions as crashed. Within one process a new client on the same directory takes
/// over from the previous one, as a relaunch does: the previous session is concluded and its client writes it no more.
/// A `session.json` left by an earlier version of the client is concluded once, like a record without a holder.
enum SessionFiles {
    /// The record an earlier version of the client kept, one per directory.
    static let legacyFileName = "session.json"
    static let prefix = "session-"

    static func recordName(_ id: String) -> String { "\(prefix)\(id).json" }
    static func lockName(_ id: String) -> String { "\(prefix)\(id).lock" }

    /// At most this many ended sessions are concluded per launch (the rest at the next): a directory that gathered
    /// many never makes a launch slow.
    static let maximumConcluded = 32

    /// A session of this process: its id, its lock and the client writing it.
    struct Held: Sendable {
        var id: String
        var lock: FileLock?
        weak var session: LockedBox<FlagClient.SessionState>?
    }

    /// The sessions this process holds, by directory path.
    static let held = LockedBox<[String: Held]>([:])

    /// An ended session found at launch, locked until its files are removed.
    struct Ended {
        var record: SessionRecord?
        var files: [URL]
        var lock: FileLock?
    }

    /// Takes the directory's sessions for a new client: takes over this process's previous session there, locks and
    /// lists the sessions whose processes have ended, and locks the new session's record. Sets the new session's
    /// file in `session` (nil without a directory).
    static func claim(
        _ directory: URL?, namespace: String, session: LockedBox<FlagClient.SessionState>,
        report: (ClientReport) -> Void
    ) -> [Ended] {
        guard let directory else { return [] }
        let id = session.withLock { $0.record.id }
        var problems: [ClientError] = []
        var own: FileLock?
        do throws(ClientError) { own = try FileIO.tryLock(directory.appendingPathComponent(lockName(id))) } catch {
            problems.append(error)
        }
        // Only the registry's swap happens under its lock; the files are read and locked outside it.
        let previous = held.withLock { held -> Held? in
            let key = directory.standardizedFileURL.path
            defer { held[key] = Held(id: id, lock: own, session: session) }
            return held[key]
        }
        var ended: [(id: String?, lock: FileLock?)] = []
        if let previous {
            // A relaunch within the process: the previous client's session ends here; it writes no more.
            previous.session?.withLock { $0.file = nil }
            ended.append((previous.id, previous.lock))
        }
        let names = Set(FileIO.fileNames(in: directory))
        if names.contains(legacyFileName) { ended.append((nil, nil)) }
        let ids = Set(
            names.compactMap { name -> String? in
                guard name.hasPrefix(prefix), name.hasSuffix(".json") || name.hasSuffix(".lock") else { return nil }
                return String(name.dropFirst(prefix.count).dropLast(5))
            })
        for other in ids.sorted() where other != id && other != previous?.id {
            guard ended.count < maximumConcluded else { break }
            do throws(ClientError) {
                // Held elsewhere: another process (or another client of this one) still runs that session.
                guard let lock = try FileIO.tryLock(directory.appendingPathComponent(lockName(other))) else { continue }
                ended.append((other, lock))
            } catch {
                problems.append(error)
            }
        }
        for problem in problems { report(ClientReport(kind: .storageFailed, message: problem.message, error: problem)) }
        if own == nil && problems.isEmpty {
            report(
                ClientReport(
                    kind: .storageFailed,
                    message:
                        "the lock of session \(id) is held elsewhere; its record may be reported as crashed by another process"
                ))
        }
        session.withLock { $0.file = directory.appendingPathComponent(recordName(id)) }
        return ended.map { entry in
            guard let id = entry.id else {
                let url = directory.appendingPathComponent(legacyFileName)
                return Ended(
                    record: FlagClient.readSession(url, namespace: namespace, report: report), files: [url], lock: nil)
            }
            let record = directory.appendingPathComponent(recordName(id))
            return Ended(
                record: FlagClient.readSession(record, namespace: namespace, report: report),
                files: [record, directory.appendingPathComponent(lockName(id))], lock: entry.lock)
        }
    }

    /// Lets go of this process's session in `directory` when `id` still holds it (the client is going away).
    static func release(_ directory: URL?, id: String) {
        guard let directory else { return }
        let key = directory.standardizedFileURL.path
        held.withLock { held in
            if held[key]?.id == id { held[key] = nil }
        }
    }

    /// Removes the files of concluded sessions, each record before its lock (which goes last, when the lock is let go).
    static func remove(_ ended: [Ended]) {
        for session in ended {
            for file in session.files { FileIO.remove(file) }
        }
    }
}
