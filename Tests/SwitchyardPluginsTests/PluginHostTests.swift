import ClientTestSupport
import Foundation
import SwitchyardPlugins
import Synchronization
import Testing

import struct SwitchyardCore.Snapshot
import enum SwitchyardCore.SnapshotDocument

/// Where live test plugins show themselves: a list of items in declared order, like a map's overlays.
final class Surface {
    private(set) var items: [(position: Int, name: String)] = []
    private(set) var log: [String] = []

    var shown: [String] { items.map(\.name) }

    func insert(_ name: String, at position: Int) {
        let index = items.firstIndex { $0.position > position } ?? items.count
        items.insert((position, name), at: index)
        log.append("+\(name)")
    }

    func remove(_ name: String) {
        items.removeAll { $0.name == name }
        log.append("-\(name)")
    }
}

/// Something that keeps observers: a plugin that registers with it outside its scope leaks.
final class Hub {
    private(set) var observers: [() -> Void] = []
    func observe(_ observer: @escaping () -> Void) { observers.append(observer) }
}

struct AttachRefused: Error, CustomStringConvertible {
    var description: String { "the surface refused the item" }
}

/// A live test plugin: shows its name on the surface while attached, and misbehaves when told to.
final class ItemPlugin: LivePlugin {
    enum Fault { case none, attachThrows, leaksObserver, registersAfterDetach }

    let name: String
    let surface: Surface
    let fault: Fault
    let hub: Hub?
    private var scope: PluginScope?

    init(_ name: String, surface: Surface, fault: Fault = .none, hub: Hub? = nil) {
        self.name = name
        self.surface = surface
        self.fault = fault
        self.hub = hub
    }

    func attach(to scope: PluginScope) throws {
        surface.insert(name, at: scope.position)
        scope.register("\(name) item") { [surface, name] in surface.remove(name) }
        scope.register("\(name) marker") { [surface, name] in surface.remove("\(name) marker") }
        switch fault {
        case .none: break
        case .attachThrows: throw AttachRefused()
        case .leaksObserver: hub?.observe { self.surface.insert("\(self.name) again", at: 99) }
        case .registersAfterDetach: self.scope = scope
        }
    }

    /// A refresh timer firing: registers again with the scope it kept (which a detached plugin must not do).
    func timerFired() {
        scope?.register("\(name) refresh timer") { [surface, name] in surface.remove("\(name) timer") }
    }
}

/// Switch states a test flips between steps.
final class SwitchBoard: SwitchStates {
    private let assignment: Mutex<SwitchAssignment>
    private let failures = Mutex<[String]>([])

    init(on: [PluginSwitch] = []) { assignment = Mutex(SwitchAssignment(on: on)) }

    func set(_ pluginSwitch: PluginSwitch, on: Bool) { assignment.withLock { $0.set(pluginSwitch, on: on) } }
    func isEnabled(_ pluginSwitch: PluginSwitch) -> Bool { assignment.withLock { $0.isEnabled(pluginSwitch) } }
    var reportedFailures: [String] { failures.withLock { $0 } }

    func pluginFactoryFailed(for pluginSwitch: PluginSwitch, at pluginPoint: String, error: any Error) {
        failures.withLock { $0.append("\(pluginPoint)/\(pluginSwitch.key): \(error)") }
    }
}

enum Layers {
    static let traffic = PluginSwitch("plugin_switch_test_traffic")
    static let spots = PluginSwitch("plugin_switch_test_spots")
    static let scooters = PluginSwitch("plugin_switch_test_scooters")
    static let all = [traffic, spots, scooters]

    /// A point of three live plugins over a surface; `faults` by switch.
    static func point(
        _ surface: Surface, faults: [PluginSwitch: ItemPlugin.Fault] = [:], hub: Hub? = nil,
        name: String = "map_layers"
    ) -> PluginPoint<Void, any LivePlugin> {
        PluginPoint(
            name, states: SwitchAssignment.allOff,
            factories: all.map { pluginSwitch in
                PluginFactoryOf<Void, any LivePlugin>(pluginSwitch) { _ in
                    ItemPlugin(
                        String(pluginSwitch.key.dropFirst("plugin_switch_test_".count)), surface: surface,
                        fault: faults[pluginSwitch] ?? .none, hub: hub)
                }
            })
    }
}

