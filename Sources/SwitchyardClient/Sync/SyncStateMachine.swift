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

        package init(namespace: String, longPollWait: Duration = .seconds(60), minimumPollInterval: Duration = .seconds(1),
                     backoff: Backoff = Backoff(), maximumRetryAfter: Duration = .seconds(3600)) {
            self.namespace = namespace
            self.longPollWait = longPollWait
            self.minimumPollInterval = minimumPollInterval
            self.backoff = backoff
            self.maximumRetryAfter = maximumRetryAfter
        }
    }

    /// A snapshot request: the entity tag to send in `If-None-Match`, and the long-poll wait.
    package struct Request: Sendable, Hashable {
        package var entityTag: String?
        /// Nil for a plain (conditional) GET.
        package var wait: Duration?
    }

    package enum Action: Sendable, Hashable {
        case fetch(Request)
        case sleep(Duration)
    }

    /// What a request brought back, once the body is decoded.
    package enum Outcome: Sendable {
        /// 200 with a valid snapshot document.
        case snapshot(Snapshot)
        /// 304.
        case notModified
        /// 503 or 429, with `Retry-After` when the server sent one.
        case throttled(retryAfter: Duration?, status: Int)
        /// Anything else: transport error, timeout, bad status, invalid body.
        case failed(ClientError)
    }

    /// What the loop does with an outcome.
    package enum Verdict: Sendable {
        /// Install this snapshot (persist it, compile it, publish the change).
        case install(Snapshot)
        /// The installed snapshot is current.
        case confirm
        /// The answer was refused or the request failed; keep the installed snapshot.
        case reject(ClientError)
    }

    /// The identity of the installed snapshot.
    package struct Installed: Sendable, Hashable {
        package var epoch: String
        package var version: Int64

        package init(epoch: String, version: Int64) {
            self.epoch = epoch
            self.version = version
        }

        package init(_ snapshot: Snapshot) {
            self.init(epoch: snapshot.epoch, version: snapshot.version)
        }

        /// `"<epoch>.<version>"`.
        package var entityTag: String { "\"\(epoch).\(version)\"" }
    }

    package let policy: Policy
    private let random: @Sendable () -> Double
    package private(set) var installed: Installed?
    /// Whether a request has succeeded since the loop started.
    package private(set) var hasReachedServer = false
    package private(set) var consecutiveFailures = 0
    private var pendingDelay: Duration?

    /// - Parameters:
    ///   - installed: the snapshot installed before the loop starts (bundled or cached), if any.
    ///   - random: a number in 0..<1 for jitter.
    package init(policy: Policy, installed: Installed?, random: @escaping @Sendable () -> Double) {
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
        return Request(entityTag: installed.entityTag, wait: hasReachedServer ? policy.longPollWait : nil)
    }

    /// Decides what an outcome means.
    /// - Parameter elapsed: how long the request took (for spacing successes).
    package mutating func received(_ outcome: Outcome, elapsed: Duration) -> Verdict {
        switch outcome {
        case .snapshot(let snapshot):
            if snapshot.namespace != policy.namespace {
                return fail(ClientError(.wrongNamespace, "the server sent a snapshot of namespace '\(snapshot.namespace)' to a client of '\(policy.namespace)'; check the server URL and the token's namespace"))
            }
            if let installed, installed.epoch == snapshot.epoch {
                if snapshot.version < installed.version {
                    return fail(ClientError(.olderVersion, "the server sent version \(snapshot.version) of '\(policy.namespace)' (epoch \(snapshot.epoch)) but the client holds version \(installed.version); refusing to go back (a lagging replica or cache?)"))
                }
                if snapshot.version == installed.version {
                    succeed(elapsed: elapsed)
                    return .confirm
                }
            }
            installed = Installed(snapshot)
            succeed(elapsed: elapsed)
            return .install(snapshot)
        case .notModified:
            guard installed != nil else {
                return fail(ClientError(.protocolViolation, "the server answered 304 Not Modified to a request without an entity tag"))
            }
            succeed(elapsed: elapsed)
            return .confirm
        case .throttled(let retryAfter, let status):
            consecutiveFailures += 1
            let wait = min(retryAfter ?? .zero, policy.maximumRetryAfter)
            pendingDelay = wait + policy.backoff.delay(afterFailures: consecutiveFailures, random: random())
            let hint = retryAfter.map { " (Retry-After: \(Int64($0.secondsValue)) s)" } ?? ""
            return .reject(ClientError(.throttled, "the server is busy: \(status)\(hint); retrying later", status: status))
        case .failed(let error):
            return fail(error)
        }
    }

    private mutating func succeed(elapsed: Duration) {
        hasReachedServer = true
        consecutiveFailures = 0
        pendingDelay = elapsed < policy.minimumPollInterval ? policy.minimumPollInterval - elapsed : nil
    }

    private mutating func fail(_ error: ClientError) -> Verdict {
        consecutiveFailures += 1
        pendingDelay = policy.backoff.delay(afterFailures: consecutiveFailures, random: random())
        return .reject(error)
    }
}
