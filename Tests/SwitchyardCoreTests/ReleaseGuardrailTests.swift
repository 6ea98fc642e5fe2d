import SwitchyardCore
import Testing

/// A release plan's guardrail metrics in the model: their text, how a flag file declares them, and the problems
/// the flag set finds in them (a metric it does not have, a margin on the wrong side or in the wrong unit).
struct ReleaseGuardrailTests {
    static let promos = "plugin_switch_feed_promos"

    /// The rider sample with bookings and fares declared and the given guardrails on a plan of the promos switch.
    func rider(guardrails: [ReleaseGuardrail]) throws -> FlagSet {
        var rider = try Samples.rider()
        rider.metrics = [
            MetricDefinition(name: "fare", kind: .value, cap: 500),
            MetricDefinition(name: "time_to_book", kind: .value, better: .lower, cap: 3600),
            MetricDefinition(name: "trip_booked", kind: .conversion),
            MetricDefinition(name: "trips", kind: .count),
        ]
        let index = try rider.flagIndex(Self.promos)
        rider.flags[index].pluginSwitch?.release = ReleasePlan(
            stages: [ReleaseStage(rollout: Rollout(basisPoints: 1000)!)],
            guardrails: guardrails)
        return rider
    }

    @Test(arguments: [
        ("-0.5pp", ReleaseGuardrail.Margin.points(-0.005)), ("-2%", .relative(-0.02)), ("+5%", .relative(0.05)),
        ("-0.25 pp", .points(-0.0025)), ("3%", .relative(0.03)),
    ])
    func marginsReadAsTheyAreWritten(text: String, margin: ReleaseGuardrail.Margin) throws {
        let read = try #require(ReleaseGuardrail.Margin(text))
        #expect(abs(read.value - margin.value) < 1e-12 && read.unit == margin.unit)
        #expect(ReleaseGuardrail.Margin(read.description)?.description == read.description, "its text reads back")
    }

    @Test(arguments: ["-0.5", "pp", "-two%", "--1%", "1e3%", "-0.5p", ""])
    func textThatIsNotAMarginIsRefused(text: String) {
        #expect(ReleaseGuardrail.Margin(text) == nil)
    }

    @Test func aGuardrailIsMetricColonMargin() throws {
        let guardrail = try #require(ReleaseGuardrail("trip_booked:-0.5pp"))
        #expect(guardrail == ReleaseGuardrail(metric: "trip_booked", margin: .points(-0.005)))
        #expect(guardrail.description == "trip_booked:-0.5pp")
        #expect(
            ReleaseGuardrail("trip_booked") == nil && ReleaseGuardrail(":-2%") == nil
                && ReleaseGuardrail("fare:-2") == nil)
    }

    @Test func aFlagFileDeclaresThemAndWritesThemBackByName() throws {
        let rider = try rider(guardrails: [
            ReleaseGuardrail(metric: "fare", margin: .relative(-0.02)),
            ReleaseGuardrail(metric: "trip_booked", margin: .points(-0.005)),
        ])
        #expect(rider.validate().isEmpty, "\(rider.validate())")
        for unit in [RolloutUnit.percent, .basisPoints] {
            let tree = rider.tree(unit: unit)
            #expect(try FlagSet(tree: .object(tree), unit: unit) == rider)
            let guardrails = try #require(tree["flags"]?[Self.promos]?["release"]?["guardrails"]?.objectValue)
            #expect(guardrails.map(\.key) == ["fare", "trip_booked"])
            #expect(guardrails.map(\.value) == [.string("-2%"), .string("-0.5pp")])
        }
    }

    @Test func theFlagSetNamesEachGuardrailItCannotJudge() throws {
        let rider = try rider(guardrails: [
            ReleaseGuardrail(metric: "trips_taken", margin: .relative(-0.01)),  // no such metric
            ReleaseGuardrail(metric: "trip_booked", margin: .points(0.005)),  // better higher: must fall
            ReleaseGuardrail(metric: "time_to_book", margin: .relative(-0.05)),  // better lower: must rise
            ReleaseGuardrail(metric: "fare", margin: .points(-0.01)),  // a value: relative only
            ReleaseGuardrail(metric: "trips", margin: .relative(0)),  // 0 can never be shown
            ReleaseGuardrail(metric: "crash_rate", margin: .points(0.0025)),  // the plan's margin
            ReleaseGuardrail(metric: "sessions", margin: .relative(-0.02)),  // a built-in one: fine
        ])
        let problems = Dictionary(
            rider.validate().map { ($0.path.description, $0.message) }, uniquingKeysWith: { first, _ in first })
        let prefix = "flags.\(Self.promos).release.guardrails."
        #expect(
            Set(problems.keys)
                == Set(
                    ["trips_taken", "trip_booked", "time_to_book", "fare", "trips", "crash_rate"].map { prefix + $0 }),
            "\(problems)")
        #expect(problems[prefix + "trips_taken"]?.contains("declared: fare, time_to_book, trip_booked, trips") == true)
        #expect(problems[prefix + "trip_booked"]?.contains("write -0.5pp") == true, "\(problems)")
        #expect(problems[prefix + "time_to_book"]?.contains("write +5%") == true, "\(problems)")
        #expect(problems[prefix + "fare"]?.contains("relative change") == true)
        #expect(problems[prefix + "crash_rate"]?.contains("plan's margin") == true)
    }

    @Test func unreadableGuardrailsAreRefusedWithTheirPath() throws {
        let tree = try JSONValue.parse(
            Array(
                #"{"stages": [{"rollout": 10}], "guardrails": {"fare": -2, "trip_booked": "down a bit", "Bad Name": "-1%"}}"#
                    .utf8))
        let error = #expect(throws: DefinitionError.self) { try ReleasePlan(tree: tree, unit: .percent, at: "release") }
        let paths = Set(error?.problems.map(\.path.description) ?? [])
        #expect(
            paths == ["release.guardrails.fare", "release.guardrails.trip_booked", "release.guardrails.Bad Name"],
            "\(paths)")
        #expect(
            error?.problems.first { $0.path.description == "release.guardrails.fare" }?.message.contains("-2pp") == true
        )
    }
}
