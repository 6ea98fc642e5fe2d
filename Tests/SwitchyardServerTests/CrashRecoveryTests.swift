import Foundation
import HTTPTypes
import SwitchyardCore
import SwitchyardSQLite
import SwitchyardStorage
import Synchronization
import TestSupport
import Testing

/// A child flagsd process acknowledges changes while being killed with SIGKILL at random moments; after each
/// restart every acknowledged change is present and versions continue.
@Suite(.serialized)
struct CrashRecoveryTests {
    static let adminToken = "crash-test-admin-token-0123456789"

    @Test func everyAcknowledgedChangeSurvivesSIGKILLAndVersionsContinue() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("flagsd-crash-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let database = folder.appendingPathComponent("flags.sqlite").path
        var random = SeededRandom(seed: UInt64.random(in: 1...UInt64.max))
        let seed = random.seed

        var acknowledged: [(version: Int64, rollout: Int)] = []
        var nextRollout = 1
        for round in 0..<10 {
            let child = try ChildFlagsd(database: database, folder: folder, adminToken: Self.adminToken)
            let port = try await child.port()
            let client = LiveClient(base: URL(string: "http://127.0.0.1:\(port)")!, token: Self.adminToken, timeout: 30)
            if round == 0 {
                let created = try await client.send(
                    "POST", "/v1/namespaces",
                    body: #"{"name": "rider", "reason_policy": "never", "flag_set": \#(Fixtures.riderJSON())}"#)
                #expect(created.status == .created, "seed \(seed)")
            }
            try await verify(client, acknowledged: acknowledged, seed: seed)

            // Send changes back to back; after a random number of acknowledgments, kill the process while the
            // next change is on its way.
            let killAfter = Int.random(in: 1...12, using: &random)
            let acknowledgedThisRound = Mutex<[(version: Int64, rollout: Int)]>([])
            let first = nextRollout
            let sender = Task {
                var rollout = first
                while !Task.isCancelled {
                    guard
                        let response = try? await client.send(
                            "POST", "/v1/namespaces/rider/flags/plugin_switch_map_traffic/rollout",
                            body: #"{"rollout": \#(rollout)}"#),
                        response.status == .ok, let version = response.json["version"]?.int64Value
                    else { return }
                    let value = rollout
                    acknowledgedThisRound.withLock { $0.append((version, value)) }
                    rollout += 1
                }
            }
            try await waitUntil(timeout: .seconds(60)) { acknowledgedThisRound.withLock { $0.count } >= killAfter }
            child.kill()
            _ = await sender.result
            let round = acknowledgedThisRound.withLock { $0 }
            acknowledged += round
            nextRollout = first + round.count + 1
        }

        let child = try ChildFlagsd(database: database, folder: folder, adminToken: Self.adminToken)
        let client = LiveClient(
            base: URL(string: "http://127.0.0.1:\(try await child.port())")!, token: Self.adminToken)
        try await verify(client, acknowledged: acknowledged, seed: seed)
        let current = try await client.send("GET", "/v1/namespaces/rider").json["version"]?.int64Value ?? 0
        let next = try await client.send(
            "POST", "/v1/namespaces/rider/flags/plugin_switch_map_traffic/rollout", body: #"{"rollout": 10000}"#)
        #expect(next.json["version"]?.int64Value == current + 1, "seed \(seed)")
        child.kill()
    }

    /// Event batches posted back to back while flagsd is killed: every acknowledged batch is counted after the
    /// restart, at most the one batch in flight besides, and re-sending every batch counts nothing twice.
    @Test func everyAcknowledgedEventBatchSurvivesSIGKILLAndCountsOnce() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
            "flagsd-crash-events-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let database = folder.appendingPathComponent("flags.sqlite").path
        var random = SeededRandom(seed: UInt64.random(in: 1...UInt64.max))
        let seed = random.seed

        /// Batch n: five sessions, ids "b<n>-<i>", the first one crashed.
        func batch(_ number: Int) -> String {
            let now = Date().iso8601
            let events = (0..<5).map { index in
                #"{"id": "b\#(number)-\#(index)", "type": "session", "time": "\#(now)", "cohorts": [], "session_id": "b\#(number)-\#(index)", "unit": "u\#(number)-\#(index)", "start": "\#(now)", "end": "\#(now)", "crashed": \#(index == 0), "switches": ["plugin_switch_feed_promos"]}"#
            }
            return #"{"events": [\#(events.joined(separator: ","))]}"#
        }

        var acknowledged = 0
        var sent = 0
        for round in 0..<4 {
            // Each event its own transaction, only a batch's last one synced: a kill may fall between the parts.
            let child = try ChildFlagsd(
                database: database, folder: folder, adminToken: Self.adminToken,
                arguments: ["--events-transaction-rows", "1"])
            let client = LiveClient(
                base: URL(string: "http://127.0.0.1:\(try await child.port())")!, token: Self.adminToken, timeout: 30)
            if round == 0 {
                let created = try await client.send(
                    "POST", "/v1/namespaces",
                    body: #"{"name": "rider", "reason_policy": "never", "flag_set": \#(Fixtures.riderJSON())}"#)
                #expect(created.status == .created, "seed \(seed)")
            }
            let killAfter = Int.random(in: 1...8, using: &random)
            let progress = Mutex((acknowledged: 0, sent: 0))
            let first = sent
            let sender = Task {
                var number = first
                while !Task.isCancelled {
                    progress.withLock { $0.sent += 1 }
                    guard
                        let response = try? await client.send(
                            "POST", "/v1/namespaces/rider/events", body: batch(number)),
                        response.status == .ok, response.json["accepted"]?.arrayValue?.count == 5
                    else { return }
                    progress.withLock { $0.acknowledged += 1 }
                    number += 1
                }
            }
            try await waitUntil(timeout: .seconds(60)) { progress.withLock { $0.acknowledged } >= killAfter }
            child.kill()
            _ = await sender.result
            let round = progress.withLock { $0 }
            acknowledged += round.acknowledged
            // The batch in flight when flagsd died may or may not have committed; the next round starts after it.
            sent = first + round.sent
        }

        let child = try ChildFlagsd(database: database, folder: folder, adminToken: Self.adminToken)
        let client = LiveClient(
            base: URL(string: "http://127.0.0.1:\(try await child.port())")!, token: Self.adminToken)
        // Re-send every batch ever sent: only the in-flight ones that never committed may count now.
        var countedAgain = 0
        for number in 0..<sent {
            let response = try await client.send("POST", "/v1/namespaces/rider/events", body: batch(number))
            countedAgain += 5 - (response.json["duplicates"]?.arrayValue?.count ?? 0)
        }
        child.kill()
        let store = try await SQLiteFlagStore(path: database)
        defer { try? store.close() }
        let counts = try await store.eventCounts(
            EventCountQuery(
                namespace: "rider", from: Date() - 3600, until: Date() + 3600,
                subjects: [.baseline], dimensions: [.all]))
        let sessions = counts.first?.tally.sessions ?? 0
        #expect(sessions == Int64(sent * 5), "every batch counted exactly once after re-sending; seed \(seed)")
        #expect(
            sessions - Int64(countedAgain) >= Int64(acknowledged * 5), "acknowledged batches were lost; seed \(seed)")
        #expect(countedAgain <= (sent - acknowledged) * 5, "a batch counted twice; seed \(seed)")
        #expect(counts.first?.tally.crashedSessions == Int64(sent), "seed \(seed)")
    }

    /// Every acknowledged change is in the log with its value; versions run 1, 2, 3, … without gaps.
    func verify(_ client: LiveClient, acknowledged: [(version: Int64, rollout: Int)], seed: UInt64) async throws {
        let log = try await client.send("GET", "/v1/namespaces/rider/changes?after=0&limit=1000")
        let entries = log.json["changes"]?.arrayValue ?? []
        let versions = entries.compactMap { $0["version"]?.int64Value }
        #expect(
            versions == (0..<versions.count).map { Int64($0 + 1) },
            "versions must run 1, 2, 3, … without gaps; seed \(seed)")
        var rolloutOfVersion: [Int64: Int64] = [:]
        for entry in entries {
            guard let version = entry["version"]?.int64Value,
                let after = entry["changes"]?.arrayValue?.first(where: {
                    $0["key"] == .string("plugin_switch_map_traffic")
                })?["after"],
                let rollout = after["rollout"]?.int64Value
            else { continue }
            rolloutOfVersion[version] = rollout
        }
        for change in acknowledged {
            #expect(
                rolloutOfVersion[change.version] == Int64(change.rollout),
                "acknowledged version \(change.version) (rollout \(change.rollout)) is missing or different; seed \(seed)"
            )
        }
    }
}

