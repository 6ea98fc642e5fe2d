#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The process's limit of open files, which bounds how many connections flagsd can hold.
enum FileDescriptorLimit {
    /// Raises the soft limit to the hard one (as Go's runtime does at start), so that the default of a few thousand
    /// long-polls fits without `ulimit -n`; returns the soft limit in force afterwards, nil when it cannot be read.
    static func raiseToHardLimit() -> Int? {
        var limit = rlimit()
        guard get(&limit) else { return nil }
        if limit.rlim_cur < limit.rlim_max {
            var raised = limit
            raised.rlim_cur = limit.rlim_max
            #if canImport(Darwin)
                // macOS refuses a soft limit above OPEN_MAX.
                raised.rlim_cur = min(raised.rlim_cur, rlim_t(OPEN_MAX))
            #endif
            if set(&raised) { limit = raised }
        }
        return limit.rlim_cur >= rlim_t(Int.max) ? Int.max : Int(limit.rlim_cur)
    }

    private static func get(_ limit: inout rlimit) -> Bool {
        #if canImport(Glibc)
            getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) == 0
        #else
            getrlimit(RLIMIT_NOFILE, &limit) == 0
        #endif
    }

    private static func set(_ limit: inout rlimit) -> Bool {
        #if canImport(Glibc)
            setrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) == 0
        #else
            setrlimit(RLIMIT_NOFILE, &limit) == 0
        #endif
    }
}
