import Foundation
import SwitchyardCore
import SwitchyardWire

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A response from flagsd.
struct APIResponse: Sendable {
    var status: Int
    /// Header fields, names lowercased.
    var headers: [String: String]
    var body: [UInt8]

    /// The body as JSON; `.null` when it is not JSON.
    var json: JSONValue { (try? JSONValue.parse(body)) ?? .null }
}

/// A refused request: the HTTP status and the server's problem document (RFC 9457).
struct APIFailure: Error, Sendable {
    var status: Int
    /// The last part of the problem type (`version-conflict`, `reason-required`, `not-found`, ...).
    var slug: String
    var detail: String
    /// `path: message` of each field at fault.
    var problems: [(path: String, message: String)]
    /// The problem document read; nil when the answer is none (a proxy's page, an empty body).
    var problem: ProblemBody?
    /// The connection it was sent over, for messages about the token and server.
    var settings: ServerSettings
    /// Whole seconds from a `Retry-After` header (503 when the service is overloaded).
    var retryAfter: Int?

    init(response: APIResponse, settings: ServerSettings) {
        self.settings = settings
        status = response.status
        retryAfter = response.headers["retry-after"].flatMap { Int($0.trimmingCharacters(in: .whitespaces)) }
        let problem = try? ProblemBody(json: response.json)
        self.problem = problem
        slug = problem?.slug ?? ""
        let text = String(decoding: response.body.prefix(300), as: UTF8.self)
        detail = problem?.detail ?? (text.isEmpty ? "HTTP \(response.status)" : "HTTP \(response.status): \(text)")
        problems = problem?.errors.map { ($0.path, $0.message) } ?? []
    }
}

/// Talks to flagsd's HTTP API over URLSession: adds the token, says it is `flagctl` (`X-Switchyard-Source`),
/// and turns refusals into `APIFailure`s and unreachable servers into `CommandFailure`s.
///
/// Each client has its own session; `watch` makes its own client so its long-poll never queues other requests.
final class APIClient: Sendable {
    let settings: ServerSettings
    /// The audit log's `source` for changes made through this client: `cli`, or `apply` for `flagctl apply`.
    let source: String
    private let session: URLSession

    init(settings: ServerSettings, source: String = "cli", timeout: TimeInterval = 30) {
        self.settings = settings
        self.source = source
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = timeout
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        configuration.urlCache = nil
        configuration.httpMaximumConnectionsPerHost = 16
        session = URLSession(configuration: configuration)
    }

    deinit {
        session.finishTasksAndInvalidate()
    }

    /// Aborts every request in flight (Ctrl-C during `watch`).
    func cancelAll() {
        session.invalidateAndCancel()
    }

    /// A path from segments, each percent-encoded: `path("v1", "namespaces", ns)`.
    static func path(_ segments: String...) -> String {
        var allowed = CharacterSet.urlPathAllowed
        allowed.remove(charactersIn: "/?#%")
        return "/"
            + segments.map { $0.addingPercentEncoding(withAllowedCharacters: allowed) ?? $0 }.joined(separator: "/")
    }

    /// Sends a request and returns a 2xx or 304 response.
    ///
    /// - Throws: `APIFailure` for any other status; `CommandFailure` when the server cannot be reached.
    func send(
        _ method: String, _ path: String, query: [(String, String)] = [], body: JSONValue? = nil,
        ifMatch: String? = nil, headers: [String: String] = [:]
    ) async throws -> APIResponse {
        let response = try await exchange(method, path, query: query, body: body, ifMatch: ifMatch, headers: headers)
        guard (200..<300).contains(response.status) || response.status == 304 else {
            throw APIFailure(response: response, settings: settings)
        }
        return response
    }

    /// GET, returning the JSON body.
    func get(_ path: String, query: [(String, String)] = []) async throws -> JSONValue {
        try await send("GET", path, query: query).json
    }

