import FlagctlCommands
import Foundation
import SwitchyardCore
import Testing

/// `flagctl release …` end to end against a live flagsd: a plan started from --stage options, its status, pause,
/// resume, abort, and the usage errors.
struct ReleaseCommandTests {
    static let promos = "plugin_switch_feed_promos"

    @Test func aPlanStartedFromTheCommandLineIsShownPausedResumedAndAborted() async throws {
        try await LiveServer.run { server in
            let start = await server.flagctl(
                "release", "start", Self.promos, "--stage", "city=lagos,rollout=1",
                "--stage", "city=lagos,rollout=100,soak=2h", "--stage", "rollout=100",
                "--min-sessions", "500", "--yes", "--reason", "promos v2")
            try #require(start.status == 0, "\(start.error)\(start.output)")
            #expect(
                start.output.contains("\(Self.promos): release plan started (namespace rider is at version 2)"),
                "\(start.output)")
            #expect(
                start.output.contains("\(Self.promos): running, stage 1 of 3 (cities lagos at 1%)"), "\(start.output)")
            #expect(start.output.contains("→ 1) cities lagos at 1% (≥ 500 sessions)"), "\(start.output)")
            #expect(start.output.contains("  2) cities lagos at 100% (soak 2h, ≥ 500 sessions)"), "\(start.output)")

