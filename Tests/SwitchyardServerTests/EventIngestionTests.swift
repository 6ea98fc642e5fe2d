import Foundation
import HTTPTypes
import SwitchyardCore
import SwitchyardSQLite
import SwitchyardStorage
import Synchronization
import TestSupport
import Testing

@testable import SwitchyardServer

/// Event ingestion never holds up a flag change, and what one client sends is bounded: batches write one at a time
/// in small transactions behind a bounded backlog (429 when full), and each token and source address has an event
/// budget (429 when spent). Real SQLite files; the flood runs over real HTTP on loopback.
struct EventIngestionTests {
    static let path = EventRouteTests.path

    static func storedSession(_ id: String, switches: [String] = ["a", "b"]) -> StoredEvent {
        StoredEvent(
            id: id, time: Date(), city: "lagos", cohorts: ["beta"],
            payload: .session(crashed: false, switches: switches, variants: [:]))
    }

    static func metric(_ app: TestApp, _ series: String) async throws -> Double? {
        let text = try await app.send(.get, "/metrics", token: "metrics").text
        let line = text.split(separator: "\n").first { $0.hasPrefix(series + " ") }
        return line.flatMap { Double($0.dropFirst(series.count + 1)) }
    }

    static func baselineSessions(_ app: TestApp) async throws -> Int64 {
        let counts = try await app.store.eventCounts(
            EventCountQuery(
                namespace: "rider", from: Date() - 86_400, until: Date() + 86_400,
                subjects: [.baseline], dimensions: [.all]))
        return counts.reduce(0) { $0 + $1.tally.sessions }
    }

    // MARK: The queue's decisions

    @Test func batchesWriteOneAtATimeInArrivalOrderAndPastTheBacklogAreRefused() {
        var queue = IngestQueue<String>(capacity: 100)
        #expect(queue.admit(events: 60, waiter: "a") == .write)
        #expect(queue.admit(events: 30, waiter: "b") == .wait)
        #expect(queue.admit(events: 20, waiter: "c") == .refuse)
        #expect(queue.admit(events: 10, waiter: "d") == .wait)
        #expect(queue.backlog == 100)
        #expect(queue.finished(events: 60) == "b")
        #expect(queue.admit(events: 50, waiter: "e") == .wait)
        #expect(queue.finished(events: 30) == "d")
        #expect(queue.finished(events: 10) == "e")
        #expect(queue.finished(events: 50) == nil)
        #expect(queue.backlog == 0)
        // Into an empty backlog a batch is admitted however large, so no batch is refused forever.
        #expect(queue.admit(events: 500, waiter: "f") == .write)
        #expect(queue.admit(events: 1, waiter: "g") == .refuse)
        #expect(queue.finished(events: 500) == nil)
        #expect(queue.admit(events: 1, waiter: "h") == .write)
    }

