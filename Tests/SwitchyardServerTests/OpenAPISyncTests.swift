import Foundation
import HTTPTypes
@testable import SwitchyardServer
import TestSupport
import Testing

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

    @Test func everyRouteIsDocumentedAndEveryDocumentedRouteIsServed() async throws {
        let app = try await TestApp.make()
        defer { app.close() }
        let served = Set(app.server.routeList.map { "\($0.method) \($0.path)" })
        let documented = Self.operations(in: try String(contentsOf: Self.documentURL, encoding: .utf8))
        #expect(served.subtracting(documented).sorted() == [], "routes missing from docs/openapi.yaml")
        #expect(documented.subtracting(served).sorted() == [], "documented operations no route serves")
        #expect(served.count > 25)
    }

    @Test(.enabled(if: Repository.pythonIsAvailable, "needs python3 (scripts/check-openapi sets up its validator in .build/check-venv)"))
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

    /// The checker fails where tooling would: a plain scalar holding `: ` (what once kept standard parsers from
    /// loading the document at all), and a document missing what OpenAPI requires.
    @Test(.enabled(if: Repository.pythonIsAvailable, "needs python3 (scripts/check-openapi sets up its validator in .build/check-venv)"))
    func theCheckerRejectsWhatStandardToolsCannotRead() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("openapi-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let unquoted = folder.appendingPathComponent("unquoted.yaml")
        try Data("openapi: 3.1.0\ninfo:\n  title: t\n  version: '1'\n  description: Sent with (`Cache-Control: no-cache`).\npaths: {}\n".utf8).write(to: unquoted)
        let unversioned = folder.appendingPathComponent("unversioned.yaml")
        try Data("openapi: 3.1.0\ninfo:\n  title: t\npaths: {}\n".utf8).write(to: unversioned)
        let result = try await Repository.runScript("scripts/check-openapi", [unquoted.path, unversioned.path])
        #expect(result.status == 1)
        #expect(result.output.contains("unquoted.yaml: not valid YAML: mapping values are not allowed here"), "\(result.output)")
        #expect(result.output.contains("unversioned.yaml: info: 'version' is a required property"), "\(result.output)")
    }
}
