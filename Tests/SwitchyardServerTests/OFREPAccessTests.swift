import Foundation
import HTTPTypes
import SwitchyardCore
import SwitchyardSQLite
import SwitchyardStorage
import SwitchyardWire
import Testing

@testable import SwitchyardServer

/// OFREP's tokens (`Authorization: Bearer` or `X-API-Key`), namespace selection (PRODUCT.md "Access"), request
/// rates, and failures, each answered with an OFREP body.
struct OFREPAccessTests {
    @Test func aTokenIsAcceptedAsBearerOrAsXAPIKey() async throws {
        let app = try await TestApp.makeOFREP()
        defer { app.close() }
        let secret = try #require(app.tokens["client"])
        let bearer = try await app.evaluate(
            "plugin_switch_banner", token: nil, headers: [.authorization: "Bearer \(secret)"])
        #expect(bearer.status == .ok)
        let apiKey = try await app.evaluate("plugin_switch_banner", token: nil, headers: [.testAPIKey: secret])
        #expect(apiKey.status == .ok)
        let bulk = try await app.evaluateAll(token: nil, headers: [.testAPIKey: " \(secret) "])
        #expect(bulk.status == .ok)
        // Every role includes the client role.
        for token in ["editor", "admin"] {
            #expect(try await app.evaluate("plugin_switch_banner", token: token).status == .ok)
        }
    }