    @Test func aBatchIsCutIntoTransactionsOfAtMostTheRowBudgetKeepingItsOrder() {
        let events = (0..<10).map { Self.storedSession("s\($0)") }
        // An id, a crash record, 3 admission windows (unit, city, cohort: no address), 3 subjects × 3 dimensions; from
        // an IPv6 address, its three blocks too.
        #expect(EventIngestor.estimatedRows(of: events[0]) == 2 + 3 + 9)
        var fromIPv6 = events[0]
        fromIPv6.address = "2001:db8:1:2::/64"
        #expect(EventIngestor.estimatedRows(of: fromIPv6) == 2 + 6 + 9)
        let parts = EventIngestor.parts(of: events, rowBudget: 40)
        #expect(parts.map(\.count) == [2, 2, 2, 2, 2])
        #expect(parts.flatMap { $0 }.map(\.id) == events.map(\.id))
        // An event larger than the budget goes alone.
        let big = Self.storedSession("big", switches: (0..<100).map { "s\($0)" })
        #expect(
            EventIngestor.parts(of: [events[0], big, events[1]], rowBudget: 40).map { $0.map(\.id) } == [
                ["s0"], ["big"], ["s1"],
            ])
    }

    @Test func aBatchWrittenInSeveralTransactionsIsCountedOnceAndRetriesAreDuplicates() async throws {
        var configuration = ServerConfiguration(port: 0)
        configuration.eventRowsPerTransaction = 1
        let app = try await TestApp.make(configuration: configuration)
        defer { app.close() }
        // Each session from a unit of its own, so that no cap per unit leaves one out.
        let body = EventRouteTests.body(
            (0..<7).map { index in
                var session = EventRouteTests.session("s\(index)")
                session["unit"] = .string("device-\(index)")
                return session
            })
        let response = try await app.send(.post, Self.path, token: "client", body: body)
        #expect(response.status == .ok, "\(response.text)")
        #expect(EventRouteTests.strings(response.json["accepted"]).count == 7)
        #expect(try await Self.baselineSessions(app) == 7)
        let retried = try await app.send(.post, Self.path, token: "client", body: body)
        #expect(EventRouteTests.strings(retried.json["duplicates"]).count == 7)
        #expect(try await Self.baselineSessions(app) == 7)
        // The parts before the last commit unsynced; the writer syncs every commit again afterwards (2 is FULL).
        #expect(try await app.store.eventsWriterSetting("synchronous") == 2)
    }

    // MARK: The backlog

    @Test func pastTheBacklogABatchGets429WithRetryAfterAndNothingOfItIsCounted() async throws {
        // The address may post one event a minute, on a clock that does not move: a refused batch must not spend it.
        var configuration = Self.frozenRates { $0.eventRatePerAddress = 1 }
        configuration.maximumEventBacklog = 5
        let app = try await TestApp.make(configuration: configuration)
        defer { app.close() }
        let ingestor = app.server.context.eventIngestor
        // A batch of 5 events holds its turn (its write waits) until released: the backlog is full meanwhile.
        let (release, releaser) = AsyncStream<Void>.makeStream()
        let holder = Task {
            try await ingestor.ingest((0..<5).map { Self.storedSession("held\($0)") }) { _, _ in
                for await _ in release { break }
                return EventIngestResult(counted: [], duplicates: [])
            }
        }
        try await waitUntil("the held batch fills the backlog") { ingestor.backlog == 5 }
        let body = EventRouteTests.body([EventRouteTests.session("s1")])
        let refused = try await app.send(.post, Self.path, token: "client", body: body)
        #expect(refused.status == .tooManyRequests, "\(refused.text)")
        #expect(refused.headers[.retryAfter] == String(configuration.retryAfter))
        #expect(refused.json["detail"]?.stringValue?.contains("nothing of this batch was counted") == true)
        #expect(
            try await Self.metric(app, #"flagsd_event_batches_refused_total{namespace="rider",reason="backlog_full"}"#)
                == 1)
        #expect(try await Self.metric(app, "flagsd_events_backlog") == 5)

        releaser.yield()
        _ = try await holder.value
        #expect(ingestor.backlog == 0)
        // Refused for the backlog, the batch cost its address nothing: the same batch is counted now.
        let accepted = try await app.send(.post, Self.path, token: "client", body: body)
        #expect(accepted.status == .ok, "\(accepted.text)")
        #expect(try await Self.baselineSessions(app) == 1)
    }

    // MARK: Rates per token and per address

    /// A configuration whose rate budgets never refill (a clock that does not move): a budget spent stays spent, so
    /// the tests do not depend on how long the machine takes between two requests.
    static func frozenRates(_ configure: (inout ServerConfiguration) -> Void) -> ServerConfiguration {
        var configuration = ServerConfiguration(port: 0)
        configuration.rateClock = { .zero }
        configure(&configuration)
        return configuration
    }

    @Test func pastItsEventRateAnAddressGets429WhileOtherAddressesAndReportersAreCounted() async throws {
        let app = try await TestApp.make(configuration: Self.frozenRates { $0.eventRatePerAddress = 3 })
        defer { app.close() }
        let crowded = IPAddress("192.0.2.1")
        let first = try await app.send(
            .post, Self.path, token: "client",
            body: EventRouteTests.body((0..<3).map { EventRouteTests.session("a\($0)") }),
            peer: crowded)
        #expect(first.status == .ok)
        let refused = try await app.send(
            .post, Self.path, token: "client", body: EventRouteTests.body([EventRouteTests.session("a3")]),
            peer: crowded)
        #expect(refused.status == .tooManyRequests, "\(refused.text)")
        // One event comes back every 20 s at 3 a minute (RateBucketsTests pins the arithmetic on a moving clock).
        #expect(refused.headers[.retryAfter] == "20")
        #expect(refused.json["detail"]?.stringValue?.contains("source address") == true)

        let other = try await app.send(
            .post, Self.path, token: "client", body: EventRouteTests.body([EventRouteTests.session("b0")]),
            peer: IPAddress("192.0.2.2"))
        #expect(other.status == .ok)
        // A reporter's crash pipeline sends a whole fleet's sessions from a few addresses: only its token's rate applies.
        var reported = EventRouteTests.session("r0")
        reported["unit"] = .string("device-1")
        let reporter = try await app.send(
            .post, Self.path, token: "reporter", body: EventRouteTests.body([reported]), peer: crowded)
        #expect(reporter.status == .ok, "\(reporter.text)")
        #expect(try await Self.baselineSessions(app) == 5)
        #expect(
            try await Self.metric(app, #"flagsd_event_batches_refused_total{namespace="rider",reason="address_rate"}"#)
                == 1)
    }

    /// An address with nothing left is refused before its body is read: even a body that is no JSON gets 429, not 400.
    @Test func anAddressWithNothingLeftIsRefusedBeforeItsBatchIsRead() async throws {
        let app = try await TestApp.make(configuration: Self.frozenRates { $0.eventRatePerAddress = 2 })
        defer { app.close() }
        let address = IPAddress("192.0.2.9")
        // A body that is no JSON costs its sender one event of its budget.
        #expect(
            try await app.send(.post, Self.path, token: "client", body: "{not json", peer: address).status
                == .badRequest)
        let spent = try await app.send(
            .post, Self.path, token: "client", body: EventRouteTests.body([EventRouteTests.session("a0")]),
            peer: address)
        #expect(spent.status == .ok)
        let refused = try await app.send(.post, Self.path, token: "client", body: "{not json", peer: address)
        #expect(refused.status == .tooManyRequests, "\(refused.text)")
        #expect(refused.headers[.retryAfter] != nil)
    }

    /// The attack of issue 29: junk batches from one address spent the client token's budget, shared by the whole
    /// fleet. Now the address pays for everything it posts, the token only for valid events, and a batch refused by
    /// one budget costs none: the honest fleet's batches keep being counted.
    @Test func refusalsAndJunkCostOnlyTheAddressThatSentThemNeverTheSharedToken() async throws {
        let app = try await TestApp.make(
            configuration: Self.frozenRates {
                $0.eventRatePerAddress = 1_000
                $0.eventRatePerClientToken = 12
            })
        defer { app.close() }
        let forger = IPAddress("203.0.113.66")
        // 1,000 junk elements: rejected one by one, charged to the forger's address, not to the token.
        let junk = #"{"events": ["# + Array(repeating: "0", count: 1000).joined(separator: ",") + "]}"
        let rejected = try await app.send(.post, Self.path, token: "client", body: junk, peer: forger)
        #expect(rejected.status == .ok)
        #expect(rejected.json["rejected"]?.arrayValue?.count == 1000)
        // The forger's address is spent: refused, and the refusal costs the token nothing.
        let refused = try await app.send(
            .post, Self.path, token: "client",
            body: EventRouteTests.body((0..<5).map { EventRouteTests.session("f\($0)") }),
            peer: forger)
        #expect(refused.status == .tooManyRequests, "\(refused.text)")
        #expect(refused.json["detail"]?.stringValue?.contains("source address") == true)
        // Honest apps at other addresses still have the token's whole budget: 12 valid events.
        for (index, address) in ["198.51.100.1", "198.51.100.2", "198.51.100.3"].enumerated() {
            let batch = EventRouteTests.body((0..<4).map { EventRouteTests.session("h\(index)-\($0)") })
            let honest = try await app.send(.post, Self.path, token: "client", body: batch, peer: IPAddress(address))
            #expect(honest.status == .ok, "\(honest.text)")
        }
        #expect(try await Self.baselineSessions(app) == 12)
        // Past it, the token's own limit speaks (set here on purpose; off by default for client tokens).
        let past = try await app.send(
            .post, Self.path, token: "client", body: EventRouteTests.body([EventRouteTests.session("h9")]),
            peer: IPAddress("198.51.100.4"))
        #expect(
            past.status == .tooManyRequests && past.json["detail"]?.stringValue?.contains("token 'client'") == true,
            "\(past.text)")
    }

    /// Client tokens have no event limit by default (the fleet shares them); reporter tokens keep theirs.
    @Test func aReporterTokenHasAnEventRateAndAClientTokenNoneByDefault() async throws {
        let app = try await TestApp.make(
            configuration: Self.frozenRates {
                $0.eventRatePerToken = 2
                $0.eventRatePerAddress = nil
            })
        defer { app.close() }
        let many = EventRouteTests.body((0..<5).map { EventRouteTests.session("c\($0)") })
        #expect(
            try await app.send(.post, Self.path, token: "client", body: many, peer: IPAddress("192.0.2.1")).status
                == .ok)
        func reported(_ ids: [String]) -> String {
            EventRouteTests.body(
                ids.map { id in
                    var event = EventRouteTests.session(id)
                    event["unit"] = .string("device-\(id)")
                    return event
                })
        }
        #expect(
            try await app.send(
                .post, Self.path, token: "reporter", body: reported(["r0", "r1"]), peer: IPAddress("192.0.2.1")
            ).status == .ok)
        let refused = try await app.send(
            .post, Self.path, token: "reporter", body: reported(["r2"]), peer: IPAddress("192.0.2.2"))
        #expect(refused.status == .tooManyRequests)
        // 30 s at 2 a minute.
        #expect(refused.headers[.retryAfter] == "30")
        #expect(refused.json["detail"]?.stringValue?.contains("token 'reporter'") == true, "\(refused.text)")
        #expect(
            try await Self.metric(app, #"flagsd_event_batches_refused_total{namespace="rider",reason="token_rate"}"#)
                == 1)
    }

    // MARK: Changes first, live

    /// Four clients post event batches as fast as they can over loopback; an editor's kill switch made meanwhile
    /// commits (the deadline is generous: this is about the change getting through, not its speed), the flood
    /// goes on after it, and every acknowledged event is counted exactly once.
    @Test func aKillSwitchMadeDuringAFloodOfEventsFromSeveralClientsCommits() async throws {
        var configuration = freshTokenCacheConfiguration()
        // Every flooder comes from loopback; its per-address budget is not what this test is about.
        configuration.eventRatePerAddress = nil
        let app = try await TestApp.make(configuration: configuration)
        defer { app.close() }
        let clientToken = try #require(app.tokens["client"])
        let editorToken = try #require(app.tokens["editor"])
        try await withLiveFlagsd(app, configuration: configuration) { _, port in
            let base = URL(string: "http://127.0.0.1:\(port)")!
            let flood = Flood()
            let flooders = (0..<4).map { flooder in
                Task { () throws -> (counted: Int, refused: Int) in
                    let client = LiveClient(base: base, token: clientToken)
                    var counted = 0
                    var refused = 0
                    var batch = 0
                    while !flood.stopped {
                        let events = (0..<100).map {
                            EventRouteTests.session(
                                "f\(flooder)-\(batch)-\($0)", switches: ["plugin_switch_feed_promos"])
                        }
                        let response = try await client.send("POST", Self.path, body: EventRouteTests.body(events))
                        if response.status == .tooManyRequests {
                            refused += 1
                            continue
                        }
                        #expect(response.status == .ok, "\(response.text)")
                        let accepted = EventRouteTests.strings(response.json["accepted"]).count
                        let dropped = response.json["dropped"]?.arrayValue?.count ?? 0
                        counted += accepted - dropped
                        batch += 1
                        flood.acknowledged()
                    }
                    return (counted, refused)
                }
            }
            try await waitUntil("the flood is running") { flood.batches >= 8 }
            let editor = LiveClient(base: base, token: editorToken)
            let killed = try await editor.send(
                "POST", "/v1/namespaces/rider/kill-switches/kill_home_feed/kill",
                body: #"{"reason": "incident during a flood"}"#)
            #expect(killed.status == .ok, "\(killed.text)")
            let afterKill = flood.batches
            try await waitUntil("the flood goes on after the change") { flood.batches >= afterKill + 4 }
            flood.stop()
            var counted = 0
            for flooder in flooders { counted += try await flooder.value.counted }

            let state = try #require(try await app.store.namespace("rider"))
            #expect(state.flagSet.killSwitches.first { $0.key == "kill_home_feed" }?.entries.isEmpty == false)
            #expect(try await Self.baselineSessions(app) == Int64(counted))
        }
    }
}

/// What the flooding clients share: whether to stop, and how many batches were acknowledged.
private final class Flood: Sendable {
    private let state = Mutex((stopped: false, batches: 0))

    var stopped: Bool { state.withLock { $0.stopped } }
    var batches: Int { state.withLock { $0.batches } }
    func stop() { state.withLock { $0.stopped = true } }
    func acknowledged() { state.withLock { $0.batches += 1 } }
}
