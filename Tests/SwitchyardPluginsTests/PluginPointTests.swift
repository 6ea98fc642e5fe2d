import ClientTestSupport
import Foundation
import SwitchyardPlugins
import Testing

import struct SwitchyardCore.Snapshot
import enum SwitchyardCore.SnapshotDocument

/// What the feed plugin point of the tests returns.
protocol FeedPlugin {
    var name: String { get }
}

struct NamedFeedPlugin: FeedPlugin {
    let name: String
}

struct FeedInput {
    var hasPromotionSlot = true
}

struct FactoryFailure: Error, CustomStringConvertible {
    var description: String { "promotions service unavailable" }
}

/// A promos factory; `isApplicable` needs a promotion slot; throws when asked to.
struct FeedPromosFactory: PluginFactory {
    static let pluginSwitch = PluginSwitch("plugin_switch_feed_promos")
    var pluginSwitch: PluginSwitch { Self.pluginSwitch }
    var fails = false

    func isApplicable(to input: FeedInput) -> Bool { input.hasPromotionSlot }

    func build(for input: FeedInput) throws -> any FeedPlugin {
        if fails { throw FactoryFailure() }
        return NamedFeedPlugin(name: "promos")
    }
}

struct FeedNewsFactory: PluginFactory {
    static let pluginSwitch = PluginSwitch("plugin_switch_feed_news")
    var pluginSwitch: PluginSwitch { Self.pluginSwitch }

    func build(for input: FeedInput) throws -> any FeedPlugin { NamedFeedPlugin(name: "news") }
}

/// Switch states that record what plugin points tell them.
final class RecordingStates: SwitchStates, @unchecked Sendable {
    let assignment: SwitchAssignment
    private let lock = NSLock()
    private var _created: [String] = []
    private var _failures: [String] = []

    init(_ assignment: SwitchAssignment) { self.assignment = assignment }

    var created: [String] { lock.withLock { _created } }
    var failures: [String] { lock.withLock { _failures } }

    func isEnabled(_ pluginSwitch: PluginSwitch) -> Bool { assignment.isEnabled(pluginSwitch) }

    func willCreatePlugin(for pluginSwitch: PluginSwitch, at pluginPoint: String) {
        lock.withLock { _created.append("\(pluginPoint)/\(pluginSwitch.key)") }
    }

    func pluginFactoryFailed(for pluginSwitch: PluginSwitch, at pluginPoint: String, error: any Error) {
        lock.withLock { _failures.append("\(pluginPoint)/\(pluginSwitch.key): \(error)") }
    }
}

struct PluginPointTests {
    func feedPoint(_ states: any SwitchStates, promosFail: Bool = false) -> PluginPoint<FeedInput, any FeedPlugin> {
        PluginPoint("home_feed", states: states, factories: [FeedPromosFactory(fails: promosFail), FeedNewsFactory()])
    }

    @Test func theFirstFactoryWhoseSwitchIsOnServes() {
        let point = feedPoint(SwitchAssignment(on: [FeedPromosFactory.pluginSwitch, FeedNewsFactory.pluginSwitch]))
        #expect(point.createPlugin(for: FeedInput())?.name == "promos")
        #expect(point.route(for: FeedInput()).pluginSwitch == FeedPromosFactory.pluginSwitch)
    }

    @Test func aSwitchedOffFactoryIsPassedOver() {
        let point = feedPoint(SwitchAssignment(on: [FeedNewsFactory.pluginSwitch]))
        #expect(point.createPlugin(for: FeedInput())?.name == "news")
    }

    @Test func anInapplicableFactoryIsPassedOver() {
        let point = feedPoint(SwitchAssignment(on: [FeedPromosFactory.pluginSwitch, FeedNewsFactory.pluginSwitch]))
        #expect(point.createPlugin(for: FeedInput(hasPromotionSlot: false))?.name == "news")
        #expect(point.eligibleSwitches(for: FeedInput(hasPromotionSlot: false)) == [FeedNewsFactory.pluginSwitch])
    }

    @Test func withEverySwitchOffThePointYieldsTheCoreFlow() {
        let point = feedPoint(SwitchAssignment.allOff)
        #expect(point.createPlugin(for: FeedInput()) == nil)
        #expect(point.route(for: FeedInput()).isCoreFlow)
        #expect(point.createPlugins(for: FeedInput()).isEmpty)
    }

