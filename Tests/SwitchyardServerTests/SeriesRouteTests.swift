import Foundation
import HTTPTypes
import SwitchyardCore
import SwitchyardStorage
import SwitchyardWire
import TestSupport
import Testing

@testable import SwitchyardServer

/// `GET /v1/namespaces/{namespace}/series`: the numbers behind the console's charts are the counts flagsd admitted,
/// per step, and sum to what the crash guard counts over the same minutes.
struct SeriesRouteTests {
    static let ns = "/v1/namespaces/rider"

    @Test func theStepsHoldTheSessionsAndCrashesClientsReportedAndSumToTheGuardsCounts() async throws {
        let app = try await CrashGuardTests.app()
        defer { app.close() }
        let promos = CrashGuardTests.promos
        let traffic = CrashGuardTests.traffic
        // Promos in 90 sessions (9 crashed), traffic in 40 (none crashed): too few to trip, all in the guard's window.
        try await CrashGuardTests.post(
            app, CrashGuardTests.sessions("promos", count: 90, crashEvery: 10, switches: [promos]))
        try await CrashGuardTests.post(
            app, CrashGuardTests.sessions("traffic", count: 40, crashEvery: 0, switches: [traffic]))
        await app.server.guardService.drain()

        let response = try await app.send(.get, "\(Self.ns)/series?hours=1", token: "editor")
        #expect(response.status == .ok, "\(response.text)")
        let body = try SeriesBody(json: response.json)
        #expect(body.json == response.json, "the wire body reads back what flagsd sent")
        #expect(body.stepSeconds == 60 && body.source == "client")
        let from = try #require(Date(iso8601: body.from))
        let until = try #require(Date(iso8601: body.until))
        #expect(until.timeIntervalSince(from) == 3600)
        #expect(body.series.first?.subject == "baseline")
        let switches = body.series.filter { $0.subject == "switch" }.map(\.key)
        #expect(switches == switches.sorted() && switches.contains(promos) && switches.contains(traffic))
        for series in body.series { #expect(series.sessions.count == 60 && series.crashes.count == 60) }

        let promosSeries = try #require(body.series.first { $0.key == promos })
        #expect(promosSeries.sessions.reduce(0, +) == 90 && promosSeries.crashes.reduce(0, +) == 9)
        // The events were all timed 2 s ago: one step holds them, or two adjacent ones (a minute boundary between).
        let busy = promosSeries.sessions.indices.filter { promosSeries.sessions[$0] > 0 }
        #expect(!busy.isEmpty && busy.count <= 2 && busy.last! - busy.first! <= 1, "\(promosSeries.sessions)")
        let baseline = try #require(body.series.first)
        #expect(baseline.sessions.reduce(0, +) == 130 && baseline.crashes.reduce(0, +) == 9)

        // The crash guard counts the same sessions over its window.
        let guardStatus = try await app.send(.get, "\(Self.ns)/guard?switch=\(promos)", token: "editor")
        let status = try #require(try GuardOverviewBody(json: guardStatus.json).switches.first)
        #expect(status.check.sessions == promosSeries.sessions.reduce(0, +))
        #expect(status.check.crashes == promosSeries.crashes.reduce(0, +))

        // One switch: it and the baseline only. Reporters reported nothing.
        let one = try SeriesBody(
            json: try await app.send(.get, "\(Self.ns)/series?switch=\(traffic)", token: "editor").json)
        #expect(one.series.map(\.key) == ["", traffic])
        #expect(one.stepSeconds == 360, "six hours (the default) in 60 steps")
        let reporters = try SeriesBody(
            json: try await app.send(.get, "\(Self.ns)/series?source=reporter", token: "editor").json)
        #expect(reporters.series.allSatisfy { $0.sessions.allSatisfy { $0 == 0 } })
    }

    @Test(arguments: [
        ("hours=0", "hours"), ("hours=49", "hours"), ("hours=six", "hours"),
        ("switch=plugin_switch_nope", "switch"), ("switch=confirmation_button_copy", "switch"),
        ("source=everyone", "source"),
    ])
    func badQueriesAreRefusedNamingTheParameter(query: String, field: String) async throws {
        let app = try await TestApp.make()
        defer { app.close() }
        let response = try await app.send(.get, "\(Self.ns)/series?\(query)", token: "editor")
        #expect(response.status == .badRequest, "\(query): \(response.text)")
        #expect(response.json["errors"]?[0]?["path"] == .string(field), "\(query): \(response.text)")
    }

    @Test func clientTokensMayNotReadTheSeries() async throws {
        let app = try await TestApp.make()
        defer { app.close() }
        #expect(try await app.send(.get, "\(Self.ns)/series", token: "client").status == .forbidden)
        #expect(try await app.send(.get, "\(Self.ns)/series").status == .unauthorized)
        #expect(try await app.send(.get, "/v1/namespaces/nowhere/series", token: "editor").status == .notFound)
    }
}
