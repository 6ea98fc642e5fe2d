import Foundation
import HTTPTypes
import SwitchyardCore
import SwitchyardFlagFiles
import SwitchyardStorage
import SwitchyardWire
import TestSupport
import Testing

@testable import SwitchyardServer

/// docs/openapi.yaml describes exactly the routes the router serves, flagsd serves that file (from its resource
/// bundle), and standard OpenAPI tooling reads it. Serialized: the first check may create the checkers' virtual
/// environment.
@Suite(.serialized)
struct OpenAPISyncTests {
    static let documentURL = URL(fileURLWithPath: Repository.root + "/docs/openapi.yaml")

    /// `METHOD /path` for every operation under `paths:` (two-space indented paths, four-space methods).
    static func operations(in yaml: String) -> Set<String> {
        var operations = Set<String>()
        var inPaths = false
        var path: String?
        for line in yaml.split(separator: "\n", omittingEmptySubsequences: false) {
            if !line.hasPrefix(" "), !line.isEmpty { inPaths = line == "paths:" }
            guard inPaths else { continue }
            if line.hasPrefix("  /"), line.hasSuffix(":"), !line.hasPrefix("   ") {
                path = String(line.dropFirst(2).dropLast())
            } else if let path, line.hasPrefix("    "), !line.hasPrefix("     "), line.hasSuffix(":") {
                let method = line.trimmingCharacters(in: .whitespaces).dropLast()
                if ["get", "put", "post", "patch", "delete", "head", "options"].contains(String(method)) {
                    operations.insert("\(method.uppercased()) \(path)")
                }
            }
        }
        return operations
    }

    /// The request schemas of a flag set and of a flag are the flag-file schema's, in basis points, as
    /// `scripts/openapi-flag-file-schemas` writes them: a field added to docs/schemas/flag-file.schema.json
    /// reaches the API's document too.
    @Test(.enabled(if: Repository.pythonIsAvailable, "needs python3"))
    func theFlagSetRequestSchemasAreTheFlagFileSchemas() async throws {
        let result = try await Repository.runScript("scripts/openapi-flag-file-schemas", ["--check"])
        #expect(result.status == 0, "\(result.output)")
    }

    /// OFREP's request context in the document names every attribute rules read (`ListAttribute.contextKeys`,
    /// `VersionAttribute.contextKey`): it passes other members through, so only this check sees one missing.
    @Test func theOFREPContextNamesEveryTargetingAttribute() throws {
        let yaml = try String(contentsOf: Self.documentURL, encoding: .utf8)
        let section =
            yaml.components(separatedBy: "\n    OFREPContext:\n").dropFirst().first?
            .components(separatedBy: "\n  responses:").first ?? ""
        #expect(section.contains("targetingKey"), "no OFREPContext request body in docs/openapi.yaml")
        let keys = ListAttribute.allCases.flatMap(\.contextKeys) + VersionAttribute.allCases.map(\.contextKey)
        for key in keys {
            #expect(section.contains("\n                  \(key): "), "OFREPContext's context does not name '\(key)'")
        }
    }

    /// One list of change sources: the store's, the one flagctl checks `--source` against, and the document's.
    @Test func theSourcesOfChangesAreOneList() throws {
        let names = ChangeSource.all.map(\.rawValue)
        #expect(AuditEntryBody.sources == names)
        let yaml = try String(
            contentsOfFile: Repository.root + "/Sources/SwitchyardConsole/openapi.yaml", encoding: .utf8)
        #expect(yaml.contains("    Source:\n      type: string\n      enum: [\(names.joined(separator: ", "))]"))
    }

    @Test func everyRouteIsDocumentedAndEveryDocumentedRouteIsServed() async throws {
        let app = try await TestApp.make()
        defer { app.close() }
        let served = Set(app.server.routeList.map { "\($0.method) \($0.path)" })
        let documented = Self.operations(in: try String(contentsOf: Self.documentURL, encoding: .utf8))
        #expect(served.subtracting(documented).sorted() == [], "routes missing from docs/openapi.yaml")
        #expect(documented.subtracting(served).sorted() == [], "documented operations no route serves")
        #expect(served.count > 25)
    }