            let get = await server.flagctl("get", Self.promos)
            #expect(
                get.output.contains(
                    "release plan     running, stage 1 of 3 (cities lagos at 1%); flagctl release status \(Self.promos)"
                ), "\(get.output)")
            let status = await server.flagctl("release", "status", Self.promos)
            #expect(status.status == 0)
            #expect(
                status.output.contains("next: advances to stage 2 of 3 (cities lagos at 100%); held by:"),
                "\(status.output)")
            #expect(status.output.contains("with the switch:    0 sessions"), "\(status.output)")
            #expect(status.output.contains("amara  release start \(Self.promos) (promos v2)"), "\(status.output)")
            let all = await server.flagctl("release", "status")
            #expect(all.output.hasPrefix("\(Self.promos): running, stage 1 of 3"), "\(all.output)")

            // A person's rollout pauses the plan, and flagctl says so.
            let rollout = await server.flagctl("rollout", Self.promos, "20", "--city", "lagos")
            #expect(rollout.status == 0, "\(rollout.error)")
            #expect(
                rollout.output.contains(
                    "note: the release plan of \(Self.promos) is paused now: paused: amara changed the switch"),
                "\(rollout.output)")
            let resumed = await server.flagctl("release", "resume", Self.promos, "--yes")
            #expect(resumed.status == 0, "\(resumed.error)")
            let pause = await server.flagctl("release", "pause", Self.promos, "--reason", "payments incident")
            #expect(pause.status == 0, "\(pause.error)")
            #expect(pause.output.contains("\(Self.promos): paused, stage 1 of 3"), "\(pause.output)")
            #expect(pause.output.contains("paused by "), "\(pause.output)")
            let unasked = await server.flagctl("release", "resume", Self.promos)
            #expect(unasked.status == 64, "off a terminal, a change that asks needs --yes: \(unasked.error)")
            let resume = await server.flagctl("release", "resume", Self.promos, "--yes")
            #expect(
                resume.status == 0 && resume.output.contains("running, stage 1 of 3"), "\(resume.error)\(resume.output)"
            )
            let resumeTwice = await server.flagctl("release", "resume", Self.promos, "--yes")
            #expect(
                resumeTwice.status == 1
                    && resumeTwice.error.contains("is running; only a paused or rolled_back plan can resume"),
                "\(resumeTwice.error)")
            let abort = await server.flagctl("release", "abort", Self.promos, "--yes", "-o", "json")
            #expect(abort.status == 0)
            let tree = try JSONValue.parse(abort.output)
            #expect(tree["release"]?["plan"]?["state"]?["status"] == .string("aborted"))
        }
    }

    @Test func badStagesAreUsageErrorsThatSayWhatToWrite() async throws {
        for (arguments, message) in [
            (["--stage", "city=lagos"], "has no rollout=PERCENT"),
            (["--stage", "town=lagos,rollout=1"], "'town' is not a stage setting"),
            (["--stage", "rollout=150"], "is not between 0 and 100"),
            (["--margin", "0.5"], "describe a new plan; pass its stages with --stage"),
        ] {
            let result = await flagctl(["release", "start", Self.promos] + arguments + ["--yes"])
            #expect(result.status == 64, "\(arguments): \(result.error)")
            #expect(result.error.contains(message), "\(arguments): \(result.error)")
        }
    }

    @Test func guardrailsAreStartedWithThePlanShownInItsStatusAndCheckedBeforeAsking() async throws {
        try await LiveServer.run { server in
            // A metric the namespace does not declare, and a margin on the wrong side: refused before asking.
            let wrong = await server.flagctl(
                "release", "start", Self.promos, "--stage", "city=lagos,rollout=10",
                "--guardrail", "trips_taken:-1%", "--guardrail", "trip_booked:+0.5pp", "--yes")
            #expect(wrong.status == 64, "\(wrong.error)")
            #expect(
                wrong.error.contains(
                    "--guardrail trips_taken: 'trips_taken' is not a metric of this namespace (declared: "),
                "\(wrong.error)")
            #expect(
                wrong.error.contains(
                    "--guardrail trip_booked: 'trip_booked' is better higher, so its margin is how far it may fall: write -0.5pp"
                ), "\(wrong.error)")

            let start = await server.flagctl(
                "release", "start", Self.promos, "--stage", "city=lagos,rollout=10", "--stage", "rollout=100",
                "--guardrail", "trip_booked:-0.5pp", "--guardrail", "fare:-2%", "--yes", "--reason", "guarded")
            try #require(start.status == 0, "\(start.error)\(start.output)")
            #expect(
                start.output.contains("guardrails: crash_rate (margin), fare:-2%, trip_booked:-0.5pp"),
                "\(start.output)")
            let status = await server.flagctl("release", "status", Self.promos)
            #expect(
                status.output.contains(
                    "guardrail trip_booked -0.5pp: undecided (trip_booked: too few units to compare (0 units with the switch, 0 without))"
                ), "\(status.output)")
            #expect(status.output.contains("guardrail fare -2%: undecided"), "\(status.output)")
            #expect(status.output.contains("waits for: crash_rate, fare, trip_booked"), "\(status.output)")
            let json = await server.flagctl("release", "status", Self.promos, "-o", "json")
            let tree = try JSONValue.parse(Array(json.output.utf8))
            #expect(
                tree["plan"]?["guardrails"]
                    == .object(JSONObject([("fare", .string("-2%")), ("trip_booked", .string("-0.5pp"))])))
            #expect(tree["assessment"]?["guardrails"]?.arrayValue?.count == 2)
        }
    }

    @Test func aGuardrailThatIsNotMetricColonMarginIsAUsageError() async throws {
        for text in ["trip_booked", "trip_booked:-0.5", "fare:down"] {
            let result = await flagctl(["release", "start", Self.promos, "--guardrail", text, "--yes"])
            #expect(result.status == 64, "\(text): \(result.error)")
            #expect(
                result.error.contains("--guardrail '\(text)' is not METRIC:MARGIN, e.g. trip_booked:-0.5pp"),
                "\(text): \(result.error)")
        }
    }

    @Test func aPlanDeclaredInTheFlagFileIsAppliedStartedAndThenMatchesTheFile() async throws {
        try await LiveServer.run { server in
            let directory = try FlagFolder.copyOfRider { text in
                text.replacingOccurrences(
                    of: "    owner: team-maps\n    rollout: 100\n\n  plugin_switch_map_pickup_spots:",
                    with:
                        "    owner: team-maps\n    rollout: 100\n    release:\n      min_sessions: 500\n      stages:\n"
                        + "        - {cities: [lagos], rollout: 10}\n        - {rollout: 100}\n\n  plugin_switch_map_pickup_spots:"
                )
            }
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let apply = await server.flagctl("apply", directory, "--yes")
            #expect(apply.status == 0, "\(apply.error)\(apply.output)")
            let start = await server.flagctl("release", "start", "plugin_switch_map_traffic", "--yes")
            #expect(
                start.status == 0 && start.output.contains("running, stage 1 of 2 (cities lagos at 10%)"),
                "\(start.error)\(start.output)\(apply.output)")
            // The file says rollout 100 and no state; the running plan's progress and targeting are not a difference.
            let diff = await server.flagctl("diff", directory, "--exit-code")
            #expect(diff.status == 0, "\(diff.error)\(diff.output)")
            #expect(diff.output.hasSuffix("nothing to apply\n"), "\(diff.output)")
            let again = await server.flagctl("apply", directory, "--yes")
            #expect(again.status == 0, "\(again.error)")
            let status = await server.flagctl("release", "status", "plugin_switch_map_traffic")
            #expect(status.output.contains("running, stage 1 of 2"), "\(status.output)")
        }
    }
}
