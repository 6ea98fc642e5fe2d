import Foundation

/// Runs blocking or CPU-heavy work (a socket read, a thousand simulated fleets) on a thread of its own, so it never
/// holds one of the cooperative pool's threads (two on this machine) while other tests wait for them.
public func onOwnThread<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread.detachNewThread { continuation.resume(with: Result { try work() }) }
    }
}
