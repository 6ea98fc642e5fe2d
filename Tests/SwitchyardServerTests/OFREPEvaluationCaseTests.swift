import Foundation
import HTTPTypes
import SwitchyardCore
import Testing

@testable import SwitchyardServer

/// The core's evaluation cases (Tests/SwitchyardCoreTests/Data/evaluation, README there) through OFREP: each
/// file's flag set becomes a namespace, each case a single-flag request and an item of a bulk request.
struct OFREPEvaluationCaseTests {
    static let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("SwitchyardCoreTests/Data/evaluation")

    static var files: [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []).filter { $0.hasSuffix(".json") }
            .sorted()
    }

    /// A case's context in OpenFeature's names.
    static func ofrepContext(_ context: JSONValue?) -> String {
        var object = JSONObject()
        let names =
            [("unit_id", "targetingKey"), ("city", "city"), ("cohorts", "cohorts"), ("platform", "platform")]
            + VersionAttribute.allCases.map { ($0.rawValue, $0.contextKey) }
        for (ours, theirs) in names {
            if let value = context?[ours] { object[theirs] = value }
        }
        return JSONValue.object(object).serializedString()
    }

    @Test(arguments: files)
    func everyCaseAnswersAsTheEngineDecides(file: String) async throws {
        let document = try JSONValue.parse(Array(try Data(contentsOf: Self.folder.appendingPathComponent(file))))
        let flagSet = try #require(document["flag_set"])
        let namespace = try #require(flagSet["namespace"]?.stringValue)
        let app = try await TestApp.make(namespaces: [])
        defer { app.close() }
        let created = try await app.send(
            .post, "/v1/namespaces", token: "admin",
            body: #"{"name": "\#(namespace)", "reason_policy": "never", "flag_set": \#(flagSet.serializedString())}"#)
        try #require(created.status == .created, "\(created.text)")
        let headers: HTTPFields = [.testNamespace: namespace]

        for testCase in document["cases"]?.arrayValue ?? [] where (testCase["ask"]?.stringValue ?? "flag") == "flag" {
            let description = "\(file): \(testCase["description"]?.stringValue ?? "")"
            let key = try #require(testCase["flag"]?.stringValue)
            let expected = try #require(testCase["expected"])
            let context = Self.ofrepContext(testCase["context"])
            let response = try await app.evaluate(key, context: context, headers: headers)
            let bulk = try await app.evaluateAll(context: context, headers: headers)
            let item = bulk.json["flags"]?.arrayValue?.first { $0["key"] == .string(key) }

            switch expected["error_code"]?.stringValue {
            case "FLAG_NOT_FOUND":
                #expect(response.status == .notFound, "\(description)")
                #expect(response.json["errorCode"] == .string("FLAG_NOT_FOUND"), "\(description)")
                #expect(item == nil, "\(description)")
            case "TARGETING_KEY_MISSING":
                #expect(response.status == .badRequest, "\(description)")
                #expect(response.json["errorCode"] == .string("TARGETING_KEY_MISSING"), "\(description)")
                #expect(item?["errorCode"] == .string("TARGETING_KEY_MISSING"), "\(description)")
            case let code?:
                Issue.record("\(description): no OFREP expectation for \(code)")
            case nil:
                #expect(response.status == .ok, "\(description): \(response.text)")
                let reason = expected["reason"]?.stringValue == "DEFAULT" ? "STATIC" : expected["reason"]?.stringValue
                #expect(response.json["reason"]?.stringValue == reason, "\(description)")
                #expect(response.json["variant"] == expected["variant"], "\(description)")
                let isExperiment = flagSet["flags"]?[key]?["type"] == .string("experiment")
                if isExperiment && reason == "DISABLED" {
                    #expect(
                        response.json["value"] == nil, "\(description): a killed experiment defers to the code default")
                } else {
                    #expect(response.json["value"] == expected["value"], "\(description)")
                    // Integral floats keep their decimal point on the wire.
                    if let literal = expected["value"].map({ $0.serializedString() }) {
                        #expect(response.text.contains(#""value":\#(literal)"#), "\(description): \(response.text)")
                    }
                }
                #expect(
                    response.json["metadata"]?["bucket"] == (expected["bucket"].flatMap { $0 == .null ? nil : $0 }),
                    "\(description)")
                #expect(item?["reason"] == response.json["reason"], "\(description)")
                #expect(item?["variant"] == response.json["variant"], "\(description)")
                #expect(item?["value"] == response.json["value"], "\(description)")
            }
        }
    }
}
