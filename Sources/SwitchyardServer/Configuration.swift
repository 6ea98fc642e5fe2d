/// How flagsd's HTTP application behaves.
public struct ServerConfiguration: Sendable {
    /// The address to listen on.
    public var host: String
    /// The port; 0 picks a free one (reported through `onServerRunning`).
    public var port: Int
    /// The longest long-poll wait; a longer `wait` is clamped to it.
    public var maximumWait: Int
    /// Past this many parked long-poll requests, new ones get 503 with `Retry-After`.
    public var maximumWaiters: Int
    /// The `Retry-After` seconds sent with 503 when overloaded.
    public var retryAfter: Int
    /// The largest request body accepted, in bytes.
    public var maximumBodySize: Int
    /// Whether `/metrics` needs a token (any live token) instead of being open.
    public var metricsRequireToken: Bool

    public init(
        host: String = "127.0.0.1", port: Int = 8080, maximumWait: Int = 30, maximumWaiters: Int = 15_000,
        retryAfter: Int = 5, maximumBodySize: Int = 1 << 20, metricsRequireToken: Bool = false
    ) {
        self.host = host
        self.port = port
        self.maximumWait = maximumWait
        self.maximumWaiters = maximumWaiters
        self.retryAfter = retryAfter
        self.maximumBodySize = maximumBodySize
        self.metricsRequireToken = metricsRequireToken
    }
}