    @Test func missingUnknownAndRevokedTokensAre401WithAnOFREPBody() async throws {
        let app = try await TestApp.makeOFREP()
        defer { app.close() }
        let revoked = try #require(app.tokens["revoked"])
        let cases: [(HTTPFields, String)] = [
            ([:], "send 'Authorization: Bearer <token>' or 'X-API-Key: <token>'"),
            ([.authorization: "Basic dXNlcjpwYXNz"], "send 'Authorization: Bearer <token>' or 'X-API-Key: <token>'"),
            ([.authorization: "Bearer sy_client_wrong"], "the bearer token is not valid"),
            ([.testAPIKey: "sy_client_wrong"], "the X-API-Key is not valid"),
            ([.testAPIKey: revoked], "was revoked"),
            ([.authorization: "Bearer \(revoked)"], "was revoked"),
        ]
        for (headers, details) in cases {
            for path in ["/ofrep/v1/evaluate/flags/plugin_switch_banner", "/ofrep/v1/evaluate/flags"] {
                let response = try await app.send(.post, path, headers: headers, body: #"{"context": {}}"#)
                #expect(response.status == .unauthorized, "\(headers) \(path)")
                #expect(response.headers[.wwwAuthenticate]?.hasPrefix("Bearer") == true)
                #expect(response.headers[.contentType] == "application/json")
                #expect(response.json["errorCode"] == .string("GENERAL"))
                #expect(response.json["errorDetails"]?.stringValue?.contains(details) == true, "\(response.text)")
            }
        }
    }

    @Test func aTokenLimitedToOneNamespaceEvaluatesThereAndNowhereElse() async throws {
        let app = try await TestApp.makeOFREP(configuration: ServerConfiguration(port: 0, defaultNamespace: "rider"))
        defer { app.close() }
        let shopOnly = try await app.issueToken("shop-web", namespaces: ["shop"])
        let response = try await app.evaluate("plugin_switch_banner", token: shopOnly)
        #expect(response.status == .ok)
        #expect(response.json["metadata"]?["namespace"] == .string("shop"))
        let same = try await app.evaluate("plugin_switch_banner", token: shopOnly, headers: [.testNamespace: "shop"])
        #expect(same.status == .ok)
        let other = try await app.evaluate("plugin_switch_banner", token: shopOnly, headers: [.testNamespace: "rider"])
        #expect(other.status == .forbidden)
        #expect(other.json["errorCode"] == .string("GENERAL"))
        #expect(other.json["errorDetails"]?.stringValue?.contains("limited to namespace 'shop'") == true)
        let bulk = try await app.evaluateAll(token: shopOnly, headers: [.testNamespace: "rider"])
        #expect(bulk.status == .forbidden)
    }

    @Test func otherTokensEvaluateInTheHeadersNamespaceElseTheServerDefault() async throws {
        let app = try await TestApp.makeOFREP(configuration: ServerConfiguration(port: 0, defaultNamespace: "rider"))
        defer { app.close() }
        let byDefault = try await app.evaluate("plugin_switch_feed_weather")
        #expect(byDefault.status == .ok)
        #expect(byDefault.json["metadata"]?["namespace"] == .string("rider"))
        let byHeader = try await app.evaluate("plugin_switch_banner", headers: [.testNamespace: "shop"])
        #expect(byHeader.json["metadata"]?["namespace"] == .string("shop"))
        let twoNamespaces = try await app.issueToken("two", namespaces: ["rider", "shop"])
        #expect(
            try await app.evaluate("plugin_switch_banner", token: twoNamespaces, headers: [.testNamespace: "shop"])
                .status == .ok)
        #expect(try await app.evaluate("plugin_switch_feed_weather", token: twoNamespaces).status == .ok)
        let elsewhere = try await app.issueToken("elsewhere", namespaces: ["shop", "driver"])
        let refused = try await app.evaluate("plugin_switch_feed_weather", token: elsewhere)
        #expect(refused.status == .forbidden, "the default namespace rider is not among the token's")
        #expect(refused.json["errorDetails"]?.stringValue?.contains("may not use namespace 'rider'") == true)
        let missing = try await app.evaluate("plugin_switch_banner", headers: [.testNamespace: "driver"])
        #expect(missing.status == .badRequest)
        #expect(missing.json["errorCode"] == .string("GENERAL"))
        #expect(
            missing.json["errorDetails"]?.stringValue?.contains(
                "namespace 'driver' (named by X-Switchyard-Namespace) does not exist") == true)
    }

    @Test func withoutAHeaderOrADefaultNamespaceTheRequestSaysHowToNameOne() async throws {
        let app = try await TestApp.makeOFREP(configuration: ServerConfiguration(port: 0))
        defer { app.close() }
        for response in [try await app.evaluate("plugin_switch_banner"), try await app.evaluateAll()] {
            #expect(response.status == .badRequest)
            #expect(response.json["errorCode"] == .string("GENERAL"))
            #expect(response.json["errorDetails"]?.stringValue?.contains("X-Switchyard-Namespace") == true)
            #expect(response.json["errorDetails"]?.stringValue?.contains("--default-namespace") == true)
        }
        #expect(try await app.evaluate("plugin_switch_banner", token: "rider-client").status == .notFound)
    }

    @Test func aTokenOverItsRateGets429WithRetryAfterInWholeSeconds() async throws {
        let app = try await TestApp.makeOFREP()
        defer { app.close() }
        let limited = try await app.issueToken("web", rate: 2)
        #expect(try await app.evaluate("plugin_switch_banner", token: limited).status == .ok)
        #expect(try await app.evaluateAll(token: limited).status == .ok)
        for path in ["/ofrep/v1/evaluate/flags/plugin_switch_banner", "/ofrep/v1/evaluate/flags"] {
            let response = try await app.send(.post, path, token: limited, body: #"{"context": {}}"#)
            #expect(response.status == .tooManyRequests)
            let retryAfter = try #require(response.headers[.retryAfter])
            let seconds = try #require(Int(retryAfter), "Retry-After '\(retryAfter)' must be whole seconds")
            #expect((1...30).contains(seconds))
            #expect(response.json["errorCode"] == .string("GENERAL"))
            #expect(response.json["errorDetails"]?.stringValue?.contains("2 OFREP requests per minute") == true)
        }
        // Other tokens have their own budgets, and the rate applies to OFREP only.
        #expect(try await app.evaluate("plugin_switch_banner").status == .ok)
        let snapshot = try await app.send(.get, "/v1/namespaces/shop/snapshot", token: limited)
        #expect(snapshot.status == .ok)
    }

    @Test func theServersDefaultRateAppliesToTokensWithoutTheirOwn() async throws {
        let app = try await TestApp.makeOFREP(
            configuration: ServerConfiguration(port: 0, defaultNamespace: "shop", ofrepRatePerMinute: 1))
        defer { app.close() }
        #expect(try await app.evaluate("plugin_switch_banner").status == .ok)
        let limited = try await app.evaluate("plugin_switch_banner")
        #expect(limited.status == .tooManyRequests)
        // 60 s at 1 a minute, less the time between the two requests (RateBucketsTests pins the arithmetic).
        let retryAfter = try #require(limited.headers[.retryAfter].flatMap(Int.init))
        #expect((1...60).contains(retryAfter), "Retry-After \(retryAfter)")
        let ownRate = try await app.issueToken("batch", rate: 100)
        for _ in 0..<5 {
            #expect(try await app.evaluate("plugin_switch_banner", token: ownRate).status == .ok)
        }
    }

    @Test func tokensAreCreatedWithARateThroughTheAPI() async throws {
        let app = try await TestApp.makeOFREP()
        defer { app.close() }
        let created = try await app.send(
            .post, "/v1/tokens", token: "admin",
            body: #"{"name": "web", "role": "client", "namespaces": ["shop"], "rate_per_minute": 1}"#)
        #expect(created.status == .created)
        #expect(created.json["rate_per_minute"] == .int(1))
        let secret = try #require(created.json["token"]?.stringValue)
        #expect(try await app.evaluate("plugin_switch_banner", token: secret).status == .ok)
        #expect(try await app.evaluate("plugin_switch_banner", token: secret).status == .tooManyRequests)
        for rate in ["0", "-5", "\"fast\"", "1.5"] {
            let refused = try await app.send(
                .post, "/v1/tokens", token: "admin",
                body: #"{"name": "bad", "role": "client", "namespaces": ["shop"], "rate_per_minute": \#(rate)}"#)
            #expect(refused.status == .badRequest, "\(rate)")
            #expect(refused.problemPaths == ["rate_per_minute"])
        }
    }

    @Test func aStoreFailureIs500WithAnOFREPBody() async throws {
        var configuration = ServerConfiguration(port: 0, defaultNamespace: "shop")
        configuration.tokenCacheMaximumAge = .zero
        let app = try await TestApp.makeOFREP(configuration: configuration)
        defer { app.close() }
        #expect(try await app.evaluate("plugin_switch_banner").status == .ok)
        // Tokens are read from the store on every request now; a closed store fails that read. A token the
        // server never loaded cannot be checked then.
        let unseen = try await app.store.issueToken(
            name: "unseen", role: .client, namespaces: nil,
            by: ChangeAuthor(actor: "setup", source: .api)
        ).secret
        try app.store.close()
        for path in ["/ofrep/v1/evaluate/flags/plugin_switch_banner", "/ofrep/v1/evaluate/flags"] {
            let response = try await app.send(.post, path, token: unseen, body: #"{"context": {}}"#)
            #expect(response.status == .internalServerError, "\(response.text)")
            #expect(response.headers[.contentType] == "application/json")
            #expect(response.json["errorDetails"]?.stringValue?.contains("request id") == true)
        }
        // Degraded mode: tokens already loaded keep evaluating against the snapshots held.
        #expect(try await app.evaluate("plugin_switch_banner").status == .ok)
    }
}
