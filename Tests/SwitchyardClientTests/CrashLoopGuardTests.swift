import ClientTestSupport
import Foundation
import SwitchyardClientTesting
import SwitchyardCore
import Testing

@testable import SwitchyardClient

struct CrashLoopGuardStateTests {
    let policy = CrashLoopGuardPolicy(consecutiveCrashes: 3, ttl: .seconds(3600))
    let now = Date(timeIntervalSince1970: 1_795_000_000)

    func session(_ keys: [String], version: Int64 = 5, definition: String = "sha256:a") -> SessionRecord {
        var record = SessionRecord(id: UUID().uuidString, namespace: "rider", start: now, context: EvaluationContext())
        record.switches = keys.map { .init(key: $0, epoch: Fixtures.epoch, version: version, definition: definition) }
        return record
    }

    @Test func aSwitchInThreeCrashedSessionsInARowIsQuarantined() {
        var state = CrashLoopGuardState()
        #expect(state.record(session(["a", "b"]), crashed: true, now: now, policy: policy) == [])
        #expect(state.record(session(["a"]), crashed: true, now: now, policy: policy) == [])
        #expect(state.record(session(["a", "b"]), crashed: true, now: now, policy: policy) == ["a"])
        #expect(state.quarantined["a"]?.crashes == 3)
        #expect(state.streaks["b"] == 2)
    }

    @Test func aCleanSessionEndsTheStreakOfItsSwitches() {
        var state = CrashLoopGuardState()
        _ = state.record(session(["a"]), crashed: true, now: now, policy: policy)
        _ = state.record(session(["a"]), crashed: true, now: now, policy: policy)
        _ = state.record(session(["a"]), crashed: false, now: now, policy: policy)
        #expect(state.record(session(["a"]), crashed: true, now: now, policy: policy) == [])
        #expect(state.streaks["a"] == 1)
    }

    @Test func sessionsWithoutTheSwitchDoNotBreakItsStreak() {
        var state = CrashLoopGuardState()
        _ = state.record(session(["a"]), crashed: true, now: now, policy: policy)
        _ = state.record(session(["b"]), crashed: false, now: now, policy: policy)
        _ = state.record(session(["a"]), crashed: true, now: now, policy: policy)
        #expect(state.record(session(["a"]), crashed: true, now: now, policy: policy) == ["a"])
    }

    @Test func theGuardSwitchedOffNeverQuarantines() {
        var state = CrashLoopGuardState()
        for _ in 0..<10 { _ = state.record(session(["a"]), crashed: true, now: now, policy: .off) }
        #expect(state.quarantined.isEmpty)
    }

    @Test func aQuarantineEndsWhenItsTTLPasses() {
        var state = CrashLoopGuardState()
        for _ in 0..<3 { _ = state.record(session(["a"]), crashed: true, now: now, policy: policy) }
        #expect(state.liftExpired(now: now.addingTimeInterval(3599), ttl: policy.ttl).isEmpty)
        #expect(state.liftExpired(now: now.addingTimeInterval(3600), ttl: policy.ttl) == ["a"])
        #expect(state.streaks["a"] == nil)
    }

