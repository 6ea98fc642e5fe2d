import SwitchyardCore
import SwitchyardWire
import Testing

/// The change requests flagctl writes read back as written on flagsd's side, and a body flagsd must refuse names
/// every member at fault.
struct RequestBodiesTests {
    /// Every request of every type, as flagctl writes it with a reason added, as the change flow does.
    static let requests: [any ChangeRequestBody] = [
        SwitchStateRequest(scope: nil, reason: "INC-1"),
        SwitchStateRequest(scope: Scope(cities: ["lagos", "paris"], cohorts: ["beta"]), reason: "INC-1"),
        KillStateRequest(scope: Scope(cities: ["lagos"]), reason: "INC-2"),
        KillStateRequest(scope: nil, all: true, reason: "INC-2"),
        RolloutRequest(rollout: Rollout(basisPoints: 2_500)!, reason: "ramp"),
        RolloutRequest(rollout: Rollout(basisPoints: 10_000)!, rule: 3, reason: "ramp"),
        RolloutRequest(
            rollout: Rollout(basisPoints: 100)!, conditions: Conditions(cities: ["lagos"], cohorts: ["beta"]),
            reason: "ramp"),
        TargetingRequest(
            rule: 0, add: Conditions(cities: ["berlin"], units: ["u-1"], platforms: ["ios"]),
            remove: Conditions(cohorts: ["beta"]), rollout: Rollout(basisPoints: 5_000)!, reason: "target"),
        TargetingRequest(rule: nil, remove: Conditions(notCities: ["oslo"]), reason: "target"),
        ReasonRequest(reason: "crashes from a test device farm"),
        ReasonRequest(),
        ReleaseActionRequest(),
        ReleaseActionRequest(
            plan: Self.plan, guardrails: [ReleaseGuardrail("trip_booked: -0.5pp")!], reason: "start"),
        FlagSetRequest(flagSet: Self.flagSet, reason: "apply"),
        NamespaceCreateRequest(name: "rider-staging", description: "Rider, staging", reasonPolicy: .always),
        NamespaceCreateRequest(name: "rider", flagSet: Self.flagSet, reason: "apply"),
        ReasonPolicyRequest(reasonPolicy: .never, reason: "staging"),
    ]

    static let flagSet: FlagSet = {
        let tree = try! JSONValue.parse(
            Array(
                #"{"namespace": "rider", "flags": {"plugin_switch_feed_promos": {"type": "plugin_switch", "rollout": 2500}}}"#
                    .utf8))
        return try! FlagSet(tree: tree, unit: .basisPoints)
    }()

