import Foundation
import Hummingbird
import Logging
import Metrics
import SwitchyardCore
import SwitchyardStorage
import Synchronization

/// The routes flagsd serves, as templates (`/v1/namespaces/{namespace}/flags/{key}`), for 405 answers.
struct RouteTable: Sendable {
    let routes: [(method: HTTPRequest.Method, template: [Substring])]

    init(_ routes: [(HTTPRequest.Method, String)]) {
        self.routes = routes.map { ($0.0, $0.1.split(separator: "/")) }
    }

    /// The methods allowed on a path that matches some route template.
    func methods(allowedOn path: String) -> [HTTPRequest.Method] {
        let segments = path.split(separator: "/")
        var methods: [HTTPRequest.Method] = []
        for route in routes where route.template.count == segments.count {
            let matches = zip(route.template, segments).allSatisfy { template, segment in
                template.hasPrefix("{") || template == segment
            }
            if matches, !methods.contains(route.method) { methods.append(route.method) }
        }
        return methods
    }
}

/// Turns every error into a response, in one place: `APIError` and `StorageError` into their problem
/// documents, an unmatched route into 404 or 405, anything else into 500 (logged once with the request id).
///
/// Under `/ofrep/` the same errors get OFREP's bodies instead (`{errorCode, errorDetails}`): the OFREP handlers
/// answer their own errors, so only unmatched paths and methods reach this.
struct ProblemMiddleware: RouterMiddleware {
    typealias Context = FlagsRequestContext
    let routes: RouteTable

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        do {
            return try await next(request, context)
        } catch {
            let apiError = map(error, request: request, context: context)
            if request.uri.path.hasPrefix("/ofrep/") {
                return OFREPError(apiError).response(key: nil)
            }
            return Response.problem(apiError, instance: request.uri.path, requestID: context.requestID)
        }
    }

    private func map(_ error: any Error, request: Request, context: Context) -> APIError {
        switch error {
        case let error as APIError:
            return error
        case let error as FlagEditError:
            return APIError(error)
        case let error as StorageError:
            if error.kind == .unavailable || error.kind == .corrupt {
                // The diagnostic (the database's identity and own text) goes to the log only.
                context.logger.error("storage error", metadata: ["error": "\(error)"])
            }
            return APIError(error)
        case let error as HTTPError where error.status == .notFound:
            let allowed = routes.methods(allowedOn: request.uri.path)
            if !allowed.isEmpty {
                return .methodNotAllowed(request.method, path: request.uri.path, allowed: allowed)
            }
            return .notFound(
                "no route matches \(request.method.rawValue) \(request.uri.path) (the API is described at /openapi.yaml)"
            )
        case let error as HTTPError:
            return APIError(
                error.status, "http-\(error.status.code)", error.status.reasonPhrase,
                error.body ?? error.status.reasonPhrase)
        default:
            context.logger.error("unexpected error", metadata: ["error": "\(String(reflecting: error))"])
            return APIError(
                .internalServerError, "internal", "Internal error",
                "an unexpected error occurred; it was logged with request id \(context.requestID)")
        }
    }
}

/// Gives each request an id (`X-Request-Id`, taken from the request when it is sane), logs it without
/// secrets, and records request counts and latencies by route and status.
struct ObservabilityMiddleware: RouterMiddleware {
    typealias Context = FlagsRequestContext
    let recorder: RequestRecorder

    init(metricsFactory: any MetricsFactory) {
        recorder = RequestRecorder(factory: metricsFactory)
    }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        var context = context
        let requestID = Self.requestID(from: request)
        context.requestID = requestID
        context.logger[metadataKey: "request_id"] = .string(requestID)
        let start = ContinuousClock.now
        var response = try await next(request, context)
        let elapsed = ContinuousClock.now - start
        response.headers[.requestID] = requestID

