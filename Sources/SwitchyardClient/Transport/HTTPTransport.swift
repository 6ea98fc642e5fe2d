public import Foundation

/// Sends one HTTP request and returns the whole response: the client's only contact with the network.
///
/// ``URLSessionTransport`` is the default. Tests and apps with their own networking stack implement this
/// protocol. Implementations must:
/// - give up and throw a ``ClientError`` of kind `timedOut` once `request.timeout` has passed since the call
///   began, however slowly the body trickles in;
/// - stop reading and throw a ``ClientError`` of kind `tooLarge` once the body exceeds
///   `request.maximumResponseSize` bytes;
/// - return every status code as a response (a 500 is a response, not an error), with header names lowercased;
/// - stop promptly and throw when the calling task is cancelled.
public protocol HTTPTransport: Sendable {
    /// Sends a request.
    /// - Returns: the status, headers (names lowercased) and body.
    /// - Throws: `ClientError` (`transport`, `timedOut`, `tooLarge`) or `CancellationError`.
    func send(_ request: HTTPRequest) async throws -> HTTPResponse
}

/// An HTTP request of the client runtime.
public struct HTTPRequest: Sendable, Hashable {
    public var method: String
    public var url: URL
    public var headers: [String: String]
    public var body: [UInt8]?
    /// The deadline of the whole exchange, from sending to the last body byte.
    public var timeout: Duration
    /// The largest body accepted.
    public var maximumResponseSize: Int

    public init(
        method: String = "GET", url: URL, headers: [String: String] = [:], body: [UInt8]? = nil,
        timeout: Duration, maximumResponseSize: Int
    ) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
        self.timeout = timeout
        self.maximumResponseSize = maximumResponseSize
    }
}

/// An HTTP response: status, headers with lowercased names, and the body.
public struct HTTPResponse: Sendable, Hashable {
    public var status: Int
    /// Header fields keyed by lowercased name.
    public var headers: [String: String]
    public var body: [UInt8]

    public init(status: Int, headers: [String: String] = [:], body: [UInt8] = []) {
        self.status = status
        self.headers = Dictionary(
            headers.map { ($0.key.lowercased(), $0.value) }, uniquingKeysWith: { first, _ in first })
        self.body = body
    }

    /// A header field by name (any case).
    public subscript(header name: String) -> String? {
        headers[name.lowercased()]
    }

    /// `Retry-After` as a duration: whole seconds, as Switchyard sends it. Nil when absent or not a number.
    public var retryAfter: Duration? {
        guard let text = self[header: "retry-after"]?.trimmingCharacters(in: .whitespaces),
            let seconds = Int64(text), seconds >= 0
        else { return nil }
        return .seconds(seconds)
    }

    /// The first bytes of the body as text, for error messages.
    var bodyExcerpt: String {
        let prefix = body.prefix(200)
        let text = String(decoding: prefix, as: UTF8.self)
            .replacingOccurrences(of: "\n", with: " ")
        return body.count > 200 ? text + "…" : text
    }
}
