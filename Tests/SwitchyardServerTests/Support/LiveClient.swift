import Foundation
import HTTPTypes

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A URLSession client for live tests. Each instance has its own session, so a parked long-poll never
/// queues another request behind it (URLSession allows few connections per host).
struct LiveClient: Sendable {
    let base: URL
    let token: String?
    let session: URLSession

    init(base: URL, token: String?, timeout: TimeInterval = 60) {
        self.base = base
        self.token = token
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = timeout
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        configuration.urlCache = nil
        session = URLSession(configuration: configuration)
    }

    func send(_ method: String = "GET", _ path: String, headers: [String: String] = [:], body: String? = nil)
        async throws -> TestResponse
    {
        var request = URLRequest(url: URL(string: path, relativeTo: base)!)
        request.httpMethod = method
        if let token { request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization") }
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        if let body { request.httpBody = Data(body.utf8) }
        let (data, response) = try await session.data(for: request)
        guard let http = response as? HTTPURLResponse else {
            throw URLError(
                .badServerResponse,
                userInfo: [NSLocalizedDescriptionKey: "\(method) \(path): not an HTTP response: \(response)"])
        }
        var fields = HTTPFields()
        for (name, value) in http.allHeaderFields {
            if let text = name as? String, let field = HTTPField.Name(text), let value = value as? String {
                fields[field] = value
            }
        }
        return TestResponse(status: HTTPResponse.Status(code: http.statusCode), headers: fields, body: Array(data))
    }
}
