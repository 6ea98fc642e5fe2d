import ClientTestSupport
import Foundation
import SwitchyardClientTesting
import SwitchyardCore
import TestSupport
import Testing

@testable import SwitchyardClient

/// `FlagClient.track`: outcomes queued as `metric` events (design/issue30.md § 2), attributed to the unit's
/// switches, variants and rollout splits, delivered like every other event.
struct OutcomeTrackingTests {
    static let promos = PluginSwitch("plugin_switch_feed_promos")
    static let copy = ExperimentFlag("exp_checkout_copy", default: "Book")

    /// The fixtures' rider namespace with `plugin_switch_feed_promos` at a 50 % rollout (a split for every unit)
    /// and `plugin_switch_feed_news` at 100 % (on for everyone: no split); the other two switches at 0 %.
    static let snapshot: Snapshot = {
        var flagSet = Fixtures.flagSet(on: ["plugin_switch_feed_news"])
        for index in flagSet.flags.indices where flagSet.flags[index].key == promos.key {
            flagSet.flags[index].kind = .pluginSwitch(
                SwitchyardCore.PluginSwitchDefinition(rollout: Rollout(basisPoints: 5000)!))
        }
        return Snapshot(epoch: Fixtures.epoch, version: 7, flagSet: flagSet)
    }()

    /// A unit the 50 % rollout puts in (`true`) or leaves out (`false`): the first of `rider-0`, `rider-1`, … .
    static func unit(bucketedIn: Bool) throws -> String {
        let compiled = CompiledSnapshot(snapshot)
        let handle = try #require(compiled.handle(for: promos.key))
        for number in 0..<1000 {
            let unit = "rider-\(number)"
            let evaluation = compiled.evaluator(for: context(unit)).evaluateSwitch(handle)
            if evaluation.reason == .split && evaluation.isOn == bucketedIn { return unit }
        }
        throw CocoaError(.featureUnsupported)
    }

    static func context(_ unit: String?) -> EvaluationContext {
        EvaluationContext(unitId: unit, city: "lagos", cohorts: ["beta"], appVersion: "5.12.0", platform: "ios")
    }

    func client(_ harness: ClientHarness, server: URL, unit: String?, transport: (any HTTPTransport)? = nil)
        -> FlagClient
    {
        var configuration = harness.configuration(server: server, context: Self.context(unit))
        configuration.bundledSnapshot = SnapshotDocument.encode(Self.snapshot)
        configuration.eventTransport = transport
        return FlagClient(configuration: configuration)
    }

    func metrics(_ events: [JSONValue]) -> [JSONValue] {
        events.filter { $0["type"] == .string("metric") }
    }

    @Test func aTrackedOutcomeArrivesWithItsUnitSwitchesVariantsAndSplits() async throws {
        let server = try FlagsdStandIn()
        defer { server.stop() }
        server.publish(Self.snapshot)
        let inUnit = try Self.unit(bucketedIn: true)
        let outUnit = try Self.unit(bucketedIn: false)
        let inHarness = try ClientHarness()
        let outHarness = try ClientHarness()
        let bucketedIn = client(inHarness, server: server.baseURL, unit: inUnit)
        let bucketedOut = client(outHarness, server: server.baseURL, unit: outUnit)
        #expect(bucketedIn.isEnabled(Self.promos) && !bucketedOut.isEnabled(Self.promos))

        bucketedIn.recordActive(Self.promos)
        let served = bucketedIn.value(of: Self.copy)
        bucketedIn.track("fare", value: 16.1)
        bucketedOut.track("trip_booked")
        try await whileRunning(bucketedIn) {
            try await whileRunning(bucketedOut) {
                try await waitUntil("both metric events arrive") { metrics(server.receivedEvents).count == 2 }
            }
        }

        let fare = try #require(metrics(server.receivedEvents).first { $0["metric"] == .string("fare") })
        #expect(fare["value"] == .double(16.1))
        #expect(fare["unit"] == .string(SessionRecord.unitDigest(inUnit, namespace: "rider")))
        #expect(fare["unit"]?.stringValue == bucketedIn.sessionUnit)
        #expect(fare["switches"] == .array([.string(Self.promos.key)]))
        // The 50 % switch is listed as the split decided it; the 100 % and 0 % switches are not.
        #expect(fare["splits"] == .object(JSONObject([(Self.promos.key, .bool(true))])))
        let variant = served == "Confirm ride" ? "control" : "treatment"
        #expect(fare["variants"] == .object(JSONObject([("exp_checkout_copy", .string(variant))])))
        #expect(
            fare["city"] == .string("lagos") && fare["platform"] == .string("ios")
                && fare["app_version"] == .string("5.12.0"))
        #expect(fare["cohorts"] == .array([.string("beta")]))
        #expect(fare["time"]?.stringValue?.wholeMatch(of: /\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z/) != nil)
        #expect(fare["id"]?.stringValue?.count == 36)

