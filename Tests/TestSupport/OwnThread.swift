import Foundation

/// Runs CPU-heavy test work (property runs over thousands of random cases, simulations, in-process matrices) on a
/// thread of its own, so that it never holds a thread of Swift's cooperative pool.
///
/// The pool has one thread per core (two on CI machines) and runs each job until it suspends: a test that computes
/// for seconds on it delays every other test of the process by as long (a long-poll's wake-up, a database answer,
/// a server's reply), and on a loaded machine by many times as long. The kernel shares the cores fairly between
/// this thread and the pool's, so the rest of the suite keeps moving while the work runs.
///
/// The body runs in the calling task (with the thread as its executor preference), so `#expect` and `#require`
/// inside it record their issues against the test as anywhere else.
///
/// ```swift
/// @Test func shareOfUnitsOnIsWithinOnePointOfThePercentage() async {
///     await onOwnThread {
///         for percentage in … { #expect(…) }
///     }
/// }
/// ```
///
/// - Parameter body: the work; it may throw.
/// - Returns: what `body` returned.
/// - Throws: what `body` threw.
public func onOwnThread<T, Failure: Error>(_ body: () async throws(Failure) -> T) async throws(Failure) -> T {
    let executor = ThreadExecutor()
    defer { executor.finish() }
    return try await withTaskExecutorPreference(executor, operation: body)
}

/// A task executor with one thread of its own, which runs the jobs enqueued on it in order until finished.
final class ThreadExecutor: TaskExecutor, @unchecked Sendable {
    private let condition = NSCondition()
    /// Guarded by `condition`.
    private var jobs: [UnownedJob] = []
    private var finished = false

    init() {
        let thread = Thread { [self] in work() }
        thread.name = "onOwnThread"
        thread.stackSize = 8 << 20
        thread.start()
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        condition.lock()
        jobs.append(job)
        condition.signal()
        condition.unlock()
    }

    /// Lets the thread end once it has run the jobs enqueued so far.
    func finish() {
        condition.lock()
        finished = true
        condition.signal()
        condition.unlock()
    }

    private func work() {
        while true {
            condition.lock()
            while jobs.isEmpty && !finished { condition.wait() }
            if jobs.isEmpty {
                condition.unlock()
                return
            }
            let job = jobs.removeFirst()
            condition.unlock()
            job.runSynchronously(on: asUnownedTaskExecutor())
        }
    }
}
