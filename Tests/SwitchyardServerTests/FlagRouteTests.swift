import HTTPTypes
import SwitchyardCore
import SwitchyardSQLite
import SwitchyardStorage
import Testing

@testable import SwitchyardServer

/// The admin API's flag and kill switch routes, in-process.
struct FlagRouteTests {
    let base = "/v1/namespaces/rider"

    func flag(_ app: TestApp, _ key: String) async throws -> FlagDefinition {
        try #require(try await app.store.namespace("rider")?.flagSet.flag(key))
    }

    @Test func listingAndGettingFlagsShowsDefinitionsKillSwitchesAndPluginPoint() async throws {
        let app = try await TestApp.make()
        defer { app.close() }
        let list = try await app.send(.get, "\(base)/flags", token: "editor")
        #expect(list.status == .ok)
        #expect(list.json["flags"]?.arrayValue?.count == 4)
        let one = try await app.send(.get, "\(base)/flags/plugin_switch_feed_promos", token: "editor")
        #expect(one.json["key"] == .string("plugin_switch_feed_promos"))
        #expect(one.json["rollout"] == .int(10000))
        #expect(one.json["rules"]?.arrayValue?.last?["rollout"] == .int(500))
        #expect(
            Set(one.json["kill_switches"]?.arrayValue?.compactMap(\.stringValue) ?? []) == ["master", "kill_home_feed"])
        #expect(one.json["plugin_point"] == .string("home_feed"))
        #expect(one.json["version"] == .int(1))
        #expect(one.headers[.eTag]?.hasSuffix(".1\"") == true)
        #expect(try await app.send(.get, "\(base)/flags/nope", token: "editor").status == .notFound)
    }

    @Test func disablingAndEnablingGloballyAndByScope() async throws {
        let app = try await TestApp.make()
        defer { app.close() }
        var response = try await app.send(
            .post, "\(base)/flags/plugin_switch_feed_promos/disable", token: "editor",
            body: #"{"scope": {"cities": ["lagos"]}, "reason": "crashes in lagos"}"#)
        #expect(response.status == .ok)
        #expect(response.json["version"] == .int(2))
        #expect(response.json["changed"] == .bool(true))
        #expect(response.json["change"]?["summary"] == .string("disable plugin_switch_feed_promos in cities lagos"))
        #expect(response.headers[.eTag]?.hasSuffix(".2\"") == true)
        #expect(
            try await flag(app, "plugin_switch_feed_promos").pluginSwitch?.disabledScopes == [Scope(cities: ["lagos"])])

        response = try await app.send(
            .post, "\(base)/flags/plugin_switch_feed_promos/disable", token: "editor", body: "{}")
        #expect(try await flag(app, "plugin_switch_feed_promos").pluginSwitch?.disabled == true)
        response = try await app.send(.post, "\(base)/flags/plugin_switch_feed_promos/enable", token: "editor")
        #expect(try await flag(app, "plugin_switch_feed_promos").pluginSwitch?.disabled == false)
        response = try await app.send(.post, "\(base)/flags/plugin_switch_feed_promos/enable", token: "editor")
        #expect(response.json["changed"] == .bool(false))
        #expect(response.json["version"] == .int(4))

        response = try await app.send(
            .post, "\(base)/flags/plugin_switch_feed_promos/enable", token: "editor",
            body: #"{"scope": {"cities": ["paris"]}}"#)
        #expect(response.status == .badRequest)
        #expect(response.problemPaths == ["scope"])
        response = try await app.send(
            .post, "\(base)/flags/plugin_switch_feed_promos/enable", token: "editor",
            body: #"{"scope": {"cities": ["lagos"]}}"#)
        #expect(try await flag(app, "plugin_switch_feed_promos").pluginSwitch?.disabledScopes == [])

        response = try await app.send(.post, "\(base)/flags/checkout_button/disable", token: "editor")
        #expect(response.status == .badRequest)
        #expect(response.json["detail"]?.stringValue?.contains("experiment") == true)
    }

    @Test func killingNeedsAReasonAndRevivingRemovesTheEntry() async throws {
        let app = try await TestApp.make()
        defer { app.close() }
        var response = try await app.send(
            .post, "\(base)/kill-switches/kill_home_feed/kill", token: "editor", body: "{}")
        #expect(response.status == .badRequest)
        #expect(response.problemPaths == ["reason"])
        #expect(response.json["type"] == .string("urn:switchyard:problem:reason-required"))

        response = try await app.send(
            .post, "\(base)/kill-switches/kill_home_feed/kill", token: "editor",
            body: #"{"scope": {"cohorts": ["beta"]}, "reason": "incident 12"}"#)
        #expect(response.status == .ok)
        #expect(
            response.json["kill_switch"]?["entries"]
                == .array([.object(JSONObject([("cohorts", .array([.string("beta")]))]))]))
        #expect(
            response.json["kill_switch"]?["members"]
                == .array([.string("plugin_switch_feed_promos"), .string("plugin_switch_feed_weather")]))
        response = try await app.send(
            .post, "\(base)/kill-switches/master/kill", token: "editor", body: #"{"reason": "all off"}"#)
        #expect(response.json["kill_switch"]?["killed_everywhere"] == .bool(true))

        response = try await app.send(.post, "\(base)/kill-switches/master/revive", token: "editor")
        #expect(try await app.store.namespace("rider")?.flagSet.master.entries == [])
        response = try await app.send(
            .post, "\(base)/kill-switches/kill_home_feed/revive", token: "editor",
            body: #"{"scope": {"cohorts": ["alpha"]}}"#)
        #expect(response.problemPaths == ["scope"])
        response = try await app.send(
            .post, "\(base)/kill-switches/kill_home_feed/revive", token: "editor", body: #"{"all": true}"#)
        #expect(try await app.store.namespace("rider")?.flagSet.killSwitch("kill_home_feed")?.entries == [])
        #expect(
            try await app.send(.post, "\(base)/kill-switches/nope/kill", token: "editor", body: #"{"reason":"x"}"#)
                .status == .notFound)

        let list = try await app.send(.get, "\(base)/kill-switches", token: "editor")
        #expect(
            list.json["kill_switches"]?.arrayValue?.compactMap { $0["key"]?.stringValue } == [
                "kill_home_feed", "kill_map_layers", "master",
            ])
    }

    @Test func rolloutsSetTheDefaultARuleOrATargetedRule() async throws {
        let app = try await TestApp.make()
        defer { app.close() }
        var response = try await app.send(
            .post, "\(base)/flags/plugin_switch_map_traffic/rollout", token: "editor", body: #"{"rollout": 1234}"#)
        #expect(response.status == .ok)
        #expect(response.json["rule"] == .null)
        #expect(try await flag(app, "plugin_switch_map_traffic").pluginSwitch?.rollout.basisPoints == 1234)

        response = try await app.send(
            .post, "\(base)/flags/plugin_switch_map_traffic/rollout", token: "editor",
            body: #"{"rollout": 10, "rule": 0}"#)
        #expect(response.json["rule"] == .int(0))
        #expect(try await flag(app, "plugin_switch_map_traffic").pluginSwitch?.rules[0].rollout.basisPoints == 10)

        response = try await app.send(
            .post, "\(base)/flags/plugin_switch_map_traffic/rollout", token: "editor",
            body: #"{"rollout": 500, "conditions": {"cities": ["lagos"]}}"#)
        #expect(response.json["rule"] == .int(1))
        response = try await app.send(
            .post, "\(base)/flags/plugin_switch_map_traffic/rollout", token: "editor",
            body: #"{"rollout": 700, "conditions": {"cities": ["lagos"]}}"#)
        #expect(response.json["rule"] == .int(1))
        let rules = try await flag(app, "plugin_switch_map_traffic").pluginSwitch?.rules
        #expect(rules?.map(\.rollout.basisPoints) == [10, 700])

        response = try await app.send(
            .post, "\(base)/flags/plugin_switch_map_traffic/rollout", token: "editor",
            body: #"{"rollout": 10, "rule": 5}"#)
        #expect(response.problemPaths == ["rule"])
        response = try await app.send(
            .post, "\(base)/flags/plugin_switch_map_traffic/rollout", token: "editor", body: #"{"rollout": 10001}"#)
        #expect(response.problemPaths == ["rollout"])
        response = try await app.send(
            .post, "\(base)/flags/plugin_switch_map_traffic/rollout", token: "editor", body: #"{"rollout": "5%"}"#)
        #expect(response.problemPaths == ["rollout"])
        #expect(response.json["errors"]?.arrayValue?.first?["message"]?.stringValue?.contains("integer") == true)
        response = try await app.send(
            .post, "\(base)/flags/checkout_button/rollout", token: "editor", body: #"{"rollout": 10}"#)
        #expect(response.status == .badRequest)
    }

    @Test func targetingAddsAndRemovesCitiesCohortsAndUnits() async throws {
        let app = try await TestApp.make()
        defer { app.close() }
        var response = try await app.send(
            .post, "\(base)/flags/plugin_switch_map_traffic/targeting", token: "editor",
            body: #"{"add": {"cohorts": ["alpha"], "units": ["u1"]}, "remove": {"cohorts": ["beta"]}}"#)
        #expect(response.status == .ok)
        #expect(response.json["rule"] == .int(0))
        var conditions = try await flag(app, "plugin_switch_map_traffic").pluginSwitch?.rules[0].conditions
        #expect(conditions?.cohorts == ["alpha"])
        #expect(conditions?.units == ["u1"])

        response = try await app.send(
            .post, "\(base)/flags/plugin_switch_feed_promos/targeting", token: "editor",
            body: #"{"add": {"units": ["qa-2"]}}"#)
        #expect(response.problemPaths == ["rule"])
        response = try await app.send(
            .post, "\(base)/flags/plugin_switch_feed_promos/targeting", token: "editor",
            body: #"{"rule": 0, "add": {"units": ["qa-2"]}}"#)
        conditions = try await flag(app, "plugin_switch_feed_promos").pluginSwitch?.rules[0].conditions
        #expect(conditions?.units == ["qa-1", "qa-2"])
        response = try await app.send(
            .post, "\(base)/flags/plugin_switch_feed_promos/targeting", token: "editor",
            body: #"{"rule": 0, "remove": {"units": ["qa-9"]}}"#)
        #expect(response.problemPaths == ["remove.units[0]"])

        response = try await app.send(
            .post, "\(base)/flags/plugin_switch_feed_weather/targeting", token: "editor",
            body: #"{"add": {"cities": ["paris"]}}"#)
        #expect(response.problemPaths == ["rollout"])
        response = try await app.send(
            .post, "\(base)/flags/plugin_switch_feed_weather/targeting", token: "editor",
            body: #"{"add": {"cities": ["paris"]}, "rollout": 10000}"#)
        #expect(
            try await flag(app, "plugin_switch_feed_weather").pluginSwitch?.rules.first?.conditions.cities == ["paris"])

        response = try await app.send(
            .post, "\(base)/flags/checkout_button/targeting", token: "editor",
            body: #"{"add": {"cohorts": ["vip"]}}"#)
        #expect(try await flag(app, "checkout_button").experiment?.rules[0].conditions.cohorts == ["staff", "vip"])
        response = try await app.send(.post, "\(base)/flags/checkout_button/targeting", token: "editor", body: "{}")
        #expect(response.status == .badRequest)
    }

    @Test func flagsAreCreatedReplacedAndDeletedWithTheirReferences() async throws {
        let app = try await TestApp.make()
        defer { app.close() }
        var response = try await app.send(
            .post, "\(base)/flags", token: "editor",
            body: #"{"key": "plugin_switch_new", "flag": {"rollout": 100, "owner": "me"}, "reason": "new plugin"}"#)
        #expect(response.status == .created)
        #expect(response.json["flag"]?["type"] == .string("plugin_switch"))
        #expect(try await flag(app, "plugin_switch_new").owner == "me")
        response = try await app.send(
            .post, "\(base)/flags", token: "editor", body: #"{"key": "plugin_switch_new", "flag": {}}"#)
        #expect(response.status == .conflict)

        response = try await app.send(
            .put, "\(base)/flags/plugin_switch_new", token: "editor",
            body: #"{"flag": {"rollout": 20000, "rules": [{"citys": ["x"], "rollout": 1}]}}"#)
        #expect(response.status == .badRequest)
        #expect(Set(response.problemPaths) == ["flag.rollout", "flag.rules[0].citys"])

        response = try await app.send(
            .put, "\(base)/flags/exp_color", token: "editor",
            body: """
                {"flag": {"type": "experiment", "value_type": "float", "variants": [{"key": "a", "value": 1}, {"key": "b", "value": 2.5}],
                          "default_variant": "a", "weights": {"a": 1, "b": 3}}}
                """)
        #expect(response.status == .ok)
        #expect(response.json["flag"]?["variants"]?.arrayValue?.first?["value"]?.serializedString() == "1.0")

        response = try await app.send(.delete, "\(base)/flags/plugin_switch_feed_weather?reason=gone", token: "editor")
        #expect(response.status == .ok)
        let flagSet = try #require(try await app.store.namespace("rider")?.flagSet)
        #expect(flagSet.flag("plugin_switch_feed_weather") == nil)
        #expect(flagSet.pluginPoints[0].switches == ["plugin_switch_feed_promos"])
        #expect(response.json["change"]?["reason"] == .string("gone"))
        #expect(
            try await app.send(.delete, "\(base)/flags/plugin_switch_feed_weather", token: "editor").status == .notFound
        )
    }

    @Test func theWholeFlagSetIsReadAndReplacedInOneChange() async throws {
        let app = try await TestApp.make()
        defer { app.close() }
        let read = try await app.send(.get, "\(base)/flag-set", token: "editor")
        #expect(read.json["flag_set"].map { try? FlagSet(tree: $0, unit: .basisPoints) } == Fixtures.rider())
        var tree = try #require(read.json["flag_set"]?.objectValue)
        tree["namespace"] = nil
        tree["description"] = .string("changed by apply")
        let body = JSONValue.object(JSONObject([("flag_set", .object(tree)), ("reason", .string("apply"))]))
            .serializedString()
        var response = try await app.send(
            .put, "\(base)/flag-set", token: "editor",
            headers: [.ifMatch: read.headers[.eTag]!, .init("X-Switchyard-Source")!: "apply"], body: body)
        #expect(response.status == .ok)
        #expect(response.json["change"]?["source"] == .string("apply"))
        #expect(response.json["change"]?["changes"]?.arrayValue?.first?["kind"] == .string("namespace"))
        #expect(try await app.store.namespace("rider")?.flagSet.description == "changed by apply")

        response = try await app.send(
            .put, "\(base)/flag-set", token: "editor", body: #"{"flag_set": {"namespace": "other"}}"#)
        #expect(response.problemPaths == ["flag_set.namespace"])
        response = try await app.send(
            .put, "\(base)/flag-set", token: "editor",
            body: #"{"flag_set": {"plugin_points": [{"name": "p", "switches": ["plugin_switch_x"]}]}}"#)
        #expect(response.problemPaths == ["flag_set.plugin_points[0].switches[0]"])
    }

    @Test func aStaleIfMatchGets409NamingWhoChangedIt() async throws {
        let app = try await TestApp.make()
        defer { app.close() }
        let tag = try #require(
            try await app.send(.get, "\(base)/flags/plugin_switch_map_traffic", token: "editor").headers[.eTag])
        var response = try await app.send(
            .post, "\(base)/flags/plugin_switch_map_traffic/rollout", token: "admin",
            headers: [.ifMatch: tag], body: #"{"rollout": 1}"#)
        #expect(response.status == .ok)
        response = try await app.send(
            .post, "\(base)/flags/plugin_switch_map_traffic/rollout", token: "editor",
            headers: [.ifMatch: tag], body: #"{"rollout": 2}"#)
        #expect(response.status == .conflict)
        #expect(response.json["changed_by"] == .string("admin"))
        #expect(response.json["current_version"] == .int(2))
        #expect(response.json["changed_at"]?.stringValue != nil)
        response = try await app.send(
            .post, "\(base)/flags/plugin_switch_map_traffic/rollout", token: "editor",
            headers: [.ifMatch: "yesterday"], body: #"{"rollout": 2}"#)
        #expect(response.problemPaths == ["If-Match"])
        response = try await app.send(
            .post, "\(base)/flags/plugin_switch_map_traffic/rollout", token: "editor",
            headers: [.ifMatch: "*"], body: #"{"rollout": 2}"#)
        #expect(response.status == .ok)
    }

    @Test func revertRestoresWhatAChangeChanged() async throws {
        let app = try await TestApp.make()
        defer { app.close() }
        _ = try await app.send(
            .post, "\(base)/flags/plugin_switch_map_traffic/rollout", token: "editor", body: #"{"rollout": 9}"#)
        let response = try await app.send(
            .post, "\(base)/changes/2/revert", token: "editor", body: #"{"reason": "oops"}"#)
        #expect(response.status == .ok)
        #expect(response.json["version"] == .int(3))
        #expect(response.json["change"]?["summary"]?.stringValue?.hasPrefix("revert version 2") == true)
        #expect(try await flag(app, "plugin_switch_map_traffic").pluginSwitch?.rollout.basisPoints == 2500)
        #expect(try await app.send(.post, "\(base)/changes/42/revert", token: "editor").status == .notFound)
    }

    @Test func theSourceHeaderNamesAKnownSource() async throws {
        let app = try await TestApp.make()
        defer { app.close() }
        for source in ["crash-guard", "robot"] {
            let response = try await app.send(
                .post, "\(base)/flags/plugin_switch_map_traffic/disable", token: "editor",
                headers: [.init("X-Switchyard-Source")!: source])
            #expect(response.status == .badRequest)
            #expect(response.problemPaths == ["X-Switchyard-Source"])
        }
    }
}
