import Synchronization

/// One connection's router side (Hummingbird's request loop for it), which runs only once the snapshot fast path
/// hands it something.
///
/// Hummingbird runs every connection in a child task of one task group, whose loop waits for request parts from the
/// moment the connection opens: about 6.6 KB of async frames per connection (heaptrack, 10,000 parked long-polls).
/// Most of flagsd's connections are clients polling the snapshot, which `SnapshotFastPathHandler` answers on the event
/// loop: their router side never has anything to do. So a connection's task (`GatedHTTP1Channel.handle`) runs the
/// request loop only if the fast path already handed the router something (a request part it does not own, a request
/// the decoder could not read, a user event other than quiescing); otherwise it leaves the loop's start here and
/// ends. (Quiescing, the end of the client's input and a reset the fast path handles itself when the router has
/// nothing: see `SnapshotFastPathHandler.pass`.) When the fast
/// path first hands something on later, `open()` launches the loop on `LateRouterSides`; it finds what was handed
/// over buffered in its inbound stream. A connection that closes before that needs no loop at all: its start is
/// dropped once the channel has closed (`channelClosed()`), after NIO removed its handlers, which finishes the
/// connection's async writer (dropping it unfinished before that is a precondition failure in NIO).
///
/// Ending the connection's task at once also keeps Hummingbird's task group short: the Swift 6.3 runtime removes an
/// ended child by walking the group's list from its oldest child, so closing 10,000 connections that each held a task
/// cost a core ~1.7 s (bench/README.md, "Parking long-polls").
///
/// `open()` and `channelClosed()` are called on the connection's event loop, `runNowOrPark(launch:)` from its task;
/// they may come in any order.
final class RouterSide: Sendable {
    private enum State {
        /// Nothing handed on yet, and the connection's task has not looked.
        case idle
        /// Something was handed on before the connection's task looked: it runs the loop itself.
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

    /// Called by the connection's task: true when the caller is to run the loop now (the router already has
    /// something); false when `launch` was kept for `open()`, or the connection has closed already.
    func runNowOrPark(launch: @escaping @Sendable () -> Void) -> Bool {
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
        // Taken out of the lock before it is released: the launch holds the connection's async channel.
        let dropped: State? = state.withLock { state in
            switch state {
            case .idle, .demanded, .parked:
                defer { state = .closed }
                return state
            case .started, .closed:
                return nil
            }
        }
        _ = dropped
    }
}

/// Runs the router sides launched after their connection's own task ended (`RouterSide`), in a task group of the HTTP
/// server's service, so that they see its graceful shutdown and its cancellation as Hummingbird's own connections do.
final class LateRouterSides: Sendable {
    private let stream: AsyncStream<@Sendable () async -> Void>
    private let continuation: AsyncStream<@Sendable () async -> Void>.Continuation
    private let launched = Atomic(0)
    private let left = Atomic(0)

    init() {
        (stream, continuation) = AsyncStream.makeStream()
    }

    /// How many router sides were launched here (for tests).
    var launchedCount: Int { launched.load(ordering: .relaxed) }

    /// How many connections' tasks ended without running their router loop (for tests).
    var leftCount: Int { left.load(ordering: .relaxed) }

    /// A connection's task ended without running its router loop.
    func countLeft() {
        left.add(1, ordering: .relaxed)
    }

    /// Runs `loop` in the group; in a task of its own once the group has finished (never dropped: the loop closes
    /// its connection).
    func launch(_ loop: @escaping @Sendable () async -> Void) {
        launched.add(1, ordering: .relaxed)
        if case .terminated = continuation.yield(loop) {
            Task { await loop() }
        }
    }

    /// Runs what is launched until `finish()`, then waits for it to end.
    func run() async {
        await withDiscardingTaskGroup { group in
            for await loop in stream {
                group.addTask { await loop() }
            }
        }
    }

    /// Lets `run()` return once what it runs has ended.
    func finish() {
        continuation.finish()
    }
}
