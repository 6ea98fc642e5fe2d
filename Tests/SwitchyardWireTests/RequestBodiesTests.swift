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
    ]

    /// A request's body with its reason, as sent.
    static func sent(_ request: any ChangeRequestBody) -> JSONValue {
        var object = request.object
        if let reason = request.reason { object["reason"] = .string(reason) }
        return .object(object)
    }

    static func read<Body: ChangeRequestBody>(_ type: Body.Type, _ json: JSONValue) -> (Body?, [ValidationProblem]) {
        let problems = BodyProblems()
        guard var object = BodyObject(json, problems: problems) else { return (nil, problems.problems) }
        let body = Body.read(&object)
        return (body, problems.problems)
    }

    static func readsBack<Body: ChangeRequestBody>(_ request: Body) -> Bool {
        let (body, problems) = read(Body.self, sent(request))
        return problems.isEmpty && body == request
    }

    @Test(arguments: 0..<requests.count)
    func aRequestReadsBackAsWritten(index: Int) {
        let request = Self.requests[index]
        let readsBack = Self.readsBack(request)
        #expect(readsBack, "\(Self.sent(request).serializedString())")
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
    }
}
