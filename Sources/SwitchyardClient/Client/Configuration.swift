public import Foundation
public import SwitchyardCore

extension FlagClient {
    /// Everything a client needs: where the server is, which namespace, who the unit is, where to keep files,
    /// and the policies. Only `serverURL`, `namespace`, `token` and `context` are required.
    public struct Configuration: Sendable {
        /// The flagsd base URL, e.g. `https://flags.example.com`.
        public var serverURL: URL
        /// The namespace to follow (`rider`).
        public var namespace: String
        /// A client-role token; sent as `Authorization: Bearer`, never logged.
        public var token: String
        /// The unit the app evaluates for; updatable later with ``FlagClient/updateContext(_:)``.
        public var context: EvaluationContext
        /// Where the client keeps its last known good snapshot, session record, crash guard and event queue
        /// (`Application Support/Switchyard/<namespace>` on iOS). Nil keeps everything in memory: no cache, no
        /// crash attribution across launches.
        public var directory: URL?
        /// A snapshot document shipped with the app, used until a cached or live one is available.
        public var bundledSnapshot: [UInt8]?

        /// How long the server may hold a long-poll (`wait`). Servers clamp it to their own cap.
        public var longPollWait: Duration = .seconds(60)
        /// The deadline of a request beyond its long-poll wait (a plain GET gets this much time in all).
        public var requestTimeout: Duration = .seconds(15)
        /// The least time between two successful polls.
        public var minimumPollInterval: Duration = .seconds(1)
        /// Backoff after failures (full jitter).
        public var backoff = Backoff()
        /// `Retry-After` values above this are capped.
        public var maximumRetryAfter: Duration = .seconds(3600)
        /// Whether to ask the server for deltas: what changed since the installed version instead of the whole
        /// snapshot (`docs/client.md`, "Deltas"). A delta that does not apply, or whose result is not exactly the
        /// snapshot the server holds, is refused and the full snapshot fetched instead.
        public var deltas = true
        /// The largest snapshot accepted from the server or the cache.
        public var maximumSnapshotSize = 16 << 20
        /// Opt-in staleness policy: when the snapshot has not been confirmed by the server for longer than
        /// this, every plugin switch is off (reason `STALE`) and experiments serve code defaults. Nil: never.
        public var stalenessLimit: Duration?
        /// The on-device crash-loop guard.
        public var crashLoopGuard = CrashLoopGuardPolicy()
        /// The event queue and sender.
        public var events = EventPolicy()

        /// The transport for snapshot requests. Nil: a ``URLSessionTransport`` of its own.
        public var snapshotTransport: (any HTTPTransport)?
        /// The transport for event batches. Nil: a ``URLSessionTransport`` of its own (so events never queue
        /// behind a parked long-poll).
        public var eventTransport: (any HTTPTransport)?
        /// The clock the sync loop sleeps on.
        public var clock: any Clock<Duration> = ContinuousClock()
        /// Wall-clock time: snapshot age, event times, crash-guard TTL.
        public var wallClock: @Sendable () -> Date = { Date() }
        /// A random number in 0..<1, for jitter.
        public var random: @Sendable () -> Double = { Double.random(in: 0..<1) }
        /// Receives what the client has to say: failures, refused snapshots, crashes, factory failures. Called on
        /// the thread that noticed; keep it quick and never call back into the client synchronously from it.
        public var report: @Sendable (ClientReport) -> Void = { _ in }

        public init(
            serverURL: URL, namespace: String, token: String, context: EvaluationContext = EvaluationContext(),
            directory: URL? = nil
        ) {
            self.serverURL = serverURL
            self.namespace = namespace
            self.token = token
            self.context = context
            self.directory = directory
        }
    }

    /// The event queue and sender's policy.
    public struct EventPolicy: Sendable, Hashable {
        /// Queued events beyond this drop the oldest.
        public var capacity = 1000
        /// Events per request.
        public var batchSize = 100
        /// How long the sender waits after the first new event, to send several at once.
        public var flushDelay: Duration = .seconds(5)
        /// Whether experiment accessors report exposures (once per flag, variant and context).
        public var recordsExposures = true

        public init(
            capacity: Int = 1000, batchSize: Int = 100, flushDelay: Duration = .seconds(5),
            recordsExposures: Bool = true
        ) {
            self.capacity = capacity
            self.batchSize = batchSize
            self.flushDelay = flushDelay
            self.recordsExposures = recordsExposures
        }
    }
}
