import Foundation
@testable import SwitchyardServer
import Testing

/// docs/openapi.yaml describes exactly the routes the router serves, and flagsd serves that file.
struct OpenAPISyncTests {
    static let documentURL = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("docs/openapi.yaml")

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

    @Test func theServedDocumentIsDocsOpenAPI() throws {
        let file = try String(contentsOf: Self.documentURL, encoding: .utf8)
        #expect(OpenAPIDocument.yaml + "\n" == file, "run scripts/sync-openapi after editing docs/openapi.yaml")
    }
}
