public import Foundation
public import SwitchyardCore

/// Where the installed snapshot came from.
public enum SnapshotOrigin: String, Sendable, Hashable, CustomStringConvertible {
    /// Shipped with the app.
    case bundled
    /// The last known good snapshot, read from disk at launch.
    case cache
    /// Downloaded or confirmed by the server since launch.
    case server

    public var description: String { rawValue }
}

/// Which snapshot a client holds.
public struct SnapshotInfo: Sendable, Hashable, CustomStringConvertible {
    public var namespace: String
    public var epoch: String
    public var version: Int64
    public var origin: SnapshotOrigin
    /// When it was downloaded (for a bundled snapshot: when the client started).
    public var fetchedAt: Date

    public var description: String { "\(namespace) version \(version) (epoch \(epoch), from the \(origin))" }
}

/// A change that may change what the app's flags evaluate to: re-route plugin points when one arrives.
public struct FlagsChange: Sendable, Hashable, CustomStringConvertible {
    /// Why evaluations may have changed; new causes may be added.
    public struct Cause: Sendable, Hashable, CustomStringConvertible {
        fileprivate let name: String
        fileprivate init(_ name: String) { self.name = name }

        /// A new snapshot was installed.
        public static let snapshotInstalled = Cause("snapshotInstalled")
        /// The server confirmed the bundled or cached snapshot: reasons are no longer `CACHED`.
        public static let confirmedLive = Cause("confirmedLive")
        /// The evaluation context changed (login, city change).
        public static let contextChanged = Cause("contextChanged")
        /// The snapshot went past the staleness limit: every plugin switch is off.
        public static let becameStale = Cause("becameStale")
        /// The server confirmed a stale snapshot again.
        public static let becameFresh = Cause("becameFresh")
        /// The crash-loop guard forced switches off or released them.
        public static let crashGuardChanged = Cause("crashGuardChanged")

        public var description: String { name }
    }

    public let cause: Cause
    /// The snapshot after the change.
    public let snapshot: SnapshotInfo?
    /// For a snapshot installed over one of the same epoch: exactly the flags, kill switches and plugin points
    /// whose definitions differ (added, removed or changed), and whether the plugin points' order and the
    /// description did. Nil when anything may have changed: the first snapshot, another epoch, or another cause.
    ///
    /// A flag not named may still evaluate differently when a kill switch or plugin point covering it is named.
    public let changed: ChangedObjects?

    package init(cause: Cause, snapshot: SnapshotInfo?, changed: ChangedObjects? = nil) {
        self.cause = cause
        self.snapshot = snapshot
        self.changed = changed
    }

    public var description: String {
        var text = "\(cause)" + (snapshot.map { ": \($0)" } ?? "")
        if let changed {
            let keys = changed.flags.union(changed.killSwitches).union(changed.pluginPoints).sorted()
            text +=
                keys.isEmpty
                ? " (no definition changed)"
                : " (changed: \(keys.prefix(5).joined(separator: ", "))\(keys.count > 5 ? " and \(keys.count - 5) more" : ""))"
        }
        return text
    }
}

/// What a client holds and how its sync is going.
public struct ClientStatus: Sendable, CustomStringConvertible {
    /// The installed snapshot; nil means the core flow everywhere.
    public var snapshot: SnapshotInfo?
    /// When the server last confirmed the snapshot (for a bundled one: nil).
    public var verifiedAt: Date?
    /// Time since the server last confirmed the snapshot (since it was fetched for a cached one).
    public var age: Duration?
    /// Whether the staleness policy turned plugin switches off.
    public var isStale: Bool
    /// Failed sync requests in a row.
    public var consecutiveFailures: Int
    /// The last sync failure.
    public var lastError: ClientError?
    /// Plugin switches the crash-loop guard holds off on this device.
    public var disabledByCrashGuard: [String]
    /// Events waiting to be sent.
    public var queuedEvents: Int
    /// Deltas applied since launch (each instead of a full snapshot download).
    public var deltasApplied = 0

    public var description: String {
        var text = snapshot.map(\.description) ?? "no snapshot (core flow everywhere)"
        if let age { text += ", age \(Int(age.secondsValue)) s" }
        if isStale { text += ", STALE" }
        if consecutiveFailures > 0 { text += ", \(consecutiveFailures) failed request(s)" }
        if let lastError { text += ", last error: \(lastError.message)" }
        if !disabledByCrashGuard.isEmpty { text += ", crash guard: \(disabledByCrashGuard.joined(separator: ", "))" }
        return text
    }
}

/// Fans changes out to every subscriber of ``FlagClient/changes``.
package final class ChangeBroadcaster: Sendable {
    private struct State {
        var next = 0
        var continuations: [Int: AsyncStream<FlagsChange>.Continuation] = [:]
    }

    private let state = LockedBox(State())

    package init() {}

    package func subscribe(buffer: Int = 64) -> AsyncStream<FlagsChange> {
        let (stream, continuation) = AsyncStream.makeStream(
            of: FlagsChange.self, bufferingPolicy: .bufferingNewest(buffer))
        let id = state.withLock { state in
            let id = state.next
            state.next += 1
            state.continuations[id] = continuation
            return id
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.state.withLock { $0.continuations.removeValue(forKey: id) }
        }
        return stream
    }

    package func publish(_ change: FlagsChange) {
        let continuations = state.withLock { Array($0.continuations.values) }
        for continuation in continuations { continuation.yield(change) }
    }

    package func finish() {
        let continuations = state.withLock { state in
            defer { state.continuations = [:] }
            return Array(state.continuations.values)
        }
        for continuation in continuations { continuation.finish() }
    }
}
