import Foundation
import HTTPTypes

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// One TCP connection to a live server on loopback, spoken to in raw HTTP/1.1: for what URLSession hides
/// (pipelined requests, exact headers, half-closing, closing while a request is parked).
///
/// Reads block a thread of their own (never one of the cooperative pool's, which the server needs), with a
/// generous receive timeout: a liveness check, not a speed claim.
final class RawHTTPConnection: @unchecked Sendable {
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    private let socket: Int32
    private var buffer: [UInt8] = []
    private var isOpen = true

    /// Connects to `127.0.0.1:port`.
    ///
    /// - Parameters:
    ///   - source: the loopback address to connect from (`127.0.0.2`: any of 127.0.0.0/8), for a peer address of its
    ///     own; nil: the one the system picks (127.0.0.1).
    ///   - receiveBuffer: the socket's receive buffer in bytes (`SO_RCVBUF`), set before connecting: a small one keeps
    ///     what the server writes waiting on its side until this side reads; nil: the system's.
    init(port: Int, source: String? = nil, timeoutSeconds: Int = 120, receiveBuffer: Int? = nil) throws {
        #if canImport(Glibc)
            socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #else
            socket = Darwin.socket(AF_INET, SOCK_STREAM, 0)
        #endif
        guard socket >= 0 else { throw Failure(description: "socket() failed") }
        var timeout = timeval(tv_sec: timeoutSeconds, tv_usec: 0)
        setsockopt(socket, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        if var size = receiveBuffer.map(Int32.init) {
            setsockopt(socket, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        if let source {
            var local = sockaddr_in()
            local.sin_family = sa_family_t(AF_INET)
            local.sin_addr.s_addr = inet_addr(source)
            let bound = withUnsafePointer(to: &local) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
            guard bound == 0 else {
                close(socket)
                throw Failure(description: "bind to \(source) failed (errno \(errno))")
            }
        }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else {
            close(socket)
            throw Failure(description: "connect to port \(port) failed")
        }
    }

    deinit {
        if isOpen { close(socket) }
    }

    /// Sends bytes as they are (several requests at once to pipeline them).
    ///
    /// - Throws: when the server closed or reset the connection (without the `SIGPIPE` a plain `write` would raise).
    func send(_ text: String) throws {
        let bytes = Array(text.utf8)
        var sent = 0
        while sent < bytes.count {
            #if canImport(Glibc)
                let count = bytes[sent...].withUnsafeBytes {
                    Glibc.send(socket, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
                }
            #else
                let count = bytes[sent...].withUnsafeBytes { write(socket, $0.baseAddress, $0.count) }
            #endif
            guard count > 0 else { throw Failure(description: "write failed (errno \(errno))") }
            sent += count
        }
    }

    /// A GET request's bytes.
    static func get(_ target: String, headers: [(String, String)] = []) -> String {
        var text = "GET \(target) HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        for (name, value) in headers { text += "\(name): \(value)\r\n" }
        return text + "\r\n"
    }

    /// Closes the sending side; the server sees end of input.
    func shutdownWriting() {
        shutdown(socket, Int32(SHUT_WR))
    }

    /// Aborts the connection (the server sees a reset, as when a client process dies or a network path drops).
    func reset() {
        var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
        setsockopt(socket, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
        close(socket)
        isOpen = false
    }

    /// Reads one complete response (head and `Content-Length` body).
    func readResponse() async throws -> TestResponse {
        try await Self.offload { try self.readResponseBlocking() }
    }

    /// Whether the server closed the connection (end of input with nothing more buffered, or a reset).
    func isClosedByServer() async throws -> Bool {
        try await Self.offload { try self.isClosedByServerBlocking() }
    }

    private static func offload<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            Thread.detachNewThread { continuation.resume(with: Result { try work() }) }
        }
    }

    private func readResponseBlocking() throws -> TestResponse {
        while true {
            if let end = headEnd() {
                let head = String(decoding: buffer[..<end], as: UTF8.self)
                var lines = head.components(separatedBy: "\r\n")
                let statusLine = lines.removeFirst().split(separator: " ")
                guard statusLine.count >= 2, let code = Int(statusLine[1]) else {
                    throw Failure(description: "bad status line in \(head)")
                }
                var fields = HTTPFields()
                for line in lines where !line.isEmpty {
                    guard let colon = line.firstIndex(of: ":"), let name = HTTPField.Name(String(line[..<colon])) else {
                        continue
                    }
                    fields.append(
                        HTTPField(name: name, value: String(line[line.index(after: colon)...]).trimmingSpaces()))
                }
                let length = fields[.contentLength].flatMap { Int($0) } ?? 0
                try fill(to: end + 4 + length)
                let body = Array(buffer[(end + 4)..<(end + 4 + length)])
                buffer.removeFirst(end + 4 + length)
                return TestResponse(status: HTTPResponse.Status(code: code), headers: fields, body: body)
            }
            try readMore()
        }
    }

    private func isClosedByServerBlocking() throws -> Bool {
        guard buffer.isEmpty else { return false }
        var byte: UInt8 = 0
        let count = read(socket, &byte, 1)
        if count == 0 { return true }
        if count > 0 { buffer.append(byte) }
        if count < 0 {
            if errno == ECONNRESET { return true }
            throw Failure(description: "read failed or timed out (errno \(errno))")
        }
        return false
    }

    private func headEnd() -> Int? {
        guard buffer.count >= 4 else { return nil }
        for index in 0...(buffer.count - 4)
        where buffer[index] == 13 && buffer[index + 1] == 10 && buffer[index + 2] == 13 && buffer[index + 3] == 10 {
            return index
        }
        return nil
    }

    private func fill(to count: Int) throws {
        while buffer.count < count { try readMore() }
    }

    private func readMore() throws {
        var chunk = [UInt8](repeating: 0, count: 65_536)
        let count = chunk.withUnsafeMutableBytes { read(socket, $0.baseAddress, $0.count) }
        guard count > 0 else {
            throw Failure(description: count == 0 ? "the server closed the connection" : "read failed or timed out")
        }
        buffer.append(contentsOf: chunk[..<count])
    }
}

extension String {
    fileprivate func trimmingSpaces() -> String {
        String(self.drop { $0 == " " }.reversed().drop { $0 == " " }.reversed())
    }
}
