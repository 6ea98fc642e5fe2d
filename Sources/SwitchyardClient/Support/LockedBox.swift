#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A value behind a mutex, for state that must be read synchronously from any thread.
///
/// `Synchronization.Mutex` needs iOS 18; this box works on every platform the client supports. It uses
/// `os_unfair_lock` on Apple platforms and a `pthread_mutex_t` elsewhere. Keep critical sections short and never
/// call out to user code or do I/O while holding the lock.
package final class LockedBox<Value> {
    #if canImport(Darwin)
    private let mutex: UnsafeMutablePointer<os_unfair_lock>
    #else
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    #endif
    private var value: Value

    package init(_ value: Value) {
        self.value = value
        #if canImport(Darwin)
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: os_unfair_lock())
        #else
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        let result = pthread_mutex_init(mutex, nil)
        precondition(result == 0, "pthread_mutex_init failed with \(result)")
        #endif
    }

    deinit {
        #if !canImport(Darwin)
        pthread_mutex_destroy(mutex)
        #endif
        mutex.deinitialize(count: 1)
        mutex.deallocate()
    }

    /// Runs `body` with exclusive access to the value.
    @inline(__always)
    package func withLock<Result, Failure: Error>(_ body: (inout Value) throws(Failure) -> Result) throws(Failure) -> Result {
        #if canImport(Darwin)
        os_unfair_lock_lock(mutex)
        defer { os_unfair_lock_unlock(mutex) }
        #else
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        #endif
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