        let route = context.endpointPath.map { $0 == "NotFound" ? "unmatched" : $0 } ?? "unmatched"
        recorder.record(
            method: request.method.rawValue, route: route, path: request.uri.path, status: response.status.code,
            elapsed: elapsed, logger: context.logger)
        return response
    }

    static func requestID(from request: Request) -> String {
        if let given = request.headers.value(.requestID), (1...64).contains(given.utf8.count),
            given.utf8.allSatisfy({ $0.isASCIIIdentifier })
        {
            return given
        }
        var generator = SystemRandomNumberGenerator()
        let value = generator.next() as UInt64
        // 16 lowercase hex digits, written in place (every request without an id of its own makes one).
        return String(unsafeUninitializedCapacity: 16) { digits in
            for index in 0..<16 {
                let nibble = UInt8(truncatingIfNeeded: value >> (60 - 4 * index)) & 0xF
                digits[index] = nibble < 10 ? 0x30 + nibble : 0x57 + nibble
            }
            return 16
        }
    }
}

/// Records an answered request, for the router's requests (`ObservabilityMiddleware`) and the snapshot fast path
/// alike: the counter and latency histogram by route, and the request log line.
///
/// The metrics are made once per label set (the registry lookup and label checks would otherwise run on every
/// request).
final class RequestRecorder: Sendable {
    private struct Key: Hashable {
        let method: String
        let route: String
        let status: Int
    }

    private let factory: any MetricsFactory
    private let counters = Mutex<[Key: Counter]>([:])
    private let timers = Mutex<[Key: Timer]>([:])

    init(factory: any MetricsFactory) {
        self.factory = factory
    }

    /// Counts and times a request, and logs its line: at debug, at error for a 5xx.
    /// - Parameters:
    ///   - logger: the request's logger.
    ///   - requestID: when set, added to the line's metadata as the router's request logger carries it (for a
    ///     logger shared by requests, made per request only when the line is logged).
    func record(
        method: String, route: String, path: String, status: Int, elapsed: Duration, logger: Logger,
        requestID: String? = nil
    ) {
        let nanoseconds = elapsed.nanoseconds
        count(method: method, route: route, status: status, nanoseconds: nanoseconds)
        let level: Logger.Level = status >= 500 ? .error : .debug
        guard logger.logLevel <= level else { return }
        var logger = logger
        if let requestID {
            logger[metadataKey: "hb.request.id"] = .stringConvertible(RequestID())
            logger[metadataKey: "request_id"] = .string(requestID)
        }
        logger.log(
            level: level, "request",
            metadata: [
                "method": .string(method), "path": .string(path), "route": .string(route),
                "status": .stringConvertible(status), "duration_ms": .stringConvertible(Double(nanoseconds) / 1e6),
            ])
    }

    private func count(method: String, route: String, status: Int, nanoseconds: Int64) {
        let countKey = Key(method: method, route: route, status: status)
        let timeKey = Key(method: method, route: route, status: 0)
        let counter = counters.withLock { counters in
            if let counter = counters[countKey] { return counter }
            let counter = Counter(
                label: "flagsd_http_requests_total",
                dimensions: [("method", method), ("route", route), ("status", String(status))], factory: factory)
            counters[countKey] = counter
            return counter
        }
        let timer = timers.withLock { timers in
            if let timer = timers[timeKey] { return timer }
            let timer = Timer(
                label: "flagsd_http_request_duration_seconds", dimensions: [("method", method), ("route", route)],
                factory: factory)
            timers[timeKey] = timer
            return timer
        }
        counter.increment()
        timer.recordNanoseconds(nanoseconds)
    }
}

extension UInt8 {
    var isASCIIIdentifier: Bool {
        (0x30...0x39).contains(self) || (0x41...0x5A).contains(self) || (0x61...0x7A).contains(self)
            || self == UInt8(ascii: "-") || self == UInt8(ascii: "_") || self == UInt8(ascii: ".")
    }
}

extension Duration {
    var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }
}
