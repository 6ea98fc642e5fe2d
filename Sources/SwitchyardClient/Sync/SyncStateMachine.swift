package import SwitchyardCore

/// The decisions of the snapshot sync loop, without I/O: what to request next, how long to wait, and what to do
/// with each answer.
///
/// The loop (``FlagClient/run()``) asks ``nextAction()``, performs it (a request or a sleep on the injected
/// clock), and feeds each request's outcome to ``received(_:elapsed:)``, which returns a ``Verdict``.
///
/// Rules:
/// - The first request is a plain conditional GET (an entity tag when a bundled or cached snapshot is
///   installed, no `wait`), so a cached snapshot is confirmed or replaced at once; every later one long-polls.
/// - A snapshot for another namespace, or of the installed epoch at an older version, is refused. The same
///   version confirms what is installed. Another epoch (the namespace was recreated) is accepted.
/// - Requests accept deltas (`Policy.deltas`) when a snapshot is installed. A delta that does not start from the
///   installed version (a gap), or that the client cannot apply (``deltaFailed(_:)``: inconsistent, invalid, a
///   checksum mismatch), is refused and the next request asks for the full snapshot at once, without waiting.
///   After three unusable deltas in a row the client stops asking for deltas until it is restarted.
/// - A failure (transport error, timeout, bad status, invalid body, refused snapshot) backs off with full jitter.
///   503 and 429 wait for `Retry-After` (capped) plus the jittered backoff.
/// - Successes are spaced by at least `minimumPollInterval`, so a server that answers a long-poll at once, every
///   time, cannot spin the client.
package struct SyncStateMachine: Sendable {
    package struct Policy: Sendable, Hashable {
        package var namespace: String
        package var longPollWait: Duration
        package var minimumPollInterval: Duration
        package var backoff: Backoff
        package var maximumRetryAfter: Duration
        /// Whether requests ask for deltas.
        package var deltas: Bool

        package init(
            namespace: String, longPollWait: Duration = .seconds(60), minimumPollInterval: Duration = .seconds(1),
            backoff: Backoff = Backoff(), maximumRetryAfter: Duration = .seconds(3600), deltas: Bool = true
        ) {
            self.namespace = namespace
            self.deltas = deltas
            self.longPollWait = longPollWait
            self.minimumPollInterval = minimumPollInterval
            self.backoff = backoff
            self.maximumRetryAfter = maximumRetryAfter
        }
    }

    /// A snapshot request: the entity tag to send in `If-None-Match`, the long-poll wait, and whether a delta
    /// from the installed version is welcome.
    package struct Request: Sendable, Hashable {
        package var entityTag: String?
        /// Nil for a plain (conditional) GET.
        package var wait: Duration?
        package var acceptsDelta = false
    }

    package enum Action: Sendable, Hashable {
        case fetch(Request)
        case sleep(Duration)
    }

    /// What a request brought back, once the body is decoded.
    package enum Outcome: Sendable {
        /// 200 with a valid snapshot document, and the document's bytes (what the cache keeps).
        case snapshot(Snapshot, document: [UInt8]? = nil)
        /// 200 with a well-formed delta document.
        case delta(SnapshotDelta)
        /// 304.
        case notModified
        /// 503 or 429, with `Retry-After` when the server sent one.
        case throttled(retryAfter: Duration?, status: Int)
        /// Anything else: transport error, timeout, bad status, invalid body.
        case failed(ClientError)
    }

    /// What the loop does with an outcome.
    package enum Verdict: Sendable {
        /// Install this snapshot (persist it, with the bytes it came in when known; compile it; publish the change).
        case install(Snapshot, document: [UInt8]?)
        /// Apply this delta to the installed snapshot, then report a failure with ``deltaFailed(_:)``.
        case applyDelta(SnapshotDelta)
        /// The installed snapshot is current.
        case confirm
        /// The answer was refused or the request failed; keep the installed snapshot.
        case reject(ClientError)
    }

    package let policy: Policy
    private let random: @Sendable () -> Double
    package private(set) var installed: SnapshotVersion?
    /// Whether a request has succeeded since the loop started.
    package private(set) var hasReachedServer = false
    package private(set) var consecutiveFailures = 0
    private var pendingDelay: Duration?
    /// Set when a delta could not be used: the next request asks for the full snapshot, at once.
    package private(set) var needsFullSnapshot = false
    /// Unusable deltas in a row; at three, deltas are no longer asked for.
    package private(set) var consecutiveDeltaFailures = 0
    private static let deltaFailureLimit = 3

    /// - Parameters:
    ///   - installed: the snapshot installed before the loop starts (bundled or cached), if any.
    ///   - random: a number in 0..<1 for jitter.
    package init(policy: Policy, installed: SnapshotVersion?, random: @escaping @Sendable () -> Double) {
        self.policy = policy
        self.installed = installed
        self.random = random
    }

    /// What to do next: sleep after a failure or a too-early success, else fetch.
    package mutating func nextAction() -> Action {
        if let delay = pendingDelay {
            pendingDelay = nil
            if delay > .zero { return .sleep(delay) }
        }
        return .fetch(request)
    }

    /// The next request.
    package var request: Request {
        guard let installed else { return Request(entityTag: nil, wait: nil) }
        if needsFullSnapshot { return Request(entityTag: installed.entityTag, wait: nil, acceptsDelta: false) }
        return Request(
            entityTag: installed.entityTag, wait: hasReachedServer ? policy.longPollWait : nil,
            acceptsDelta: policy.deltas && consecutiveDeltaFailures < Self.deltaFailureLimit)
    }

    /// Whether the client asks for deltas (until three in a row proved unusable).
    package var asksForDeltas: Bool {
        policy.deltas && consecutiveDeltaFailures < Self.deltaFailureLimit
    }

    /// Decides what an outcome means.
    /// - Parameter elapsed: how long the request took (for spacing successes).
    package mutating func received(_ outcome: Outcome, elapsed: Duration) -> Verdict {
        switch outcome {
        case .snapshot(let snapshot, let document):
            if snapshot.namespace != policy.namespace {
                return fail(
                    ClientError(
                        .wrongNamespace,
                        "the server sent a snapshot of namespace '\(snapshot.namespace)' to a client of '\(policy.namespace)'; check the server URL and the token's namespace"
                    ))
            }
            if let installed, installed.epoch == snapshot.epoch {
                if snapshot.version < installed.version {
                    return fail(
                        ClientError(
                            .olderVersion,
                            "the server sent version \(snapshot.version) of '\(policy.namespace)' (epoch \(snapshot.epoch)) but the client holds version \(installed.version); refusing to go back (a lagging replica or cache?)"
                        ))
                }
                if snapshot.version == installed.version {
                    succeed(elapsed: elapsed)
                    return .confirm
                }
            }
            installed = snapshot.snapshotVersion
            succeed(elapsed: elapsed)
            return .install(snapshot, document: document)
        case .delta(let delta):
            if delta.namespace != policy.namespace {
                return fail(
                    ClientError(
                        .wrongNamespace,
                        "the server sent a delta of namespace '\(delta.namespace)' to a client of '\(policy.namespace)'; check the server URL and the token's namespace"
                    ))
            }
            guard let installed, installed.epoch == delta.epoch, installed.version == delta.baseVersion else {
                let held = installed.map { "\($0.epoch).\($0.version)" } ?? "nothing"
                return deltaFailed(
                    ClientError(
                        .invalidSnapshot,
                        "the server sent a delta from \(delta.epoch).\(delta.baseVersion) to a client holding \(held) (a gap); fetching the full snapshot"
                    ))
            }
            self.installed = SnapshotVersion(epoch: delta.epoch, version: delta.version)
            succeed(elapsed: elapsed)
            return .applyDelta(delta)
        case .notModified:
            guard installed != nil else {
                return fail(
                    ClientError(
                        .protocolViolation, "the server answered 304 Not Modified to a request without an entity tag"))
            }
            succeed(elapsed: elapsed)
            return .confirm
        case .throttled(let retryAfter, let status):
            consecutiveFailures += 1
            let wait = min(retryAfter ?? .zero, policy.maximumRetryAfter)
            pendingDelay = wait + policy.backoff.delay(afterFailures: consecutiveFailures, random: random())
            let hint = retryAfter.map { " (Retry-After: \(Int64($0.secondsValue)) s)" } ?? ""
            return .reject(
                ClientError(.throttled, "the server is busy: \(status)\(hint); retrying later", status: status))
        case .failed(let error):
            return fail(error)
        }
    }

    /// The delta of an `applyDelta` verdict could not be applied (or a delta did not start from the installed
    /// version): the installed snapshot stays, and the next request asks for the full snapshot at once.
    ///
    /// - Parameters:
    ///   - error: why.
    ///   - installed: the snapshot still installed.
    @discardableResult
    package mutating func deltaFailed(_ error: ClientError, installed: SnapshotVersion? = nil) -> Verdict {
        if let installed { self.installed = installed }
        consecutiveDeltaFailures += 1
        needsFullSnapshot = true
        pendingDelay = nil
        return .reject(error)
    }

    /// A delta was applied: the count of unusable ones starts again.
    package mutating func deltaApplied() {
        consecutiveDeltaFailures = 0
    }

    private mutating func succeed(elapsed: Duration) {
        hasReachedServer = true
        needsFullSnapshot = false
        consecutiveFailures = 0
        pendingDelay = elapsed < policy.minimumPollInterval ? policy.minimumPollInterval - elapsed : nil
    }

    private mutating func fail(_ error: ClientError) -> Verdict {
        consecutiveFailures += 1
        pendingDelay = policy.backoff.delay(afterFailures: consecutiveFailures, random: random())
        return .reject(error)
    }
}
