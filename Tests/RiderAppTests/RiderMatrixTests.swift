import Foundation
import RiderApp
import SwitchyardMatrix
import SwitchyardPlugins
import Testing

/// The sample app's full combination matrix: every combination of its 12 plugin switches, 4 group kill switches
/// and the master (2^17 = 131,072), on every CI build. Each combination routes both scenarios through all four
/// plugin points and runs both trips end to end.
struct RiderMatrixTests {
    /// The rider app's matrix: its four points with the inputs of both scenarios, and a trip flow per scenario.
    static func matrix(faults: Faults = .none, options: Matrix.Options = Matrix.Options()) throws -> Matrix {
        var matrix = try Matrix(flagFile: "Flags/rider.yaml", options: options)
        let app = RiderApp(states: SwitchAssignment.allOff, faults: faults)
        let scenarios = TripScenario.all
        matrix.add(app.preferencesHub, inputs: scenarios.map(\.rider), serving: .everyEligible)
        matrix.add(app.confirmationAddons, inputs: scenarios.map(\.confirmation))
        matrix.add(app.homeFeed, inputs: scenarios.map(\.rider), serving: .everyEligible)
        matrix.add(app.mapLayers, inputs: scenarios.map(\.mapScene), serving: .everyEligible)
        for scenario in scenarios {
            matrix.flow("the \(scenario.name) trip completes") { combination in
                let outcome = try RiderApp(states: combination.states, faults: faults).runTrip(scenario)
                try Self.verify(outcome, in: combination)
            }
        }
        return matrix
    }

    /// What every trip must come to, whatever the switches say.
    static func verify(_ outcome: TripOutcome, in combination: MatrixCombination) throws {
        guard outcome.completed else { throw FlowFailure("the trip stopped after \(outcome.stages)") }
        guard outcome.charged == outcome.quote - outcome.discount else {
            throw FlowFailure("charged \(outcome.charged) for a quote of \(outcome.quote) less \(outcome.discount)")
        }
        guard outcome.routes.map(\.point) == RiderCatalogue.pluginPoints.map(\.name) else {
            throw FlowFailure("the trip visited \(outcome.routes.map(\.point))")
        }
        // The trip serves only plugins whose switches are on: nothing the matrix turned off runs in the trip.
        if let stray = outcome.servingSwitches.first(where: { !combination.isOn($0) }) {
            throw FlowFailure("the trip ran the plugin of \(stray.key), which is off")
        }
        if combination.isCoreOnly {
            guard outcome.routes.allSatisfy(\.isCoreFlow), outcome.discount.cents == 0, outcome.splitWays == 1,
                outcome.charged == outcome.quote
            else {
                throw FlowFailure("core only, yet the trip served \(outcome.routes) and charged \(outcome.charged)")
            }
        }
        guard (outcome.route(of: "confirmation_addons")?.servedBy.count ?? 0) <= 1 else {
            throw FlowFailure("the confirmation slot served several add-ons")
        }
    }

    @Test func everySwitchCombinationKeepsTheTripWorking() async throws {
        let report = try await Self.matrix().check()
        #expect(report.passed)
        #expect(report.isExhaustive)
        #expect(report.gateCount == 17)
        #expect(report.planned == 131_072)
        #expect(report.checked == UInt64(report.range.count))
        #expect(report.pointCount == 4 && report.inputCount == 8 && report.flowCount == 2)
        if report.shard.count == 1 { #expect(report.neverServed.isEmpty) }
    }

    /// Every point held live by a plugin host, moved through single-gate transitions: each must hold exactly what a
    /// fresh route gives, with nothing attached twice and nothing leaked, and the trips still complete.
    ///
    /// In CI, the covering plan (bound 2^10): every combination of each point's own gates (its three switches, its
    /// group kill switch, the master) with every transition of those gates out of each, plus the pairwise rows
    /// across points with all 17 gates flipped from each. A host settles each point from that point's gates alone,
    /// so these are every transition a point can see; the exhaustive run (17 × 2^17 = 2,228,224 transitions) proves
    /// it in release in `bench/matrix.sh`, or here with `SWITCHYARD_TRANSITIONS=exhaustive` (shard it with
    /// `flagctl matrix run --filter RiderMatrixTests/everyTransition --shards 4`).
    @Test func everyTransitionLeavesEveryLivePointAsAFreshRouteWould() async throws {
        var options = Matrix.Options(transitions: true)
        let exhaustive = ProcessInfo.processInfo.environment["SWITCHYARD_TRANSITIONS"] == "exhaustive"
        if !exhaustive { options.bound = 1 << 10 }
        let report = try await Self.matrix(options: options).check()
        #expect(report.passed)
        #expect(report.isExhaustive == exhaustive)
        #expect(report.transitionsChecked > 0)
        if exhaustive && report.shard.count == 1 { #expect(report.transitionsChecked == 17 << 17) }
    }

    /// A plugin that crashes when the trip uses it (the app throws a simulated crash) is caught with the one
    /// switch that makes the trip use it.
    @Test func aCrashingPluginIsCaughtWithItsOwnSwitch() async throws {
        let matrix = try Self.matrix(
            faults: Faults(crashIn: ["plugin_switch_map_scooters"]),
            options: Matrix.Options(isolation: .inProcess))
        // One combination suffices to show the check; the full run is the test above.
        let report = await matrix.run(Matrix.RunSettings(combination: "plugin_switch_map_scooters", environment: [:]))
        #expect(report.findings.map(\.check) == [.flowFailed])
        #expect(report.findings.first?.scope == "flow 'the standard trip completes'")
        #expect(
            report.findings.first?.message
                == "flow 'the standard trip completes' failed: simulated crash in the plugin "
                + "of plugin_switch_map_scooters at plugin point map_layers")
        // Killing its group, or the master, leaves the trip working.
        for kill in ["kill_map_layers", "master"] {
            let killed = await matrix.run(
                Matrix.RunSettings(combination: "plugin_switch_map_scooters,\(kill)", environment: [:]))
            #expect(killed.passed, "\(killed.summary)")
        }
    }

    /// Beyond the bound the same crash is found by the per-point and covering combinations and shrunk to its switch.
    @Test func aCrashingPluginIsShrunkToItsSwitchInACoveringRun() async throws {
        var options = Matrix.Options(isolation: .inProcess)
        options.bound = 1 << 10
        let report = try await Self.matrix(
            faults: Faults(crashIn: ["plugin_switch_feed_trip_history"]), options: options
        )
        .run(Matrix.RunSettings(environment: [:], progressBar: false))
        #expect(!report.isExhaustive)
        #expect(report.checked < 1 << 10)
        #expect(Set(report.findings.map(\.check)) == [.flowFailed])
        for finding in report.findings {
            #expect(finding.combination == "plugin_switch_feed_trip_history", "\(finding)")
        }
    }
}