/// Records what a host does.
final class HostLog {
    private(set) var events: [PluginHostEvent] = []

    func attach(to host: PluginHost) { host.onEvent = { self.events.append($0) } }

    /// `+point/switch` for an attach, `-point/switch` for a detach, `!` for a failed attach, `leak` for a leak.
    var lines: [String] {
        events.map { event in
            let mark =
                event.kind == .attached
                ? "+" : event.kind == .detached ? "-" : event.kind == .attachFailed ? "!" : "leak "
            return mark + event.pluginSwitch.key.replacingOccurrences(of: "plugin_switch_test_", with: "")
        }
    }

    func take() -> [String] {
        defer { events = [] }
        return lines
    }
}

struct PluginHostTests {
    @Test func aCombiningPointAttachesInDeclaredOrderAndDetachesLastFirst() {
        let surface = Surface()
        let board = SwitchBoard(on: [Layers.traffic, Layers.scooters])
        let log = HostLog()
        let host = PluginHost(states: board)
        log.attach(to: host)
        let layers = host.add(Layers.point(surface), input: (), serving: .everyEligible)
        #expect(layers.isCoreFlow)
        host.update()
        #expect(log.take() == ["+traffic", "+scooters"])
        #expect(surface.shown == ["traffic", "scooters"])

        // A switch turning on attaches that plugin alone, in its declared place; nothing is attached twice.
        board.set(Layers.spots, on: true)
        let step = host.update()
        #expect(log.take() == ["+spots"])
        #expect(step?.attached == 1 && step?.detached == 0)
        #expect(surface.shown == ["traffic", "spots", "scooters"])
        #expect(layers.attachedSwitches == Layers.all)

        // A step with no change changes nothing.
        #expect(host.update()?.changedAnything == false)
        #expect(log.take().isEmpty)

        for pluginSwitch in Layers.all { board.set(pluginSwitch, on: false) }
        host.update()
        #expect(log.take() == ["-scooters", "-spots", "-traffic"])
        #expect(surface.shown.isEmpty && layers.isCoreFlow)
        // Each plugin's registrations were released last first: its marker before its item.
        #expect(surface.log.suffix(2) == ["-traffic marker", "-traffic"])
    }

    @Test func aSinglePluginPointDetachesBeforeItsReplacementAttaches() {
        let surface = Surface()
        let board = SwitchBoard(on: [Layers.spots, Layers.scooters])
        let log = HostLog()
        let host = PluginHost(states: board)
        log.attach(to: host)
        let slot = host.add(Layers.point(surface, name: "confirmation_addons"), input: ())
        host.update()
        #expect(log.take() == ["+spots"])

        board.set(Layers.spots, on: false)
        host.update()
        #expect(log.take() == ["-spots", "+scooters"])
        #expect(surface.shown == ["scooters"])

        // An earlier plugin turning on takes the slot: the one there leaves first.
        board.set(Layers.traffic, on: true)
        host.update()
        #expect(log.take() == ["-scooters", "+traffic"])
        #expect(slot.attachedSwitches == [Layers.traffic])
        #expect(surface.shown == ["traffic"])

        // A later one turning on changes nothing.
        board.set(Layers.spots, on: true)
        #expect(host.update()?.changedAnything == false)

        board.set(Layers.traffic, on: false)
        board.set(Layers.spots, on: false)
        board.set(Layers.scooters, on: false)
        host.update()
        #expect(log.take() == ["-traffic"])
        #expect(slot.isCoreFlow && surface.shown.isEmpty)
    }

