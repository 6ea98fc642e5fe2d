import Synchronization

/// One connection's router side (Hummingbird's request loop for it), which runs only once the snapshot fast path
/// hands it something.
///
/// Hummingbird runs every connection in a child task of one task group, whose loop waits for request parts from the
/// moment the connection opens: about 6.6 KB of async frames per connection (heaptrack, 10,000 parked long-polls).
/// Most of flagsd's connections are clients polling the snapshot, which `SnapshotFastPathHandler` answers on the event
/// loop: their router side never has anything to do. So a connection's task (`GatedHTTP1Channel.handle`) launches the
/// request loop (on `RouterLoops`) only if the fast path already handed the router something (a request part it does
/// not own, a request the decoder could not read, a user event other than quiescing); otherwise it leaves the loop's
/// launch here, and ends either way. (Quiescing, the end of the client's input and a reset the fast path handles
/// itself when the router has nothing: see `SnapshotFastPathHandler.pass`.) When the fast path first hands something
/// on later, `open()` launches the loop, which finds what was handed over buffered in its inbound stream. A
/// connection that closes before that needs no loop at all: its launch is dropped once the channel has closed
/// (`channelClosed()`), after NIO removed its handlers, which finishes the connection's async writer (dropping it
/// unfinished before that is a precondition failure in NIO).
///
/// A parked long-poll then holds no task at all, and Hummingbird's one task group for every connection holds only
/// tasks about to end (see `RouterLoops` on why a group's length matters).
///
/// `open()` and `channelClosed()` are called on the connection's event loop, `launchNowOrPark(launch:)` from its task;
/// they may come in any order.
final class RouterSide: Sendable {
    private enum State {
        /// Nothing handed on yet, and the connection's task has not looked.
        case idle
        /// Something was handed on before the connection's task looked: it launches the loop itself.
        case demanded
        /// The connection's task ended, leaving how to launch the loop.
        case parked(launch: @Sendable () -> Void)
        /// The loop runs (or ran).
        case started
        /// The channel closed with no loop started: none will be.
        case closed
    }

    private let state = Mutex(State.idle)

    init() {}

    /// Whether the connection's task left the loop's start here (for tests).
    var isParked: Bool {
        state.withLock {
            if case .parked = $0 { return true }
            return false
        }
    }

    /// Whether the loop was started, by its connection's task or by `open()` (for tests).
    var isStarted: Bool {
        state.withLock {
            if case .started = $0 { return true }
            return false
        }
    }

    /// Whether the router was handed something (its loop runs, or its connection's task will run it).
    var hasDemand: Bool {
        state.withLock {
            switch $0 {
            case .demanded, .started: true
            case .idle, .parked, .closed: false
            }
        }
    }

    /// The router has something to do: its loop runs, launched now if its connection's task already left. Idempotent.
    func open() {
        let launch: (@Sendable () -> Void)? = state.withLock { state in
            switch state {
            case .idle:
                state = .demanded
                return nil
            case .parked(let launch):
                state = .started
                return launch
            case .demanded, .started, .closed:
                return nil
            }
        }
        launch?()
    }

    /// Called by the connection's task: true when the caller is to launch the loop now (the router already has
    /// something); false when `launch` was kept for `open()`, or the connection has closed already.
    func launchNowOrPark(launch: @escaping @Sendable () -> Void) -> Bool {
        state.withLock { state in
            switch state {
            case .idle:
                state = .parked(launch: launch)
                return false
            case .demanded:
                state = .started
                return true
            case .parked, .started, .closed:
                return false
            }
        }
    }

    /// The channel has closed and its handlers are removed: a loop not started is dropped.
    func channelClosed() {
        // The state replaced is returned, so a launch it holds (and the connection's async channel) is released
        // after the lock, not inside it.
        _ = state.withLock { state -> State in
            if case .started = state { return .started }
            defer { state = .closed }
            return state
        }
    }
}

/// Runs every connection's router loop (Hummingbird's request loop: `RouterSide`), in task groups of the HTTP
/// server's service, so that the loops see its graceful shutdown and its cancellation as a connection's own task
/// would; a connection's task in Hummingbird's group only launches its loop here, or leaves it to be launched, and
/// ends.
///
/// The loops are spread over `shardCount` task groups, one after another: the Swift 6.3 runtime removes an ended
/// child by walking its group's list of children from the oldest, so one group of 10,000 connections costs ~1.7 s of
/// a core when they close at once (bench/README.md, "Parking long-polls"), and 64 groups cut each walk 64 times.
final class RouterLoops: Sendable {
    private struct Shard: Sendable {
        let stream: AsyncStream<@Sendable () async -> Void>
        let continuation: AsyncStream<@Sendable () async -> Void>.Continuation
    }

    static let shardCount = 64

    private let shards: [Shard]
    private let next = Atomic(0)
    private let launched = Atomic(0)
    private let left = Atomic(0)

    init() {
        shards = (0..<Self.shardCount).map { _ in
            let (stream, continuation) = AsyncStream<@Sendable () async -> Void>.makeStream()
            return Shard(stream: stream, continuation: continuation)
        }
    }

    /// How many router loops were launched (for tests).
    var launchedCount: Int { launched.load(ordering: .relaxed) }

    /// How many connections' tasks ended leaving their router loop unlaunched (for tests).
    var leftCount: Int { left.load(ordering: .relaxed) }

    /// A connection's task ended leaving its router loop unlaunched.
    func countLeft() {
        left.add(1, ordering: .relaxed)
    }

    /// Runs `loop` in the next group; in a task of its own once the groups have finished (never dropped: the loop
    /// closes its connection).
    func launch(_ loop: @escaping @Sendable () async -> Void) {
        launched.add(1, ordering: .relaxed)
        let shard = shards[next.wrappingAdd(1, ordering: .relaxed).oldValue % shards.count]
        if case .terminated = shard.continuation.yield(loop) {
            Task { await loop() }
        }
    }

    /// Runs what is launched until `finish()`, then waits for it to end.
    func run() async {
        await withDiscardingTaskGroup { shardGroup in
            for shard in shards {
                shardGroup.addTask {
                    await withDiscardingTaskGroup { group in
                        for await loop in shard.stream {
                            group.addTask { await loop() }
                        }
                    }
                }
            }
        }
    }

    /// Lets `run()` return once what it runs has ended.
    func finish() {
        for shard in shards { shard.continuation.finish() }
    }
}
