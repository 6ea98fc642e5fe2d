import Foundation
import HTTPTypes
import InMemoryLogging
import Logging
import SwitchyardCore
import SwitchyardSQLite
import SwitchyardStorage
import Testing

@testable import SwitchyardServer

/// Namespaces, tokens and the audit log, in-process.
struct AdminRouteTests {
    @Test func namespacesAreCreatedWithAFreshEpochListedUpdatedAndDeleted() async throws {
        let app = try await TestApp.make()
        defer { app.close() }
        var response = try await app.send(
            .post, "/v1/namespaces", token: "admin",
            body: """
                {"name": "driver", "description": "Driver app", "reason_policy": "always", "flag_set": \(Fixtures.riderJSON("driver"))}
                """)
        #expect(response.status == .created)
        #expect(response.json["version"] == .int(1))
        #expect(response.json["reason_policy"] == .string("always"))
        #expect(response.json["description"] == .string("Driver app"))
        #expect(response.headers[.location] == "/v1/namespaces/driver")
        let epoch = try #require(response.json["epoch"]?.stringValue)
        #expect(epoch != (try await app.store.namespace("rider")?.record.epoch))
        #expect(try await app.send(.get, "/v1/namespaces/driver/snapshot", token: "client").status == .ok)

        response = try await app.send(.post, "/v1/namespaces", token: "admin", body: #"{"name": "driver"}"#)
        #expect(response.status == .conflict)
        response = try await app.send(.post, "/v1/namespaces", token: "admin", body: #"{"name": "bad name!"}"#)
        #expect(response.problemPaths == ["name"])
        response = try await app.send(
            .post, "/v1/namespaces", token: "admin", body: #"{"name": "x", "reason_policy": "sometimes"}"#)
        #expect(response.problemPaths == ["reason_policy"])
        // An empty description is refused as a flag file's is, before anything is stored (it was a 500: the
        // namespace's stored flag set did not read back).
        for body in [#"{"name": "x", "description": ""}"#, #"{"name": "x", "description": "", "flag_set": {}}"#] {
            response = try await app.send(.post, "/v1/namespaces", token: "admin", body: body)
            #expect(response.status == .badRequest, "\(response.text)")
            #expect(response.problemPaths == ["description"])
        }
        #expect(try await app.store.namespace("x") == nil)

        response = try await app.send(.get, "/v1/namespaces", token: "editor")
        #expect(response.json["namespaces"]?.arrayValue?.compactMap { $0["name"]?.stringValue } == ["driver", "rider"])
        response = try await app.send(.get, "/v1/namespaces/driver", token: "editor")
        #expect(response.json["counts"]?["flags"] == .int(4))

        response = try await app.send(
            .patch, "/v1/namespaces/driver", token: "admin", body: #"{"reason_policy": "never"}"#)
        #expect(response.json["reason_policy"] == .string("never"))
        response = try await app.send(.patch, "/v1/namespaces/driver", token: "admin", body: "{}")
        #expect(response.problemPaths == ["reason_policy"])

        response = try await app.send(.delete, "/v1/namespaces/driver", token: "admin")
        #expect(response.status == .noContent)
        #expect(try await app.send(.get, "/v1/namespaces/driver/snapshot", token: "client").status == .notFound)
        #expect(try await app.send(.delete, "/v1/namespaces/driver", token: "admin").status == .notFound)
    }

    @Test func settingTheReasonPolicyInForceChangesLogsAndAuditsNothing() async throws {
        let logs = InMemoryLogHandler()
        let app = try await TestApp.make(logger: Logger(label: "flagsd-test") { _ in logs })
        defer { app.close() }
        let first = try await app.send(
            .patch, "/v1/namespaces/rider", token: "admin", body: #"{"reason_policy": "never"}"#)
        let again = try await app.send(
            .patch, "/v1/namespaces/rider", token: "admin", body: #"{"reason_policy": "never"}"#)
        #expect(first.status == .ok && again.status == .ok)
        #expect(again.json["reason_policy"] == .string("never"))
        #expect(again.json["updated_at"] == first.json["updated_at"])
        #expect(logs.entries.filter { $0.message.description == "namespace setting changed" }.count == 1)
        #expect(
            try await app.store.audit(AuditQuery(namespace: "rider", actions: [.namespaceUpdate])).entries.count == 1)
    }

    @Test func aNamespaceLimitedAdminManagesOnlyItsNamespaces() async throws {
        let app = try await TestApp.make()
        defer { app.close() }
        #expect(
            try await app.send(.post, "/v1/namespaces", token: "rider-admin", body: #"{"name": "driver"}"#).status
                == .forbidden)
        // Refused for the namespace, not for a flag set it was never going to read.
        let withBadFlagSet = try await app.send(
            .post, "/v1/namespaces", token: "rider-admin",
            body: #"{"name": "driver", "flag_set": {"namespace": "rider", "flags": {"x": {}}}}"#)
        #expect(withBadFlagSet.status == .forbidden, "\(withBadFlagSet.text)")
        #expect(
            try await app.send(
                .patch, "/v1/namespaces/rider", token: "rider-admin", body: #"{"reason_policy": "never"}"#
            ).status == .ok)
        #expect(try await app.send(.get, "/v1/tokens", token: "rider-admin").status == .forbidden)
        let list = try await app.send(.get, "/v1/namespaces", token: "other-editor")
        #expect(list.json["namespaces"] == .array([]))
    }

    @Test func tokensAreCreatedShownOnceListedWithoutSecretsAndRevoked() async throws {
        let app = try await TestApp.make()
        defer { app.close() }
        var response = try await app.send(
            .post, "/v1/tokens", token: "admin",
            body: #"{"name": "ios-app", "role": "client", "namespaces": ["rider"]}"#)
        #expect(response.status == .created)
        let secret = try #require(response.json["token"]?.stringValue)
        #expect(secret.hasPrefix("sy_client_"))
        #expect(try await app.send(.get, "/v1/namespaces/rider/snapshot", token: secret).status == .ok)

        response = try await app.send(.get, "/v1/tokens", token: "admin")
        #expect(!response.text.contains(secret))
        #expect(!response.text.contains("sy_"))
        let listed = response.json["tokens"]?.arrayValue?.first { $0["name"] == .string("ios-app") }
        #expect(listed?["role"] == .string("client"))
        #expect(listed?["namespaces"] == .array([.string("rider")]))

        response = try await app.send(
            .post, "/v1/tokens", token: "admin",
            body: #"{"name": "ios-app", "role": "client", "namespaces": ["rider"]}"#)
        #expect(response.status == .conflict)
        response = try await app.send(
            .post, "/v1/tokens", token: "admin", body: #"{"name": "", "role": "root", "namespaces": [], "x": 1}"#)
        #expect(Set(response.problemPaths) == ["name", "role", "namespaces", "x"])

        response = try await app.send(.delete, "/v1/tokens/ios-app", token: "admin")
        #expect(response.status == .ok)
        #expect(response.json["revoked_at"]?.stringValue != nil)
        let revoked = try await app.send(.get, "/v1/namespaces/rider/snapshot", token: secret)
        #expect(revoked.status == .unauthorized)
        #expect(revoked.json["detail"]?.stringValue?.contains("revoked") == true)
        #expect(try await app.send(.delete, "/v1/tokens/nobody", token: "admin").status == .notFound)
    }

    /// Client tokens ship inside apps, so anyone may read one: each must name the namespaces it serves.
    @Test func aClientTokenWithoutNamespacesIsRefusedSayingHow() async throws {
        let app = try await TestApp.make()
        defer { app.close() }
        let response = try await app.send(
            .post, "/v1/tokens", token: "admin", body: #"{"name": "ios-app", "role": "client"}"#)
        #expect(response.status == .badRequest)
        #expect(response.problemPaths == ["namespaces"])
        let detail = try #require(response.json["detail"]?.stringValue)
        #expect(detail.contains(#""namespaces": ["rider"]"#), "\(detail)")
        #expect(detail.contains("flagctl tokens create ios-app --role client --allow rider"), "\(detail)")
        #expect(
            try await app.send(.get, "/v1/tokens", token: "admin").json["tokens"]?.arrayValue?
                .contains { $0["name"] == .string("ios-app") } == false)
        // Every other role may still be valid in every namespace.
        let editor = try await app.send(
            .post, "/v1/tokens", token: "admin", body: #"{"name": "amara", "role": "editor"}"#)
        #expect(editor.status == .created)
    }

    @Test func aMetricsTokenReadsMetricsOnlyAndCoversEveryNamespace() async throws {
        let app = try await TestApp.make()
        defer { app.close() }
        let limited = try await app.send(
            .post, "/v1/tokens", token: "admin",
            body: #"{"name": "scraper", "role": "metrics", "namespaces": ["rider"]}"#)
        #expect(limited.status == .badRequest)
        #expect(limited.problemPaths == ["namespaces"])
        let created = try await app.send(
            .post, "/v1/tokens", token: "admin", body: #"{"name": "scraper", "role": "metrics"}"#)
        #expect(created.status == .created)
        let secret = try #require(created.json["token"]?.stringValue)
        #expect(secret.hasPrefix("sy_metrics_"))
        #expect(try await app.send(.get, "/metrics", token: secret).status == .ok)
        #expect(try await app.send(.get, "/v1/namespaces/rider/snapshot", token: secret).status == .forbidden)
        #expect(
            try await app.send(
                .post, "/ofrep/v1/evaluate/flags", token: secret, headers: [.testNamespace: "rider"],
                body: #"{"context": {"targetingKey": "u"}}"#
            ).status == .forbidden)
    }

    @Test func theLastAdminTokenForEveryNamespaceCannotBeRevoked() async throws {
        let app = try await TestApp.make()
        defer { app.close() }
        // A limited admin does not count: it cannot manage tokens.
        let refused = try await app.send(.delete, "/v1/tokens/admin", token: "admin")
        #expect(refused.status == .conflict)
        #expect(refused.json["type"] == .string("urn:switchyard:problem:last-admin-token"))
        let detail = try #require(refused.json["detail"]?.stringValue)
        #expect(detail.contains("last live admin token valid in every namespace"), "\(detail)")
        #expect(detail.contains("flagctl tokens create NAME --role admin"), "\(detail)")
        #expect(try await app.send(.get, "/v1/tokens", token: "admin").status == .ok)

        let second = try await app.send(
            .post, "/v1/tokens", token: "admin", body: #"{"name": "second-admin", "role": "admin"}"#)
        let secret = try #require(second.json["token"]?.stringValue)
        #expect(try await app.send(.delete, "/v1/tokens/admin", token: secret).status == .ok)
        #expect(try await app.send(.delete, "/v1/tokens/second-admin", token: secret).status == .conflict)
        #expect(try await app.send(.delete, "/v1/tokens/rider-admin", token: secret).status == .ok)
    }

    @Test func theAuditLogIsFilteredAndPaged() async throws {
        let app = try await TestApp.make()
        defer { app.close() }
        _ = try await app.send(
            .post, "/v1/namespaces/rider/flags/plugin_switch_map_traffic/disable", token: "editor",
            body: #"{"reason": "a"}"#)
        _ = try await app.send(
            .post, "/v1/namespaces/rider/flags/plugin_switch_feed_promos/disable", token: "admin",
            headers: [.init("X-Switchyard-Source")!: "console"], body: #"{"reason": "b"}"#)
        var response = try await app.send(
            .get, "/v1/audit?namespace=rider&flag=plugin_switch_map_traffic", token: "editor")
        #expect(response.json["entries"]?.arrayValue?.compactMap { $0["version"]?.int64Value } == [2, 1])
        response = try await app.send(.get, "/v1/audit?actor=admin", token: "editor")
        #expect(response.json["entries"]?.arrayValue?.compactMap { $0["reason"]?.stringValue } == ["b"])
        response = try await app.send(.get, "/v1/audit?source=console", token: "editor")
        #expect(response.json["entries"]?.arrayValue?.count == 1)
        let first = try #require(response.json["entries"]?.arrayValue?.first)
        #expect(first["changes"]?.arrayValue?.first?["before"]?["disabled"] == nil)
        #expect(first["changes"]?.arrayValue?.first?["after"]?["disabled"] == .bool(true))

        response = try await app.send(
            .get, "/v1/audit?since=2000-01-01T00:00:00Z&until=2000-01-02T00:00:00.000Z", token: "editor")
        #expect(response.json["entries"] == .array([]))
        response = try await app.send(.get, "/v1/audit?limit=2", token: "editor")
        #expect(response.json["entries"]?.arrayValue?.count == 2)
        let cursor = try #require(response.json["next_cursor"]?.int64Value)
        response = try await app.send(.get, "/v1/audit?limit=2&cursor=\(cursor)", token: "editor")
        #expect(response.json["entries"]?.arrayValue?.first?["id"]?.int64Value.map { $0 < cursor } == true)

        #expect(try await app.send(.get, "/v1/audit?since=yesterday", token: "editor").problemPaths == ["since"])
        #expect(try await app.send(.get, "/v1/audit?source=robot", token: "editor").problemPaths == ["source"])
        #expect(try await app.send(.get, "/v1/audit?namespace=rider", token: "other-editor").status == .forbidden)
        response = try await app.send(.get, "/v1/audit", token: "other-editor")
        #expect(response.json["entries"] == .array([]))
    }
}

/// Errors every route shares: problem documents, unknown routes and methods, malformed and oversized bodies.
struct ErrorTests {
    @Test func unknownRoutesAre404AndWrongMethods405WithAllow() async throws {
        let app = try await TestApp.make()
        defer { app.close() }
        var response = try await app.send(.get, "/v1/nothing", token: "admin")
        #expect(response.status == .notFound)
        #expect(response.headers[.contentType] == "application/problem+json")
        #expect(response.json["type"] == .string("urn:switchyard:problem:not-found"))
        #expect(response.json["instance"] == .string("/v1/nothing"))
        #expect(response.json["status"] == .int(404))
        response = try await app.send(.patch, "/v1/namespaces/rider/flags/x", token: "admin")
        #expect(response.status == .methodNotAllowed)
        #expect(response.headers[.allow] == "GET, PUT, DELETE")
        response = try await app.send(.delete, "/v1/audit")
        #expect(response.status == .methodNotAllowed)
    }

    @Test func malformedJSONWrongTypesAndUnknownFieldsAre400NamingTheField() async throws {
        let app = try await TestApp.make()
        defer { app.close() }
        let path = "/v1/namespaces/rider/flags/plugin_switch_map_traffic/disable"
        var response = try await app.send(.post, path, token: "editor", body: #"{"reason": "x",}"#)
        #expect(response.status == .badRequest)
        #expect(response.json["detail"]?.stringValue?.contains("line 1") == true)
        response = try await app.send(.post, path, token: "editor", body: #"[1]"#)
        #expect(response.status == .badRequest)
        response = try await app.send(
            .post, path, token: "editor", body: #"{"reason": 5, "scope": {"cities": "lagos", "towns": []}, "x": 1}"#)
        #expect(Set(response.problemPaths) == ["reason", "scope.cities", "scope.towns", "x"])
        response = try await app.send(.post, path, token: "editor", body: #"{"reason": "a", "reason": "b"}"#)
        #expect(response.status == .badRequest)
    }

    @Test func bodiesOverTheLimitAre413() async throws {
        let app = try await TestApp.make(configuration: ServerConfiguration(port: 0, maximumBodySize: 64))
        defer { app.close() }
        let reason = String(repeating: "x", count: 100)
        let response = try await app.send(
            .post, "/v1/namespaces/rider/flags/plugin_switch_map_traffic/disable", token: "editor",
            body: #"{"reason": "\#(reason)"}"#)
        #expect(response.status == .contentTooLarge)
        #expect(response.headers[.contentType] == "application/problem+json")
    }

    @Test func everyResponseHasARequestIdAndAGivenOneIsKept() async throws {
        let app = try await TestApp.make()
        defer { app.close() }
        let generated = try await app.send(.get, "/healthz")
        #expect(generated.headers[.init("X-Request-Id")!]?.count == 16)
        let given = try await app.send(.get, "/v1/nothing", headers: [.init("X-Request-Id")!: "trace-42"])
        #expect(given.headers[.init("X-Request-Id")!] == "trace-42")
        #expect(given.json["request_id"] == .string("trace-42"))
        let hostile = try await app.send(.get, "/healthz", headers: [.init("X-Request-Id")!: "a b\u{7F}"])
        #expect(hostile.headers[.init("X-Request-Id")!] != "a b\u{7F}")
    }
}

/// `/healthz`, `/readyz`, `/metrics`, `/openapi.yaml`.
struct OperationsRouteTests {
    @Test func healthReadinessAndTheOpenAPIDocumentAreOpen() async throws {
        let app = try await TestApp.make()
        defer { app.close() }
        #expect(try await app.send(.get, "/healthz").json["status"] == .string("ok"))
        #expect(try await app.send(.get, "/readyz").json["status"] == .string("ready"))
        #expect(try await app.send(.get, "/readyz").json["database"] == .string("ok"))
        let document = try await app.send(.get, "/openapi.yaml")
        #expect(document.status == .ok)
        #expect(document.text.hasPrefix("openapi: 3.1"))
    }

    @Test func readinessReportsDegradedWhenTheDatabaseIsClosedSoReadsKeepBeingRouted() async throws {
        let app = try await TestApp.make()
        defer { app.close() }
        try app.store.close()
        let response = try await app.send(.get, "/readyz")
        #expect(response.status == .ok)
        #expect(response.json["status"] == .string("degraded"))
        #expect(response.json["database"] == .string("unavailable"))
        #expect(response.json["namespaces"] == .int(1))
        #expect(response.json["detail"]?.stringValue?.contains("503") == true)
    }

    /// The open `/readyz` and every problem document say what failed, never where the database is or what it said.
    @Test func storageFailuresNeverNameTheDatabaseOrQuoteIt() async throws {
        let app = try await TestApp.make()
        defer { app.close() }
        try app.store.close()
        let responses = [
            try await app.send(.get, "/readyz"),
            try await app.send(.post, "/v1/namespaces/rider/flags/plugin_switch_map_traffic/disable", token: "editor"),
            try await app.send(.get, "/v1/audit", token: "editor"),
            try await app.send(.get, "/v1/tokens", token: "admin"),
        ]
        #expect(responses.dropFirst().allSatisfy { $0.status == .serviceUnavailable })
        for response in responses {
            for leak in [app.folder.path, "flags.sqlite", "SQLite", "Connection is closed", "error 21"] {
                #expect(!response.text.contains(leak), "\(response.text)")
            }
        }
    }

    @Test func readinessFailsWhileShuttingDown() async throws {
        let app = try await TestApp.make()
        defer { app.close() }
        app.hub.shutdown()
        let response = try await app.send(.get, "/readyz")
        #expect(response.status == .serviceUnavailable)
    }

    @Test func metricsCountRequestsChangesWaitersVersionsAndAuthFailures() async throws {
        let app = try await TestApp.make()
        defer { app.close() }
        _ = try await app.send(.get, "/v1/namespaces/rider/snapshot")
        _ = try await app.send(.post, "/v1/namespaces/rider/flags/plugin_switch_map_traffic/disable", token: "editor")
        let text = try await app.send(.get, "/metrics", token: "metrics").text
        #expect(
            text.contains(
                #"flagsd_http_requests_total{method="POST",route="/v1/namespaces/{namespace}/flags/{key}/disable",status="200"} 1"#
            ))
        #expect(text.contains(#"flagsd_auth_failures_total{reason="missing"} 1"#))
        #expect(text.contains(#"flagsd_changes_total{namespace="rider",source="api"} 1"#))
        #expect(text.contains(#"flagsd_namespace_version{namespace="rider"} 2"#))
        #expect(text.contains("flagsd_long_poll_waiters 0"))
        #expect(text.contains("flagsd_http_request_duration_seconds_bucket"))
        #expect(text.contains("flagsd_change_commit_duration_seconds"))
        #expect(!text.contains("sy_"))
    }

    /// A change, a namespace created and a revert take the one write path: each is counted, timed and delivered.
    @Test func everyKindOfWriteIsCountedTimedAndDelivered() async throws {
        let app = try await TestApp.make()
        defer { app.close() }
        #expect(
            try await app.send(.post, "/v1/namespaces/rider/flags/plugin_switch_map_traffic/disable", token: "editor")
                .status == .ok)
        #expect(
            try await app.send(.post, "/v1/namespaces", token: "admin", body: #"{"name": "driver"}"#).status == .created
        )
        #expect(try await app.send(.post, "/v1/namespaces/rider/changes/2/revert", token: "editor").status == .ok)
        #expect(app.hub.snapshot(of: "rider")?.version == 3)
        #expect(app.hub.snapshot(of: "driver")?.version == 1)
        let text = try await app.send(.get, "/metrics", token: "metrics").text
        #expect(
            text.contains("flagsd_change_commit_duration_seconds_count 3"),
            "\(text.split(separator: "\n").filter { $0.contains("commit_duration_seconds_count") })")
        #expect(text.contains(#"flagsd_changes_total{namespace="rider",source="api"} 2"#))
        #expect(text.contains(#"flagsd_changes_total{namespace="driver",source="api"} 1"#))
        #expect(try await app.send(.delete, "/v1/namespaces/driver", token: "admin").status == .noContent)
        #expect(app.hub.snapshot(of: "driver") == nil)
    }

    /// Client tokens are public, and metrics cover every namespace: by default a metrics token, or an editor's or
    /// admin's valid in every namespace; `--open-metrics` opens them to anyone.
    @Test func metricsRequireAMetricsOrUnrestrictedEditorTokenUnlessOpened() async throws {
        let app = try await TestApp.make()
        defer { app.close() }
        #expect(try await app.send(.get, "/metrics").status == .unauthorized)
        for token in ["metrics", "editor", "admin"] {
            #expect(try await app.send(.get, "/metrics", token: token).status == .ok, "\(token)")
        }
        for token in ["client", "rider-client", "other-editor", "rider-admin"] {
            let response = try await app.send(.get, "/metrics", token: token)
            #expect(response.status == .forbidden, "\(token)")
            #expect(response.json["detail"]?.stringValue?.contains("--role metrics") == true, "\(response.text)")
        }
        let open = try await TestApp.make(configuration: ServerConfiguration(port: 0, openMetrics: true))
        defer { open.close() }
        #expect(try await open.send(.get, "/metrics").status == .ok)
        #expect(try await open.send(.get, "/metrics", token: "client").status == .ok)
    }
}
