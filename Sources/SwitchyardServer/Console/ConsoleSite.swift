import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import SwitchyardConsole

/// The web console as flagsd serves it at `/console/`: the files (`SwitchyardConsole`), their gzip forms, and the
/// headers that keep the page safe (Content-Security-Policy with Trusted Types, no framing, no referrer) and
/// cached right (versioned files for a year, `index.html` revalidated).
package struct ConsoleSite: Sendable {
    /// A file with its gzip form (when smaller).
    struct File: Sendable {
        let asset: ConsoleAssets.Asset
        let body: ByteBuffer
        let gzipBody: ByteBuffer?
    }

    /// Why the console cannot be served (turned off, or its files are missing); nil when it can.
    let unavailable: String?
    let files: [String: File]
    let version: String

    /// Scripts and styles from flagsd only, no inline script or style, requests to flagsd only, Trusted Types
    /// required for every DOM sink that parses strings as code or markup, no framing.
    static let contentSecurityPolicy = [
        "default-src 'none'", "script-src 'self'", "style-src 'self'", "img-src 'self'", "connect-src 'self'",
        "base-uri 'none'", "form-action 'self'", "frame-ancestors 'none'",
        "require-trusted-types-for 'script'", "trusted-types 'none'",
    ].joined(separator: "; ")

    init(assets: ConsoleAssets) {
        var files: [String: File] = [:]
        for (name, asset) in assets.files {
            let gzip = Gzip.compress(asset.bytes, level: 9)
            files[name] = File(
                asset: asset, body: ByteBuffer(bytes: asset.bytes),
                gzipBody: gzip.count < asset.bytes.count ? ByteBuffer(bytes: gzip) : nil)
        }
        self.files = files
        self.version = assets.version
        self.unavailable = nil
    }

    init(unavailable reason: String) {
        self.files = [:]
        self.version = ""
        self.unavailable = reason
    }

    /// The console built into flagsd, or, when it is turned off or its files are missing, a site that says so
    /// (logged once here; flagsd serves flags either way).
    static func load(enabled: Bool, logger: Logger) -> ConsoleSite {
        guard enabled else {
            return ConsoleSite(
                unavailable:
                    "the web console is turned off on this flagsd (it runs with --no-console or SWITCHYARD_CONSOLE=0)")
        }
        do {
            return ConsoleSite(assets: try ConsoleAssets.bundled())
        } catch {
            logger.warning("the web console is not available", metadata: ["error": "\(error.description)"])
            return ConsoleSite(unavailable: "the web console is not available on this flagsd: \(error.description)")
        }
    }

    /// The response for a console file, honouring `If-None-Match` and `Accept-Encoding`.
    /// - Parameter versioned: whether the request named the current ``version`` (`?v=`), so it may be cached for good.
    func response(for name: String, request: Request, versioned: Bool) throws -> Response {
        if let unavailable { throw APIError.notFound(unavailable) }
        guard let file = files[name] else {
            throw APIError.notFound("the console has no file '\(name)' (open /console/)")
        }
        var headers = Self.securityHeaders
        headers[.contentType] = file.asset.contentType
        headers[.eTag] = file.asset.entityTag
        headers[.vary] = "Accept-Encoding"
        headers[.cacheControl] = versioned ? "public, max-age=31536000, immutable" : "no-cache"
        if EntityTagList(request.headers[.ifNoneMatch]).matchesOpaque(file.asset.entityTag) {
            return Response(status: .notModified, headers: headers)
        }
        if let gzip = file.gzipBody, AcceptEncoding(request.headers[.acceptEncoding]).acceptsGzip {
            headers[.contentEncoding] = "gzip"
            return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: gzip))
        }
        return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: file.body))
    }

    static var securityHeaders: HTTPFields {
        var headers = HTTPFields()
        headers[.contentSecurityPolicy] = contentSecurityPolicy
        headers[.xContentTypeOptions] = "nosniff"
        headers[.xFrameOptions] = "DENY"
        headers[.referrerPolicy] = "no-referrer"
        headers[.crossOriginOpenerPolicy] = "same-origin"
        headers[.crossOriginResourcePolicy] = "same-origin"
        headers[.permissionsPolicy] = "camera=(), microphone=(), geolocation=(), payment=(), usb=()"
        return headers
    }
}

extension EntityTagList {
    /// Whether `If-None-Match` names an entity tag that is not a namespace version (`"<hash>"`), by weak comparison.
    func matchesOpaque(_ entityTag: String) -> Bool {
        any || opaque.contains { $0 == entityTag || $0 == "W/" + entityTag }
    }
}

/// Response headers HTTPTypes does not name.
extension HTTPField.Name {
    static let xFrameOptions = HTTPField.Name("X-Frame-Options")!
    static let referrerPolicy = HTTPField.Name("Referrer-Policy")!
    static let crossOriginOpenerPolicy = HTTPField.Name("Cross-Origin-Opener-Policy")!
    static let permissionsPolicy = HTTPField.Name("Permissions-Policy")!
}
