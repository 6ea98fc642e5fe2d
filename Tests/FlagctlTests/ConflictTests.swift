import Foundation
import SwitchyardCore
import SwitchyardStorage
import SwitchyardWire
import Testing

@testable import FlagctlCommands

/// A change based on a stale view fails with who changed what and when, instead of overwriting it.
struct ConflictTests {
    @Test func aChangePinnedToAnOldVersionFailsNamingWhoChangedItAndWhen() async throws {
        try await LiveServer.run { server in
            _ = await server.flagctl("disable", "plugin_switch_map_traffic", "--reason", "map stutter", as: "bob")
            let result = await server.flagctl("rollout", "plugin_switch_feed_safety_tips", "50", "--if-version", "1")
            #expect(result.status == 3)
            #expect(
                LiveCommandTests.withoutTime(result.error) == """
                    error: namespace 'rider' is at version 2, not 1; nothing was changed. Changed since:
                      version 2 by bob (cli) at <time>: disable plugin_switch_map_traffic (reason: map stutter)
                    Look at the current state with 'flagctl get', then run the command again if it still makes sense

                    """)
            #expect(await server.state().record.version == 2)
            let current = await server.flagctl("rollout", "plugin_switch_feed_safety_tips", "50", "--if-version", "2")
            #expect(current.status == 0)
        }
    }

    @Test func aChangeToTheSameObjectWhileTheUserConfirmsIsRefused() async throws {
        try await LiveServer.run { server in
            // Bob kills Lagos while Amara is looking at the prompt.
            let result = await server.flagctl(
                ["kill", "kill_home_feed", "--reason", "feed down"], environment: server.environment(token: "amara"),
                terminal: true
            ) { _ in
                _ = await server.flagctl(
                    "kill", "kill_home_feed", "--city", "lagos", "--reason", "lagos only", "--yes", as: "bob")
                return "y"
            }
            #expect(result.status == 3, "\(result.transcript)")
            #expect(
                LiveCommandTests.withoutTime(result.error).hasSuffix(
                    """
                    error: kill switch kill_home_feed changed after you read namespace 'rider' at version 1; nothing was changed. Changed since:
                      version 2 by bob (cli) at <time>: kill kill_home_feed in cities lagos (reason: lagos only)
                    Look at the current state with 'flagctl get kill_home_feed', then run the command again if it still makes sense

                    """))
            #expect(await server.state().flagSet.killSwitch("kill_home_feed")?.entries == [Scope(cities: ["lagos"])])
        }
    }

    @Test func aChangeToAnotherObjectWhileTheUserConfirmsDoesNotStopTheKill() async throws {
        try await LiveServer.run { server in
            let result = await server.flagctl(
                ["kill", "kill_home_feed", "--reason", "feed down"], environment: server.environment(token: "amara"),
                terminal: true
            ) { _ in
                _ = await server.flagctl("rollout", "plugin_switch_map_scooters", "5", as: "bob")
                return "yes"
            }
            #expect(result.status == 0, "\(result.transcript)")
            #expect(result.output.hasPrefix("killed kill_home_feed everywhere (namespace rider is at version 3)\n"))
            let state = await server.state()
            #expect(state.flagSet.killSwitch("kill_home_feed")?.isKilledEverywhere == true)
            #expect(state.flagSet.flag("plugin_switch_map_scooters")?.pluginSwitch?.rollout.basisPoints == 500)
        }
    }

    @Test func applyFailsWhenTheNamespaceChangedAfterThePlan() async throws {
        try await LiveServer.run { server in
            let directory = try FlagFolder.copyOfRider {
                $0.replacingOccurrences(of: "rollout: 33.33", with: "rollout: 40")
            }
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let result = await server.flagctl(["apply", directory], environment: server.environment(), terminal: true) {
                _ in
                _ = await server.flagctl("kill", "--city", "lagos", "--reason", "INC-4411", "--yes", as: "bob")
                return "y"
            }
            #expect(result.status == 3, "\(result.transcript)")
            #expect(
                LiveCommandTests.withoutTime(result.error) == """
                    Apply 1 change to namespace rider (version 1)? [y/N] error: namespace 'rider' is at version 2, not 1; nothing was changed. Changed since:
                      version 2 by bob (cli) at <time>: kill master in cities lagos (reason: INC-4411)
                    Nothing was applied to rider; run 'flagctl diff \(directory)' to see the new plan, then apply again

                    """)
            let state = await server.state()
            #expect(state.flagSet.flag("plugin_switch_feed_safety_tips")?.pluginSwitch?.rollout.basisPoints == 3333)
            #expect(state.flagSet.master.entries.contains(Scope(cities: ["lagos"])), "bob's kill is not overwritten")
        }
    }

    @Test func revertRefusesToUndoALaterChangeToTheSameObjectUnlessAcknowledged() async throws {
        try await LiveServer.run { server in
            _ = await server.flagctl("rollout", "plugin_switch_feed_safety_tips", "50", as: "amara")
            _ = await server.flagctl("rollout", "plugin_switch_feed_safety_tips", "60", as: "bob")
            let refused = await server.flagctl("revert", "2")
            #expect(refused.status == 3)
            #expect(
                LiveCommandTests.withoutTime(refused.error) == """
                    error: reverting version 2 (roll out plugin_switch_feed_safety_tips to 50%) would also undo later changes to the same objects:
                      version 3 by bob (cli) at <time>: roll out plugin_switch_feed_safety_tips to 60%
                    Revert those first (newest first), or pass --if-version with the current version to revert anyway

                    """)
            let acknowledged = await server.flagctl("revert", "2", "--if-version", "3")
            #expect(acknowledged.status == 0, "\(acknowledged.error)")
            #expect(
                await server.state().flagSet.flag("plugin_switch_feed_safety_tips")?.pluginSwitch?.rollout.basisPoints
                    == 3333)
        }
    }

    @Test func aPinnedVersionNewerThanTheNamespaceIsAUsageError() async throws {
        try await LiveServer.run { server in
            let result = await server.flagctl("disable", "plugin_switch_feed_promos", "--if-version", "9")
            #expect(result.status == 64)
            #expect(
                result.error
                    == "error: --if-version 9 is newer than namespace 'rider' (at version 1); pass the version 'flagctl get' shows\n"
            )
        }
    }

    @Test func anObjectIsUnchangedOnlyWhenItsDefinitionIsEqual() {
        let flagSet = Fixtures.rider
        var other = flagSet
        other.flags[0].description = "changed"
        let changedKey = other.flags[0].key
        #expect(!ObjectReference.flag(changedKey).isUnchanged(from: flagSet, to: other))
        #expect(ObjectReference.flag(flagSet.flags[1].key).isUnchanged(from: flagSet, to: other))
        other.killSwitches[0].entries.append(Scope(cities: ["lagos"]))
        #expect(!ObjectReference.killSwitch(other.killSwitches[0].key).isUnchanged(from: flagSet, to: other))
        #expect(ObjectReference.killSwitch(flagSet.killSwitches[1].key).isUnchanged(from: flagSet, to: other))
    }
}