    static let plan: ReleasePlan = {
        let tree = try! JSONValue.parse(
            Array(#"{"stages": [{"cities": ["lagos"], "rollout": 100}, {"rollout": 10000}], "soak": "1h"}"#.utf8))
        return try! ReleasePlan(tree: tree, unit: .basisPoints)
    }()

    static func read<Body: ChangeRequestBody>(_ type: Body.Type, _ json: JSONValue) -> (Body?, [ValidationProblem]) {
        let problems = BodyProblems()
        guard var object = BodyObject(json, problems: problems) else { return (nil, problems.problems) }
        let body = Body.read(&object)
        return (body, problems.problems)
    }

    static func readsBack<Body: ChangeRequestBody>(_ request: Body) -> Bool {
        let (body, problems) = read(Body.self, request.sent)
        return problems.isEmpty && body == request
    }

    @Test(arguments: 0..<requests.count)
    func aRequestReadsBackAsWritten(index: Int) {
        let request = Self.requests[index]
        let readsBack = Self.readsBack(request)
        #expect(readsBack, "\(request.sent.serializedString())")
    }

    @Test func aTokenRequestReadsBackAndAClientTokenNeedsItsNamespaces() {
        for request in [
            TokenCreateRequest(name: "rider-ios", role: .client, namespaces: ["rider"], ratePerMinute: 600),
            TokenCreateRequest(name: "prometheus", role: .metrics),
        ] {
            let problems = BodyProblems()
            var object = BodyObject(request.sent, problems: problems)!
            #expect(TokenCreateRequest.read(&object) == request)
            #expect(problems.problems.isEmpty)
        }
        let problems = BodyProblems()
        var object = BodyObject(
            TokenCreateRequest(name: "leaky", role: .client).sent, problems: problems)!
        #expect(TokenCreateRequest.read(&object) == nil)
        #expect(problems.problems.map(\.path.description) == ["namespaces"])
        #expect(problems.problems.first?.message.contains("client tokens ship inside apps") == true)
    }

    @Test func aFlagSetIsHeldToItsNamespaceAndReadOnlyForANamespaceTheCallerMayCreate() {
        let nameless: JSONValue = .object(
            JSONObject([("flag_set", .object(JSONObject([("flags", .object(JSONObject()))])))]))
        let problems = BodyProblems()
        var object = BodyObject(nameless, problems: problems)!
        #expect(FlagSetRequest.read(&object) == nil)
        #expect(problems.problems.map(\.description) == ["flag_set.namespace: is required"])

        let invalid: JSONValue = .object(
            JSONObject([
                ("name", .string("driver")),
                ("flag_set", .object(JSONObject([("flags", .object(JSONObject([("x", .object(JSONObject()))])))]))),
            ]))
        let refused = BodyProblems()
        var body = BodyObject(invalid, problems: refused)!
        let request = NamespaceCreateRequest.read(&body, readingFlagSetOf: { $0 == "rider" })
        #expect(request?.name == "driver" && request?.flagSet == nil)
        #expect(refused.problems.isEmpty, "\(refused.problems)")
    }

    @Test func aTargetingEditSendsOnlyItsLists() {
        let bounds = Conditions(versions: [.os: VersionRange(atLeast: SemanticVersion("15.0.0"))])
        let request = TargetingRequest(rule: 0, add: bounds, rollout: .full)
        #expect(request.object["add"] == nil)
        #expect(request.object["rollout"] == .int(10_000))
    }

    @Test func aKillTakesNoAllAndARevivesScopeExcludesAll() {
        let problems = BodyProblems()
        var kill = BodyObject(.object(JSONObject([("all", .bool(true))])), problems: problems)!
        _ = KillStateRequest.read(&kill, revive: false)
        #expect(problems.problems.map(\.path.description) == ["all"])
        #expect(problems.problems.first?.message.contains("unknown field") == true)

        let both: JSONValue = .object(
            JSONObject([("all", .bool(true)), ("scope", .object(JSONObject([("cities", .array([.string("x")]))])))]))
        let (_, reviveProblems) = Self.read(KillStateRequest.self, both)
        #expect(reviveProblems.map(\.message) == ["pass either scope or all, not both"])
    }

    @Test func aBadRequestNamesEveryMemberAtFault() {
        let rollout: JSONValue = .object(
            JSONObject([
                ("rule", .int(2)), ("conditions", .object(JSONObject([("cities", .array([.string("")]))]))),
                ("colour", .string("red")),
            ]))
        let (body, problems) = Self.read(RolloutRequest.self, rollout)
        #expect(body == nil)
        #expect(
            Set(problems.map(\.path.description)) == ["rollout", "conditions", "conditions.cities[0]", "colour"])
        #expect(problems.contains { $0.message == "pass either rule or conditions, not both" })

        let (targeting, targetingProblems) = Self.read(TargetingRequest.self, .object(JSONObject()))
        #expect(targeting == nil)
        #expect(targetingProblems.map(\.message) == ["pass add, remove or rollout"])

        let wrongNamespace = FlagSetRequest(flagSet: Self.flagSet).sent
        let namespaceProblems = BodyProblems()
        var object = BodyObject(wrongNamespace, problems: namespaceProblems)!
        #expect(FlagSetRequest.read(&object, namespace: "driver") == nil)
        #expect(namespaceProblems.problems.map(\.path.description) == ["flag_set.namespace"])

        let badFlag: JSONValue = .object(
            JSONObject([
                ("name", .string("Rider!")),
                (
                    "flag_set",
                    .object(JSONObject([("flags", .object(JSONObject([("x", .object(JSONObject()))])))]))
                ),
            ]))
        let (created, createProblems) = Self.read(NamespaceCreateRequest.self, badFlag)
        #expect(created == nil)
        #expect(createProblems.map(\.path.description) == ["name"], "the flag set is read for a valid name only")

        let (dismissal, dismissalProblems) = {
            let problems = BodyProblems()
            var object = BodyObject(.object(JSONObject([("reason", .string("  "))])), problems: problems)!
            return (ReasonRequest.read(&object, requiredBecause: "say why"), problems.problems)
        }()
        #expect(dismissal == nil)
        #expect(dismissalProblems.map(\.description) == ["reason: is required: say why"])

        let (paused, pausedProblems) = {
            let problems = BodyProblems()
            var object = BodyObject(
                ReleaseActionRequest(plan: Self.plan, guardrails: [ReleaseGuardrail("trip_booked: -0.5pp")!]).sent,
                problems: problems)!
            return (ReleaseActionRequest.read(&object, action: .pause), problems.problems)
        }()
        #expect(paused != nil)
        #expect(Set(pausedProblems.map(\.path.description)) == ["plan", "guardrails"])
    }
}
