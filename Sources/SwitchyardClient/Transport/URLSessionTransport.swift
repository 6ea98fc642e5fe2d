import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The default ``HTTPTransport``: URLSession (FoundationNetworking on Linux) with a whole-exchange deadline and
/// a body size limit.
///
/// Give the snapshot long-poll and the event sender separate transports: a session allows a few connections per
/// host, and a parked long-poll holds one of them. ``FlagClient`` does this itself when it creates its own.
public final class URLSessionTransport: HTTPTransport, @unchecked Sendable {
    private let session: URLSession
    private let delegate: SessionDelegate

    /// Creates a transport over an ephemeral session (no cookies, no URL cache).
    public init() {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        configuration.urlCache = nil
        configuration.httpCookieStorage = nil
        configuration.httpShouldSetCookies = false
        // The per-request deadline below governs; these only stop the session from cutting a long-poll short.
        configuration.timeoutIntervalForRequest = 24 * 3600
        configuration.timeoutIntervalForResource = 24 * 3600
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        queue.name = "switchyard.transport"
        delegate = SessionDelegate()
        session = URLSession(configuration: configuration, delegate: delegate, delegateQueue: queue)
    }

    deinit {
        session.invalidateAndCancel()
    }

    public func send(_ request: HTTPRequest) async throws -> HTTPResponse {
        try Task.checkCancellation()
        var urlRequest = URLRequest(url: request.url)
        urlRequest.httpMethod = request.method
        urlRequest.cachePolicy = .reloadIgnoringLocalCacheData
        urlRequest.timeoutInterval = max(1, request.timeout.secondsValue)
        for (name, value) in request.headers { urlRequest.setValue(value, forHTTPHeaderField: name) }
        if let body = request.body { urlRequest.httpBody = Data(body) }

        let task = session.dataTask(with: urlRequest)
        let exchange = Exchange(limit: request.maximumResponseSize, url: request.url)
        let delegate = delegate
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<HTTPResponse, any Error>) in
                guard exchange.start(continuation) else { return }
                delegate.register(exchange, for: task.taskIdentifier)
                let deadline = DispatchTime.now() + .milliseconds(Int(min(request.timeout.secondsValue * 1000, 1e9)))
                DispatchQueue.global().asyncAfter(deadline: deadline) { [weak task] in
                    if exchange.finish(.failure(exchange.timeoutError)) { task?.cancel() }
                }
                task.resume()
            }
        } onCancel: {
            if exchange.cancel() { task.cancel() }
        }
    }
}

/// The state of one request, shared by the delegate queue, the deadline timer and cancellation.
///
/// Whichever comes first (the last byte, the deadline, the size limit, cancellation) resumes the caller; the
/// others find the exchange finished. The caller never depends on URLSession reporting a cancelled task.
private final class Exchange: @unchecked Sendable {
    private struct State {
        var continuation: CheckedContinuation<HTTPResponse, any Error>?
        var finished = false
        var status = 0
        var headers: [String: String] = [:]
        var body: [UInt8] = []
    }

    let limit: Int
    let url: URL
    private let state = LockedBox(State())

    init(limit: Int, url: URL) {
        self.limit = limit
        self.url = url
    }

    var timeoutError: ClientError {
        ClientError(
            .timedOut,
            "\(url.absoluteString) did not answer completely within the request deadline; the server is down or too slow"
        )
    }

    var tooLargeError: ClientError {
        ClientError(
            .tooLarge, "the response from \(url.absoluteString) is larger than \(limit) bytes; the client refuses it")
    }

    /// Attaches the caller; false (and the caller resumed with `CancellationError`) when already cancelled.
    func start(_ continuation: CheckedContinuation<HTTPResponse, any Error>) -> Bool {
        let alreadyFinished = state.withLock { state in
            if !state.finished { state.continuation = continuation }
            return state.finished
        }
        if alreadyFinished { continuation.resume(throwing: CancellationError()) }
        return !alreadyFinished
    }

    /// Resumes the caller with a result, once. True when this call finished the exchange.
    @discardableResult
    func finish(_ result: Result<HTTPResponse, any Error>) -> Bool {
        let continuation: CheckedContinuation<HTTPResponse, any Error>?? = state.withLock { state in
            guard !state.finished else { return .none }
            state.finished = true
            state.body = []
            defer { state.continuation = nil }
            return .some(state.continuation)
        }
        guard case .some(let waiting) = continuation else { return false }
        waiting?.resume(with: result)
        return true
    }

    /// Cancels; true when the exchange was still running (the task should be cancelled too).
    func cancel() -> Bool {
        finish(.failure(CancellationError()))
    }

    /// Records the status and headers; false when the announced length is already over the limit.
    func receive(_ response: URLResponse) -> Bool {
        let fits = state.withLock { state in
            if let http = response as? HTTPURLResponse {
                state.status = http.statusCode
                for (name, value) in http.allHeaderFields {
                    if let name = name as? String, let value = value as? String {
                        state.headers[name.lowercased()] = value
                    }
                }
            }
            return response.expectedContentLength <= Int64(limit)
        }
        if !fits { finish(.failure(tooLargeError)) }
        return fits
    }

    /// Appends body bytes; false when the exchange is over (the body went over the limit, or it finished).
    func receive(_ data: Data) -> Bool {
        let outcome: Bool? = state.withLock { state in
            guard !state.finished else { return false }
            if state.body.count + data.count > limit { return nil }
            state.body.append(contentsOf: data)
            return true
        }
        guard let outcome else {
            finish(.failure(tooLargeError))
            return false
        }
        return outcome
    }

    /// URLSession reports the end of the task.
    func complete(_ error: (any Error)?) {
        if let error {
            finish(.failure(ClientError(.transport, "\(url.absoluteString): \(error.localizedDescription)")))
            return
        }
        let response = state.withLock { HTTPResponse(status: $0.status, headers: $0.headers, body: $0.body) }
        finish(.success(response))
    }
}

/// Routes session callbacks to each request's exchange.
private final class SessionDelegate: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    private let exchanges = LockedBox([Int: Exchange]())

    func register(_ exchange: Exchange, for identifier: Int) {
        exchanges.withLock { $0[identifier] = exchange }
    }

    private func exchange(_ task: URLSessionTask) -> Exchange? {
        exchanges.withLock { $0[task.taskIdentifier] }
    }

    func urlSession(
        _ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
        completionHandler: @escaping (URLSession.ResponseDisposition) -> Void
    ) {
        guard let exchange = exchange(dataTask), exchange.receive(response) else {
            completionHandler(.cancel)
            return
        }
        completionHandler(.allow)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        guard let exchange = exchange(dataTask) else { return }
        if !exchange.receive(data) { dataTask.cancel() }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        let exchange = exchanges.withLock { $0.removeValue(forKey: task.taskIdentifier) }
        exchange?.complete(error)
    }

    func urlSession(
        _ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
        newRequest request: URLRequest, completionHandler: @escaping (URLRequest?) -> Void
    ) {
        // A redirect would drop or leak the bearer token; the client treats the 3xx itself as the answer.
        completionHandler(nil)
    }
}
