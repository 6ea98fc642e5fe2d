#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The address flagsd listens on, checked before anything else starts, and written as people type it.
struct ListenAddress {
    var host: String
    var port: Int

    /// Why flagsd cannot listen where it was told to; says which option changes it.
    struct Unavailable: Error, CustomStringConvertible {
        var description: String
    }

    /// Binds a socket to the address as the server will (with `SO_REUSEADDR`) and closes it again, so that a port
    /// another process holds stops flagsd at once, before it opens, migrates or seeds its database. Port 0 (a free
    /// port) always passes; errors other than a taken or forbidden port are left for the server's own bind to report.
    func check() throws(Unavailable) {
        guard port != 0 else { return }
        var hints = addrinfo()
        hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV
        hints.ai_family = AF_UNSPEC
        #if canImport(Glibc)
            hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        #else
            hints.ai_socktype = SOCK_STREAM
        #endif
        var found: UnsafeMutablePointer<addrinfo>?
        let resolved = getaddrinfo(host, String(port), &hints, &found)
        guard resolved == 0, let first = found else {
            throw Unavailable(
                description:
                    "--host '\(host)' is not an address flagsd can listen on (\(String(cString: gai_strerror(resolved)))); pass an address such as 127.0.0.1, 0.0.0.0 or ::1 (or set SWITCHYARD_HOST)"
            )
        }
        defer { freeaddrinfo(found) }
        let descriptor = socket(first.pointee.ai_family, first.pointee.ai_socktype, first.pointee.ai_protocol)
        guard descriptor >= 0 else { return }
        defer { close(descriptor) }
        var one: Int32 = 1
        setsockopt(descriptor, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        guard bind(descriptor, first.pointee.ai_addr, first.pointee.ai_addrlen) != 0 else { return }
        switch errno {
        case EADDRINUSE:
            throw Unavailable(
                description:
                    "port \(port) on \(host) is in use by another process (another flagsd?); stop it, or start flagsd on a free port with --port N (or SWITCHYARD_PORT; --port 0 picks one). Nothing was opened or changed"
            )
        case EACCES:
            throw Unavailable(
                description:
                    "port \(port) on \(host) needs privileges flagsd does not have; pass --port 1024 or above (or SWITCHYARD_PORT)"
            )
        case EADDRNOTAVAIL:
            throw Unavailable(
                description:
                    "--host '\(host)' is not an address of this machine; pass one of its addresses, 127.0.0.1 or 0.0.0.0 (or set SWITCHYARD_HOST)"
            )
        default:
            return
        }
    }

    /// `http://127.0.0.1:8080` for this address and `port` (the one bound, when port 0 picked one): an address that
    /// means every interface is shown as loopback, which reaches it from this machine; IPv6 in brackets.
    static func url(host: String, port: Int) -> String {
        let shown = host == "0.0.0.0" || host.isEmpty ? "127.0.0.1" : host == "::" ? "::1" : host
        return "http://\(shown.contains(":") ? "[\(shown)]" : shown):\(port)"
    }
}