    @Test func aFactoryThatThrowsIsSkippedAndReportedAndTheNextEligibleServes() {
        let states = RecordingStates(
            SwitchAssignment(on: [FeedPromosFactory.pluginSwitch, FeedNewsFactory.pluginSwitch]))
        let point = feedPoint(states, promosFail: true)
        #expect(point.createPlugin(for: FeedInput())?.name == "news")
        #expect(states.failures == ["home_feed/plugin_switch_feed_promos: promotions service unavailable"])
        #expect(states.created == ["home_feed/plugin_switch_feed_promos", "home_feed/plugin_switch_feed_news"])
    }

    @Test func aFactoryThatThrowsWithNoOtherEligibleYieldsTheCoreFlow() {
        let states = RecordingStates(SwitchAssignment(on: [FeedPromosFactory.pluginSwitch]))
        #expect(feedPoint(states, promosFail: true).createPlugin(for: FeedInput()) == nil)
        #expect(states.failures.count == 1)
    }

    @Test func createPluginsReturnsEveryEligiblePluginInOrder() {
        let point = feedPoint(SwitchAssignment(on: [FeedPromosFactory.pluginSwitch, FeedNewsFactory.pluginSwitch]))
        #expect(point.createPlugins(for: FeedInput()).map(\.name) == ["promos", "news"])
        #expect(
            feedPoint(
                SwitchAssignment(on: [FeedPromosFactory.pluginSwitch, FeedNewsFactory.pluginSwitch]), promosFail: true
            )
            .createPlugins(for: FeedInput()).map(\.name) == ["news"])
    }

    @Test func aPointListsItsSwitchesInOrder() {
        #expect(
            feedPoint(SwitchAssignment.allOff).switches.map(\.key) == [
                "plugin_switch_feed_promos", "plugin_switch_feed_news",
            ])
    }

    /// Every combination of the point's switches, evaluated without a server: the route is the first switch on.
    @Test func everySwitchCombinationRoutesToTheFirstSwitchOnOrTheCoreFlow() {
        let point = feedPoint(SwitchAssignment.allOff)
        let switches = point.switches
        for mask in 0..<(1 << switches.count) {
            let on = switches.enumerated().filter { mask & (1 << $0.offset) != 0 }.map(\.element)
            let route = point.with(states: SwitchAssignment(on: on)).route(for: FeedInput())
            #expect(route.pluginSwitch == on.first, "combination \(on.map(\.key))")
        }
    }

    @Test func theCodeAndTheFlagFileMustDeclareTheSameSwitchesInTheSameOrder() {
        let flagSet = Fixtures.flagSet()
        #expect(feedPoint(SwitchAssignment.allOff).declarationProblems(in: flagSet).isEmpty)
        let reversed = PluginPoint<FeedInput, any FeedPlugin>(
            "home_feed", states: SwitchAssignment.allOff,
            factories: [FeedNewsFactory(), FeedPromosFactory()])
        let problems = reversed.declarationProblems(in: flagSet)
        #expect(
            problems == [
                "plugin point 'home_feed': code tries plugin_switch_feed_news, plugin_switch_feed_promos; the flag file declares plugin_switch_feed_promos, plugin_switch_feed_news"
            ])
        let unknown = PluginPoint<FeedInput, any FeedPlugin>(
            "side_menu", states: SwitchAssignment.allOff, factories: [])
        #expect(unknown.declarationProblems(in: flagSet).first?.contains("not declared") == true)
    }
}

/// Plugin points reading a real client: kill switches act through evaluation.
struct PluginPointClientTests {
    func client(_ snapshot: Snapshot, harness: ClientHarness) throws -> FlagClient {
        var configuration = harness.configuration(server: try ClientHarness.deadServerURL())
        configuration.bundledSnapshot = SnapshotDocument.encode(snapshot)
        return FlagClient(configuration: configuration)
    }

