public import Hummingbird
package import Logging
import NIOCore
public import SwitchyardStorage

/// The request context of flagsd's routes: Hummingbird's core storage, the request id and the TCP peer.
public struct FlagsRequestContext: RequestContext {
    public var coreContext: CoreRequestContextStorage
    /// The request id (`X-Request-Id`), set by the observability middleware.
    public var requestID: String = ""
    /// The connection's remote address; nil when unknown (a Unix socket, a request sent in-process).
    public let peer: IPAddress?

    public init(source: ApplicationRequestContextSource) {
        coreContext = CoreRequestContextStorage(source: source)
        peer = source.channel.remoteAddress?.ipAddress.flatMap { IPAddress($0) }
    }

    /// A context for requests sent to the router in-process (tests), from a peer address.
    package init(logger: Logger, peer: IPAddress? = nil) {
        coreContext = CoreRequestContextStorage(source: LoggerSource(logger: logger))
        self.peer = peer
    }

    private struct LoggerSource: RequestContextSource {
        let logger: Logger
    }
}
