import Foundation

/// Runs blocking work (opening a database, syncing a file) on a thread of its own and awaits its result, so that it
/// never holds a thread of Swift's cooperative pool: the pool has one thread per core and runs a job until it
/// suspends, so a job that waits seconds for a disk delays every request and long-poll wake-up of the process.
///
/// For rare work only (a thread per call): the store's steady-state reads and writes go through GRDB's own queues.
///
/// - Parameter work: the blocking work.
/// - Returns: what `work` returned.
/// - Throws: what `work` threw.
func awaitBlocking<T: Sendable, Failure: Error>(_ work: @escaping @Sendable () throws(Failure) -> T)
    async throws(Failure) -> T
{
    let result = await withCheckedContinuation { (continuation: CheckedContinuation<Result<T, Failure>, Never>) in
        let thread = Thread {
            continuation.resume(returning: Result { () throws(Failure) -> T in try work() })
        }
        thread.start()
    }
    return try result.get()
}