/// flagsd as a child process on a free port.
final class ChildFlagsd: Sendable {
    private let process: Process
    private let lines: AsyncStream<String>

    /// Every line flagsd wrote so far (standard output, and its log when `logLevel` is given).
    var output: [String] { seen.lines.withLock { $0 } }
    private let seen: Seen

    private final class Seen: Sendable {
        let lines = Mutex<[String]>([])
    }

    /// Starts flagsd on a free port.
    ///
    /// - Parameters:
    ///   - adminToken: `SWITCHYARD_ADMIN_TOKEN`; nil leaves it unset, so flagsd generates the first admin token.
    ///   - flagsDirectory: the flag files to seed an empty database from (default: none).
    ///   - logLevel: records flagsd's log (JSON lines, standard error) at this level in `output`; nil: no log.
    ///   - arguments: further options, e.g. `["--default-namespace", "shop"]`.
    init(
        database: String, folder: URL, adminToken: String?, flagsDirectory: String? = nil, logLevel: String? = nil,
        arguments: [String] = []
    ) throws {
        let process = Process()
        process.executableURL = try Self.binary()
        process.arguments =
            [
                "--port", "0", "--database", database,
                "--flags", flagsDirectory ?? folder.appendingPathComponent("no-flags").path,
                "--log-format", "json", "--log-level", logLevel ?? "error",
            ] + arguments
        var environment = ProcessInfo.processInfo.environment
        environment["SWITCHYARD_ADMIN_TOKEN"] = adminToken
        process.environment = environment
        let output = Pipe()
        process.standardOutput = output
        process.standardError = logLevel == nil ? FileHandle.nullDevice : output
        let (lines, continuation) = AsyncStream<String>.makeStream()
        let seen = Seen()
        let splitter = Mutex(LineSplitter())
        readPipe(output.fileHandleForReading) { chunk in
            let complete = splitter.withLock { $0.lines(completedBy: chunk) }
            seen.lines.withLock { $0 += complete }
            for line in complete { continuation.yield(line) }
        } ended: {
            continuation.finish()
        }
        try process.run()
        self.process = process
        self.lines = lines
        self.seen = seen
    }

