import Foundation
import RiderApp
import SwitchyardCore
import SwitchyardPlugins
import Synchronization
import Testing

/// Switch states a test flips between a host's steps: plugin switches on, kill switches killed, as a snapshot
/// would have them (a killed kill switch turns off every switch it covers).
final class RiderBoard: SwitchStates {
    private let gates = Mutex<Set<String>>([])

    func set(_ key: String, _ on: Bool) {
        gates.withLock { if on { $0.insert(key) } else { $0.remove(key) } }
    }

    var set: Set<String> { gates.withLock { $0 } }

    /// The switches plugin points see on.
    var effective: SwitchAssignment {
        let set = self.set
        let killed = set.contains(RiderCatalogue.masterKillSwitch)
        return SwitchAssignment(
            on: RiderCatalogue.pluginPoints.flatMap { point in
                killed || set.contains(point.killSwitch) ? [] : point.switches.filter { set.contains($0.key) }
            })
    }

    func isEnabled(_ pluginSwitch: PluginSwitch) -> Bool { effective.isEnabled(pluginSwitch) }
}

/// The rider app's four points held live by a plugin host.
struct RiderLiveTests {
    /// What a fresh app shows for the same states: the trip's home, map and preferences screens and its add-on.
    static func fresh(_ states: SwitchAssignment, _ scenario: TripScenario) throws -> (
        lines: [String], addon: [PluginSwitch]
    ) {
        let outcome = try RiderApp(states: states).runTrip(scenario)
        return (
            outcome.screens.filter { $0.hasPrefix("home: ") || $0.hasPrefix("map: ") || $0.hasPrefix("preferences: ") },
            outcome.route(of: "confirmation_addons")?.servedBy ?? []
        )
    }

    /// For each point, from every combination of its gates (its switches, its group kill switch, the master),
    /// each gate flipped and flipped back: the live screens show exactly what a fresh trip shows, and every plugin
    /// detached released what it showed.
    @Test(arguments: TripScenario.all)
    func theLiveScreensShowWhatAFreshTripShowsAfterEveryTransition(scenario: TripScenario) throws {
        let board = RiderBoard()
        let app = RiderApp(states: board)
        let host = PluginHost(states: board)
        host.checksLeaks = true
        var problems: [String] = []
        host.onEvent = { event in
            if event.kind == .leaked || event.kind == .attachFailed { problems.append("\(event)") }
        }
        let live = RiderLivePoints(app: app, scenario: scenario, host: host)
        host.update()
        var transitions = 0
        func check(_ what: @autoclosure () -> String) throws {
            host.update(cause: "transition")
            transitions += 1
            let expected = try Self.fresh(board.effective, scenario)
            #expect(app.screens.lines == expected.lines, "\(what())")
            #expect(live.confirmationAddons.attachedSwitches == expected.addon, "\(what())")
            #expect(app.screens.confirmationAddons.count == expected.addon.count, "\(what())")
        }
        for point in RiderCatalogue.pluginPoints {
            let gates = point.switches.map(\.key) + [point.killSwitch, RiderCatalogue.masterKillSwitch]
            for combination in 0..<(1 << gates.count) {
                for (bit, key) in gates.enumerated() { board.set(key, combination & (1 << bit) != 0) }
                try check("into \(board.set.sorted())")
                for (bit, key) in gates.enumerated() where combination & (1 << bit) == 0 {
                    board.set(key, true)
                    try check("\(key) on from \(board.set.sorted())")
                    board.set(key, false)
                    try check("\(key) off again")
                }
            }
            for key in gates { board.set(key, false) }
        }
        #expect(transitions == 4 * (32 + 2 * 5 * 16))
        #expect(problems.isEmpty, "\(problems)")
        host.close()
        #expect(app.screens.lines == ["home: Where to?", "map: base map | your position", "preferences: Account"])
        #expect(app.screens.confirmationAddon == nil)
    }

    @Test func theMasterKillDetachesEveryLivePluginAndEmptiesEverySurfaceInOneStep() throws {
        let context = EvaluationContext(
            unitId: "rider-42", city: "lagos", cohorts: [], appVersion: "5.12.0", platform: "ios")
        let client = try RiderFlags.client(context: context)
        let app = RiderApp(states: client, experiments: client)
        let host = PluginHost(states: client)
        host.checksLeaks = true
        var events: [PluginHostEvent] = []
        host.onEvent = { events.append($0) }
        let live = RiderLivePoints(app: app, scenario: .standard(), host: host)
        host.update(cause: "start")
        let attached = events.filter { $0.kind == .attached }.map(\.pluginSwitch)
        #expect(attached == live.routes.flatMap(\.servedBy))
        #expect(attached.count >= 4, "\(live.routes)")
        #expect(app.screens.confirmationAddon?.hasPrefix("Fares are 1.20×") == true)
        events = []

        var flagSet = try RiderFlags.flagSet()
        let master = flagSet.killSwitches.firstIndex { $0.isMaster }!
        flagSet.killSwitches[master].entries.append(.everywhere)
        client.install(Snapshot(epoch: "e1", version: 2, flagSet: flagSet), origin: .server)
        let step = host.update(cause: "snapshotInstalled")

        #expect(step?.detached == attached.count && step?.attached == 0 && step?.leaked == 0)
        #expect(Set(events.map(\.pluginSwitch)) == Set(attached))
        #expect(events.allSatisfy { $0.kind == .detached && $0.step == step?.number })
        #expect(live.routes.allSatisfy { $0.isCoreFlow })
        #expect(app.screens.lines == ["home: Where to?", "map: base map | your position", "preferences: Account"])
        #expect(app.screens.confirmationAddon == nil)
        #expect(
            app.screens.log.filter { $0.hasPrefix("-") }.count == app.screens.log.filter { $0.hasPrefix("+") }.count)
    }
}
