import Foundation
import SwitchyardCore
import SwitchyardSQLite
import SwitchyardStorage
import Testing

/// End to end: a live flagsd, the built `rider-sample` binary following it, and `flagctl` flipping switches.
struct RiderSampleLiveTests {
    static func keys(_ json: JSONValue, _ point: String, in field: String = "points") -> [String] {
        json[field]?[point]?.arrayValue?.compactMap(\.stringValue) ?? ["missing"]
    }

    /// `point/switch` of every plugin a `settled` line says is live.
    static func liveKeys(_ json: JSONValue) -> [String] {
        guard let live = json["live"]?.objectValue else { return [] }
        return live.flatMap { member in
            (member.value.arrayValue ?? []).compactMap(\.stringValue).map { "\(member.key)/\($0)" }
        }
    }

    static func everyPointIsCoreFlow(_ json: JSONValue) -> Bool {
        guard let points = json["points"]?.objectValue, points.count == 4 else { return false }
        return points.allSatisfy { $0.value == .array([]) }
    }

    @Test func theSampleReroutesWhenFlagctlDisablesASwitchAndRunsTheCoreFlowWhenTheMasterIsKilled() async throws {
        try await LiveServer.run { server in
            let state = try TestPaths.temporaryDirectory()
            defer { try? FileManager.default.removeItem(atPath: state) }
            // A generous --timeout: each request may take that long on a loaded machine before it is retried.
            let sample = try SampleProcess(
                [
                    "--server", server.url, "--city", "lagos", "--state-dir", state, "-o", "json",
                    "--timeout", "300",
                ], token: server.tokens["app"])
            let live = try await sample.next { $0["snapshot"]?["origin"] == .string("server") }
            #expect(Self.keys(live, "home_feed") == ["plugin_switch_feed_promos", "plugin_switch_feed_trip_history"])
            #expect(Self.keys(live, "map_layers") == ["plugin_switch_map_traffic", "plugin_switch_map_pickup_spots"])
            #expect(live["trip"]?["completed"] == .bool(true))
            let version = try #require(live["snapshot"]?["version"]?.int64Value)

            let disabled = await server.flagctl("disable", "plugin_switch_feed_promos", "--reason", "end-to-end test")
            #expect(disabled.status == 0, "\(disabled.error)")
            // The live card is detached at once, before the trip is routed again, and nothing else moves.
            let detached = try await sample.next { $0["event"] == .string("detached") }
            #expect(
                detached["point"] == .string("home_feed") && detached["switch"] == .string("plugin_switch_feed_promos"),
                "\(detached)")
            let settled = try await sample.next { $0["event"] == .string("settled") }
            #expect(settled["detached"] == .int(1) && settled["attached"] == .int(0), "\(settled)")
            #expect(Self.keys(settled, "home_feed", in: "live") == ["plugin_switch_feed_trip_history"])
            let rerouted = try await sample.next { Self.keys($0, "home_feed") == ["plugin_switch_feed_trip_history"] }
            #expect(rerouted["snapshot"]?["version"]?.int64Value == version + 1)
            #expect(Self.keys(rerouted, "map_layers") == Self.keys(live, "map_layers"))
            #expect(rerouted["points"]?["preferences_hub"] == live["points"]?["preferences_hub"])

            let liveBefore = RiderSampleLiveTests.liveKeys(settled)
            let killed = await server.flagctl("kill", "--reason", "end-to-end test", "--yes")
            #expect(killed.status == 0, "\(killed.error)")
            // Every live plugin of every point is detached in one step: each point is on its core flow.
            let coreStep = try await sample.next { $0["event"] == .string("settled") && Self.liveKeys($0).isEmpty }
            let step = coreStep["step"]
            let detachedByKill = sample.output.compactMap { try? JSONValue.parse(Array($0.utf8)) }
                .filter { $0["event"] == .string("detached") && $0["step"] == step }
                .map { "\($0["point"]?.stringValue ?? "")/\($0["switch"]?.stringValue ?? "")" }
            #expect(Set(detachedByKill) == Set(liveBefore), "\(detachedByKill)")
            #expect(coreStep["detached"] == .int(liveBefore.count) && coreStep["attached"] == .int(0))
            let core = try await sample.next(where: Self.everyPointIsCoreFlow)
            #expect(core["snapshot"]?["version"]?.int64Value == version + 2)
            #expect(core["trip"]?["completed"] == .bool(true))
            #expect(core["trip"]?["charged"] == core["trip"]?["quote"])
            #expect(await sample.stop() == 0, "\(sample.errorOutput)")
        }
    }

    @Test func onceWithTheServerDownPrintsTheCoreFlowAndSaysSo() async throws {
        let state = try TestPaths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: state) }
        // A port nobody listens on: bound, then closed.
        let sample = try SampleProcess(
            ["--server", "http://127.0.0.1:9", "--state-dir", state, "--once", "-o", "json"], token: "sy_client_x")
        let printed = try await sample.next { _ in true }
        #expect(await sample.status() == 0)
        #expect(Self.everyPointIsCoreFlow(printed))
        #expect(printed["snapshot"] == .null)
        #expect(printed["trip"]?["completed"] == .bool(true))
        #expect(sample.errorOutput.contains("no snapshot from http://127.0.0.1:9 ("), "\(sample.errorOutput)")
        #expect(sample.errorOutput.contains("no snapshot: the core flow everywhere"))
    }

    @Test func aCrashInAPluginIsReportedAtTheNextLaunchAndTheCacheServesWithTheServerGone() async throws {
        let state = try TestPaths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: state) }
        try await LiveServer.run { server in
            let crashing = try SampleProcess(
                [
                    "--server", server.url, "--city", "lagos", "--state-dir", state, "--once",
                    "--timeout", "300", "--crash-in", "plugin_switch_map_traffic",
                ], token: server.tokens["app"])
            #expect(await crashing.status() == 134)
            #expect(
                crashing.errorOutput.contains(
                    "simulated crash in the plugin of plugin_switch_map_traffic at plugin point map_layers"))
            #expect(crashing.output.isEmpty)
        }
        // The next launch, with the server gone: the cached snapshot routes, and the crash is reported.
        let next = try SampleProcess(
            ["--server", "http://127.0.0.1:9", "--city", "lagos", "--state-dir", state, "--once", "-o", "json"],
            token: "sy_client_x")
        let printed = try await next.next { _ in true }
        #expect(await next.status() == 0)
        #expect(printed["snapshot"]?["origin"] == .string("cache"))
        #expect(Self.keys(printed, "map_layers") == ["plugin_switch_map_traffic", "plugin_switch_map_pickup_spots"])
        #expect(next.errorOutput.contains("ended without endSession(): reporting a crash with"), "\(next.errorOutput)")
        #expect(next.errorOutput.contains("plugin_switch_map_traffic"))
    }

    @Test func theNextLaunchReportsACrashedSessionAndFlagsdCountsItForTheSwitchesActiveInIt() async throws {
        let state = try TestPaths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: state) }
        try await LiveServer.run { server in
            // A generous --timeout: --once answers as soon as the server does; a loaded machine may take a while.
            let arguments = [
                "--server", server.url, "--city", "lagos", "--cohort", "beta", "--state-dir", state, "--once", "-o",
                "json",
                "--timeout", "300",
            ]
            let crashing = try SampleProcess(
                arguments + ["--crash-in", "plugin_switch_map_traffic"], token: server.tokens["app"])
            #expect(await crashing.status() == 134)
            let next = try SampleProcess(arguments, token: server.tokens["app"])
            _ = try await next.next { _ in true }
            #expect(await next.status() == 0, "\(next.errorOutput)")

            let counts = try await server.store.eventCounts(
                EventCountQuery(namespace: "rider", from: Date() - 3600, until: Date() + 3600))
            func tally(_ subject: EventSubject, _ dimension: EventDimension = .all) -> EventTally {
                counts.first { $0.subject == subject && $0.dimension == dimension }?.tally ?? .zero
            }
            #expect(tally(.baseline) == EventTally(sessions: 1, crashedSessions: 1), "\(counts)")
            #expect(tally(.pluginSwitch("plugin_switch_map_traffic")) == EventTally(sessions: 1, crashedSessions: 1))
            #expect(
                tally(.pluginSwitch("plugin_switch_map_traffic"), .city("lagos"))
                    == EventTally(sessions: 1, crashedSessions: 1))
            #expect(
                tally(.pluginSwitch("plugin_switch_map_traffic"), .cohort("beta"))
                    == EventTally(sessions: 1, crashedSessions: 1))
            #expect(tally(.pluginSwitch("plugin_switch_feed_promos")).crashedSessions == 1)
            // The map is drawn after the feed and before the trip: the crash happened before any later plugin.
            #expect(tally(.pluginSwitch("plugin_switch_surge_notice")) == .zero)
            // The second launch got as far as the confirm button: one exposure of the copy experiment.
            let exposures = counts.filter {
                $0.subject.kind == .variant && $0.subject.key == "confirmation_button_copy" && $0.dimension == .all
            }
            #expect(exposures.map(\.tally.exposures) == [1], "\(exposures)")
        }
    }

    /// The README runs `--once` beside the live sample on one state folder: the live session is running, not crashed.
    @Test func aRunBesideTheLiveSampleNeverReportsItsRunningSessionAsCrashed() async throws {
        let state = try TestPaths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: state) }
        try await LiveServer.run { server in
            let arguments = [
                "--server", server.url, "--city", "lagos", "--state-dir", state, "-o", "json", "--timeout", "300",
            ]
            let live = try SampleProcess(arguments, token: server.tokens["app"])
            _ = try await live.next { $0["snapshot"]?["origin"] == .string("server") }
            func baseline() async throws -> EventTally {
                let counts = try await server.store.eventCounts(
                    EventCountQuery(namespace: "rider", from: Date() - 3600, until: Date() + 3600))
                return counts.first { $0.subject == .baseline && $0.dimension == .all }?.tally ?? .zero
            }
            let beside = try SampleProcess(arguments + ["--once"], token: server.tokens["app"])
            #expect(await beside.status() == 0, "\(beside.errorOutput)")
            #expect(!beside.errorOutput.contains("ended without endSession()"), "\(beside.errorOutput)")
            #expect(try await baseline() == .zero)

            // Stopped, the live sample ends its session cleanly; the next launch reports both sessions, neither crashed.
            #expect(await live.stop() == 0, "\(live.errorOutput)")
            let next = try SampleProcess(arguments + ["--once"], token: server.tokens["app"])
            #expect(await next.status() == 0, "\(next.errorOutput)")
            #expect(try await baseline() == EventTally(sessions: 2, crashedSessions: 0))
        }
    }

    @Test func helpTeachesAndBadOptionsAreRefusedWithTheNextStep() async throws {
        let help = try SampleProcess(["--help"], token: nil)
        #expect(await help.status() == 0)
        #expect(help.output.joined(separator: "\n").contains("USAGE: rider-sample <options>"))
        #expect(help.output.joined(separator: "\n").contains("flagctl disable plugin_switch_feed_promos"))

        let unknown = try SampleProcess(["--crash-in", "plugin_switch_nope"], token: "t")
        #expect(await unknown.status() == 64)
        #expect(
            unknown.errorOutput.contains(
                "'plugin_switch_nope' is not a plugin switch of the rider app. Pick one of: plugin_switch_prefs_saved_places"
            ))

        let noToken = try SampleProcess(["--once"], token: nil)
        #expect(await noToken.status() == 64)
        #expect(noToken.errorOutput.contains("flagctl tokens create rider-sample --role client --allow rider"))
    }
}
