import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Gives memory that large documents freed back to the system, a second after they were replaced.
///
/// glibc's allocator keeps what a process frees for its next allocations, and returns it only when the top of the
/// heap is free: reading, validating and publishing a 4 MB flag set frees tens of MiB that stay resident (a
/// 10,000-switch namespace idled at ~140 MiB with ~34 MiB live; bench/README.md "Memory"). After a namespace whose
/// document is large is published, this asks glibc to return its free pages (`malloc_trim(0)`), at most once a
/// second, on a utility thread: never on a request's or an event loop's thread. Elsewhere (musl, Darwin) it does
/// nothing.
enum MemoryReturn {
    /// Documents smaller than this do not free enough to be worth a trim.
    static let threshold = 1 << 20

    private static let scheduled = Atomic<Bool>(false)

    /// Schedules a trim a second from now, after a document of `bytes` was published or released; nothing when the
    /// document is small or a trim is already due.
    static func afterLargeDocument(bytes: Int) {
        guard bytes >= threshold, trim != nil else { return }
        guard scheduled.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged
        else { return }
        DispatchQueue.global(qos: .utility).asyncAfter(deadline: .now() + 1) {
            scheduled.store(false, ordering: .releasing)
            _ = trim?(0)
        }
    }

    /// glibc's `malloc_trim`, found at run time (Swift's Glibc module does not declare it); nil elsewhere.
    private static let trim: (@convention(c) (Int) -> Int32)? = {
        #if canImport(Glibc)
            // RTLD_DEFAULT: the process's global symbols.
            guard let symbol = dlsym(nil, "malloc_trim") else { return nil }
            return unsafeBitCast(symbol, to: (@convention(c) (Int) -> Int32).self)
        #else
            return nil
        #endif
    }()
}
