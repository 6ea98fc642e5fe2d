import Foundation
public import SwitchyardCore

/// The client runtime an app embeds: it keeps a flag snapshot current, evaluates plugin switches and experiment
/// flags locally, and reports sessions, crashes and exposures.
///
/// ```swift
/// let client = FlagClient(configuration: .init(
///     serverURL: URL(string: "https://flags.example.com")!, namespace: "rider", token: clientToken,
///     context: EvaluationContext(unitId: riderId, city: "lagos", appVersion: "5.12.0", platform: "ios"),
///     directory: applicationSupport.appendingPathComponent("Switchyard/rider")))
/// let sync = Task { await client.run() }          // long-polls the server until cancelled
///
/// static let promos = PluginSwitch("plugin_switch_feed_promos")
/// if client.isEnabled(Self.promos) { … } else { … core flow … }
/// ```
///
/// Start order: the bundled snapshot (if any), then the last known good snapshot from disk (reasons say
/// `CACHED` until the server confirms or replaces it), then live snapshots. Without any snapshot every plugin
/// switch is off: the core flow. A failed, slow, corrupt or hostile server never replaces a good snapshot.
///
/// Reads (``isEnabled(_:)``, ``value(of:)``) are synchronous and thread-safe; they never wait for I/O.
/// `init` reads and writes a few small files in `directory` (the cache, the previous session's record) and
/// starts no task; ``run()`` does the networking.
public final class FlagClient: Sendable {
    public let namespace: String
    let configuration: Configuration
    let shared: LockedBox<Shared>
    let session: LockedBox<SessionState>
    let exposures = LockedBox(Set<ExposureKey>())
    let queue: EventQueue
    /// Wakes the running event sender; a new stream per `run()` (a cancelled wait finishes its stream).
    let eventWakeup = LockedBox<AsyncStream<Void>.Continuation?>(nil)
    let broadcaster = ChangeBroadcaster()
    let cache: SnapshotCache?
    let snapshotTransport: any HTTPTransport
    let eventTransport: any HTTPTransport
    let isRunning = LockedBox(false)
    let wallClock: @Sendable () -> Date

    /// Mutable bookkeeping behind the lock; `state` is what readers take.
    struct Shared {
        var state: ClientState
        var compiled: CompiledSnapshot?
        var origin: SnapshotOrigin?
        var fetchedAt: Date?
        var verifiedAt: Date?
        var context: EvaluationContext
        var contextGeneration: UInt64 = 0
        /// The digest sums of `compiled`, which the next delta starts from; nil until worked out.
        var digest: SnapshotDigest?
        var guardState: CrashLoopGuardState
        var consecutiveFailures = 0
        var lastError: ClientError?
        var deltasApplied = 0
        var verifiedPersistedAt: Date?
        var staleAnnounced = false

        /// Bumped by every change of the parts; a state built for an older generation is not installed.
        var generation: UInt64 = 0

        /// A state for the current parts.
        func makeState(stalenessLimit: Duration?) -> ClientState {
            ClientState(
                compiled: compiled, context: context, origin: origin, fetchedAt: fetchedAt, verifiedAt: verifiedAt,
                stalenessLimit: stalenessLimit, quarantinedKeys: Set(guardState.quarantined.keys),
                contextGeneration: contextGeneration)
        }

        /// The installed snapshot, from the parts.
        var snapshotInfo: SnapshotInfo? {
            guard let compiled, let origin else { return nil }
            return SnapshotInfo(
                namespace: compiled.namespace, epoch: compiled.epoch, version: compiled.version, origin: origin,
                fetchedAt: fetchedAt ?? Date(timeIntervalSince1970: 0))
        }
    }

    struct SessionState: Sendable {
        var record: SessionRecord
        /// Where the record is kept (`session-<id>.json`); nil without a directory, or once a newer client of this
        /// process took the directory over.
        var file: URL?
        var activeSlots: Set<Int32> = []
    }

    struct ExposureKey: Hashable {
        var slot: Int32
        var variant: Int32
        var version: Int64
        var contextGeneration: UInt64
    }

    /// Creates a client and restores what the last launch left: the cached snapshot, the crash guard, queued
    /// events. Reports the previous session (crashed or not) and starts a new one.
    ///
    /// Never fails: unusable files are ignored and reported through `configuration.report`.
    public init(configuration: Configuration) {
        self.configuration = configuration
        namespace = configuration.namespace
        wallClock = configuration.wallClock
        snapshotTransport = configuration.snapshotTransport ?? URLSessionTransport()
        eventTransport = configuration.eventTransport ?? URLSessionTransport()
        let report = configuration.report
        let now = configuration.wallClock()
        let directory = configuration.directory
        if let directory {
            do { try FileIO.createDirectory(directory) } catch {
                report(
                    ClientReport(
                        kind: .storageFailed, message: "\(error.message); the client keeps its state in memory only",
                        error: error))
            }
        }
        cache = directory.map {
            SnapshotCache(
                directory: $0, namespace: configuration.namespace,
                maximumSnapshotSize: configuration.maximumSnapshotSize)
        }
        let installed = Self.restoreSnapshot(configuration, cache: cache, now: now, report: report)
        var guardState = Self.restoreCrashGuard(directory, report: report)
        let (queue, queueProblem) = EventQueue.open(
            fileURL: directory?.appendingPathComponent(EventQueue.fileName),
            capacity: configuration.events.capacity)
        self.queue = queue
        if let queueProblem {
            report(ClientReport(kind: .storageFailed, message: queueProblem.message, error: queueProblem))
        }
        let session = LockedBox(
            SessionState(
                record: SessionRecord(
                    id: ClientEvent.newID(at: now), namespace: configuration.namespace, start: now,
                    context: configuration.context)))
        let ended = SessionFiles.claim(directory, namespace: configuration.namespace, session: session, report: report)
        Self.concludePreviousSessions(
            ended.compactMap(\.record), configuration: configuration, queue: queue,
            guardState: &guardState, installed: installed?.snapshot, now: now, report: report)
        SessionFiles.remove(ended)
        let (record, file) = session.withLock { ($0.record, $0.file) }
        if let file { Self.write(record.json, to: file, sync: false, report: report) }
        self.session = session

        var shared = Shared(
            state: ClientState.none,
            compiled: installed.map { $0.compiled?.snapshot ?? CompiledSnapshot($0.snapshot) },
            origin: installed?.origin, fetchedAt: installed?.fetchedAt, verifiedAt: installed?.verifiedAt,
            context: configuration.context, digest: installed?.compiled?.digest, guardState: guardState)
        shared.state = shared.makeState(stalenessLimit: configuration.stalenessLimit)
        self.shared = LockedBox(shared)
        if let info = shared.snapshotInfo {
            report(ClientReport(kind: .snapshotInstalled, message: "installed \(info)"))
        }
        recordSplits()
    }

