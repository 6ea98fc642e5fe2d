import Synchronization

/// When a connection's router side (Hummingbird's task for the connection: its request loop) has something to do.
///
/// Hummingbird runs every connection in a task that waits for request parts from the moment the connection opens.
/// Waiting, that task holds about 6.6 KB of async frames (its request loop, the response writer, a cancellation
/// handler: heaptrack, 10,000 parked long-polls). Most of flagsd's connections are clients polling the snapshot,
/// which `SnapshotFastPathHandler` answers on the event loop: their router side never runs. So the router side
/// starts only on demand: the connection's task waits here (about 2 KB with its task locals), until the fast path
/// hands the router its first event (a request part it does not own, a user event such as end of input or
/// quiescing, an error, or the connection's end) or the task is cancelled; then it runs Hummingbird's request loop,
/// which finds what was handed over buffered in its inbound stream.
///
/// `open()` is called on the connection's event loop, `wait()` from its task; either may come first.
final class RouterDemand: Sendable {
    private enum State {
        case waiting(CheckedContinuation<Void, Never>?)
        case open
    }

    private let state = Mutex(State.waiting(nil))

    init() {}

    /// Whether a task is suspended in `wait()` (for tests, which order `wait()` before `open()` with it).
    var hasWaiter: Bool {
        state.withLock {
            if case .waiting(.some) = $0 { return true }
            return false
        }
    }

    /// Lets `wait()` return, now or as soon as it is called. Idempotent.
    func open() {
        let waiter: CheckedContinuation<Void, Never>? = state.withLock { state in
            guard case .waiting(let waiter) = state else { return nil }
            state = .open
            return waiter
        }
        waiter?.resume()
    }

    /// Returns once `open()` was called, or when the calling task is cancelled.
    func wait() async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let resumeNow = state.withLock { state in
                    switch state {
                    case .open:
                        return true
                    case .waiting:
                        state = .waiting(continuation)
                        return false
                    }
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            open()
        }
    }
}