    @Test(
        .enabled(
            if: Repository.pythonIsAvailable,
            "needs python3 (scripts/check-openapi sets up its validator in .build/check-venv)"))
    func theServedDocumentIsDocsOpenAPIAndStandardToolsReadIt() async throws {
        let app = try await TestApp.make()
        defer { app.close() }
        let served = try await app.send(.get, "/openapi.yaml")
        #expect(served.status == .ok)
        #expect(served.headers[.contentType] == "application/yaml")
        #expect(served.text == (try String(contentsOf: Self.documentURL, encoding: .utf8)))
        let copy = FileManager.default.temporaryDirectory.appendingPathComponent("openapi-\(UUID().uuidString).yaml")
        try Data(served.text.utf8).write(to: copy)
        defer { try? FileManager.default.removeItem(at: copy) }
        let result = try await Repository.runScript("scripts/check-openapi", [copy.path])
        #expect(result.status == 0, "\(result.output)")
        #expect(result.output.contains("checked 1 document"))
    }

    /// flagsd's answers (the wire bodies flagctl reads) match the document's schemas, checked by an independent
    /// validator (openapi-schema-validator, OpenAPI 3.1).
    @Test(
        .enabled(
            if: Repository.pythonIsAvailable,
            "needs python3 (scripts/check-openapi sets up its validator in .build/check-venv)"))
    func theAnswersMatchTheDocumentsSchemas() async throws {
        let app = try await TestApp.make()
        defer { app.close() }
        let ns = "/v1/namespaces/rider"
        let disabled = try await app.send(
            .post, "\(ns)/flags/plugin_switch_map_traffic/disable", token: "editor",
            body: #"{"scope": {"cities": ["lagos"]}, "reason": "schema test"}"#)
        let killed = try await app.send(
            .post, "\(ns)/kill-switches/master/kill", token: "editor",
            body: #"{"scope": {"cities": ["paris"]}, "reason": "schema test"}"#)
        let unchanged = try await app.send(
            .post, "\(ns)/flags/plugin_switch_map_traffic/disable", token: "editor",
            body: #"{"scope": {"cities": ["lagos"]}, "reason": "schema test"}"#)
        let released = try await app.send(
            .post, "\(ns)/flags/plugin_switch_feed_promos/release/start", token: "editor",
            body: #"{"plan": {"stages": [{"cities": ["lagos"], "rollout": 100}, {"rollout": 10000}], "soak": "1h"}}"#)
        let answers: [(schema: String, response: TestResponse)] = [
            ("Status", try await app.send(.get, "/healthz", token: nil)),
            ("Status", try await app.send(.get, "/readyz", token: nil)),
            ("Namespace", try await app.send(.get, ns, token: "editor")),
            ("Flag", try await app.send(.get, "\(ns)/flags/plugin_switch_map_traffic", token: "editor")),
            ("Committed", disabled), ("Committed", killed), ("Committed", unchanged), ("Committed", released),
            (
                "ReleaseStatus",
                try await app.send(.get, "\(ns)/flags/plugin_switch_feed_promos/release", token: "editor")
            ),
        ]
        let killSwitches = try await app.send(.get, "\(ns)/kill-switches", token: "editor")
        let created = try await app.send(
            .post, "/v1/tokens", token: "admin",
            body: #"{"name": "schema-app", "role": "client", "namespaces": ["rider"]}"#)
        #expect(created.status == .created, "\(created.text)")
        let lists: [(schema: String, items: [JSONValue])] = [
            (
                "Change",
                try await app.send(.get, "\(ns)/changes?after=0", token: "editor").json["changes"]?.arrayValue ?? []
            ),
            ("KillSwitch", killSwitches.json["kill_switches"]?.arrayValue ?? []),
            (
                "AuditEntry",
                try await app.send(.get, "/v1/audit?namespace=rider", token: "admin").json["entries"]?.arrayValue ?? []
            ),
            (
                "Token",
                (try await app.send(.get, "/v1/tokens", token: "admin").json["tokens"]?.arrayValue ?? []) + [
                    created.json
                ]
            ),
            (
                "Namespace",
                try await app.send(.get, "/v1/namespaces", token: "admin").json["namespaces"]?.arrayValue ?? []
            ),
            (
                "ReleaseStatus",
                try await app.send(.get, "\(ns)/releases", token: "editor").json["releases"]?.arrayValue ?? []
            ),
        ]
        for answer in answers {
            #expect(answer.response.status.code < 300, "\(answer.schema): \(answer.response.text)")
        }
        try await Self.expectSchemasMatch(
            answers.map { ($0.schema, $0.response.json) }
                + lists.flatMap { list in
                    #expect(list.items.count >= 1, "no \(list.schema) to check")
                    return list.items.map { (list.schema, $0) }
                })
    }

    /// The crash guard's answers match the document's schemas too (status, trips, proposals, applying and dismissing
    /// a proposal, and the evidence in the change log), and flagctl's typed bodies read each back as it was sent.
    @Test(
        .enabled(
            if: Repository.pythonIsAvailable,
            "needs python3 (scripts/check-openapi sets up its validator in .build/check-venv)"))
    func theCrashGuardsAnswersMatchTheDocumentsSchemas() async throws {
        var policy = CrashGuardTests.policy
        policy.maximumTripsPerHour = 0
        policy.maximumScopedTripsPerHour = 0
        let app = try await CrashGuardTests.app(policy: policy)
        defer { app.close() }
        let promos = CrashGuardTests.promos
        let traffic = CrashGuardTests.traffic
        // Promos crashes in lagos only (a scoped proposal, with the sessions elsewhere as its complement); traffic
        // everywhere it runs. Past budgets of 0, the guard proposes both.
        try await CrashGuardTests.post(
            app, CrashGuardTests.sessions("paris", count: 600, crashEvery: 0, switches: [promos], city: "paris"))
        try await CrashGuardTests.post(
            app, CrashGuardTests.sessions("lagos", count: 200, crashEvery: 5, switches: [promos], city: "lagos"))
        try await CrashGuardTests.post(
            app, CrashGuardTests.sessions("lima", count: 150, crashEvery: 3, switches: [traffic], city: "lima"))
        await app.server.guardService.drain()
        let ns = "/v1/namespaces/rider"
        let proposals = try await app.send(.get, "\(ns)/guard/proposals", token: "editor")
        let typedProposals = try GuardProposalsBody(json: proposals.json).proposals
        let promosProposal = try #require(typedProposals.first { $0.key == promos })
        #expect(promosProposal.scope == Scope(cities: ["lagos"]) && promosProposal.evidence.complement != nil)
        let trafficProposal = try #require(typedProposals.first { $0.key == traffic })
        let proposed = try await app.send(.get, "\(ns)/guard", token: "editor")
        let applied = try await app.send(
            .post, "\(ns)/guard/proposals/\(promosProposal.id)/apply", token: "editor",
            body: #"{"reason": "schema test"}"#)
        let dismissed = try await app.send(
            .post, "\(ns)/guard/proposals/\(trafficProposal.id)/dismiss", token: "editor",
            body: #"{"reason": "schema test"}"#)
        let inForce = try await app.send(.get, "\(ns)/guard/trips", token: "editor")
        let tripped = try await app.send(.get, "\(ns)/guard?switch=\(promos)", token: "editor")
        let enabled = try await app.send(
            .post, "\(ns)/flags/\(promos)/enable", token: "editor",
            body: #"{"scope": {"cities": ["lagos"]}, "reason": "schema test"}"#)
        #expect(enabled.status == .ok, "\(enabled.text)")
        let reenabled = try await app.send(.get, "\(ns)/guard/trips", token: "editor")
        let coolingDown = try await app.send(.get, "\(ns)/guard", token: "editor")
        let series = try await app.send(.get, "\(ns)/series?hours=1", token: "editor")
        let answers: [(schema: String, response: TestResponse)] = [
            ("GuardProposals", proposals), ("GuardOverview", proposed), ("Committed", applied),
            ("GuardDismissal", dismissed),
            ("GuardTrips", inForce), ("GuardOverview", tripped), ("GuardTrips", reenabled),
            ("GuardOverview", coolingDown),
            ("Series", series),
        ]
        for answer in answers { #expect(answer.response.status == .ok, "\(answer.schema): \(answer.response.text)") }
        #expect(tripped.json["switches"]?[0]?["state"] == .string("tripped"))
        #expect(reenabled.json["trips"]?[0]?["reenabled"]?["actor"] == .string("editor"))
        // The applied proposal, and the trip's evidence as the change log keeps it.
        let changes =
            try await app.send(.get, "\(ns)/changes?after=0", token: "editor").json["changes"]?.arrayValue ?? []
        let evidenced = changes.filter { $0["evidence"] != nil }
        #expect(evidenced.count == 1)
        try await Self.expectSchemasMatch(
            answers.map { ($0.schema, $0.response.json) }
                + [("GuardProposal", applied.json["proposal"] ?? .null)] + evidenced.map { ("Change", $0) })

        // flagctl's bodies read every answer, and write it back as flagsd sent it.
        #expect(try GuardProposalsBody(json: proposals.json).json == proposals.json)
        #expect(try GuardDismissalBody(json: dismissed.json).json == dismissed.json)
        for overview in [proposed, tripped, coolingDown] {
            #expect(try GuardOverviewBody(json: overview.json).json == overview.json)
        }
        for trips in [inForce, reenabled] { #expect(try GuardTripsBody(json: trips.json).json == trips.json) }
        let evidence = try GuardEvidenceBody(json: evidenced[0]["evidence"] ?? .null)
        #expect(evidence.proposal == promosProposal.id && evidence.policy.cooldown == .seconds(1800))
    }

    /// The change requests flagctl writes (SwitchyardWire's request bodies, with the reason its change flow adds)
    /// match the document's request schemas.
    @Test(
        .enabled(
            if: Repository.pythonIsAvailable,
            "needs python3 (scripts/check-openapi sets up its validator in .build/check-venv)"))
    func theChangeRequestsMatchTheDocumentsSchemas() async throws {
        let lagos = Scope(cities: ["lagos"], cohorts: ["beta"])
        let rider = try FlagFile(contentsOf: Repository.root + "/Flags/rider.yaml").flagSet
        let plan = try ReleasePlan(
            tree: try JSONValue.parse(
                Array(#"{"stages": [{"cities": ["lagos"], "rollout": 100}, {"rollout": 10000}], "soak": "1h"}"#.utf8)),
            unit: .basisPoints)
        let requests: [(schema: String, body: any ChangeRequestBody)] = [
            ("SwitchStateRequest", SwitchStateRequest(scope: lagos, reason: "INC-1")),
            ("SwitchStateRequest", KillStateRequest(scope: lagos, reason: "INC-2")),
            ("ReviveRequest", KillStateRequest(scope: nil, all: true, reason: "INC-2")),
            ("RolloutRequest", RolloutRequest(rollout: Rollout(basisPoints: 2_500)!, rule: 1)),
            ("RolloutRequest", RolloutRequest(rollout: .full, conditions: Conditions(cities: ["lagos"]))),
            (
                "TargetingRequest",
                TargetingRequest(
                    rule: 0, add: Conditions(units: ["u-1"], platforms: ["ios"]),
                    remove: Conditions(notCohorts: ["beta"]), rollout: .off)
            ),
            // Every list a rule can have (`TargetingList`): the schema's closed `ConditionLists` must name each.
            (
                "TargetingRequest",
                TargetingRequest(
                    rule: 0,
                    add: Conditions(
                        lists: Dictionary(uniqueKeysWithValues: TargetingList.allCases.map { ($0, ["x"]) })),
                    remove: Conditions(), rollout: nil)
            ),
            (
                "RolloutRequest",
                RolloutRequest(
                    rollout: .off,
                    conditions: Conditions(
                        lists: Dictionary(uniqueKeysWithValues: TargetingList.allCases.map { ($0, ["x"]) })))
            ),
            ("ReasonRequest", ReasonRequest(reason: "INC-3")),
            ("DismissalRequest", ReasonRequest(reason: "crashes from a test device farm")),
            (
                "ReleaseStartRequest",
                ReleaseActionRequest(plan: plan, guardrails: [ReleaseGuardrail("trip_booked: -2%")!])
            ),
            ("FlagSetRequest", FlagSetRequest(flagSet: rider, reason: "apply")),
            ("NamespaceCreateRequest", NamespaceCreateRequest(name: "rider", reasonPolicy: .kills, flagSet: rider)),
            ("ReasonPolicyRequest", ReasonPolicyRequest(reasonPolicy: .always)),
        ]
        let tokens = [
            TokenCreateRequest(name: "rider-ios", role: .client, namespaces: ["rider"], ratePerMinute: 600),
            TokenCreateRequest(name: "prometheus", role: .metrics), TokenCreateRequest(name: "amara", role: .editor),
        ]
        try await Self.expectSchemasMatch(
            requests.map { ($0.schema, $0.body.sent) } + tokens.map { ("TokenCreateRequest", $0.sent) })
    }

    /// Checks bodies against schemas of docs/openapi.yaml with the independent validator.
    static func expectSchemasMatch(_ bodies: [(schema: String, json: JSONValue)]) async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
            "openapi-bodies-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        var arguments: [String] = []
        for (index, body) in bodies.enumerated() {
            let file = folder.appendingPathComponent("\(index)-\(body.schema).json")
            try Data(body.json.serialized()).write(to: file)
            arguments += ["--body", body.schema, file.path]
        }
        let result = try await Repository.runScript("scripts/check-openapi", arguments)
        #expect(result.status == 0, "\(result.output)")
        #expect(result.output.contains("checked \(bodies.count) bodies"), "\(result.output)")
    }

    /// The checker fails where tooling would: a plain scalar holding `: ` (what once kept standard parsers from
    /// loading the document at all), and a document missing what OpenAPI requires.
    @Test(
        .enabled(
            if: Repository.pythonIsAvailable,
            "needs python3 (scripts/check-openapi sets up its validator in .build/check-venv)"))
    func theCheckerRejectsWhatStandardToolsCannotRead() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("openapi-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let unquoted = folder.appendingPathComponent("unquoted.yaml")
        try Data(
            "openapi: 3.1.0\ninfo:\n  title: t\n  version: '1'\n  description: Sent with (`Cache-Control: no-cache`).\npaths: {}\n"
                .utf8
        ).write(to: unquoted)
        let unversioned = folder.appendingPathComponent("unversioned.yaml")
        try Data("openapi: 3.1.0\ninfo:\n  title: t\npaths: {}\n".utf8).write(to: unversioned)
        let result = try await Repository.runScript("scripts/check-openapi", [unquoted.path, unversioned.path])
        #expect(result.status == 1)
        #expect(
            result.output.contains("unquoted.yaml: not valid YAML: mapping values are not allowed here"),
            "\(result.output)")
        #expect(result.output.contains("unversioned.yaml: info: 'version' is a required property"), "\(result.output)")
    }
}