    deinit {
        broadcaster.finish()
        SessionFiles.release(configuration.directory, id: session.withLock { $0.record.id })
    }

    /// Changes the bookkeeping under the lock, then builds the matching state outside it (compiling the slot table
    /// and preparing the evaluator take a while) and installs it unless a later change got there first. Readers
    /// never wait for a state to be built.
    @discardableResult
    func update<Result>(_ change: (inout Shared) -> Result) -> Result {
        let (result, parts, generation) = shared.withLock { shared in
            let result = change(&shared)
            shared.generation += 1
            return (result, shared, shared.generation)
        }
        let state = parts.makeState(stalenessLimit: configuration.stalenessLimit)
        shared.withLock { shared in
            if shared.generation == generation { shared.state = state }
        }
        return result
    }

    /// Extends the installed state's slot table to switches created after it was built (a `static let` switch is
    /// created on first use). Once per new batch of switches; later reads use the table.
    @inline(never)
    func stateWithCurrentSlots() -> ClientState {
        let registered = SlotRegistry.shared.count
        let state = shared.withLock { $0.state }
        guard state.slots.count < registered else { return state }
        let extended = ClientState(extending: state)
        return shared.withLock { shared in
            if shared.state === state { shared.state = extended }
            return shared.state
        }
    }

    /// Reports through the configured callback.
    func report(_ report: ClientReport) {
        configuration.report(report)
    }

    static func write(_ object: JSONObject, to url: URL, sync: Bool, report: (ClientReport) -> Void) {
        if let error = write(object, to: url, sync: sync) {
            report(ClientReport(kind: .storageFailed, message: error.message, error: error))
        }
    }

    /// Writes a JSON file atomically; returns the error instead of reporting it (for callers holding a lock).
    static func write(_ object: JSONObject, to url: URL, sync: Bool) -> ClientError? {
        do {
            try FileIO.writeAtomically(JSONValue.object(object).serialized(.canonical), to: url, sync: sync)
            return nil
        } catch {
            return error
        }
    }

    // MARK: Context, changes, status

    /// The evaluation context in use.
    public var context: EvaluationContext {
        shared.withLock { $0.context }
    }

    /// Replaces the evaluation context (login, logout, city change) and re-prepares evaluation.
    ///
    /// Publishes a ``FlagsChange`` with cause `contextChanged`.
    public func updateContext(_ context: EvaluationContext) {
        let info = update { shared in
            shared.context = context
            shared.contextGeneration += 1
            return shared.snapshotInfo
        }
        session.withLock { state in
            state.record.appVersion = context.appVersion
            state.record.platform = context.platform
            state.record.city = context.city
            state.record.cohorts = context.cohorts
        }
        broadcaster.publish(FlagsChange(cause: .contextChanged, snapshot: info))
    }

    /// Changes the evaluation context in place: `client.updateContext { $0.city = "paris" }`.
    public func updateContext(_ change: (inout EvaluationContext) -> Void) {
        var context = self.context
        change(&context)
        updateContext(context)
    }

    /// Every change that may change evaluations, from now on: a new snapshot, a new context, staleness, the
    /// crash guard. Each access starts a new subscription; it keeps the newest 64 changes if not read.
    public var changes: AsyncStream<FlagsChange> {
        broadcaster.subscribe()
    }

    /// The installed snapshot, its age, and how the sync is going.
    public var status: ClientStatus {
        let now = wallClock()
        let (state, failures, lastError, deltas) = shared.withLock {
            ($0.state, $0.consecutiveFailures, $0.lastError, $0.deltasApplied)
        }
        let reference = state.verifiedAt ?? state.fetchedAt
        return ClientStatus(
            snapshot: state.snapshotInfo, verifiedAt: state.verifiedAt,
            age: reference.map { .clampedSeconds(now.timeIntervalSince($0)) },
            isStale: state.isStale(now: now), consecutiveFailures: failures, lastError: lastError,
            disabledByCrashGuard: state.quarantinedKeys.sorted(), queuedEvents: queue.count,
            deltasApplied: deltas)
    }
}

extension FlagClient: CustomReflectable {
    /// What the client holds, read under its locks (debuggers and test failure messages reflect values).
    public var customMirror: Mirror {
        Mirror(self, children: ["namespace": namespace, "status": status.description])
    }
}