    @Test func aPluginWhoseAttachThrowsIsSkippedItsRegistrationsReleasedAndReported() {
        let surface = Surface()
        let board = SwitchBoard(on: Layers.all)
        let log = HostLog()
        let host = PluginHost(states: board)
        log.attach(to: host)
        let slot = host.add(
            Layers.point(surface, faults: [Layers.traffic: .attachThrows], name: "confirmation_addons"), input: ())
        let layers = host.add(
            Layers.point(surface, faults: [Layers.traffic: .attachThrows]), input: (), serving: .everyEligible)
        host.update()
        #expect(log.take() == ["!traffic", "+spots", "!traffic", "+spots", "+scooters"])
        #expect(slot.attachedSwitches == [Layers.spots])
        #expect(layers.attachedSwitches == [Layers.spots, Layers.scooters])
        // What the failed attach registered before throwing is gone again.
        #expect(!surface.shown.contains("traffic"))
        #expect(
            board.reportedFailures == [
                "confirmation_addons/plugin_switch_test_traffic: attach threw: the surface refused the item",
                "map_layers/plugin_switch_test_traffic: attach threw: the surface refused the item",
            ])
    }

    @Test func aPluginStillReferencedAfterItsDetachIsReportedAsALeak() {
        let surface = Surface()
        let hub = Hub()
        let board = SwitchBoard(on: [Layers.traffic, Layers.spots])
        let log = HostLog()
        let host = PluginHost(states: board)
        host.checksLeaks = true
        log.attach(to: host)
        host.add(
            Layers.point(surface, faults: [Layers.traffic: .leaksObserver], hub: hub), input: (),
            serving: .everyEligible)
        host.update()
        #expect(log.take() == ["+traffic", "+spots"])
        board.set(Layers.traffic, on: false)
        board.set(Layers.spots, on: false)
        host.update()
        #expect(log.take() == ["-spots", "-traffic", "leak traffic"])
        #expect(hub.observers.count == 1)
    }

    @Test func theLeakReportNamesThePluginAndWhatToDo() {
        let surface = Surface()
        let hub = Hub()
        let board = SwitchBoard(on: [Layers.traffic])
        var events: [PluginHostEvent] = []
        let host = PluginHost(states: board) { events.append($0) }
        host.checksLeaks = true
        host.add(
            Layers.point(surface, faults: [Layers.traffic: .leaksObserver], hub: hub), input: (),
            serving: .everyEligible)
        host.update()
        board.set(Layers.traffic, on: false)
        host.update()
        let leak = events.first { $0.kind == .leaked }
        #expect(leak?.pluginPoint == "map_layers")
        #expect(leak?.step == 2)
        #expect(
            leak?.message?.contains("the plugin (ItemPlugin) is still referenced after its detach") == true,
            "\(String(describing: leak))")
        #expect(leak?.message?.contains("Register it with the scope") == true)
    }

    @Test func aRegistrationMadeAfterTheDetachIsReleasedAtOnceAndReported() {
        let surface = Surface()
        let board = SwitchBoard(on: [Layers.scooters])
        let log = HostLog()
        let host = PluginHost(states: board)
        // The test keeps the plugin to fire its timer: that reference is not the leak under test.
        host.checksLeaks = false
        log.attach(to: host)
        var built: [ItemPlugin] = []
        let point = PluginPoint<Void, any LivePlugin>(
            "map_layers", states: SwitchAssignment.allOff,
            factories: [
                PluginFactoryOf(Layers.scooters) { _ in
                    let plugin = ItemPlugin("scooters", surface: surface, fault: .registersAfterDetach)
                    built.append(plugin)
                    return plugin
                }
            ])
        host.add(point, input: (), serving: .everyEligible)
        host.update()
        board.set(Layers.scooters, on: false)
        host.update()
        #expect(log.take() == ["+scooters", "-scooters"])
        // Its refresh timer fires after the detach and registers with the scope it kept.
        built.first?.timerFired()
        #expect(log.take() == ["leak scooters"])
        #expect(log.events.isEmpty)
        #expect(surface.log.last == "-scooters timer")
    }

    @Test func closeDetachesEveryPointLastFirstAndAttachesNothingAfterwards() {
        let surface = Surface()
        let board = SwitchBoard(on: Layers.all)
        let log = HostLog()
        let host = PluginHost(states: board)
        log.attach(to: host)
        host.add(Layers.point(surface, name: "confirmation_addons"), input: ())
        host.add(Layers.point(surface), input: (), serving: .everyEligible)
        host.update()
        _ = log.take()
        host.close()
        #expect(log.take() == ["-scooters", "-spots", "-traffic", "-traffic"])
        #expect(surface.shown.isEmpty)
        #expect(host.isClosed)
        #expect(host.update() == nil)
        #expect(log.take().isEmpty)
    }

    @Test func anUpdateAskedForInsideAStepRunsRightAfterItNotInsideIt() {
        let surface = Surface()
        let board = SwitchBoard(on: [Layers.traffic])
        let log = HostLog()
        let host = PluginHost(states: board)
        log.attach(to: host)
        // The traffic plugin's attach turns itself off and asks for an update, as a plugin changing what it
        // depends on would.
        let point = PluginPoint<Void, any LivePlugin>(
            "map_layers", states: SwitchAssignment.allOff,
            factories: [
                PluginFactoryOf(Layers.traffic) { _ in
                    ReentrantPlugin {
                        board.set(Layers.traffic, on: false)
                        host.update(cause: "plugin")
                    }
                }
            ])
        host.add(point, input: (), serving: .everyEligible)
        let first = host.update()
        #expect(log.events.map(\.step) == [1, 2])
        #expect(log.take() == ["+traffic", "-traffic"])
        // What update returns is the last step it ran: what the host holds now.
        #expect(first?.number == 2)
        #expect(host.stepCount == 2)
        #expect(surface.shown.isEmpty)
    }

    @Test func aLivePointFollowsItsInput() {
        let board = SwitchBoard(on: [Layers.traffic, Layers.spots])
        let log = HostLog()
        let host = PluginHost(states: board)
        log.attach(to: host)
        let point = PluginPoint<Int, String>(
            "map_layers", states: SwitchAssignment.allOff,
            factories: [
                PluginFactoryOf(Layers.traffic) { _ in "traffic" },
                PluginFactoryOf(Layers.spots, isApplicable: { $0 > 0 }) { _ in "spots" },
            ])
        let live = host.add(point, input: 0, serving: .everyEligible)
        host.update()
        #expect(live.plugins == ["traffic"])
        live.update(input: 2)
        #expect(live.plugins == ["traffic", "spots"])
        #expect(log.take() == ["+traffic", "+spots"])
        #expect(log.events.isEmpty)
    }
}