    @Test func onlyANewerSnapshotThatChangesTheSwitchItselfEndsTheQuarantine() throws {
        let crashed = Fixtures.snapshot(version: 5, on: ["plugin_switch_feed_promos"])
        let definition = try #require(crashed.flagSet.flag("plugin_switch_feed_promos")).fingerprint
        var state = CrashLoopGuardState()
        for _ in 0..<3 {
            _ = state.record(
                session(["plugin_switch_feed_promos"], version: 5, definition: definition), crashed: true,
                now: now, policy: policy)
        }
        // Same version, or a newer one that changes another flag or a kill switch: still quarantined.
        #expect(state.liftChanged(by: crashed).isEmpty)
        #expect(
            state.liftChanged(
                by: Fixtures.snapshot(
                    version: 6, on: ["plugin_switch_feed_promos", "plugin_switch_feed_news"],
                    killedGroups: ["kill_checkout"])
            ).isEmpty)
        // An older version that happens to differ does not count either.
        #expect(state.liftChanged(by: Fixtures.snapshot(version: 4)).isEmpty)
        // A newer version that changes the switch's own definition does.
        #expect(
            state.liftChanged(by: Fixtures.snapshot(version: 7, disabled: ["plugin_switch_feed_promos"])) == [
                "plugin_switch_feed_promos"
            ])
    }

    @Test func theStateSurvivesItsFileFormat() throws {
        var state = CrashLoopGuardState()
        for _ in 0..<3 { _ = state.record(session(["a", "b"]), crashed: true, now: now, policy: policy) }
        _ = state.record(session(["c"]), crashed: true, now: now, policy: policy)
        #expect(state.concluded.count == 4)
        let reread = try #require(CrashLoopGuardState(json: JSONValue.parse(JSONValue.object(state.json).serialized())))
        #expect(reread == state)
        // A file from before the counted sessions were kept reads with none.
        var before = state.json
        before["concluded"] = nil
        #expect(CrashLoopGuardState(json: .object(before))?.concluded == [])
    }

    /// A session counted again (concluded by a launch that ended before removing its files) changes nothing; the
    /// state keeps the last ``CrashLoopGuardState/concludedKept`` ids.
    @Test func aSessionIsCountedOnce() {
        var state = CrashLoopGuardState()
        let crashed = session(["a"])
        _ = state.record(crashed, crashed: true, now: now, policy: policy)
        _ = state.record(session(["a"]), crashed: true, now: now, policy: policy)
        #expect(state.record(crashed, crashed: true, now: now, policy: policy) == nil)
        #expect(state.streaks["a"] == 2 && state.quarantined.isEmpty)
        for _ in 0..<CrashLoopGuardState.concludedKept {
            _ = state.record(session([]), crashed: false, now: now, policy: policy)
        }
        #expect(state.concluded.count == CrashLoopGuardState.concludedKept && !state.concluded.contains(crashed.id))
    }
}

/// Launches simulated by successive clients on one directory: a client dropped without `endSession()` is a
/// session that crashed.
struct CrashAttributionTests {
    static let promos = PluginSwitch("plugin_switch_feed_promos")
    static let news = PluginSwitch("plugin_switch_feed_news")

    func launch(
        _ harness: ClientHarness, server: URL? = nil,
        guardPolicy: CrashLoopGuardPolicy = CrashLoopGuardPolicy(consecutiveCrashes: 2, ttl: .seconds(3600)),
        bundled: Snapshot = Fixtures.snapshot(version: 5, on: ["plugin_switch_feed_promos", "plugin_switch_feed_news"])
    ) throws -> FlagClient {
        var configuration = harness.configuration(server: try server ?? ClientHarness.deadServerURL())
        configuration.bundledSnapshot = SnapshotDocument.encode(bundled)
        configuration.crashLoopGuard = guardPolicy
        return FlagClient(configuration: configuration)
    }

    func sessionEvents(_ client: FlagClient) throws -> [JSONValue] {
        try client.queue.entries.map { try JSONValue.parse($0.line) }.filter { $0["type"] == .string("session") }
    }

    @Test func aSessionWithoutACleanEndIsReportedAsACrashNamingItsActiveSwitches() throws {
        let harness = try ClientHarness()
        let first = try launch(harness)
        first.recordActive(Self.promos)
        first.recordActive(Self.promos)
        let firstSession = first.sessionID
        harness.clock.advance(by: .seconds(90))
        let second = try launch(harness)
        let events = try sessionEvents(second)
        #expect(events.count == 1)
        let event = try #require(events.first)
        #expect(event["crashed"] == .bool(true))
        #expect(event["session_id"] == .string(firstSession))
        #expect(event["id"] == .string(firstSession))
        #expect(event["switches"] == .array([.string("plugin_switch_feed_promos")]))
        #expect(event["city"] == .string("lagos"))
        #expect(event["cohorts"] == .array([.string("beta")]))
        #expect(event["app_version"] == .string("5.12.0"))
        #expect(event["start"] == .string(Timestamp.rfc3339(harness.clock.start)))
        // The unit as a digest of namespace and unit id: flagsd counts distinct units, the id never leaves the device.
        let unit = try #require(event["unit"]?.stringValue)
        #expect(unit == SessionRecord.unitDigest("rider-42", namespace: "rider"))
        #expect(unit.count == 32 && unit.allSatisfy(\.isHexDigit) && !unit.contains("rider-42"))
        #expect(harness.reports.contains(.previousSessionCrashed) { $0.flagKeys == ["plugin_switch_feed_promos"] })
        #expect(second.sessionID != firstSession)
    }