    /// Both plugin points of the fixture namespace, with one factory per switch.
    func points(_ states: any SwitchStates) -> [PluginPoint<Void, String>] {
        Fixtures.flagSet().pluginPoints.map { declared in
            PluginPoint(
                declared.name, states: states,
                factories: declared.switches.map { key in
                    PluginFactoryOf<Void, String>(PluginSwitch(key)) { key }
                })
        }
    }

    @Test func theMasterKillSwitchYieldsTheCoreFlowAtEveryPoint() throws {
        let harness = try ClientHarness()
        let everything = Set(Fixtures.allSwitchKeys)
        let live = try client(Fixtures.snapshot(version: 1, on: everything), harness: harness)
        #expect(points(live).allSatisfy { $0.createPlugin(for: ()) != nil })
        let killed = try client(Fixtures.snapshot(version: 2, on: everything, masterKilled: true), harness: harness)
        for point in points(killed) {
            #expect(point.createPlugin(for: ()) == nil, "\(point.name)")
            #expect(point.createPlugins(for: ()).isEmpty, "\(point.name)")
        }
    }

    @Test func aGroupKillSwitchYieldsTheCoreFlowAtItsPointOnly() throws {
        let harness = try ClientHarness()
        let client = try client(
            Fixtures.snapshot(version: 1, on: Set(Fixtures.allSwitchKeys), killedGroups: ["kill_home_feed"]),
            harness: harness)
        let routes = Dictionary(uniqueKeysWithValues: points(client).map { ($0.name, $0.createPlugin(for: ())) })
        #expect(routes["home_feed"] == .some(nil))
        #expect(routes["checkout"] == "plugin_switch_split_fare")
    }

    @Test func withoutAnySnapshotEveryPointYieldsTheCoreFlow() throws {
        let harness = try ClientHarness()
        let client = FlagClient(configuration: harness.configuration(server: try ClientHarness.deadServerURL()))
        #expect(points(client).allSatisfy { $0.createPlugin(for: ()) == nil })
    }

    @Test func creatingAPluginRecordsItsSwitchForCrashAttribution() throws {
        let harness = try ClientHarness()
        let client = try client(
            Fixtures.snapshot(version: 1, on: ["plugin_switch_feed_news", "plugin_switch_tipping"]), harness: harness)
        for point in points(client) { _ = point.createPlugin(for: ()) }
        #expect(client.activeSwitches == ["plugin_switch_feed_news", "plugin_switch_tipping"])
        let record = try String(contentsOf: harness.directory.file("session-\(client.sessionID).json"), encoding: .utf8)
        #expect(record.contains("plugin_switch_feed_news") && record.contains("plugin_switch_tipping"))
    }

    @Test func aFactoryFailureIsReportedThroughTheClient() throws {
        let harness = try ClientHarness()
        let client = try client(
            Fixtures.snapshot(version: 1, on: ["plugin_switch_feed_promos", "plugin_switch_feed_news"]),
            harness: harness)
        let point = PluginPoint<FeedInput, any FeedPlugin>(
            "home_feed", states: client,
            factories: [FeedPromosFactory(fails: true), FeedNewsFactory()])
        #expect(point.createPlugin(for: FeedInput())?.name == "news")
        let report = try #require(harness.reports.of(.pluginFactoryFailed).first)
        #expect(report.pluginPoint == "home_feed")
        #expect(report.flagKeys == ["plugin_switch_feed_promos"])
        #expect(report.error is FactoryFailure)
    }

    @Test func aSwitchForcedOffByTheCrashGuardFallsThroughToTheNextPlugin() throws {
        let harness = try ClientHarness()
        let snapshot = Fixtures.snapshot(version: 1, on: ["plugin_switch_feed_promos", "plugin_switch_feed_news"])
        for _ in 0..<3 {
            let launch = try client(snapshot, harness: harness)
            _ = PluginPoint<FeedInput, any FeedPlugin>(
                "home_feed", states: launch,
                factories: [FeedPromosFactory(), FeedNewsFactory()]
            ).createPlugin(for: FeedInput())
        }
        let afterCrashes = try client(snapshot, harness: harness)
        let point = PluginPoint<FeedInput, any FeedPlugin>(
            "home_feed", states: afterCrashes,
            factories: [FeedPromosFactory(), FeedNewsFactory()])
        #expect(point.createPlugin(for: FeedInput())?.name == "news")
    }
}
