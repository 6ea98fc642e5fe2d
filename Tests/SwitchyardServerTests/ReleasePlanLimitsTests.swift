import Foundation
import HTTPTypes
import SwitchyardCore
import SwitchyardFlagFiles
import SwitchyardSQLite
import SwitchyardStorage
import TestSupport
import Testing

@testable import SwitchyardServer

/// Release plans inside flagsd keep the switch's standing limits, and every kind of change (enable, disable, rollout,
/// targeting, kill, revert, apply, delete) goes through the one change path that pauses a running plan or leaves it
/// alone as docs/release-plans.md says. Real SQLite files; the walkthrough's evaluations over real HTTP on loopback.
struct ReleasePlanLimitsTests {
    static let scooters = "plugin_switch_map_scooters"

    /// The plan of docs/release-plans.md's walkthrough: Paris, Berlin and Lisbon, Lagos at 50 % then 100 %, Nairobi,
    /// everyone.
    static let walkthroughPlan = """
        {"stages": [{"cities": ["paris", "berlin", "lisbon"], "rollout": 10000}, {"cities": ["lagos"], "rollout": 5000},
                    {"cities": ["lagos"], "rollout": 10000}, {"cities": ["nairobi"], "rollout": 10000}, {"rollout": 10000}],
         "soak": "2m", "min_sessions": 500, "margin": 100}
        """

    /// A rider's OFREP context: iOS 5.10.0 unless told otherwise.
    static func context(_ city: String, version: String = "5.10.0", platform: String = "ios", unit: String = "rider-42")
        -> String
    {
        #"{"targetingKey": "\#(unit)", "city": "\#(city)", "appVersion": "\#(version)", "platform": "\#(platform)"}"#
    }

