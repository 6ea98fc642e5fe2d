#if canImport(Darwin)
    import Darwin
#elseif canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// A value behind a mutex, for state that must be read synchronously from any thread.
///
/// `Synchronization.Mutex` needs iOS 18; this box works on every platform the client supports, over a
/// `pthread_mutex_t` (as swift-nio's `NIOLock` does on Apple platforms and Linux alike). Keep critical sections
/// short and never call out to user code or do I/O while holding the lock.
package final class LockedBox<Value> {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private var value: Value

    package init(_ value: Value) {
        self.value = value
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        let result = pthread_mutex_init(mutex, nil)
        precondition(result == 0, "pthread_mutex_init failed with \(result)")
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deinitialize(count: 1)
        mutex.deallocate()
    }

    /// Runs `body` with exclusive access to the value.
    @inline(__always)
    package func withLock<Result, Failure: Error>(_ body: (inout Value) throws(Failure) -> Result) throws(Failure)
        -> Result
    {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }

    /// A copy of the value (for a class reference: the reference, retained).
    @inline(__always)
    package var current: Value {
        withLock { $0 }
    }
}

extension LockedBox: @unchecked Sendable where Value: Sendable {}

extension LockedBox: CustomReflectable {
    /// A copy taken under the lock: reflecting the raw storage while another thread writes it would be a race.
    package var customMirror: Mirror {
        Mirror(self, children: ["value": current])
    }
}
