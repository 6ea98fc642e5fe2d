import Foundation
import HTTPTypes
import SwitchyardConsole
import SwitchyardCore
import Testing

@testable import SwitchyardServer

/// flagsd serves the web console at /console/: the page and its files with their content types, the security
/// headers, caching by version and entity tag, gzip; nothing else under /console.
struct ConsoleRouteTests {
    /// The files index.html names (`src`/`href` with `?v=`), in order.
    static func linkedFiles(_ html: String) -> [(name: String, version: String)] {
        let pattern = try! NSRegularExpression(pattern: #"(?:src|href)="([A-Za-z0-9._-]+)\?v=([^"]*)""#)
        return pattern.matches(in: html, range: NSRange(html.startIndex..., in: html)).map { match in
            (String(html[Range(match.range(at: 1), in: html)!]), String(html[Range(match.range(at: 2), in: html)!]))
        }
    }

    @Test func consoleWithoutTheSlashRedirectsToThePage() async throws {
        let app = try await TestApp.make()
        defer { app.close() }
        let response = try await app.send(.get, "/console")
        #expect(response.status == .movedPermanently)
        #expect(response.headers[.location] == "console/")
        let withQuery = try await app.send(.get, "/console?from=docs")
        #expect(withQuery.headers[.location] == "console/?from=docs")
    }

    @Test func thePageComesWithItsSecurityHeadersAndIsRevalidated() async throws {
        let app = try await TestApp.make()
        defer { app.close() }
        let response = try await app.send(.get, "/console/")
        #expect(response.status == .ok)
        #expect(response.headers[.contentType] == "text/html; charset=utf-8")
        #expect(response.headers[.cacheControl] == "no-cache")
        #expect(response.headers[.eTag]?.hasPrefix("\"") == true)
        #expect(response.headers[.xContentTypeOptions] == "nosniff")
        #expect(response.headers[HTTPField.Name("X-Frame-Options")!] == "DENY")
        #expect(response.headers[HTTPField.Name("Referrer-Policy")!] == "no-referrer")
        let policy = try #require(response.headers[.contentSecurityPolicy])
        let directives = Set(policy.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces) })
        for directive in [
            "default-src 'none'", "script-src 'self'", "style-src 'self'", "connect-src 'self'",
            "frame-ancestors 'none'", "require-trusted-types-for 'script'", "base-uri 'none'",
        ] {
            #expect(directives.contains(directive), "Content-Security-Policy lacks \(directive): \(policy)")
        }
        #expect(!policy.contains("unsafe"), "no unsafe-inline or unsafe-eval: \(policy)")
        #expect(!policy.contains("http:") && !policy.contains("https:"), "nothing loads from elsewhere: \(policy)")
    }

    @Test func thePageHasNoInlineScriptStyleOrHandlerAndNamesItsFilesByVersion() async throws {
        let app = try await TestApp.make()
        defer { app.close() }
        let html = try await app.send(.get, "/console/").text
        #expect(!html.contains(ConsoleAssets.versionPlaceholder))
        #expect(
            html.range(of: #"<script(?![^>]*\bsrc=)[^>]*>"#, options: .regularExpression) == nil, "an inline script")
        #expect(html.range(of: #"<style"#, options: .regularExpression) == nil, "an inline style sheet")
        #expect(html.range(of: #"\sstyle\s*="#, options: .regularExpression) == nil, "a style attribute")
        #expect(html.range(of: #"\son[a-z]+\s*="#, options: .regularExpression) == nil, "an event handler attribute")
        #expect(
            html.range(of: #"(src|href)="(https?:)?//"#, options: .regularExpression) == nil, "a file from elsewhere")
        let linked = Self.linkedFiles(html)
        #expect(
            Set(linked.map(\.name)).isSuperset(of: [
                "console.css", "dom.js", "api.js", "views.js", "guard.js", "releases.js", "experiments.js", "app.js",
                "favicon.svg",
            ]))
        #expect(Set(linked.map(\.version)).count == 1)
    }

    @Test func everyLinkedFileIsServedWithItsTypeAndCachedForGoodAtItsVersion() async throws {
        let app = try await TestApp.make()
        defer { app.close() }
        let html = try await app.send(.get, "/console/").text
        let types = ["css": "text/css; charset=utf-8", "js": "text/javascript; charset=utf-8", "svg": "image/svg+xml"]
        for (name, version) in Self.linkedFiles(html) {
            let response = try await app.send(.get, "/console/\(name)?v=\(version)")
            #expect(response.status == .ok, "\(name)")
            #expect(response.headers[.contentType] == types[String(name.split(separator: ".").last!)], "\(name)")
            #expect(response.headers[.cacheControl] == "public, max-age=31536000, immutable", "\(name)")
            #expect(response.headers[.xContentTypeOptions] == "nosniff", "\(name)")
            #expect(!response.body.isEmpty)
            // Without the version, or with an old one, a browser must check again.
            #expect(try await app.send(.get, "/console/\(name)").headers[.cacheControl] == "no-cache")
            #expect(
                try await app.send(.get, "/console/\(name)?v=0123456789abcdef").headers[.cacheControl] == "no-cache")
        }
    }

    @Test func aMatchingEntityTagGets304AndGzipIsTheSameBytes() async throws {
        let app = try await TestApp.make()
        defer { app.close() }
        let plain = try await app.send(.get, "/console/app.js")
        let tag = try #require(plain.headers[.eTag])
        let notModified = try await app.send(.get, "/console/app.js", headers: [.ifNoneMatch: tag])
        #expect(notModified.status == .notModified)
        #expect(notModified.body.isEmpty)
        #expect(notModified.headers[.eTag] == tag)
        #expect(try await app.send(.get, "/console/app.js", headers: [.ifNoneMatch: "W/\(tag)"]).status == .notModified)
        #expect(try await app.send(.get, "/console/app.js", headers: [.ifNoneMatch: "\"other\""]).status == .ok)

        let gzip = try await app.send(.get, "/console/app.js", headers: [.acceptEncoding: "gzip, deflate, br"])
        #expect(gzip.headers[.contentEncoding] == "gzip")
        #expect(gzip.headers[.vary] == "Accept-Encoding")
        #expect(gzip.headers[.eTag] == tag)
        #expect(gzip.body.count < plain.body.count)
        #expect(try Gzip.decompress(gzip.body) == plain.body)
    }

    @Test func onlyTheConsolesOwnFilesAreServed() async throws {
        let app = try await TestApp.make()
        defer { app.close() }
        for path in [
            "/console/nope.js", "/console/..%2FPackage.swift", "/console/%2e%2e", "/console/.hidden",
            "/console/Assets", "/console/app.js%00.png", "/console/index.html/x",
        ] {
            let response = try await app.send(.get, path)
            #expect(response.status == .notFound, "\(path): \(response.status)")
            #expect(response.headers[.contentType] == "application/problem+json", "\(path)")
        }
        let post = try await app.send(.post, "/console/", body: "token=sy_editor_x")
        #expect(post.status == .methodNotAllowed)
        #expect(post.headers[.allow] == "GET")
    }

    @Test func aConsoleTurnedOffSaysSo() async throws {
        var configuration = ServerConfiguration(port: 0)
        configuration.console = false
        let app = try await TestApp.make(configuration: configuration)
        defer { app.close() }
        let response = try await app.send(.get, "/console/")
        #expect(response.status == .notFound)
        #expect(response.json["detail"]?.stringValue?.contains("--no-console") == true)
        #expect(try await app.send(.get, "/v1/namespaces", token: "editor").status == .ok)
    }

    @Test func theScriptsNeverParseMarkupEvaluateCodeOrKeepTheTokenBeyondTheTab() throws {
        let assets = try ConsoleAssets.bundled()
        let scripts = assets.files.filter { $0.key.hasSuffix(".js") }
        #expect(scripts.count >= 4)
        for (name, asset) in scripts {
            // The code without its comments (which may name what the code avoids).
            let source = String(decoding: asset.bytes, as: UTF8.self)
                .replacingOccurrences(of: #"/\*[\s\S]*?\*/"#, with: "", options: .regularExpression)
                .replacingOccurrences(of: #"(?m)^\s*//.*$"#, with: "", options: .regularExpression)
            for sink in [
                "innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function",
                "setTimeout('", "setTimeout(\"", "localStorage", "document.cookie", "indexedDB", "console.log",
            ] {
                #expect(!source.contains(sink), "\(name) uses \(sink)")
            }
            // The SVG namespace (charts are made with createElementNS) is a name, never fetched.
            let requested = source.replacingOccurrences(of: "'http://www.w3.org/2000/svg'", with: "")
            #expect(!requested.contains("http://") && !requested.contains("https://"), "\(name) names a URL elsewhere")
        }
        let api = String(decoding: try #require(assets.files["api.js"]).bytes, as: UTF8.self)
        #expect(api.contains("sessionStorage"))
        #expect(api.contains("'X-Switchyard-Source'] = 'console'"))
    }
}

/// The console's files as a value: the version follows their contents, names and types are checked.
struct ConsoleAssetsTests {
    static let page = Array("<script src=\"a.js?v=__ASSET_VERSION__\"></script>".utf8)

    @Test func theVersionIsFilledInAndFollowsEveryFile() throws {
        let one = try ConsoleAssets(files: ["index.html": Self.page, "a.js": Array("1".utf8)])
        let two = try ConsoleAssets(files: ["index.html": Self.page, "a.js": Array("2".utf8)])
        #expect(one.version.count == 16)
        #expect(one.version != two.version)
        #expect(
            String(decoding: one.files["index.html"]!.bytes, as: UTF8.self)
                == "<script src=\"a.js?v=\(one.version)\"></script>")
        #expect(one.files["a.js"]!.entityTag != two.files["a.js"]!.entityTag)
        #expect(one.files["index.html"]!.entityTag != two.files["index.html"]!.entityTag)
    }

    @Test func aConsoleNeedsAPageAndFilesOfKnownTypes() {
        #expect(throws: ConsoleAssetsError.self) { try ConsoleAssets(files: ["a.js": []]) }
        #expect(throws: ConsoleAssetsError.self) { try ConsoleAssets(files: ["index.html": [], "run.sh": []]) }
        #expect(throws: ConsoleAssetsError.self) { try ConsoleAssets(files: ["index.html": [], ".env.js": []]) }
        #expect(ConsoleAssets.isPlainName("app.js"))
        #expect(!ConsoleAssets.isPlainName("../app.js"))
        #expect(!ConsoleAssets.isPlainName(""))
    }
}