    @Test func aCleanlyEndedSessionIsReportedAsNotCrashed() throws {
        let harness = try ClientHarness()
        let first = try launch(harness)
        first.recordActive(Self.news)
        harness.clock.advance(by: .seconds(30))
        first.endSession()
        let second = try launch(harness)
        let event = try #require(try sessionEvents(second).first)
        #expect(event["crashed"] == .bool(false))
        #expect(event["end"] == .string(Timestamp.rfc3339(harness.clock.start.addingTimeInterval(30))))
        #expect(event["switches"] == .array([.string("plugin_switch_feed_news")]))
        #expect(!harness.reports.contains(.previousSessionCrashed))
    }

    @Test func theSessionEventNamesTheExperimentVariantsServedInIt() throws {
        let harness = try ClientHarness()
        let copy = ExperimentFlag("exp_checkout_copy", default: "Book")
        var configuration = harness.configuration(server: try ClientHarness.deadServerURL())
        // Everyone gets the treatment; exposures off: the session still records the variant.
        configuration.bundledSnapshot = SnapshotDocument.encode(
            Fixtures.snapshot(version: 5, experimentWeights: ["treatment": 1]))
        configuration.events.recordsExposures = false
        let first = FlagClient(configuration: configuration)
        #expect(first.value(of: copy) == "Let's go")
        #expect(first.value(of: copy) == "Let's go")
        #expect(first.servedVariants == ["exp_checkout_copy": "treatment"])
        #expect(first.status.queuedEvents == 0)
        // The record on disk names it, so a crash right after still counts for the variant.
        let bytes = try #require(
            try FileIO.read(harness.directory.file(SessionFiles.recordName(first.sessionID)), limit: 1 << 20))
        let record = try #require(SessionRecord(json: JSONValue.parse(bytes)))
        #expect(record.variants == ["exp_checkout_copy": "treatment"])

