import Foundation
import HTTPTypes
import SwitchyardCore
import SwitchyardFlagFiles
import SwitchyardSQLite
import SwitchyardStorage
import SwitchyardWire
import Testing

@testable import SwitchyardServer

/// The OFREP test namespace `shop` (Tests/ofrep-python/Flags/shop.yaml, which the OpenFeature client test seeds
/// flagsd with too): every value type, every reason, killed flags, flags that need a targeting key.
enum OFREPFixtures {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().path
    static let flagsDirectory = repository + "/Tests/ofrep-python/Flags"

    static func shop() throws -> FlagSet {
        let directory = FlagDirectory(reading: flagsDirectory)
        #expect(directory.problems.isEmpty, "\(directory.problems)")
        return try #require(directory.file(namespace: "shop")).flagSet
    }
}

extension TestApp {
    /// A test app with namespaces `rider` (Fixtures.rider) and `shop` (OFREPFixtures.shop), `shop` as the
    /// default namespace unless the configuration says otherwise.
    static func makeOFREP(configuration: ServerConfiguration = ServerConfiguration(port: 0, defaultNamespace: "shop"))
        async throws -> TestApp
    {
        let app = try await TestApp.make(configuration: configuration)
        let created = try await app.store.createNamespace(
            try OFREPFixtures.shop(), reasonPolicy: .never,
            request: ChangeRequest(author: ChangeAuthor(actor: "setup", source: .api)))
        app.hub.publish(created.state)
        return app
    }

    /// Issues a token in the store and reloads the token cache; returns its secret.
    func issueToken(_ name: String, role: Role = .client, namespaces: [String]? = nil, rate: Int? = nil) async throws
        -> String
    {
        let secret = try await store.issueToken(
            name: name, role: role, namespaces: namespaces, ratePerMinute: rate,
            by: ChangeAuthor(actor: "setup", source: .api)
        ).secret
        try await server.context.auth.reload()
        return secret
    }

    /// `POST /ofrep/v1/evaluate/flags/{key}` with a context (JSON text), as `token` (a name or a secret).
    func evaluate(_ key: String, context: String = "{}", token: String? = "client", headers: HTTPFields = [:])
        async throws -> TestResponse
    {
        try await send(
            .post, "/ofrep/v1/evaluate/flags/\(key)", token: token, headers: headers, body: #"{"context": \#(context)}"#
        )
    }

    /// `POST /ofrep/v1/evaluate/flags` with a context (JSON text).
    func evaluateAll(context: String = "{}", token: String? = "client", headers: HTTPFields = [:]) async throws
        -> TestResponse
    {
        try await send(
            .post, "/ofrep/v1/evaluate/flags", token: token, headers: headers, body: #"{"context": \#(context)}"#)
    }
}

extension TestResponse {
    /// The members of a JSON object body, sorted (to check that a member is absent, not `null`).
    var memberKeys: [String] { json.objectValue?.memberKeys.sorted() ?? [] }
}

extension HTTPField.Name {
    static let testAPIKey = HTTPField.Name("X-API-Key")!
    static let testNamespace = HTTPField.Name("X-Switchyard-Namespace")!
}