        let booked = try #require(metrics(server.receivedEvents).first { $0["metric"] == .string("trip_booked") })
        #expect(booked["value"] == nil, "no value: one occurrence")
        #expect(booked["unit"] == .string(SessionRecord.unitDigest(outUnit, namespace: "rider")))
        #expect(booked["switches"] == .array([]))
        #expect(booked["splits"] == .object(JSONObject([(Self.promos.key, .bool(false))])))
        #expect(booked["variants"] == .object(JSONObject()))

        // The exposure names the same unit, so it assigns that unit to its variant's arm.
        let exposure = try #require(server.receivedEvents.first { $0["type"] == .string("exposure") })
        #expect(exposure["unit"] == fare["unit"])
    }

    @Test func aSwitchTheCrashLoopGuardHoldsOffIsNoSplit() throws {
        let harness = try ClientHarness()
        let unit = try Self.unit(bucketedIn: true)
        let dead = try ClientHarness.deadServerURL()
        // Three sessions in a row crash with the switch active: the fourth launch holds it off.
        for _ in 0..<3 { client(harness, server: dead, unit: unit).recordActive(Self.promos) }
        let client = client(harness, server: dead, unit: unit)
        #expect(client.status.disabledByCrashGuard == [Self.promos.key])
        client.track("trips")
        let line = try #require(client.queue.entries.last?.line)
        let event = try JSONValue.parse(line)
        #expect(event["type"] == .string("metric"))
        #expect(event["splits"] == .object(JSONObject()))
    }

    @Test func anOutcomeSurvivesAnOfflinePeriodAndARestart() async throws {
        let harness = try ClientHarness()
        let unit = try Self.unit(bucketedIn: true)
        let offline = client(harness, server: try ClientHarness.deadServerURL(), unit: unit)
        offline.track("fare", value: 21.5)
        let queued = try #require(offline.queue.entries.last?.id)
        try await whileRunning(offline) {
            // The sender persists the queue before each attempt, and keeps the event through the failures.
            try await waitUntil("two failed attempts") { harness.reports.of(.eventsFailed).count >= 2 }
        }
        #expect(offline.queue.entries.contains { $0.id == queued })
        let file = try #require(try FileIO.read(harness.directory.file(EventQueue.fileName), limit: 1 << 20))
        #expect(String(decoding: file, as: UTF8.self).contains(queued))

        // The app is killed and relaunched with the server reachable.
        let server = try FlagsdStandIn()
        defer { server.stop() }
        server.publish(Self.snapshot)
        let relaunched = client(harness, server: server.baseURL, unit: unit)
        try await whileRunning(relaunched) {
            try await waitUntil("the queued outcome arrives") {
                relaunched.status.queuedEvents == 0 && !metrics(server.receivedEvents).isEmpty
            }
        }
        let received = metrics(server.receivedEvents)
        #expect(received.count == 1)
        #expect(received.first?["id"] == .string(queued))
        #expect(received.first?["value"] == .double(21.5))
        #expect(received.first?["splits"] == .object(JSONObject([(Self.promos.key, .bool(true))])))
    }

    /// A session names the switches its unit's split decided, from the snapshot installed at launch, whether or not
    /// the unit reached a plugin point or tracked anything: flagsd enters units that never convert too.
    @Test func theSessionEventNamesTheSplitsOfItsUnit() async throws {
        for bucketedIn in [true, false] {
            let harness = try ClientHarness()
            let unit = try Self.unit(bucketedIn: bucketedIn)
            let first = client(harness, server: try ClientHarness.deadServerURL(), unit: unit)
            #expect(first.sessionSplits == [Self.promos.key: bucketedIn], "the 100 % and 0 % switches are no split")
            first.endSession()
            // The next launch reports it.
            let server = try FlagsdStandIn()
            defer { server.stop() }
            server.publish(Self.snapshot)
            let second = client(harness, server: server.baseURL, unit: unit)
            try await whileRunning(second) {
                try await waitUntil("the session arrives") {
                    server.receivedEvents.contains { $0["type"] == .string("session") }
                }
            }
            let session = try #require(server.receivedEvents.first { $0["type"] == .string("session") })
            #expect(session["splits"] == .object(JSONObject([(Self.promos.key, .bool(bucketedIn))])))
            #expect(session["unit"] == .string(SessionRecord.unitDigest(unit, namespace: "rider")))
        }
    }

    @Test func badNamesAndValuesAreReportedAndNeverSent() async throws {
        let server = try FlagsdStandIn()
        defer { server.stop() }
        server.publish(Self.snapshot)
        let harness = try ClientHarness()
        let client = client(harness, server: server.baseURL, unit: "rider-1")
        let bad: [(String, Double?)] = [
            ("", nil), ("fare/usd", 1), ("tarif_réservé", nil), ("trip booked", nil),
            (String(repeating: "a", count: 129), nil),
            ("fare", -0.01), ("fare", .nan), ("fare", .infinity), ("fare", -.infinity), ("fare", 1e9.nextUp),
        ]
        for (name, value) in bad { client.track(name, value: value) }
        #expect(harness.reports.of(.metricRefused).count == bad.count)
        #expect(
            harness.reports.contains(.metricRefused) {
                $0.message.contains("'fare/usd' may only contain letters, digits")
            })
        #expect(harness.reports.contains(.metricRefused) { $0.message.contains("longer than 128 characters") })
        #expect(harness.reports.contains(.metricRefused) { $0.message.contains("value nan of metric 'fare'") })

        // The limits themselves are fine.
        client.track(String(repeating: "a", count: 128), value: 0)
        client.track("fare", value: 1e9)
        #expect(harness.reports.of(.metricRefused).count == bad.count)
        try await whileRunning(client) {
            try await waitUntil("the two valid outcomes arrive") {
                metrics(server.receivedEvents).count == 2 && client.status.queuedEvents == 0
            }
        }
        let received = metrics(server.receivedEvents)
        #expect(received.map { $0["value"] } == [.double(0), .double(1e9)])
    }

    @Test func anOutcomeWithoutAUnitIdIsReportedAndNotQueued() throws {
        let harness = try ClientHarness()
        for unit in [nil, ""] as [String?] {
            let client = client(harness, server: try ClientHarness.deadServerURL(), unit: unit)
            let before = client.queue.count
            client.track("trip_booked")
            #expect(client.queue.count == before)
        }
        #expect(harness.reports.of(.metricRefused).count == 2)
        #expect(harness.reports.contains(.metricRefused) { $0.message.contains("needs a unit id") })
    }

    @Test func trackNeverWaitsForAStalledTransport() async throws {
        let harness = try ClientHarness()
        let transport = StalledTransport()
        let client = client(harness, server: try ClientHarness.deadServerURL(), unit: "rider-1", transport: transport)
        client.track("trips")
        try await whileRunning(client) {
            try await waitUntil("the sender is stuck in a send") { transport.sends == 1 }
            // Every call returns while the only batch in flight never answers.
            for number in 0..<200 { client.track("fare", value: Double(number)) }
            #expect(client.status.queuedEvents >= 201)
            #expect(transport.sends == 1)
        }
        #expect(harness.reports.of(.metricRefused).isEmpty)
    }
}

/// An event transport whose requests never answer (until cancelled): a network that swallows packets.
private final class StalledTransport: HTTPTransport {
    private let count = LockedBox(0)

    var sends: Int { count.withLock { $0 } }

    func send(_ request: HTTPRequest) async throws -> HTTPResponse {
        count.withLock { $0 += 1 }
        try await Task.sleep(for: .seconds(86_400))
        throw CancellationError()
    }
}
