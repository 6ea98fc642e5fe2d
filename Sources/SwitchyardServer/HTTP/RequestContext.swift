public import Hummingbird
package import Logging

/// The request context of flagsd's routes: Hummingbird's core storage and the request id.
public struct FlagsRequestContext: RequestContext {
    public var coreContext: CoreRequestContextStorage
    /// The request id (`X-Request-Id`), set by the observability middleware.
    public var requestID: String = ""

    public init(source: ApplicationRequestContextSource) {
        coreContext = CoreRequestContextStorage(source: source)
    }

    /// A context for requests sent to the router in-process (tests).
    package init(logger: Logger) {
        coreContext = CoreRequestContextStorage(source: LoggerSource(logger: logger))
    }

    private struct LoggerSource: RequestContextSource {
        let logger: Logger
    }
}