    /// The port from flagsd's `listening on` line.
    func port() async throws -> Int {
        for await line in lines {
            if let range = line.range(of: "listening on http://127.0.0.1:") {
                let digits = line[range.upperBound...].prefix { $0.isNumber }
                if let port = Int(digits) { return port }
            }
        }
        // Its output ended: it is exiting (Foundation traps when the status of a running process is read).
        if process.isRunning { Foundation.kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
        throw ChildError(message: "flagsd stopped before it listened (status \(process.terminationStatus))")
    }

    func kill() {
        Foundation.kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    /// A test that fails (throws) before it kills its flagsd does not leave it running.
    deinit {
        if process.isRunning { Foundation.kill(process.processIdentifier, SIGKILL) }
    }

    /// `.build/<configuration>/flagsd`, next to the test binary.
    static func binary() throws -> URL {
        let testBinary = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        var folder = testBinary.deletingLastPathComponent()
        for _ in 0..<4 {
            let candidate = folder.appendingPathComponent("flagsd")
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
            folder = folder.deletingLastPathComponent()
        }
        let fallback = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent(".build/debug/flagsd")
        guard FileManager.default.isExecutableFile(atPath: fallback.path) else {
            throw ChildError(message: "flagsd is not built next to the tests; run 'swift build --build-tests' first")
        }
        return fallback
    }
}

struct ChildError: Error, CustomStringConvertible {
    let message: String
    var description: String { message }
}

/// A small seeded generator (SplitMix64), so a failing run can be told by its seed.
struct SeededRandom: RandomNumberGenerator {
    let seed: UInt64
    private var state: UInt64

    init(seed: UInt64) {
        self.seed = seed
        state = seed
    }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
