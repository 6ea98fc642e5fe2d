import Crypto
import Foundation
import HTTPTypes
package import Logging
package import Metrics
package import NIOCore
import ServiceLifecycle
package import SwitchyardCore
package import SwitchyardStorage
import Synchronization

/// A namespace's snapshot at one version, encoded once and shared by every request, with the deltas to it from
/// recent versions (each built once, on first request).
///
/// A class of constants rather than a struct: every answer of a fan-out passes it along, and a copy then costs one
/// retain instead of one per buffer, string and header list it holds.
package final class PublishedSnapshot: Sendable {
    /// The `Vary` of every snapshot answer: the body depends on `Accept` (a delta or the snapshot) and on
    /// `Accept-Encoding`.
    static let vary = "Accept, Accept-Encoding"

    package let namespace: String
    package let epoch: String
    package let version: Int64
    /// `"<epoch>.<version>"`.
    package let entityTag: String
    package let body: ByteBuffer
    /// The flags' canonical members, which the next version's document reuses.
    let encodedFlags: EncodedFlags
    /// Written once, under `gzipLock`, before `gzipReady` is set; read after `gzipReady` is seen set.
    nonisolated(unsafe) private var gzipValue: (body: ByteBuffer, headers: HTTPFields)?
    private let gzipReady = Atomic<Bool>(false)
    private let gzipLock = Mutex(())
    /// The version's flag set as the store holds it: the namespace's settings that snapshots do not carry (its
    /// crash guard policy) included, flags in the store's order. Read this, not `compiled.snapshot.flagSet`: a
    /// compiled form made by applying a delta carries only what deltas carry, in the order applying leaves.
    package let flagSet: FlagSet
    /// The snapshot compiled for evaluation (OFREP), once per version.
    package let compiled: CompiledSnapshot
    /// The `checksum` member of the document.
    package var checksum: String { documentChecksum.value }
    /// The checksum with the hash states the next version's resumes from.
    let documentChecksum: DocumentChecksum
    /// The snapshot's digest, which deltas to it carry, and the sums it came from (for the next version's).
    package let digest: String
    let digestSums: SnapshotDigest
    /// What changed at each recent version, up to this one.
    package let history: DeltaHistory
    private let deltas: DeltaCache
    /// The response headers of its 200 (identity, with `Content-Length`; gzip's without it) and of its 304, built
    /// once.
    let identityHeaders: HTTPFields
    private let gzipHeadersWithoutLength: HTTPFields
    let notModifiedHeaders: HTTPFields

    /// Encodes a snapshot (canonical JSON with its checksum) and its gzip form, and compiles it.
    ///
    /// - Parameters:
    ///   - previous: the namespace's snapshot published before, whose history and digest this one continues
    ///     when it is of the same epoch and older.
    ///   - deltaVersions: how many versions back deltas may start (0: no deltas).
    package init(_ snapshot: Snapshot, previous: PublishedSnapshot? = nil, deltaVersions: Int = 0) {
        namespace = snapshot.namespace
        epoch = snapshot.epoch
        version = snapshot.version
        entityTag = snapshot.entityTag
        flagSet = snapshot.flagSet
        // From the previous version of the epoch, the work is proportional to what changed: only changed flags are
        // serialized again, the digest sums updated, and the compiled form made by applying the delta between them.
        if let previous, previous.epoch == snapshot.epoch, previous.version < snapshot.version {
            let changes = ChangedObjects(from: previous.flagSet, to: snapshot.flagSet)
            history = previous.history.appending(
                from: previous.version, to: snapshot.version, changes: changes,
                limit: deltaVersions)
            let lookup = Dictionary(
                uniqueKeysWithValues: changes.flags.compactMap { key in
                    snapshot.flagSet.flag(key).map { (key, $0) }
                })
            encodedFlags = previous.encodedFlags.updating(changes, in: snapshot.flagSet) { lookup[$0] }
            (body, documentChecksum) = Self.encoded(snapshot, encodedFlags, previous: previous.documentChecksum)
            var sums = previous.digestSums
            for key in changes.flags {
                sums.replace(
                    flag: previous.compiled.handle(for: key).flatMap(previous.compiled.flag), with: lookup[key])
            }
            for key in changes.killSwitches {
                sums.replace(killSwitch: previous.flagSet.killSwitch(key), with: snapshot.flagSet.killSwitch(key))
            }
            if !changes.pluginPoints.isEmpty || changes.pluginPointOrder {
                sums.replacePluginPoints(with: snapshot.flagSet.pluginPoints)
            }
            digestSums = sums
            digest = sums.value(for: snapshot)
            let delta = SnapshotDelta(
                base: previous.version, target: snapshot, changes: changes, checksum: documentChecksum.value,
                digest: digest)
            compiled =
                (try? previous.compiled.applying(delta, digest: previous.digestSums).snapshot)
                ?? CompiledSnapshot(snapshot)
        } else {
            history = DeltaHistory(epoch: snapshot.epoch)
            encodedFlags = EncodedFlags(snapshot.flagSet)
            (body, documentChecksum) = Self.encoded(snapshot, encodedFlags, previous: nil)
            digestSums = SnapshotDigest(snapshot.flagSet)
            digest = digestSums.value(for: snapshot)
            compiled = CompiledSnapshot(snapshot)
        }
        // Kept deltas hold at most a few times the snapshot's own bytes.
        deltas = DeltaCache(budget: 5 * body.readableBytes + 65_536)
        var delivery = HTTPFields()
        delivery[.eTag] = entityTag
        delivery[.vary] = Self.vary
        delivery[.cacheControl] = "no-cache"
        notModifiedHeaders = delivery
        delivery[.contentType] = "application/json"
        gzipHeadersWithoutLength = delivery
        delivery[.contentLength] = String(body.readableBytes)
        identityHeaders = delivery
    }

    /// The flag with a key, found through the compiled form's key index (a flag set's own `flag(_:)` halves its
    /// list while the flags are in key order, but scans for one added since: per event, a scan of thousands was most
    /// of ingestion's cost). The definition is the compiled snapshot's, which carries every flag whole (what it may
    /// lack is namespace-wide settings).
    package func flag(_ key: String) -> FlagDefinition? {
        compiled.handle(for: key).flatMap(compiled.flag)
    }

    /// The document as a buffer, with its checksum, written once into the buffer from the flags' pieces (a document
    /// of megabytes is neither assembled nor copied again), hashed from where it differs from `previous`'s.
    private static func encoded(_ snapshot: Snapshot, _ flags: EncodedFlags, previous: DocumentChecksum?)
        -> (ByteBuffer, DocumentChecksum)
    {
        let pieces = flags.pieces(for: snapshot)
        let checksum = DocumentChecksum(pieces, previous: previous)
        let prefix = SnapshotDocument.prefix(checksum: checksum.value)
        var buffer = ByteBufferAllocator().buffer(capacity: prefix.count + pieces.count - 1)
        buffer.writeBytes(prefix)
        var first = true
        pieces.forEachPiece { piece in
            // The body's `{` is the prefix's.
            buffer.writeBytes(first ? piece.dropFirst() : piece)
            first = false
        }
        return (buffer, checksum)
    }

    /// The gzip form of the document and its headers, compressed on first use (once: later callers wait for it)
    /// and then shared: publishing a version does not wait for it, and a namespace whose clients all take deltas
    /// never pays for it. After the first use, a read is one atomic load.
    var gzipped: (body: ByteBuffer, headers: HTTPFields) {
        if gzipReady.load(ordering: .acquiring), let value = gzipValue { return value }
        return gzipLock.withLock { _ in
            if let value = gzipValue { return value }
            let compressed = ByteBuffer(bytes: Gzip.compress(Array(buffer: body)))
            var headers = gzipHeadersWithoutLength
            headers[.contentEncoding] = "gzip"
            headers[.contentLength] = String(compressed.readableBytes)
            gzipValue = (compressed, headers)
            gzipReady.store(true, ordering: .releasing)
            return (compressed, headers)
        }
    }

    package var gzipBody: ByteBuffer { gzipped.body }

    private let admissionValue = Mutex<EventAdmission?>(nil)

    /// How the namespace's event batches are admitted at this version (its crash guard policy and the values its flag
    /// set names), worked out on the first batch and then shared: publishing a version does not pay for it.
    package var admission: EventAdmission {
        admissionValue.withLock { value in
            if let value { return value }
            let admission = EventAdmission(flagSet: flagSet)
            value = admission
            return admission
        }
    }

    package var position: SnapshotVersion {
        SnapshotVersion(epoch: epoch, version: version)
    }

    /// What a request from `base` (a version of this epoch, below this one) gets when it accepts deltas: the
    /// delta, built on the first such request and shared by the rest, or the full snapshot with the reason.
    func deltaAnswer(from base: Int64) -> DeltaCache.Answer {
        deltas.answer(from: base) {
            guard base < version, let changes = history.changes(since: base) else { return .full(.unknownBase) }
            let delta = SnapshotDelta(
                base: base, target: compiled, changes: changes, checksum: checksum, digest: digest)
            let bytes = delta.encode()
            guard bytes.count < body.readableBytes else { return .full(.notSmaller) }
            return .delta(PublishedDelta(delta, bytes: bytes, entityTag: entityTag))
        }
    }
}

