public import Foundation
import SwitchyardClient

#if canImport(Darwin)
    import Darwin
#elseif canImport(Glibc)
    import Glibc
#endif

/// A small HTTP/1.1 server on a random loopback port whose answers tests script, including hostile ones:
/// garbage, a body that stops early, a slow trickle, a huge body, a connection closed without an answer.
///
/// One thread accepts; each connection gets a thread, reads one request, answers, and closes. Handlers may block
/// (to play a long-poll); ``stop()`` wakes nothing by itself, so blocking handlers should watch ``isStopped``.
public final class TestHTTPServer: @unchecked Sendable {
    /// A request as the server read it.
    public struct Request: Sendable, Hashable {
        public var method: String
        /// The path without the query.
        public var path: String
        public var query: [String: String]
        /// Header names lowercased.
        public var headers: [String: String]
        public var body: [UInt8]
    }

    /// How to answer.
    public enum Reply: Sendable {
        /// A complete response with `Content-Length`.
        case response(status: Int, headers: [String: String] = [:], body: [UInt8] = [])
        /// Bytes written as they are, then the connection closes (garbage, a truncated body, a lying length).
        case raw([UInt8])
        /// A status line and headers at once, then the body a few bytes at a time with a pause between writes.
        case trickle(status: Int, headers: [String: String], body: [UInt8], chunkSize: Int, pause: Duration)
        /// Close the connection without answering.
        case close
    }

    public typealias Handler = @Sendable (Request) -> Reply

    public let port: Int
    private let listener: Int32
    /// Cleared by `stop()`, so a connection thread that outlives the server finds no handler (and the handler's
    /// captures are released).
    private let handler: LockedBox<Handler?>
    private let stopped = LockedBox(false)
    private let connections = LockedBox(Set<Int32>())
    private let log = LockedBox([Request]())
    private let acceptDone = DispatchSemaphore(value: 0)

    /// Binds 127.0.0.1 on a port (0: a free one) and starts accepting.
    public init(port: Int = 0, handler: @escaping Handler) throws {
        self.handler = LockedBox(handler)
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw TestServerError("socket() failed: \(errno)") }
        var yes: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0, listen(fd, 128) == 0 else {
            close(fd)
            throw TestServerError("bind/listen on 127.0.0.1 failed: \(errno)")
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        self.port = Int(UInt16(bigEndian: address.sin_port))
        listener = fd
        let thread = Thread { [self] in acceptLoop() }
        thread.start()
    }

    deinit {
        stop()
    }

    /// `http://127.0.0.1:<port>`.
    public var baseURL: URL { URL(string: "http://127.0.0.1:\(port)")! }

    /// Every request read so far.
    public var requests: [Request] { log.withLock { $0 } }

    public var isStopped: Bool { stopped.withLock { $0 } }

    /// Stops accepting and closes open connections. Idempotent.
    public func stop() {
        let wasStopped = stopped.withLock { stopped in
            defer { stopped = true }
            return stopped
        }
        guard !wasStopped else { return }
        handler.withLock { $0 = nil }
        shutdown(listener, Int32(SHUT_RDWR))
        acceptDone.wait()
        close(listener)
        for fd in connections.withLock({ $0 }) { shutdown(fd, Int32(SHUT_RDWR)) }
    }

    private func acceptLoop() {
        defer { acceptDone.signal() }
        while !isStopped {
            var poller = pollfd(fd: listener, events: Int16(POLLIN), revents: 0)
            let ready = poll(&poller, 1, 50)
            if ready <= 0 { continue }
            let connection = accept(listener, nil, nil)
            if connection < 0 { continue }
            if isStopped {
                close(connection)
                return
            }
            connections.withLock { _ = $0.insert(connection) }
            let thread = Thread { [self] in serve(connection) }
            thread.start()
        }
    }

