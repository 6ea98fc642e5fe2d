import Dispatch
import SwitchyardStorage
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Work of client events runs on threads of its own, at a lower priority, and a blocking call holds one of them only.
struct BackgroundThreadsTests {
    #if canImport(Glibc)
        /// The niceness of the calling thread (on Linux it belongs to the thread).
        static func niceness() -> Int32 {
            getpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0)
        }

        @Test func eventWorkRunsAtNiceTen() async {
            let outside = Self.niceness()
            let inside = await withTaskExecutorPreference(BackgroundThreads.events) { Self.niceness() }
            // A process already nicer than 10 stays as nice: lowering a niceness needs a privilege.
            #expect(inside == max(10, outside))
            #expect(BackgroundThreads.events.nice == 10)
        }
    #endif

    /// One task blocks its thread until another, preferring the same threads, lets it go: the second runs on the
    /// other thread meanwhile.
    @Test func aBlockedJobLeavesTheOtherThreadWorking() async {
        let threads = BackgroundThreads(name: "test-background", count: 2, nice: 0)
        let gate = DispatchSemaphore(value: 0)
        async let released = withTaskExecutorPreference(threads) { gate.wait(timeout: .now() + 60) == .success }
        await withTaskExecutorPreference(threads) { _ = gate.signal() }
        #expect(await released)
    }
}
