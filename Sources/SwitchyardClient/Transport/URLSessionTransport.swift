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
                exchange.start(continuation)
                delegate.register(exchange, for: task.taskIdentifier)
                let deadline = DispatchTime.now() + .milliseconds(Int(min(request.timeout.secondsValue * 1000, 1e9)))
                DispatchQueue.global().asyncAfter(deadline: deadline) { [weak task] in
                    if exchange.markTimedOut() { task?.cancel() }
                }
                task.resume()
            }
        } onCancel: {
            exchange.markCancelled()
            task.cancel()
        }
    }
}

/// The state of one request, shared by the delegate queue, the deadline timer and cancellation.
private final class Exchange: @unchecked Sendable {
    enum Ending { case none, timedOut, cancelled, tooLarge }

    private struct State {
        var continuation: CheckedContinuation<HTTPResponse, any Error>?
        var status = 0
        var headers: [String: String] = [:]
        var body: [UInt8] = []
        var ending = Ending.none
    }

    let limit: Int
    let url: URL
    private let state = LockedBox(State())

    init(limit: Int, url: URL) {
        self.limit = limit
        self.url = url
    }

    func start(_ continuation: CheckedContinuation<HTTPResponse, any Error>) {
        state.withLock { $0.continuation = continuation }
    }

    /// Marks the exchange timed out; true when it was still running.
    func markTimedOut() -> Bool {
        state.withLock { state in
            guard state.continuation != nil, state.ending == .none else { return false }
            state.ending = .timedOut
            return true
        }
    }

    func markCancelled() {
        state.withLock { state in
            if state.ending == .none { state.ending = .cancelled }
        }
    }

    /// Records the status and headers; false when the announced length is already over the limit.
    func receive(_ response: URLResponse) -> Bool {
        state.withLock { state in
            if let http = response as? HTTPURLResponse {
                state.status = http.statusCode
                for (name, value) in http.allHeaderFields {
                    if let name = name as? String, let value = value as? String { state.headers[name.lowercased()] = value }
                }
            }
            if response.expectedContentLength > Int64(limit) {
                state.ending = .tooLarge
                return false
            }
            return true
        }
    }

    /// Appends body bytes; false when the body went over the limit.
    func receive(_ data: Data) -> Bool {
        state.withLock { state in
            guard state.ending == .none else { return false }
            if state.body.count + data.count > limit {
                state.ending = .tooLarge
                state.body = []
                return false
            }
            state.body.append(contentsOf: data)
            return true
        }
    }

    func complete(_ error: (any Error)?) {
        let (continuation, result): (CheckedContinuation<HTTPResponse, any Error>?, Result<HTTPResponse, any Error>) =
            state.withLock { state in
                let continuation = state.continuation
                state.continuation = nil
                switch state.ending {
                case .timedOut:
                    return (continuation, .failure(ClientError(.timedOut, "\(url.absoluteString) did not answer completely within the request deadline; the server is down or too slow")))
                case .cancelled:
                    return (continuation, .failure(CancellationError()))
                case .tooLarge:
                    return (continuation, .failure(ClientError(.tooLarge, "the response from \(url.absoluteString) is larger than \(limit) bytes; the client refuses it")))
                case .none:
                    if let error {
                        return (continuation, .failure(ClientError(.transport, "\(url.absoluteString): \(error.localizedDescription)")))
                    }
                    let response = HTTPResponse(status: state.status, headers: state.headers, body: state.body)
                    state.body = []
                    return (continuation, .success(response))
                }
            }
        continuation?.resume(with: result)
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

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
                    completionHandler: @escaping (URLSession.ResponseDisposition) -> Void) {
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

    func urlSession(_ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
                    newRequest request: URLRequest, completionHandler: @escaping (URLRequest?) -> Void) {
        // A redirect would drop or leak the bearer token; the client treats the 3xx itself as the answer.
        completionHandler(nil)
    }
}
