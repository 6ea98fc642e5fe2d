import Foundation
import SwitchyardCore
import SwitchyardSQLite
import SwitchyardStorage
import Testing

@testable import SwitchyardServer

/// The one decide-and-commit loop of flagsd's automatic writers (``FlagService/decideAndCommit(_:attempts:decide:)``),
/// over a real SQLite store: a decision commits on the version it was made on, and is made again when the namespace
/// moved on.
struct DecideAndCommitTests {
    static let promos = "plugin_switch_feed_promos"
    static let weather = "plugin_switch_feed_weather"
    static let author = ChangeAuthor(actor: "robot", source: .api, reason: "test")

    static func disabling(_ key: String) -> VersionedDecision<String> {
        .commit("disable \(key)", ChangeRequest(author: author)) { try $0.disabling(key, scope: nil) }
    }

    @Test func aDecisionCommitsOnTheVersionItWasMadeOn() async throws {
        let app = try await TestApp.make()
        defer { app.close() }
        let before = try #require(try await app.store.namespace("rider")).record.version
        let outcome = try await app.server.context.service.decideAndCommit("rider") { _ in Self.disabling(Self.promos) }
        guard case .committed(let value, let result) = outcome else {
            Issue.record("expected a commit, got \(String(describing: outcome))")
            return
        }
        #expect(value == "disable \(Self.promos)")
        #expect(result.record?.version == before + 1)
        #expect(try await app.store.namespace("rider")?.flagSet.flag(Self.promos)?.pluginSwitch?.disabled == true)
    }

    @Test func aNamespaceThatMovedOnBeforeTheCommitIsDecidedAgain() async throws {
        let app = try await TestApp.make()
        defer { app.close() }
        let service = app.server.context.service
        let before = try #require(try await app.store.namespace("rider")).record.version
        var decidedOn: [Int64] = []
        let outcome = try await service.decideAndCommit("rider") { state in
            decidedOn.append(state.record.version)
            if decidedOn.count == 1 {
                // Another writer commits between this decision and its commit.
                _ = try await service.change("rider", ChangeRequest(author: Self.author)) {
                    try $0.disabling(Self.weather, scope: nil)
                }
            }
            return Self.disabling(Self.promos)
        }
        #expect(decidedOn == [before, before + 1])
        guard case .committed(_, let result) = outcome else {
            Issue.record("expected a commit, got \(String(describing: outcome))")
            return
        }
        #expect(result.record?.version == before + 2)
        #expect(result.record?.changes.map(\.key) == [Self.promos])
    }

    @Test func aStaleDecisionIsMadeAgainAtMostAttemptsTimes() async throws {
        let app = try await TestApp.make()
        defer { app.close() }
        let before = try #require(try await app.store.namespace("rider")).record.version
        var decisions = 0
        let outcome = try await app.server.context.service.decideAndCommit("rider", attempts: 2) {
            _ -> VersionedDecision<String>? in
            decisions += 1
            throw StaleDecision()
        }
        #expect(outcome == nil)
        #expect(decisions == 2)
        // A mutation that finds the switch changed since the decision is stale too.
        decisions = 0
        let stale = try await app.server.context.service.decideAndCommit("rider") { _ -> VersionedDecision<String>? in
            decisions += 1
            return .commit("never", ChangeRequest(author: Self.author)) { _ in throw StaleDecision() }
        }
        #expect(stale == nil)
        #expect(decisions == 3)
        #expect(try await app.store.namespace("rider")?.record.version == before)
    }

    @Test func aSettledDecisionOrNothingToDoCommitsNothing() async throws {
        let app = try await TestApp.make()
        defer { app.close() }
        let before = try #require(try await app.store.namespace("rider")).record.version
        let settled = try await app.server.context.service.decideAndCommit("rider") { _ in
            VersionedDecision<String>.settle("held")
        }
        guard case .settled("held") = settled else {
            Issue.record("expected the settled decision, got \(String(describing: settled))")
            return
        }
        let nothing = try await app.server.context.service.decideAndCommit("rider") { _ -> VersionedDecision<String>? in
            nil
        }
        #expect(nothing == nil)
        let missing = try await app.server.context.service.decideAndCommit("nowhere") { _ in Self.disabling(Self.promos)
        }
        #expect(missing == nil)
        #expect(try await app.store.namespace("rider")?.record.version == before)
    }

    @Test func otherErrorsAreThrownAtOnce() async throws {
        let app = try await TestApp.make()
        defer { app.close() }
        var decisions = 0
        await #expect(throws: FlagEditError.self) {
            _ = try await app.server.context.service.decideAndCommit("rider") { _ -> VersionedDecision<String>? in
                decisions += 1
                return .commit("unknown", ChangeRequest(author: Self.author)) {
                    try $0.disabling("plugin_switch_gone", scope: nil)
                }
            }
        }
        #expect(decisions == 1)
    }
}