/// Temporary copies of the Flags folder, edited.
enum FlagFolder {
    /// A new folder holding Flags/rider.yaml, its text passed through `edit`.
    static func copyOfRider(_ edit: (String) -> String = { $0 }) throws -> String {
        let directory = try TestPaths.temporaryDirectory()
        let text = try String(contentsOfFile: TestPaths.flags + "/rider.yaml", encoding: .utf8)
        try edit(text).write(toFile: directory + "/rider.yaml", atomically: true, encoding: .utf8)
        return directory
    }
}

/// What flagctl reads of flagsd's answer to a change it made.
struct ChangeAnswerTests {
    static func envelope(flag: JSONValue) -> JSONValue {
        .object(
            JSONObject([
                ("namespace", .string("rider")), ("version", .int(8)), ("etag", .string("\"9f2c.8\"")),
                ("changed", .bool(true)), ("change", .null), ("flag", flag), ("rule", .int(0)),
            ]))
    }

    @Test func aFlagThisFlagctlCannotReadStillLeavesTheChangeMade() throws {
        // A newer flagsd's flag with a member this flagctl does not know: the change is made, and read as such.
        let flag = JSONValue.object(
            JSONObject([
                ("key", .string("plugin_switch_a")), ("type", .string("plugin_switch")),
                ("rollout", .int(10_000)), ("kill_switches", .array([])), ("plugin_point", .null),
                ("sunset", .string("2027-01-01")),
            ]))
        let answer = try ChangeFlow.answer(Self.envelope(flag: flag))
        #expect(answer.changed && answer.version.version == 8)
        #expect(answer.flag == nil && answer.rule == nil)
    }

    @Test func aReadableAnswerIsReadWhole() throws {
        let flag = JSONObject([
            ("key", .string("plugin_switch_a")), ("type", .string("plugin_switch")), ("rollout", .int(10_000)),
            ("kill_switches", .array([.string("master")])), ("plugin_point", .string("home")),
        ])
        let answer = try ChangeFlow.answer(Self.envelope(flag: .object(flag)))
        #expect(answer.flag?.flag.key == "plugin_switch_a" && answer.flag?.pluginPoint == "home")
        #expect(answer.rule == .rule(0))
    }

    @Test func anAnswerWithoutTheEnvelopeIsAFailure() {
        #expect(throws: CommandFailure.self) { try ChangeFlow.answer(.object(JSONObject([("changed", .bool(true))]))) }
    }
}