    private func serve(_ fd: Int32) {
        defer {
            connections.withLock { _ = $0.remove(fd) }
            shutdown(fd, Int32(SHUT_RDWR))
            close(fd)
        }
        guard let request = readRequest(fd), let handler = handler.current else { return }
        log.withLock { $0.append(request) }
        switch handler(request) {
        case .response(let status, let headers, let body):
            var head =
                "HTTP/1.1 \(status) \(Self.reason(status))\r\nContent-Length: \(body.count)\r\nConnection: close\r\n"
            for (name, value) in headers { head += "\(name): \(value)\r\n" }
            head += "\r\n"
            _ = write(fd, Array(head.utf8)) && write(fd, body)
        case .raw(let bytes):
            _ = write(fd, bytes)
        case .trickle(let status, let headers, let body, let chunkSize, let pause):
            var head =
                "HTTP/1.1 \(status) \(Self.reason(status))\r\nContent-Length: \(body.count)\r\nConnection: close\r\n"
            for (name, value) in headers { head += "\(name): \(value)\r\n" }
            head += "\r\n"
            guard write(fd, Array(head.utf8)) else { return }
            var offset = 0
            while offset < body.count, !isStopped {
                let end = min(body.count, offset + max(1, chunkSize))
                guard write(fd, Array(body[offset..<end])) else { return }
                offset = end
                Thread.sleep(forTimeInterval: pause.secondsValue)
            }
        case .close:
            return
        }
    }

    private func write(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            #if canImport(Darwin)
                let flags: Int32 = 0
            #else
                let flags = Int32(MSG_NOSIGNAL)
            #endif
            let count = bytes.withUnsafeBytes { send(fd, $0.baseAddress! + offset, bytes.count - offset, flags) }
            if count <= 0 {
                if count < 0 && errno == EINTR { continue }
                return false
            }
            offset += count
        }
        return true
    }

    private func readRequest(_ fd: Int32) -> Request? {
        var buffer: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        var headerEnd: Int?
        while headerEnd == nil {
            let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress!, 65536, 0) }
            if count <= 0 { return nil }
            buffer += chunk[0..<count]
            headerEnd = Self.find([13, 10, 13, 10], in: buffer)
            if buffer.count > 1 << 20 { return nil }
        }
        let head = String(decoding: buffer[0..<headerEnd!], as: UTF8.self)
        var lines = head.components(separatedBy: "\r\n")
        let requestLine = lines.removeFirst().split(separator: " ")
        guard requestLine.count >= 2 else { return nil }
        var headers: [String: String] = [:]
        for line in lines {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(
                in: .whitespaces)
        }
        var body = Array(buffer[(headerEnd! + 4)...])
        let length = Int(headers["content-length"] ?? "0") ?? 0
        while body.count < length {
            let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress!, 65536, 0) }
            if count <= 0 { return nil }
            body += chunk[0..<count]
        }
        let target = String(requestLine[1])
        var path = target
        var query: [String: String] = [:]
        if let mark = target.firstIndex(of: "?") {
            path = String(target[..<mark])
            for pair in target[target.index(after: mark)...].split(separator: "&") {
                let parts = pair.split(separator: "=", maxSplits: 1)
                query[String(parts[0])] = parts.count > 1 ? String(parts[1]).removingPercentEncoding : ""
            }
        }
        return Request(
            method: String(requestLine[0]), path: path.removingPercentEncoding ?? path, query: query,
            headers: headers, body: body)
    }

    private static func find(_ needle: [UInt8], in haystack: [UInt8]) -> Int? {
        guard haystack.count >= needle.count else { return nil }
        for start in 0...(haystack.count - needle.count)
        where haystack[start..<(start + needle.count)].elementsEqual(needle) {
            return start
        }
        return nil
    }

    private static func reason(_ status: Int) -> String {
        switch status {
        case 200: "OK"
        case 304: "Not Modified"
        case 400: "Bad Request"
        case 401: "Unauthorized"
        case 404: "Not Found"
        case 413: "Content Too Large"
        case 500: "Internal Server Error"
        case 503: "Service Unavailable"
        default: "Status"
        }
    }
}

public struct TestServerError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}