    private func exchange(
        _ method: String, _ path: String, query: [(String, String)], body: JSONValue?,
        ifMatch: String?, headers: [String: String]
    ) async throws -> APIResponse {
        var components = URLComponents(url: settings.server, resolvingAgainstBaseURL: false)!
        components.percentEncodedPath =
            (components.percentEncodedPath.hasSuffix("/")
                ? String(components.percentEncodedPath.dropLast()) : components.percentEncodedPath) + path
        if !query.isEmpty { components.queryItems = query.map { URLQueryItem(name: $0.0, value: $0.1) } }
        // `+` means a space to many servers' query parsers; send it encoded.
        components.percentEncodedQuery = components.percentEncodedQuery?.replacingOccurrences(of: "+", with: "%2B")
        var request = URLRequest(url: components.url!)
        request.httpMethod = method
        request.setValue("application/json, application/problem+json", forHTTPHeaderField: "Accept")
        request.setValue("flagctl/\(FlagctlVersion.current)", forHTTPHeaderField: "User-Agent")
        request.setValue(source, forHTTPHeaderField: "X-Switchyard-Source")
        if let token = settings.token { request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization") }
        if let ifMatch { request.setValue(ifMatch, forHTTPHeaderField: "If-Match") }
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        if let body {
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
            request.httpBody = Data(body.serialized(.canonical))
        }
        let data: Data
        let urlResponse: URLResponse
        do {
            (data, urlResponse) = try await session.data(for: request)
        } catch {
            throw unreachable(error)
        }
        guard let http = urlResponse as? HTTPURLResponse else {
            throw CommandFailure("flagsd at \(settings.serverText) sent something that is not HTTP; check --server")
        }
        var fields: [String: String] = [:]
        for (name, value) in http.allHeaderFields {
            if let name = name as? String, let value = value as? String { fields[name.lowercased()] = value }
        }
        return APIResponse(status: http.statusCode, headers: fields, body: Array(data))
    }

    /// The failure for a server that could not be reached, saying where the URL came from.
    func unreachable(_ error: any Error) -> CommandFailure {
        let origin: String
        switch settings.serverOrigin {
        case .option: origin = "--server"
        case .environment: origin = "FLAGCTL_SERVER"
        case .configFile: origin = settings.configPath
        }
        if let urlError = error as? URLError, urlError.code == .timedOut {
            return CommandFailure(
                "flagsd at \(settings.serverText) did not answer in time; check that it runs and is reachable, then retry"
            )
        }
        if error is CancellationError || (error as? URLError)?.code == .cancelled {
            return CommandFailure("the request to \(settings.serverText) was cancelled")
        }
        return CommandFailure(
            "cannot reach flagsd at \(settings.serverText) (from \(origin)): \(error.localizedDescription); check the URL and that flagsd is running"
        )
    }
}

extension APIFailure {
    /// The failure as a command outcome: the server's message, the fields at fault, the exit status for the
    /// HTTP status, and what to do next.
    var commandFailure: CommandFailure {
        var message = detail
        for problem in problems where !detail.contains(problem.message) || problems.count > 1 {
            message += "\n  \(problem.path.isEmpty ? "(body)" : problem.path): \(problem.message)"
        }
        switch status {
        case 400 where slug == "reason-required":
            return .usage(message)
        case 400, 422:
            return CommandFailure(message)
        case 401:
            let next =
                settings.token == nil
                ? "no token was sent: set FLAGCTL_TOKEN, pass --token, or run 'flagctl login'"
                : "the token came from \(settings.tokenOrigin.map(\.rawValue) ?? "?"); run 'flagctl login' with a valid token, or fix FLAGCTL_TOKEN"
            return .unauthorized("\(message); \(next)")
        case 403:
            return .unauthorized(
                "\(message); ask an admin for a token with that role or namespace (flagctl tokens create)")
        case 404:
            return .notFound(message)
        case 409:
            return .conflict(message)
        case 503:
            let retry = retryAfter.map { " in \($0) s" } ?? " shortly"
            return CommandFailure("flagsd is unavailable: \(message); retry\(retry)")
        default:
            let id = problem?.requestID.map { " (request id \($0))" } ?? ""
            return CommandFailure(
                "flagsd failed with HTTP \(status): \(message)\(id); retry, and report it with the request id if it persists"
            )
        }
    }
}

/// flagctl's own version.
public enum FlagctlVersion {
    public static let current = "0.1.0"
}