        let second = try launch(harness)
        let event = try #require(try sessionEvents(second).first)
        #expect(event["crashed"] == .bool(true))
        #expect(event["variants"] == .object(JSONObject([("exp_checkout_copy", .string("treatment"))])))
        // A session that served no experiment leaves the field out.
        second.endSession()
        let third = try launch(harness)
        let events = try sessionEvents(third)
        #expect(events.count == 2)
        #expect(events.last?["session_id"] == .string(second.sessionID))
        #expect(events.last?["variants"] == nil)
    }

    @Test func creatingAPluginAfterEndSessionReopensTheSession() throws {
        let harness = try ClientHarness()
        let first = try launch(harness)
        first.endSession()
        first.recordActive(Self.news)
        let second = try launch(harness)
        #expect(try sessionEvents(second).first?["crashed"] == .bool(true))
    }

    @Test func aSwitchActiveInKCrashedSessionsInARowIsForcedOffOnThisDevice() throws {
        let harness = try ClientHarness()
        for _ in 0..<2 {
            let client = try launch(harness)
            #expect(client.isEnabled(Self.promos))
            client.recordActive(Self.promos)
        }
        let third = try launch(harness)
        #expect(!third.isEnabled(Self.promos))
        #expect(third.isEnabled(Self.news), "only the crashing switch is forced off")
        let details = third.details(for: Self.promos)
        #expect(details.reason == .disabled)
        #expect(details.value == .boolean(false))
        #expect(details.metadata["crash_loop_guard"] == .bool(true))
        #expect(details.metadata["consecutive_crashes"] == .int(2))
        #expect(third.status.disabledByCrashGuard == ["plugin_switch_feed_promos"])
        #expect(harness.reports.contains(.crashGuardTripped) { $0.flagKeys == ["plugin_switch_feed_promos"] })

        // The guard holds across further launches, even clean ones.
        third.endSession()
        let fourth = try launch(harness)
        #expect(!fourth.isEnabled(Self.promos))
    }

    @Test func theGuardLiftsWhenItsTTLPasses() throws {
        let harness = try ClientHarness()
        for _ in 0..<2 { try launch(harness).recordActive(Self.promos) }
        #expect(try !launch(harness).isEnabled(Self.promos))
        harness.clock.advance(by: .seconds(3601))
        let later = try launch(harness)
        #expect(later.isEnabled(Self.promos))
        #expect(harness.reports.contains(.crashGuardLifted) { $0.flagKeys == ["plugin_switch_feed_promos"] })
    }

    @Test func theGuardLiftsWhenANewerSnapshotChangesTheSwitchButNotForOtherChanges() async throws {
        let harness = try ClientHarness()
        let server = try FlagsdStandIn()
        defer { server.stop() }
        for _ in 0..<2 { try launch(harness, server: server.baseURL).recordActive(Self.promos) }
        let client = try launch(harness, server: server.baseURL)
        #expect(!client.isEnabled(Self.promos))
        var changes = client.changes.makeAsyncIterator()
        await whileRunning(client) {
            server.publish(
                Fixtures.snapshot(
                    version: 6, on: ["plugin_switch_feed_promos", "plugin_switch_feed_news", "plugin_switch_tipping"]))
            #expect(await changes.next()?.snapshot?.version == 6)
            #expect(!client.isEnabled(Self.promos), "version 6 does not change the switch itself")
            var fixed = Fixtures.snapshot(version: 7, on: ["plugin_switch_feed_promos", "plugin_switch_feed_news"])
            fixed.flagSet.flags[0].description = "promos 2.1 (crash fixed)"
            server.publish(fixed)
            #expect(await changes.next()?.snapshot?.version == 7)
        }
        #expect(client.isEnabled(Self.promos))
        #expect(client.status.disabledByCrashGuard.isEmpty)
        #expect(harness.reports.contains(.crashGuardLifted))
        let persisted = try #require(
            CrashLoopGuardState(
                json: JSONValue.parse(
                    FileIO.read(harness.directory.file(CrashLoopGuardState.fileName), limit: 1 << 20) ?? [])))
        #expect(persisted.quarantined.isEmpty)
    }

    /// Writes an open (crashed-looking) session record of another client, as another process would.
    func writeOpenSession(_ id: String, in harness: ClientHarness, name: String? = nil) throws {
        var record = SessionRecord(
            id: id, namespace: "rider", start: harness.clock.start, context: EvaluationContext(unitId: "rider-7"))
        record.switches = [SessionRecord.ActiveSwitch(key: "plugin_switch_feed_news")]
        try FileIO.writeAtomically(
            JSONValue.object(record.json).serialized(.canonical),
            to: harness.directory.file(name ?? SessionFiles.recordName(id)))
    }

    @Test func aSessionAnotherProcessStillRunsIsNeverReportedAsCrashed() throws {
        let harness = try ClientHarness()
        try writeOpenSession("elsewhere", in: harness)
        let firstID: String
        do {
            // Another open file holding the lock: what a running process holds (flock locks belong to open files).
            let running = try #require(try FileIO.tryLock(harness.directory.file(SessionFiles.lockName("elsewhere"))))
            let first = try launch(harness)
            #expect(try sessionEvents(first).isEmpty)
            #expect(!harness.reports.contains(.previousSessionCrashed))
            #expect(
                FileManager.default.fileExists(
                    atPath: harness.directory.file(SessionFiles.recordName("elsewhere")).path))
            first.endSession()
            firstID = first.sessionID
            withExtendedLifetime(running) {}
        }
        // The other process died without ending its session: the next launch reports it as crashed, and the clean one.
        let second = try launch(harness)
        let events = try sessionEvents(second)
        #expect(events.count == 2)
        #expect(events.contains { $0["session_id"] == .string("elsewhere") && $0["crashed"] == .bool(true) })
        #expect(events.contains { $0["session_id"] == .string(firstID) && $0["crashed"] == .bool(false) })
        let names = FileIO.fileNames(in: harness.directory.url).filter { $0.hasPrefix("session") }
        #expect(
            names.sorted()
                == [SessionFiles.lockName(second.sessionID), SessionFiles.recordName(second.sessionID)].sorted())
    }

    @Test func aNewClientOfTheSameProcessTakesTheDirectoryOverAndTheOldOneWritesNoMore() throws {
        let harness = try ClientHarness()
        let first = try launch(harness)
        let second = try launch(harness)
        #expect(try sessionEvents(second).map { $0["session_id"] } == [.string(first.sessionID)])
        first.recordActive(Self.promos)
        first.endSession()
        #expect(
            !FileManager.default.fileExists(
                atPath: harness.directory.file(SessionFiles.recordName(first.sessionID)).path))
        // The queue (shared, not yet sent) holds each session once: the first one was not written again.
        let third = try launch(harness)
        #expect(
            try sessionEvents(third).map { $0["session_id"] } == [.string(first.sessionID), .string(second.sessionID)])
    }

    @Test func aSessionRecordOfAnEarlierVersionIsConcludedOnce() throws {
        let harness = try ClientHarness()
        try writeOpenSession("legacy", in: harness, name: SessionFiles.legacyFileName)
        let first = try launch(harness)
        #expect(try sessionEvents(first).map { $0["session_id"] } == [.string("legacy")])
        #expect(!FileManager.default.fileExists(atPath: harness.directory.file(SessionFiles.legacyFileName).path))
        let second = try launch(harness)
        #expect(try sessionEvents(second).map { $0["session_id"] } == [.string("legacy"), .string(first.sessionID)])
    }

    /// A launch that ends after persisting the queue but before removing the concluded session's files leaves both
    /// behind: the next launch finds the session's event queued and reports it no second time (a second report would
    /// carry a later time), nor counts its crash twice in the crash-loop guard.
    @Test func aSessionConcludedByALaunchKilledBeforeRemovingItsFilesIsReportedOnce() throws {
        let harness = try ClientHarness()
        try writeOpenSession("killed", in: harness)
        let first = try launch(harness)
        let reported = try sessionEvents(first)
        #expect(reported.map { $0["id"] } == [.string("killed")])
        // The files the killed launch would have left: the record again (its lock is made anew when claimed).
        try writeOpenSession("killed", in: harness)
        harness.clock.advance(by: .seconds(60))
        let second = try launch(harness)
        let events = try sessionEvents(second)
        #expect(events.map { $0["id"] } == [.string("killed"), .string(first.sessionID)])
        #expect(events.first?["time"] == reported.first?["time"])
        #expect(!harness.reports.contains(.crashGuardTripped), "the crash of 'killed' counted twice")
        #expect(!FileManager.default.fileExists(atPath: harness.directory.file(SessionFiles.recordName("killed")).path))
    }

    /// A launch that ends after writing the crash-loop guard's state but before persisting the queue leaves the
    /// session's files and no event: the next launch reports the session, and the guard does not count its crash again.
    @Test func aSessionConcludedByALaunchKilledBeforePersistingTheQueueIsCountedOnce() throws {
        let harness = try ClientHarness()
        try writeOpenSession("killed", in: harness)
        let first = try launch(harness)
        #expect(try sessionEvents(first).map { $0["id"] } == [.string("killed")])
        // The files the killed launch would have left: the guard's state written, the queue not, the record kept.
        try FileManager.default.removeItem(at: harness.directory.file(EventQueue.fileName))
        try writeOpenSession("killed", in: harness)
        let second = try launch(harness)
        let ids = try sessionEvents(second).compactMap { $0["id"]?.stringValue }
        #expect(ids.sorted() == ["killed", first.sessionID].sorted())
        #expect(!harness.reports.contains(.crashGuardTripped), "the crash of 'killed' counted twice")
    }

    @Test func aLockLeftWithoutItsRecordIsRemoved() throws {
        let harness = try ClientHarness()
        _ = try #require(try FileIO.tryLock(harness.directory.file(SessionFiles.lockName("gone"))))
        let client = try launch(harness)
        #expect(try sessionEvents(client).isEmpty)
        #expect(!FileManager.default.fileExists(atPath: harness.directory.file(SessionFiles.lockName("gone")).path))
    }

    @Test func aCorruptSessionRecordIsReportedAndIgnored() throws {
        let harness = try ClientHarness()
        let name = SessionFiles.recordName("torn")
        try Data("{\"format\":1,\"id\":".utf8).write(to: harness.directory.file(name))
        let client = try launch(harness)
        #expect(try sessionEvents(client).isEmpty)
        #expect(harness.reports.contains(.storageFailed) { $0.message.contains(name) })
        #expect(!FileManager.default.fileExists(atPath: harness.directory.file(name).path))
    }
}