    static func isOn(_ client: LiveClient, _ context: String) async throws -> Bool {
        let response = try await client.send(
            "POST", "/ofrep/v1/evaluate/flags/\(scooters)", body: #"{"context": \#(context)}"#)
        #expect(response.status == .ok, "\(context): \(response.text)")
        let value: Bool? = response.json["value"]?.boolValue
        return try #require(value as Bool?)
    }

    @Test func theWalkthroughsPlanNeverGivesScootersToAnOldAppOrAnotherPlatform() async throws {
        let rider = try FlagFile(contentsOf: Repository.root + "/Flags/rider.yaml").flagSet
        let app = try await TestApp.make(
            configuration: CrashGuardTests.configuration(), namespaces: [], flagSets: [rider])
        defer { app.close() }
        let path = "/v1/namespaces/rider/flags/\(Self.scooters)/release"
        try await app.withLiveServer { url in
            let client = LiveClient(base: url, token: app.tokens["rider-client"])
            let editor = LiveClient(base: url, token: app.tokens["editor"])
            let start = try await editor.send(
                "POST", "\(path)/start",
                body: #"{"plan": \#(Self.walkthroughPlan), "reason": "scooters: Lagos, then Nairobi, then everyone"}"#)
            #expect(start.status == .ok, "\(start.text)")
            // What a 5.10.0 iOS app gets at each stage (nil: a 50 % stage, up to the unit's bucket), then completed.
            let expected: [(paris: Bool, lagos: Bool?, nairobi: Bool, lima: Bool)] = [
                (true, false, false, false), (true, nil, false, false), (true, true, false, false),
                (true, true, true, false), (true, true, true, true), (true, true, true, true),
            ]
            for (stage, want) in expected.enumerated() {
                let label = stage < 5 ? "stage \(stage + 1)" : "completed"
                for city in ["paris", "lagos", "nairobi", "lima"] {
                    #expect(
                        try await !Self.isOn(client, Self.context(city, version: "5.9.0")),
                        "\(label): a 5.9.0 app in \(city)")
                    #expect(
                        try await !Self.isOn(client, Self.context(city, platform: "web")),
                        "\(label): the web app in \(city)")
                }
                #expect(try await Self.isOn(client, Self.context("paris")) == want.paris, "\(label): Paris")
                if let lagos = want.lagos {
                    #expect(try await Self.isOn(client, Self.context("lagos")) == lagos, "\(label): Lagos")
                }
                #expect(try await Self.isOn(client, Self.context("nairobi")) == want.nairobi, "\(label): Nairobi")
                #expect(try await Self.isOn(client, Self.context("lima")) == want.lima, "\(label): Lima")
                #expect(
                    try await Self.isOn(client, Self.context("lima", platform: "android")) == want.lima,
                    "\(label): Android in Lima")
                if stage < 5 {
                    let advance = try await editor.send("POST", "\(path)/advance", body: #"{"reason": "next"}"#)
                    #expect(advance.status == .ok, "\(advance.text)")
                }
            }
        }
        // Completed: the stages' rules folded into the limits at 100 %, the default at 0.
        let gate = try #require(try await app.store.namespace("rider")?.flagSet.flag(Self.scooters)?.pluginSwitch)
        #expect(gate.release?.state?.status == .completed)
        #expect(gate.rollout == .off)
        #expect(
            gate.rules == [
                SwitchRule(
                    name: "release completed",
                    conditions: Conditions(
                        platforms: ["ios", "android"],
                        versions: [.app: VersionRange(atLeast: SemanticVersion("5.10.0"))]),
                    rollout: .full)
            ])
    }

    /// A kind of change to a namespace with a running plan for `plugin_switch_feed_promos`, and what it does to the plan.
    enum ChangeKind: String, CaseIterable, Sendable {
        case enable, disable, rollout, target, kill, revert, apply, delete

        /// Documented: a person's change of the switch's targeting or disables pauses the plan; a kill entry, a
        /// document declaring the same plan and a change of another flag leave it running.
        var pauses: Bool {
            switch self {
            case .enable, .disable, .rollout, .target, .revert: true
            case .kill, .apply, .delete: false
            }
        }
    }

    @Test(arguments: ChangeKind.allCases)
    func aChangeOfEachKindPausesARunningPlanOrLeavesItAloneAsDocumented(_ kind: ChangeKind) async throws {
        let app = try await TestApp.make(configuration: CrashGuardTests.configuration())
        defer { app.close() }
        let flags = "/v1/namespaces/rider/flags"
        let promos = ReleasePlanRunTests.promos
        func send(_ method: String, _ path: String, _ body: String) async throws -> TestResponse {
            let response = try await app.send(
                method == "PUT" ? .put : method == "DELETE" ? .delete : .post, path, token: "editor", body: body)
            #expect(response.status == .ok, "\(method) \(path): \(response.text)")
            return response
        }
        _ = try await ReleasePlanRunTests.start(app)

        switch kind {
        case .enable:
            // Disabled in a scope (which pauses the plan), resumed with the disable in place; then enabled there.
            _ = try await send("POST", "\(flags)/\(promos)/disable", #"{"scope": {"cities": ["lagos"]}}"#)
            _ = try await send("POST", "\(ReleasePlanRunTests.path)/resume", "{}")
            #expect(try await ReleasePlanRunTests.gate(app).release?.state?.status == .running)
        case .revert:
            // A person's targeting change (pausing the plan), resumed and advanced; its revert comes below.
            _ = try await send("POST", "\(flags)/\(promos)/targeting", #"{"rule": 0, "add": {"cities": ["nairobi"]}}"#)
            _ = try await send("POST", "\(ReleasePlanRunTests.path)/resume", "{}")
            _ = try await send("POST", "\(ReleasePlanRunTests.path)/advance", "{}")
        default: break
        }
        let before = try await ReleasePlanRunTests.gate(app)
        let beforeState = try #require(before.release?.state)
        #expect(beforeState.status == .running)

        switch kind {
        case .enable:
            _ = try await send("POST", "\(flags)/\(promos)/enable", #"{"scope": {"cities": ["lagos"]}}"#)
        case .disable:
            _ = try await send("POST", "\(flags)/\(promos)/disable", #"{"scope": {"cities": ["lagos"]}}"#)
        case .rollout:
            _ = try await send("POST", "\(flags)/\(promos)/rollout", #"{"rollout": 5000}"#)
        case .target:
            _ = try await send("POST", "\(flags)/\(promos)/targeting", #"{"rule": 0, "add": {"platforms": ["ios"]}}"#)
        case .kill:
            _ = try await send(
                "POST", "/v1/namespaces/rider/kill-switches/kill_home_feed/kill",
                #"{"scope": {"cities": ["lagos"]}, "reason": "INC-1"}"#)
        case .revert:
            let changes = try await app.send(.get, "/v1/namespaces/rider/changes?after=0&limit=100", token: "editor")
                .json
            let targeting = try #require(
                changes["changes"]?.arrayValue?.first {
                    $0["summary"]?.stringValue?.hasPrefix("edit targeting") == true
                })
            let version = try #require(targeting["version"]?.int64Value)
            _ = try await send("POST", "/v1/namespaces/rider/changes/\(version)/revert", "{}")
        case .apply:
            // The whole document as a flag file states it: the same plan declared (no state), the switch's own rules,
            // and another flag changed.
            var document = try #require(try await app.store.namespace("rider")).flagSet
            let index = try document.flagIndex(promos)
            document.flags[index].pluginSwitch = Fixtures.rider().flag(promos)?.pluginSwitch
            document.flags[index].pluginSwitch?.release = before.release?.declared
            let weather = try document.flagIndex("plugin_switch_feed_weather")
            document.flags[weather].description = "Weather card"
            let body = JSONValue.object(JSONObject([("flag_set", .object(document.tree(unit: .basisPoints)))]))
                .serializedString()
            _ = try await send("PUT", "/v1/namespaces/rider/flag-set", body)
        case .delete:
            _ = try await send("DELETE", "\(flags)/plugin_switch_feed_weather", "{}")
        }

        let after = try await ReleasePlanRunTests.gate(app)
        let state = try #require(after.release?.state)
        if kind.pauses {
            #expect(state.status == .paused, "\(kind): \(state)")
            #expect(state.note?.contains("editor changed the switch") == true, "\(state.note ?? "")")
        } else {
            #expect(state == beforeState, "\(kind) leaves the plan as it was")
            #expect(
                after.rules == before.rules && after.rollout == before.rollout, "\(kind) leaves the stage's targeting")
        }
        #expect(state.stage == beforeState.stage, "no change moves the plan to another stage")
        #expect(state.limits == beforeState.limits)
        if kind == .revert {
            // The revert restored the targeting before the person's change (stage 1's, not stage 2's) and took none
            // of the plan's state of then: the plan stays at stage 2, paused by the revert.
            #expect(state.stage == 1)
            #expect(state.note?.contains("revert version") == true, "\(state.note ?? "")")
            #expect(after.rules == before.release?.targeting(at: 0).rules)
        }
    }

    @Test func applyingTheSamePlanAfterItCompletedKeepsWhatItLeft() async throws {
        let app = try await TestApp.make(configuration: CrashGuardTests.configuration())
        defer { app.close() }
        let promos = ReleasePlanRunTests.promos
        _ = try await ReleasePlanRunTests.start(app)
        for _ in 0..<3 {
            let advance = try await app.send(.post, "\(ReleasePlanRunTests.path)/advance", token: "editor", body: "{}")
            #expect(advance.status == .ok, "\(advance.text)")
        }
        let completed = try await ReleasePlanRunTests.gate(app)
        #expect(completed.release?.state?.status == .completed)
        #expect(completed.rules.isEmpty && completed.rollout == .full, "no limits: no rules, rollout 100")
        // The flag file still says the switch's rules from before the plan, and declares the plan: it does not undo it.
        var document = try #require(try await app.store.namespace("rider")).flagSet
        let index = try document.flagIndex(promos)
        document.flags[index].pluginSwitch = Fixtures.rider().flag(promos)?.pluginSwitch
        document.flags[index].pluginSwitch?.release = completed.release?.declared
        let body = JSONValue.object(JSONObject([("flag_set", .object(document.tree(unit: .basisPoints)))]))
            .serializedString()
        let put = try await app.send(.put, "/v1/namespaces/rider/flag-set", token: "editor", body: body)
        #expect(put.status == .ok, "\(put.text)")
        #expect(try await ReleasePlanRunTests.gate(app) == completed)
    }
}
