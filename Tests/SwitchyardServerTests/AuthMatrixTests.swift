import HTTPTypes
import SwitchyardServer
import SwitchyardStorage
import SwitchyardWire
import Testing

/// Every route × no token, metrics, client, reporter, editor, admin and a revoked token, as PRODUCT.md "Access" says.
struct AuthMatrixTests {
    /// A route, a concrete request to it, and the least role it needs (nil: open).
    struct Case: Sendable, CustomTestStringConvertible {
        let method: HTTPRequest.Method
        let template: String
        let path: String
        let role: Role?
        var namespaced = true
        var body = "{}"
        var headers: HTTPFields = [:]
        /// The path names something a fresh namespace does not have (a crash guard proposal): an authorized request
        /// gets 404, which shows it passed the access check.
        var missing = false
        /// The roles let in, for a route outside the chain of roles (`/metrics`: a metrics token, or an unrestricted
        /// editor's or admin's, but no client's or reporter's); nil: `role` and every role above it.
        var only: Set<Role>?

        /// OFREP routes answer errors with OFREP bodies, every other route with problem+json.
        var errorContentType: String { template.hasPrefix("/ofrep/") ? "application/json" : "application/problem+json" }

        var testDescription: String { "\(method.rawValue) \(template)" }
    }

    static let ns = "/v1/namespaces/{namespace}"
    static let cases: [Case] =
        [
            Case(method: .get, template: "/healthz", path: "/healthz", role: nil, namespaced: false),
            Case(method: .get, template: "/readyz", path: "/readyz", role: nil, namespaced: false),
            Case(
                method: .get, template: "/metrics", path: "/metrics", role: .metrics, namespaced: false,
                only: [.metrics, .editor, .admin]),
            Case(method: .get, template: "/openapi.yaml", path: "/openapi.yaml", role: nil, namespaced: false),
            Case(method: .get, template: "/console", path: "/console/", role: nil, namespaced: false),
            Case(method: .get, template: "/console/{asset}", path: "/console/app.js", role: nil, namespaced: false),
            Case(method: .get, template: "/v1/namespaces", path: "/v1/namespaces", role: .editor, namespaced: false),
            Case(
                method: .post, template: "/v1/namespaces", path: "/v1/namespaces", role: .admin, namespaced: false,
                body: #"{"name": "driver"}"#),
            Case(method: .get, template: ns, path: "/v1/namespaces/rider", role: .editor),
            Case(
                method: .patch, template: ns, path: "/v1/namespaces/rider", role: .admin,
                body: #"{"reason_policy": "never"}"#),
            Case(method: .delete, template: ns, path: "/v1/namespaces/rider", role: .admin),
            Case(method: .get, template: "\(ns)/snapshot", path: "/v1/namespaces/rider/snapshot", role: .client),
            Case(method: .get, template: "\(ns)/changes", path: "/v1/namespaces/rider/changes", role: .client),
            Case(
                method: .get, template: "\(ns)/changes/{version}", path: "/v1/namespaces/rider/changes/1", role: .client
            ),
            Case(
                method: .post, template: "\(ns)/events", path: "/v1/namespaces/rider/events", role: .client,
                body: #"{"events": []}"#),
            Case(method: .get, template: "\(ns)/guard", path: "/v1/namespaces/rider/guard", role: .editor),
            Case(method: .get, template: "\(ns)/guard/trips", path: "/v1/namespaces/rider/guard/trips", role: .editor),
            Case(
                method: .get, template: "\(ns)/guard/proposals", path: "/v1/namespaces/rider/guard/proposals",
                role: .editor),
            Case(method: .get, template: "\(ns)/series", path: "/v1/namespaces/rider/series", role: .editor),
            Case(
                method: .post, template: "\(ns)/guard/proposals/{id}/apply",
                path: "/v1/namespaces/rider/guard/proposals/7/apply", role: .editor,
                missing: true),
            Case(
                method: .post, template: "\(ns)/guard/proposals/{id}/dismiss",
                path: "/v1/namespaces/rider/guard/proposals/7/dismiss", role: .editor,
                body: #"{"reason": "matrix"}"#, missing: true),
            Case(
                method: .get, template: "\(ns)/experiments/{key}",
                path: "/v1/namespaces/rider/experiments/checkout_button", role: .editor),
            Case(
                method: .get, template: "\(ns)/experiments/{key}/units",
                path: "/v1/namespaces/rider/experiments/checkout_button/units", role: .editor),
            Case(method: .get, template: "\(ns)/releases", path: "/v1/namespaces/rider/releases", role: .editor),
            Case(
                method: .post, template: "\(ns)/flags/{key}/release/proposals/{id}/confirm",
                path: "/v1/namespaces/rider/flags/plugin_switch_map_traffic/release/proposals/7/confirm", role: .editor,
                missing: true),
            Case(
                method: .post, template: "\(ns)/flags/{key}/release/proposals/{id}/dismiss",
                path: "/v1/namespaces/rider/flags/plugin_switch_map_traffic/release/proposals/7/dismiss", role: .editor,
                body: #"{"reason": "matrix"}"#, missing: true),
            Case(
                method: .get, template: "\(ns)/flags/{key}/release",
                path: "/v1/namespaces/rider/flags/plugin_switch_map_traffic/release",
                role: .editor, missing: true),
            Case(
                method: .post, template: "\(ns)/flags/{key}/release/start",
                path: "/v1/namespaces/rider/flags/plugin_switch_map_traffic/release/start",
                role: .editor, body: #"{"plan": {"stages": [{"rollout": 100}]}}"#),
        ]
        + ["pause", "resume", "advance", "abort"].map { action in
            // The fresh namespace's switches have no plan: an authorized request gets 404.
            Case(
                method: .post, template: "\(ns)/flags/{key}/release/\(action)",
                path: "/v1/namespaces/rider/flags/plugin_switch_map_traffic/release/\(action)", role: .editor,
                missing: true)
        } + [
            Case(
                method: .post, template: "\(ns)/changes/{version}/revert",
                path: "/v1/namespaces/rider/changes/1/revert", role: .editor),
            Case(method: .get, template: "\(ns)/flag-set", path: "/v1/namespaces/rider/flag-set", role: .editor),
            Case(
                method: .put, template: "\(ns)/flag-set", path: "/v1/namespaces/rider/flag-set", role: .editor,
                body: #"{"flag_set": \#(Fixtures.riderJSON())}"#),
            Case(method: .get, template: "\(ns)/flags", path: "/v1/namespaces/rider/flags", role: .editor),
            Case(
                method: .post, template: "\(ns)/flags", path: "/v1/namespaces/rider/flags", role: .editor,
                body: #"{"key": "plugin_switch_x", "flag": {}}"#),
            Case(
                method: .get, template: "\(ns)/flags/{key}",
                path: "/v1/namespaces/rider/flags/plugin_switch_map_traffic", role: .editor),
            Case(
                method: .put, template: "\(ns)/flags/{key}",
                path: "/v1/namespaces/rider/flags/plugin_switch_map_traffic", role: .editor,
                body: #"{"flag": {"rollout": 5}}"#),
            Case(
                method: .delete, template: "\(ns)/flags/{key}", path: "/v1/namespaces/rider/flags/checkout_button",
                role: .editor),
            Case(
                method: .post, template: "\(ns)/flags/{key}/enable",
                path: "/v1/namespaces/rider/flags/plugin_switch_map_traffic/enable", role: .editor),
            Case(
                method: .post, template: "\(ns)/flags/{key}/disable",
                path: "/v1/namespaces/rider/flags/plugin_switch_map_traffic/disable", role: .editor),
            Case(
                method: .post, template: "\(ns)/flags/{key}/rollout",
                path: "/v1/namespaces/rider/flags/plugin_switch_map_traffic/rollout", role: .editor,
                body: #"{"rollout": 5}"#),
            Case(
                method: .post, template: "\(ns)/flags/{key}/targeting",
                path: "/v1/namespaces/rider/flags/plugin_switch_map_traffic/targeting", role: .editor,
                body: #"{"add": {"cities": ["paris"]}}"#),
            Case(
                method: .get, template: "\(ns)/kill-switches", path: "/v1/namespaces/rider/kill-switches", role: .editor
            ),
            Case(
                method: .post, template: "\(ns)/kill-switches/{key}/kill",
                path: "/v1/namespaces/rider/kill-switches/master/kill", role: .editor,
                body: #"{"reason": "matrix"}"#),
            Case(
                method: .post, template: "\(ns)/kill-switches/{key}/revive",
                path: "/v1/namespaces/rider/kill-switches/master/revive", role: .editor),
            Case(method: .get, template: "/v1/audit", path: "/v1/audit", role: .editor, namespaced: false),
            Case(method: .get, template: "/v1/tokens", path: "/v1/tokens", role: .admin, namespaced: false),
            Case(
                method: .post, template: "/v1/tokens", path: "/v1/tokens", role: .admin, namespaced: false,
                body: #"{"name": "matrix", "role": "client", "namespaces": ["rider"]}"#),
            Case(
                method: .delete, template: "/v1/tokens/{token}", path: "/v1/tokens/client", role: .admin,
                namespaced: false),
            Case(
                method: .post, template: "/ofrep/v1/evaluate/flags", path: "/ofrep/v1/evaluate/flags", role: .client,
                body: #"{"context": {"targetingKey": "u"}}"#,
                headers: [HTTPField.Name("X-Switchyard-Namespace")!: "rider"]),
            Case(
                method: .post, template: "/ofrep/v1/evaluate/flags/{key}",
                path: "/ofrep/v1/evaluate/flags/plugin_switch_feed_weather",
                role: .client, body: #"{"context": {"targetingKey": "u"}}"#,
                headers: [HTTPField.Name("X-Switchyard-Namespace")!: "rider"]),
        ]

    @Test(arguments: cases)
    func accessFollowsTheRoleTheRouteNeeds(route: Case) async throws {
        for (token, role) in [
            (nil, nil), ("metrics", Role.metrics), ("client", .client), ("reporter", .reporter), ("editor", .editor),
            ("admin", .admin),
            ("revoked", nil),
        ] as [(String?, Role?)] {
            let app = try await TestApp.make()
            defer { app.close() }
            let response = try await app.send(
                route.method, route.path, token: token, headers: route.headers, body: route.body)
            let who = token ?? "no token"
            guard let needed = route.role else {
                #expect(response.status.kind == .successful, "\(who): \(response.status)")
                continue
            }
            if role == nil {
                #expect(response.status == .unauthorized, "\(who): \(response.status) \(response.text)")
                #expect(response.headers[.wwwAuthenticate]?.hasPrefix("Bearer") == true)
            } else if let only = route.only {
                #expect(
                    only.contains(role!) ? response.status.kind == .successful : response.status == .forbidden,
                    "\(who): \(response.status)")
            } else if role! < needed {
                #expect(response.status == .forbidden, "\(who): \(response.status) \(response.text)")
            } else if route.missing {
                #expect(response.status == .notFound, "\(who): \(response.status) \(response.text)")
            } else {
                #expect(response.status.kind == .successful, "\(who): \(response.status) \(response.text)")
            }
            #expect(response.status.kind == .successful || response.headers[.contentType] == route.errorContentType)
        }
    }

    @Test(arguments: cases.filter { $0.namespaced })
    func aTokenLimitedToAnotherNamespaceIsRefused(route: Case) async throws {
        let app = try await TestApp.make()
        defer { app.close() }
        let response = try await app.send(
            route.method, route.path, token: "other-editor", headers: route.headers, body: route.body)
        #expect(response.status == .forbidden, "\(response.text)")
        if route.role == .client {
            let allowed = try await app.send(
                route.method, route.path, token: "rider-client", headers: route.headers, body: route.body)
            #expect(allowed.status.kind == .successful)
        }
    }

    @Test func theBearerSchemeIsCaseInsensitiveAndSpacesAreTrimmed() async throws {
        let app = try await TestApp.make()
        defer { app.close() }
        let secret = try #require(app.tokens["client"])
        for header in ["Bearer \(secret)", "bearer \(secret)", "BEARER   \(secret)  "] {
            let response = try await app.send(.get, "/v1/namespaces/rider/snapshot", headers: [.authorization: header])
            #expect(response.status == .ok, "\(header)")
        }
        for header in ["Basic \(secret)", "Bearer", "Bearer ", "\(secret)", "Bearer\(secret)", "Bearer x\(secret)"] {
            let response = try await app.send(.get, "/v1/namespaces/rider/snapshot", headers: [.authorization: header])
            #expect(response.status == .unauthorized, "\(header)")
        }
    }

    @Test func theMatrixCoversEveryRoute() async throws {
        let app = try await TestApp.make()
        defer { app.close() }
        let served = Set(app.server.routeList.map { "\($0.method) \($0.path)" })
        let covered = Set(Self.cases.map { "\($0.method.rawValue) \($0.template)" })
        #expect(served == covered)
    }
}
