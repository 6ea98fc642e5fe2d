import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Where flagsd listens, as an operator meets it: a taken port stops it before it touches its database, and the
/// banner says where the console is.
struct ListenTests {
    @Test func aTakenPortStopsFlagsdNamingThePortBeforeItOpensItsDatabase() async throws {
        let running = try await LiveFlagsd.start()
        defer { running.stop() }
        let port = try #require(running.base.port)
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("listen-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let database = folder.appendingPathComponent("flags.sqlite")
        let outcome = try await runProgram(
            try Built.binary("flagsd").path,
            ["--port", String(port), "--database", database.path, "--flags", Repository.url("Flags").path],
            deadline: .seconds(60))
        #expect(outcome.status == 1, "\(outcome.error)")
        #expect(outcome.error.contains("port \(port) on 127.0.0.1 is in use by another process"), "\(outcome.error)")
        #expect(outcome.error.contains("--port N (or SWITCHYARD_PORT"), "\(outcome.error)")
        #expect(!outcome.error.contains("errno"), "\(outcome.error)")
        // Nothing was opened, migrated or seeded; no admin token was made.
        #expect(!FileManager.default.fileExists(atPath: database.path))
        #expect(!FileManager.default.fileExists(atPath: folder.appendingPathComponent("admin-token").path))
        // The running flagsd is untouched.
        #expect(try await running.send("GET", "/healthz").status == 200)
    }

    @Test func theBannerSaysWhereTheConsoleIsUnlessItIsOff() async throws {
        let withConsole = try await LiveFlagsd.start()
        defer { withConsole.stop() }
        let url = withConsole.base.absoluteString
        #expect(withConsole.banner.contains("flagsd listening on \(url) (database "), "\(withConsole.banner)")
        #expect(withConsole.banner.contains("console: \(url)/console/"), "\(withConsole.banner)")
        #expect(try await withConsole.send("GET", "/console/").status == 200)

        let without = try await LiveFlagsd.start(arguments: ["--no-console"])
        defer { without.stop() }
        #expect(!without.banner.contains("console:"), "\(without.banner)")
    }

    /// A fleet reconnecting at once (after a restart, a deploy, a network blip) can open hundreds of connections
    /// before flagsd's next accept. The kernel completes the handshake of each one up to the listen backlog and
    /// drops the rest, whose clients wait a second for a retransmission: with Hummingbird's default of 256, parking
    /// 10,000 long-polls from one client took 25 s (bench/README.md). Here flagsd is stopped (SIGSTOP) while the
    /// burst arrives, so no accept makes room: every handshake that completes is one the backlog held.
    @Test func aBurstOfConnectionsWhileFlagsdIsBusyIsHeldUpToTheListenBacklog() async throws {
        let burst = 500
        let kernelCap =
            (try? String(contentsOfFile: "/proc/sys/net/core/somaxconn", encoding: .utf8))
            .flatMap { Int($0.trimmingCharacters(in: .whitespacesAndNewlines)) } ?? 4_096
        // The kernel holds one more than the backlog.
        let byDefault = try await LiveFlagsd.start()
        defer { byDefault.stop() }
        let expected = min(burst, kernelCap + 1)
        let held = try await Self.handshakes(burst, atLeast: expected, whileStopped: byDefault)
        #expect(held == expected, "by default the backlog is the kernel's cap, \(kernelCap)")

        let small = try await LiveFlagsd.start(arguments: ["--listen-backlog", "100"])
        defer { small.stop() }
        let heldBySmall = try await Self.handshakes(burst, atLeast: 101, whileStopped: small)
        #expect(heldBySmall < 200, "\(heldBySmall) handshakes held with --listen-backlog 100")
    }

    /// Opens `count` connections to a stopped flagsd at once and counts the handshakes the kernel completed (each
    /// a socket that became writable) once at least `atLeast` have; then resumes flagsd and checks it accepts and
    /// answers them. On loopback the kernel answers each handshake as it comes, so a backlog larger than
    /// `atLeast` shows in the count by then; one that is full drops the rest for as long as flagsd is stopped.
    private static func handshakes(_ count: Int, atLeast: Int, whileStopped flagsd: LiveFlagsd) async throws -> Int {
        let port = try #require(flagsd.base.port)
        // The burst's sockets are this process's, beside the other tests' (a soft limit of 1024 is common).
        var limit = rlimit()
        if getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) == 0, limit.rlim_cur < limit.rlim_max {
            limit.rlim_cur = limit.rlim_max
            _ = setrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit)
        }
        kill(flagsd.process.processIdentifier, SIGSTOP)
        var sockets: [Int32] = []
        defer { for socket in sockets { close(socket) } }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        for _ in 0..<count {
            let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
            try #require(socket >= 0, "socket: errno \(errno)")
            sockets.append(socket)
            let started = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
            try #require(started == 0 || errno == EINPROGRESS, "connect: errno \(errno)")
        }
        func connected() -> Int {
            var polled = sockets.map { pollfd(fd: $0, events: Int16(POLLOUT), revents: 0) }
            _ = poll(&polled, nfds_t(polled.count), 0)
            return polled.filter { $0.revents & Int16(POLLOUT) != 0 && $0.revents & Int16(POLLERR) == 0 }.count
        }
        try await waitUntil("\(atLeast) handshakes completed") { connected() >= atLeast }
        let held = connected()
        kill(flagsd.process.processIdentifier, SIGCONT)
        #expect(try await flagsd.send("GET", "/healthz").status == 200)
        return held
    }

    @Test func theLogFormatHelpNamesOneDefault() async throws {
        let help = try await FlagsdOptions.read().helpOf("--log-format").split(whereSeparator: \.isWhitespace).joined(
            separator: " ")
        #expect(help.contains("text on a terminal and json otherwise"), "\(help)")
        #expect(!help.contains("(default:"), "\(help)")
    }
}
