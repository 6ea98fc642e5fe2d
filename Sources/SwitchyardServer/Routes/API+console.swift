import Hummingbird
import SwitchyardConsole

extension API {
    /// `GET /console` and `GET /console/`: the console's page. Without the slash, a redirect to it, because the
    /// page names its files and the API relative to `/console/` (so it also works behind a path prefix).
    func console(_ request: Request, context: FlagsRequestContext) async throws -> Response {
        guard request.uri.path.hasSuffix("/") else {
            var headers = ConsoleSite.securityHeaders
            let query = request.uri.query.map { "?\($0)" } ?? ""
            headers[.location] = "console/\(query)"
            headers[.cacheControl] = "no-cache"
            return Response(status: .movedPermanently, headers: headers)
        }
        return try app.console.response(for: "index.html", request: request, versioned: false)
    }

    /// `GET /console/{asset}`: one of the console's files (`app.js`, `console.css`, ...). With `?v=` naming the
    /// current version, cacheable for a year; otherwise revalidated.
    func consoleAsset(_ request: Request, context: FlagsRequestContext) async throws -> Response {
        let name = try parameter("asset", context)
        guard ConsoleAssets.isPlainName(name) else {
            throw APIError.notFound("the console has no file '\(name)' (open /console/)")
        }
        let site = app.console
        let versioned = request.uri.queryParameters.get("v").map { $0 == site.version } ?? false
        return try site.response(for: name, request: request, versioned: versioned)
    }
}