/// A long-poll request parked by its connection rather than by a suspended task: the snapshot fast path
/// (`SnapshotFastPathHandler`) answers it on the connection's event loop when it is woken.
package protocol ParkedConnection: Sendable {
    /// The event loop `wake` runs on.
    var eventLoop: any EventLoop { get }
    /// Answers the request; called on `eventLoop`, once, unless the connection forgot the wait first.
    func wake(_ reason: WakeReason)
}

/// Holds the current snapshot of every namespace and the long-poll requests waiting for the next one.
///
/// Publishing a version swaps the waiters out under the lock and resumes them outside it; one sweeper
/// (`run()`) answers waiters whose wait ended; a cancelled request removes its waiter; graceful shutdown answers
/// every waiter at once and every later one immediately. A waiter is either a suspended task (the router's
/// handlers) or a parked connection (the snapshot fast path); connections are woken in batches on their event
/// loop, so a publish costs a hop per few hundred waiters rather than one per waiter.
package final class LongPollHub: Service, Sendable {
    enum Waiter: Sendable {
        case task(CheckedContinuation<WakeReason, Never>)
        case connection(any ParkedConnection)
    }
    typealias State = LongPollState<Waiter, ContinuousClock.Instant>

    /// What `park` did with a connection's request.
    package enum ParkAction: Sendable, Equatable {
        /// Parked under this id (for `forget`); `wake` answers it later.
        case parked(id: Int)
        /// Not parked: answer at once with this reason.
        case answerNow(WakeReason)
    }

    private struct Shared {
        var state: State
        var snapshots: [String: PublishedSnapshot] = [:]
        var nextID = 0
    }

    private let shared: Mutex<Shared>
    private let clock = ContinuousClock()
    private let deltaVersions: Int
    private let sweepInterval: Duration
    private let waitersGauge: Gauge
    /// Waiters answered because a newer version was published: the fan-out of changes.
    private let wakeups: Counter
    /// From a version's commit (its `updatedAt`) to its publication here; cross-instance delay on other instances.
    private let propagation: Timer
    /// Answers to snapshot requests that accept deltas: with a delta, or with the full snapshot.
    private let deltaAnswers: Counter
    private let fullAnswersToDeltaRequests: Counter
    private let metricsFactory: any MetricsFactory
    private let logger: Logger

    /// - Parameter deltaVersions: how many versions back deltas may start (0: never answer with a delta).
    package init(
        maximumWaiters: Int, maximumWaitersPerAddress: Int = .max, deltaVersions: Int = 100,
        sweepInterval: Duration = .milliseconds(100), metricsFactory: any MetricsFactory, logger: Logger
    ) {
        shared = Mutex(
            Shared(state: State(maximumWaiters: maximumWaiters, maximumWaitersPerAddress: maximumWaitersPerAddress)))
        self.deltaVersions = deltaVersions
        self.sweepInterval = sweepInterval
        self.metricsFactory = metricsFactory
        self.waitersGauge = Gauge(label: "flagsd_long_poll_waiters", factory: metricsFactory)
        self.wakeups = Counter(label: "flagsd_long_poll_wakeups_total", factory: metricsFactory)
        self.propagation = Timer(label: "flagsd_change_propagation_seconds", factory: metricsFactory)
        self.deltaAnswers = Counter(
            label: "flagsd_snapshot_delta_answers_total", dimensions: [("answer", "delta")], factory: metricsFactory)
        self.fullAnswersToDeltaRequests = Counter(
            label: "flagsd_snapshot_delta_answers_total", dimensions: [("answer", "full")],
            factory: metricsFactory)
        self.logger = logger
        waitersGauge.record(0)
        // The cap next to the count, so an alert can compare them (Dashboards/alerts.yml).
        Gauge(label: "flagsd_long_poll_max_waiters", factory: metricsFactory).record(maximumWaiters)
        KnownSeries.process(metricsFactory)
    }

    /// Counts an answer with a body to a request that accepted deltas.
    func countAnswer(delta: Bool) {
        (delta ? deltaAnswers : fullAnswersToDeltaRequests).increment()
    }

    /// The current snapshot of a namespace; nil when it is unknown.
    package func snapshot(of namespace: String) -> PublishedSnapshot? {
        shared.withLock { $0.snapshots[namespace] }
    }

    /// The epoch and version held of every namespace.
    package func positions() -> [String: SnapshotVersion] {
        shared.withLock { $0.snapshots.mapValues(\.position) }
    }

    /// The number of parked requests.
    package var waiterCount: Int {
        shared.withLock { $0.state.count }
    }

    /// Makes a namespace state current (when it is newer than the current one) and wakes the requests it passes.
    ///
    /// The new snapshot continues the delta history of the one it replaces, and the delta from that version (which
    /// most waiters hold) is built before they are woken.
    package func publish(_ state: NamespaceState) {
        let name = state.record.name
        var previous = self.snapshot(of: name)
        if let previous, previous.epoch == state.record.epoch, previous.version >= state.record.version { return }
        var snapshot: PublishedSnapshot
        while true {
            snapshot = PublishedSnapshot(state.snapshot, previous: previous, deltaVersions: deltaVersions)
            // Another publication may have replaced the one this continues meanwhile: continue that one instead.
            let latest = self.snapshot(of: name)
            if latest === previous { break }
            if let latest, latest.epoch == snapshot.epoch, latest.version >= snapshot.version { return }
            previous = latest
        }
        if let previous, previous.epoch == snapshot.epoch, deltaVersions > 0 {
            _ = snapshot.deltaAnswer(from: previous.version)
        }
        // The version replaced is freed off the change's path: thousands of members to release.
        if let previous { Self.retire(previous) }
        let position = snapshot.position
        let (woken, count, isUpdate) = shared.withLock { shared -> ([Waiter], Int, Bool) in
            let current = shared.snapshots[snapshot.namespace]
            if let current, current.epoch == snapshot.epoch, current.version >= snapshot.version {
                return ([], shared.state.count, false)
            }
            shared.snapshots[snapshot.namespace] = snapshot
            return (shared.state.publish(snapshot.namespace, position), shared.state.count, current != nil)
        }
        Gauge(
            label: "flagsd_namespace_version", dimensions: [("namespace", snapshot.namespace)], factory: metricsFactory
        )
        .record(snapshot.version)
        if !isUpdate { KnownSeries.namespace(snapshot.namespace, metricsFactory) }
        Self.wake(woken, .changed)
        // After the wake, not before it: what reading and publishing a large document freed goes back to the
        // system a second later.
        MemoryReturn.afterLargeDocument(bytes: snapshot.body.readableBytes)
        waitersGauge.record(count)
        wakeups.increment(by: woken.count)
        // A namespace's first publication (at start) is not a change arriving; clocks of other hosts may run behind.
        if isUpdate {
            propagation.recordNanoseconds(max(0, Int64(Date().timeIntervalSince(state.record.updatedAt) * 1e9)))
        }
    }

    /// Lets a replaced snapshot go on a background thread, so that freeing it (when nothing else holds it) does not
    /// delay the publication that replaced it.
    private static func retire(_ snapshot: PublishedSnapshot) {
        DispatchQueue.global(qos: .utility).async { withExtendedLifetime(snapshot) {} }
    }

    /// Resumes parked tasks, and wakes parked connections in one job per event loop.
    private static func wake(_ waiters: [Waiter], _ reason: WakeReason) {
        var connections: [ObjectIdentifier: (loop: any EventLoop, parked: [any ParkedConnection])] = [:]
        for waiter in waiters {
            switch waiter {
            case .task(let continuation):
                continuation.resume(returning: reason)
            case .connection(let connection):
                connections[ObjectIdentifier(connection.eventLoop), default: (connection.eventLoop, [])].parked.append(
                    connection)
            }
        }
        for (loop, parked) in connections.values {
            wake(parked[...], on: loop, reason)
        }
    }

    /// Parked connections woken per job on their loop: between jobs, work queued meanwhile (the change's own
    /// response, other handlers' writes) gets its turn.
    private static let wakeBatch = 256

    private static func wake(_ parked: ArraySlice<any ParkedConnection>, on loop: any EventLoop, _ reason: WakeReason) {
        loop.execute {
            for connection in parked.prefix(wakeBatch) { connection.wake(reason) }
            let rest = parked.dropFirst(wakeBatch)
            if !rest.isEmpty { wake(rest, on: loop, reason) }
        }
    }

    /// Forgets a deleted namespace and answers its waiters.
    package func remove(_ namespace: String) {
        let (woken, count) = shared.withLock { shared in
            shared.snapshots[namespace] = nil
            return (shared.state.remove(namespace), shared.state.count)
        }
        Self.wake(woken, .gone)
        waitersGauge.record(count)
    }

    /// Waits until a namespace passes a position, the timeout ends, or the service shuts down.
    ///
    /// - Parameter address: the request's source address (for the cap per address); nil when unknown.
    package func wait(
        for namespace: String, after position: SnapshotVersion, timeout: Duration, address: IPAddress? = nil
    ) async -> WakeReason {
        let blocks = address?.blocks ?? []
        let deadline = clock.now.advanced(by: timeout)
        let id = shared.withLock { shared in
            shared.nextID += 1
            return shared.nextID
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<WakeReason, Never>) in
                let (action, count) = shared.withLock { shared in
                    (
                        shared.state.register(
                            id: id, namespace: namespace, after: position, deadline: deadline,
                            waiter: .task(continuation),
                            address: blocks),
                        shared.state.count
                    )
                }
                switch action {
                case .parked:
                    waitersGauge.record(count)
                    if Task.isCancelled { cancel(id) }
                case .answerNow(let reason):
                    refused(reason)
                    continuation.resume(returning: reason)
                }
            }
        } onCancel: {
            cancel(id)
        }
    }

    private func cancel(_ id: Int) {
        let waiter = shared.withLock { $0.state.cancel(id: id) }
        if let waiter { Self.wake([waiter], .cancelled) }
    }

    /// Parks a connection's request until a namespace passes a position, the timeout ends, or the service shuts
    /// down; `connection.wake` then answers it on its event loop.
    ///
    /// - Parameter address: the request's source address (for the cap per address); nil when unknown.
    /// - Returns: `.parked(id:)`, or `.answerNow` with the reason to answer with at once (the namespace passed the
    ///   position already, is unknown, too many requests wait, in all or from the address, or the service is
    ///   shutting down).
    package func park(
        _ connection: any ParkedConnection, for namespace: String, after position: SnapshotVersion,
        timeout: Duration, address: IPAddress? = nil
    ) -> ParkAction {
        let deadline = clock.now.advanced(by: timeout)
        let blocks = address?.blocks ?? []
        let (action, count) = shared.withLock { shared -> (ParkAction, Int) in
            shared.nextID += 1
            let id = shared.nextID
            switch shared.state.register(
                id: id, namespace: namespace, after: position, deadline: deadline,
                waiter: .connection(connection), address: blocks)
            {
            case .parked: return (.parked(id: id), shared.state.count)
            case .answerNow(let reason): return (.answerNow(reason), shared.state.count)
            }
        }
        switch action {
        case .parked: waitersGauge.record(count)
        case .answerNow(let reason): refused(reason)
        }
        return action
    }

    /// Counts a request refused for a cap in `flagsd_long_poll_refused_total`.
    private func refused(_ reason: WakeReason) {
        switch reason {
        case .overloaded: countRefused(.waiterCap)
        case .addressBusy: countRefused(.addressCap)
        default: break
        }
    }

    /// Counts a long-poll refused in `flagsd_long_poll_refused_total{reason}`: past a cap here (`waiter_cap`,
    /// `address_cap`), or past a rate before it came here (`address_rate`, `token_rate`). The reason is a fixed word.
    func countRefused(_ reason: KnownSeries.LongPollRefusal) {
        KnownSeries.counter(reason, metricsFactory).increment()
    }

    /// Removes a parked connection's request without waking it (its connection closed).
    package func forget(_ id: Int) {
        let (waiter, count) = shared.withLock { ($0.state.cancel(id: id), $0.state.count) }
        if waiter != nil { waitersGauge.record(count) }
    }

    /// Answers every waiter and every later request at once (graceful shutdown).
    package func shutdown() {
        let woken = shared.withLock { $0.state.shutdown() }
        Self.wake(woken, .shutdown)
        waitersGauge.record(0)
        if !woken.isEmpty {
            logger.info("answered waiting requests for shutdown", metadata: ["count": "\(woken.count)"])
        }
    }

    /// Whether `shutdown()` ran.
    package var isShutDown: Bool {
        shared.withLock { $0.state.isShutDown }
    }

    /// Expires waits that ended, until graceful shutdown, which answers every waiter.
    package func run() async throws {
        await withGracefulShutdownHandler {
            while !Task.isCancelled, !isShutDown {
                try? await Task.sleep(for: sweepInterval)
                sweep()
            }
        } onGracefulShutdown: {
            self.shutdown()
        }
        shutdown()
    }

    /// Answers the waiters whose deadline passed.
    package func sweep() {
        let now = clock.now
        let (expired, count) = shared.withLock { shared in
            (shared.state.expire(now: now), shared.state.count)
        }
        guard !expired.isEmpty else { return }
        Self.wake(expired, .timedOut)
        waitersGauge.record(count)
    }
}