/// A plugin whose attach runs some code.
struct ReentrantPlugin: LivePlugin {
    let onAttach: () -> Void
    func attach(to scope: PluginScope) throws { onAttach() }
}

/// A screen that holds the fixture namespace's two points live on its own executor (an actor here; the main actor
/// in an app), following a real client.
actor FeedScreen {
    let host: PluginHost
    let surface = Surface()
    private let log = EventLog()

    /// - Parameters:
    ///   - onAttach: runs inside the attach of the plugin of this switch.
    ///   - steps: receives every step once it settled.
    init(
        client: FlagClient, onAttach: (key: String, action: @Sendable () -> Void)? = nil,
        steps: AsyncStream<PluginHostStep>.Continuation
    ) {
        host = PluginHost(states: client)
        let surface = surface
        for declared in Fixtures.flagSet().pluginPoints {
            let point = PluginPoint<Void, any LivePlugin>(
                declared.name, states: client,
                factories: declared.switches.map { key in
                    PluginFactoryOf<Void, any LivePlugin>(PluginSwitch(key)) { _ in
                        if let onAttach, onAttach.key == key {
                            return ReentrantPlugin {
                                surface.insert(key, at: 0)
                                onAttach.action()
                            }
                        }
                        return ItemPlugin(key, surface: surface)
                    }
                })
            host.add(point, input: (), serving: declared.name == "home_feed" ? .everyEligible : .firstEligible)
        }
        host.onStep = { steps.yield($0) }
        host.onEvent = { [log] event in log.events.withLock { $0.append(event) } }
    }

    func follow(_ changes: AsyncStream<FlagsChange>) async {
        await host.run(changes: changes)
    }

    /// `step: +point/switch` lines.
    func takeLines() -> [String] {
        let events = log.events.withLock { events in
            defer { events = [] }
            return events
        }
        return events.map {
            "\($0.step): \($0.kind == .attached ? "+" : $0.kind == .detached ? "-" : "\($0.kind) ")\($0.pluginPoint)/\($0.pluginSwitch.key)"
        }
    }

    var shown: [String] { surface.shown }
}

