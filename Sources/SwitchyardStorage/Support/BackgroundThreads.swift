import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Threads of their own, at a lower scheduling priority, for work that must never delay a flag change: the
/// counting of client events.
///
/// A task runs here under `withTaskExecutorPreference(BackgroundThreads.events)`: its jobs run on these threads
/// instead of Swift's cooperative pool, and a blocking call made there (the SQLite store writes events with GRDB's
/// synchronous API) holds one of these threads, never a thread of the pool. On Linux the threads run at nice +10: when
/// the processors are busy, the operating system gives a thread of the pool, or GRDB's writer committing a flag
/// change, about ten times the share of one of these, so a flood of events slows itself (its backlog fills and
/// batches get 429) rather than the kill switches, snapshots and evaluations served beside it. When the processors
/// are free these threads get them all.
///
/// Code that must not run at this priority even when called from here (a flag change the crash guard commits after
/// a batch) leaves with `withTaskExecutorPreference(globalConcurrentExecutor)`.
public final class BackgroundThreads: TaskExecutor, @unchecked Sendable {
    /// The thread that counts client events (one, at nice +10), for the life of the process. One: batches write one
    /// at a time anyway (`EventIngestor`), and with a second thread a flood of events kept both processors of a
    /// two-core machine busy, so a kill switch waited for one (bench/README.md, "One events thread": p99 ratio
    /// under a flood 1.9–2.2× with two threads, 1.5–1.6× with one, for nearly as many events a second).
    public static let events = BackgroundThreads(name: "flagsd-events", count: 1, nice: 10)

    /// The niceness of these threads (Linux; elsewhere they run at the process's).
    public let nice: Int32
    private let condition = NSCondition()
    private var jobs: [UnownedJob] = []
    private var next = 0

    /// Starts `count` threads named `name`, each lowering its own priority to `nice`.
    public init(name: String, count: Int, nice: Int32) {
        self.nice = nice
        for index in 0..<max(1, count) {
            let thread = Thread { [self] in
                #if canImport(Glibc)
                    // On Linux the niceness belongs to the thread: 0 is the calling one. Raising it needs no privilege.
                    _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, nice)
                #endif
                run()
            }
            thread.name = "\(name)-\(index)"
            thread.start()
        }
    }

    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        condition.lock()
        jobs.append(job)
        condition.signal()
        condition.unlock()
    }

    /// Runs jobs in the order they came, one at a time per thread, forever (the threads live as long as the process).
    private func run() {
        while true {
            condition.lock()
            while next == jobs.count { condition.wait() }
            let job = jobs[next]
            next += 1
            if next == jobs.count {
                jobs.removeAll(keepingCapacity: jobs.capacity <= 4096)
                next = 0
            } else if next >= 1024, next * 2 >= jobs.count {
                // Forget the jobs already taken now and then, so that a steady stream does not only grow the array.
                jobs.removeFirst(next)
                next = 0
            }
            condition.unlock()
            job.runSynchronously(on: asUnownedTaskExecutor())
        }
    }
}
