import Foundation
import HTTPTypes
import SwitchyardCore
import SwitchyardSQLite
import SwitchyardStorage
import SwitchyardWire
import Testing

@testable import SwitchyardServer

/// Every status code of the OFREP spec, over loopback HTTP to the real server on a free port: 200, 304, 400,
/// 401, 403, 404, 429 and 500, plus 405 for undeclared methods; every error with an OFREP body.
struct OFREPWireTests {
    @Test func everyStatusCodeOfTheSpecArrivesWithItsHeadersAndBody() async throws {
        var configuration = ServerConfiguration(port: 0, defaultNamespace: "shop")
        configuration.tokenCacheMaximumAge = .zero
        let app = try await TestApp.makeOFREP(configuration: configuration)
        defer { app.close() }
        let client = try #require(app.tokens["client"])
        let limited = try await app.issueToken("limited", rate: 1)
        let shopOnly = try await app.issueToken("shop-only", namespaces: ["shop"])

        try await app.withLiveServer { base in
            let web = LiveClient(base: base, token: nil)
            let single = "/ofrep/v1/evaluate/flags/plugin_switch_banner"
            let bulk = "/ofrep/v1/evaluate/flags"
            let unit = #"{"context": {"targetingKey": "u1"}}"#
            func post(
                _ path: String, _ headers: [String: String], body: String = #"{"context": {"targetingKey": "u1"}}"#
            ) async throws -> TestResponse {
                try await web.send("POST", path, headers: headers, body: body)
            }
            func expectOFREPError(
                _ response: TestResponse, _ status: HTTPResponse.Status, _ code: String, _ comment: Comment
            ) {
                #expect(response.status == status, comment)
                #expect(response.headers[.contentType] == "application/json", comment)
                #expect(response.json["errorCode"] == .string(code), comment)
                #expect(response.json["errorDetails"]?.stringValue?.isEmpty == false, comment)
            }

            // 200, by Bearer and by X-API-Key.
            let ok = try await post(single, ["Authorization": "Bearer \(client)"])
            #expect(ok.status == .ok)
            #expect(ok.json["value"] == .bool(true))
            #expect(try await post(single, ["X-API-Key": client]).status == .ok)
            let all = try await post(bulk, ["X-API-Key": client], body: unit)
            #expect(all.status == .ok)
            let tag = try #require(all.headers[.eTag])

            // 304 with the tag, no body.
            let notModified = try await post(bulk, ["X-API-Key": client, "If-None-Match": tag], body: unit)
            #expect(notModified.status == .notModified)
            #expect(notModified.body.isEmpty)
            #expect(notModified.headers[.eTag] == tag)

            // 400, 401, 403, 404, 405.
            expectOFREPError(
                try await post(single, ["X-API-Key": client], body: "{"), .badRequest, "PARSE_ERROR", "bad JSON")
            expectOFREPError(
                try await post(
                    "/ofrep/v1/evaluate/flags/plugin_switch_half", ["X-API-Key": client], body: #"{"context": {}}"#),
                .badRequest, "TARGETING_KEY_MISSING", "no targeting key")
            expectOFREPError(
                try await post(bulk, ["X-API-Key": client], body: #"{"context": 7}"#), .badRequest, "INVALID_CONTEXT",
                "bulk context")
            let unauthorized = try await post(single, [:])
            expectOFREPError(unauthorized, .unauthorized, "GENERAL", "no token")
            #expect(unauthorized.headers[.wwwAuthenticate] == "Bearer realm=\"flagsd\"")
            expectOFREPError(
                try await post(bulk, ["X-API-Key": "sy_client_nope"]), .unauthorized, "GENERAL", "bad bulk token")
            expectOFREPError(
                try await post(single, ["X-API-Key": shopOnly, "X-Switchyard-Namespace": "rider"]), .forbidden,
                "GENERAL", "other namespace")
            expectOFREPError(
                try await post(bulk, ["X-API-Key": shopOnly, "X-Switchyard-Namespace": "rider"]), .forbidden, "GENERAL",
                "bulk other namespace")
            let notFound = try await post("/ofrep/v1/evaluate/flags/plugin_switch_nope", ["X-API-Key": client])
            expectOFREPError(notFound, .notFound, "FLAG_NOT_FOUND", "unknown flag")
            #expect(notFound.json["key"] == .string("plugin_switch_nope"))
            let wrongMethod = try await web.send("GET", single, headers: ["X-API-Key": client])
            expectOFREPError(wrongMethod, .methodNotAllowed, "GENERAL", "GET")
            #expect(wrongMethod.headers[.allow] == "POST")

            // 429 with Retry-After in whole seconds.
            #expect(try await post(single, ["X-API-Key": limited]).status == .ok)
            let tooMany = try await post(bulk, ["X-API-Key": limited])
            expectOFREPError(tooMany, .tooManyRequests, "GENERAL", "over the rate")
            #expect(
                tooMany.headers[.retryAfter].flatMap(Int.init).map { (1...60).contains($0) } == true,
                "Retry-After: \(tooMany.headers[.retryAfter] ?? "missing")")

            // 500: the store fails while a token the server never loaded is checked.
            let unseen = try await app.store.issueToken(
                name: "unseen", role: .client, namespaces: nil,
                by: ChangeAuthor(actor: "setup", source: .api)
            ).secret
            try app.store.close()
            for path in [single, bulk] {
                let failed = try await post(path, ["X-API-Key": unseen])
                #expect(failed.status == .internalServerError)
                #expect(failed.headers[.contentType] == "application/json")
                #expect(failed.json["errorDetails"]?.stringValue?.contains("request id") == true, "\(failed.text)")
            }
        }
    }
}