final class EventLog: Sendable {
    let events = Mutex<[PluginHostEvent]>([])
}

/// The host following a real client: kill switches, snapshots landing mid-step.
struct PluginHostClientTests {
    static func client(_ snapshot: Snapshot, harness: ClientHarness) throws -> FlagClient {
        var configuration = harness.configuration(server: try ClientHarness.deadServerURL())
        configuration.bundledSnapshot = SnapshotDocument.encode(snapshot)
        return FlagClient(configuration: configuration)
    }

    /// The next step that satisfies `predicate` (a liveness deadline bounds the wait through the time limit).
    static func next(_ steps: inout AsyncStream<PluginHostStep>.Iterator, where predicate: (PluginHostStep) -> Bool)
        async -> PluginHostStep?
    {
        while let step = await steps.next() {
            if predicate(step) { return step }
        }
        return nil
    }

    @Test(.timeLimit(.minutes(5)))
    func theMasterKillDetachesEveryLivePluginToTheCoreFlowInOneStep() async throws {
        let harness = try ClientHarness()
        let client = try Self.client(Fixtures.snapshot(version: 1, on: Set(Fixtures.allSwitchKeys)), harness: harness)
        let (steps, sink) = AsyncStream.makeStream(of: PluginHostStep.self)
        var iterator = steps.makeAsyncIterator()
        let screen = FeedScreen(client: client, steps: sink)
        let changes = client.changes
        let following = Task { await screen.follow(changes) }
        defer { following.cancel() }

        _ = await Self.next(&iterator) { $0.cause == "start" }
        #expect(
            await screen.takeLines() == [
                "1: +home_feed/plugin_switch_feed_promos", "1: +home_feed/plugin_switch_feed_news",
                "1: +checkout/plugin_switch_split_fare",
            ])
        #expect(
            await Set(screen.shown) == [
                "plugin_switch_feed_promos", "plugin_switch_feed_news", "plugin_switch_split_fare",
            ])

        client.install(
            Fixtures.snapshot(version: 2, on: Set(Fixtures.allSwitchKeys), masterKilled: true), origin: .server)
        let killed = await Self.next(&iterator) { $0.cause == "snapshotInstalled" }
        #expect(killed?.detached == 3 && killed?.attached == 0)
        #expect(
            await screen.takeLines() == [
                "2: -home_feed/plugin_switch_feed_news", "2: -home_feed/plugin_switch_feed_promos",
                "2: -checkout/plugin_switch_split_fare",
            ])
        #expect(await screen.shown.isEmpty)

        client.install(Fixtures.snapshot(version: 3, on: Set(Fixtures.allSwitchKeys)), origin: .server)
        _ = await Self.next(&iterator) { $0.cause == "snapshotInstalled" }
        #expect(
            await Set(screen.shown) == [
                "plugin_switch_feed_promos", "plugin_switch_feed_news", "plugin_switch_split_fare",
            ])
    }

    @Test(.timeLimit(.minutes(5)))
    func aChangeArrivingWhileAStepIsAppliedWaitsForTheNextStep() async throws {
        let harness = try ClientHarness()
        let everything = Set(Fixtures.allSwitchKeys)
        let client = try Self.client(Fixtures.snapshot(version: 1, on: everything), harness: harness)
        let (steps, sink) = AsyncStream.makeStream(of: PluginHostStep.self)
        var iterator = steps.makeAsyncIterator()
        // While the feed's first plugin attaches, a snapshot lands that kills the master: the checkout point,
        // settled later in the same step, must still see the state the step started with, and the next step
        // must apply the kill to both.
        let screen = FeedScreen(
            client: client,
            onAttach: (
                "plugin_switch_feed_promos",
                {
                    client.install(Fixtures.snapshot(version: 2, on: everything, masterKilled: true), origin: .server)
                }
            ), steps: sink)
        let changes = client.changes
        let following = Task { await screen.follow(changes) }
        defer { following.cancel() }

        let first = await Self.next(&iterator) { _ in true }
        #expect(first?.cause == "start" && first?.attached == 3)
        let second = await Self.next(&iterator) { _ in true }
        #expect(second?.cause == "snapshotInstalled")
        #expect(
            await screen.takeLines() == [
                "1: +home_feed/plugin_switch_feed_promos", "1: +home_feed/plugin_switch_feed_news",
                "1: +checkout/plugin_switch_split_fare",
                "2: -home_feed/plugin_switch_feed_news", "2: -home_feed/plugin_switch_feed_promos",
                "2: -checkout/plugin_switch_split_fare",
            ])
    }

    @Test func aSwitchTheCrashLoopGuardHoldsOffIsNeverAttachedAndTheNextPluginServes() throws {
        let harness = try ClientHarness()
        let snapshot = Fixtures.snapshot(version: 1, on: ["plugin_switch_feed_promos", "plugin_switch_feed_news"])
        let surface = Surface()
        func feed(_ client: FlagClient) -> PluginPoint<Void, any LivePlugin> {
            PluginPoint(
                "home_feed", states: client,
                factories: [
                    PluginFactoryOf(PluginSwitch("plugin_switch_feed_promos")) { _ in
                        ItemPlugin("promos", surface: surface)
                    },
                    PluginFactoryOf(PluginSwitch("plugin_switch_feed_news")) { _ in ItemPlugin("news", surface: surface)
                    },
                ])
        }
        // Three launches that attach the promos plugin and crash (never end their session).
        for _ in 0..<3 {
            let launch = try Self.client(snapshot, harness: harness)
            let host = PluginHost(states: launch)
            let point = host.add(feed(launch), input: ())
            host.update()
            #expect(point.attachedSwitches.map(\.key) == ["plugin_switch_feed_promos"])
        }
        let afterCrashes = try Self.client(snapshot, harness: harness)
        #expect(afterCrashes.status.disabledByCrashGuard == ["plugin_switch_feed_promos"])
        let host = PluginHost(states: afterCrashes)
        let point = host.add(feed(afterCrashes), input: ())
        host.update()
        #expect(point.attachedSwitches.map(\.key) == ["plugin_switch_feed_news"])
    }

    @Test func aPluginWhoseAttachThrowsIsReportedThroughTheClientLikeAFactoryFailure() throws {
        let harness = try ClientHarness()
        let client = try Self.client(
            Fixtures.snapshot(version: 1, on: ["plugin_switch_feed_promos", "plugin_switch_feed_news"]),
            harness: harness)
        let surface = Surface()
        let host = PluginHost(states: client)
        let point = PluginPoint<Void, any LivePlugin>(
            "home_feed", states: client,
            factories: [
                PluginFactoryOf(PluginSwitch("plugin_switch_feed_promos")) { _ in
                    ItemPlugin("promos", surface: surface, fault: .attachThrows)
                },
                PluginFactoryOf(PluginSwitch("plugin_switch_feed_news")) { _ in ItemPlugin("news", surface: surface) },
            ])
        let feed = host.add(point, input: ())
        host.update()
        #expect(feed.attachedSwitches.map(\.key) == ["plugin_switch_feed_news"])
        let report = try #require(harness.reports.of(.pluginFactoryFailed).first)
        #expect(report.pluginPoint == "home_feed")
        #expect(report.flagKeys == ["plugin_switch_feed_promos"])
        #expect(report.message.contains("attach threw: the surface refused the item"), "\(report.message)")
        // Building the plugins recorded both switches as active, for crash attribution.
        #expect(client.activeSwitches == ["plugin_switch_feed_promos", "plugin_switch_feed_news"])
    }
}
