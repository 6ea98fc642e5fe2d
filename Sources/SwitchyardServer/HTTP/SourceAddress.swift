import Foundation
public import HTTPTypes

/// An IPv4 or IPv6 address.
///
/// ```swift
/// IPAddress("203.0.113.7")?.key                 // "203.0.113.7"
/// IPAddress("2001:db8:1:2:aa::5")?.key          // "2001:db8:1:2::/64"
/// IPAddress("::ffff:203.0.113.7")?.description  // "203.0.113.7" (IPv4-mapped addresses are IPv4)
/// ```
public struct IPAddress: Sendable, Hashable, CustomStringConvertible {
    /// 4 bytes (IPv4) or 16 (IPv6), network order.
    public let bytes: [UInt8]

    public init?(bytes: [UInt8]) {
        guard bytes.count == 4 || bytes.count == 16 else { return nil }
        // An IPv4-mapped IPv6 address (::ffff:a.b.c.d) is the IPv4 address: dual-stack sockets report them.
        if bytes.count == 16, bytes[0..<10].allSatisfy({ $0 == 0 }), bytes[10] == 0xFF, bytes[11] == 0xFF {
            self.bytes = Array(bytes[12..<16])
        } else {
            self.bytes = bytes
        }
    }

    /// Parses `203.0.113.7` or an IPv6 address in any RFC 4291 text form (`::1`, `2001:db8::7`,
    /// `::ffff:203.0.113.7`); a zone (`%eth0`) is ignored. Nil for anything else.
    public init?(_ text: some StringProtocol) {
        var text = Substring(text)
        if let percent = text.firstIndex(of: "%") { text = text[..<percent] }
        if let v4 = Self.parseIPv4(text) {
            self.init(bytes: v4)
        } else if let v6 = Self.parseIPv6(text) {
            self.init(bytes: v6)
        } else {
            return nil
        }
    }

    public var isIPv4: Bool { bytes.count == 4 }

    /// What the crash guard counts sessions by: an IPv4 address as is, an IPv6 address by its /64 (one subscriber's
    /// network: a host picks any address in it, so counting single addresses would let one host be thousands).
    public var key: String {
        isIPv4 ? description : IPNetwork(address: self, prefixLength: 64).description
    }

    public var description: String {
        if isIPv4 { return bytes.map(String.init).joined(separator: ".") }
        var groups: [UInt16] = []
        for index in stride(from: 0, to: 16, by: 2) { groups.append(UInt16(bytes[index]) << 8 | UInt16(bytes[index + 1])) }
        // RFC 5952: the longest run of two or more zero groups (the first of equal ones) becomes "::".
        var best = (start: -1, length: 0)
        var index = 0
        while index < 8 {
            guard groups[index] == 0 else { index += 1; continue }
            var end = index
            while end < 8, groups[end] == 0 { end += 1 }
            if end - index > best.length, end - index >= 2 { best = (index, end - index) }
            index = end
        }
        func hex(_ range: Range<Int>) -> String { groups[range].map { String($0, radix: 16) }.joined(separator: ":") }
        guard best.start >= 0 else { return hex(0..<8) }
        return hex(0..<best.start) + "::" + hex((best.start + best.length)..<8)
    }

    static func parseIPv4(_ text: Substring) -> [UInt8]? {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4 else { return nil }
        var bytes: [UInt8] = []
        for part in parts {
            guard !part.isEmpty, part.count <= 3, part.allSatisfy(\.isDecimalDigit), let value = UInt8(part) else { return nil }
            bytes.append(value)
        }
        return bytes
    }

    static func parseIPv6(_ text: Substring) -> [UInt8]? {
        guard text.contains(":"), text.count <= 45 else { return nil }
        var head: [UInt16] = []
        var tail: [UInt16] = []
        var compressed = false
        var pieces = text.components(separatedBy: "::")
        guard pieces.count <= 2 else { return nil }
        if pieces.count == 2 { compressed = true }
        func groups(_ piece: String, allowIPv4: Bool) -> [UInt16]? {
            guard !piece.isEmpty else { return [] }
            var result: [UInt16] = []
            let fields = piece.split(separator: ":", omittingEmptySubsequences: false)
            for (index, field) in fields.enumerated() {
                if allowIPv4, index == fields.count - 1, field.contains("."), let v4 = parseIPv4(field) {
                    result.append(UInt16(v4[0]) << 8 | UInt16(v4[1]))
                    result.append(UInt16(v4[2]) << 8 | UInt16(v4[3]))
                    continue
                }
                guard !field.isEmpty, field.count <= 4, let value = UInt16(field, radix: 16) else { return nil }
                result.append(value)
            }
            return result
        }
        let last = pieces.removeLast()
        if compressed {
            guard let first = groups(pieces[0], allowIPv4: false), let rest = groups(last, allowIPv4: true) else { return nil }
            head = first
            tail = rest
            guard head.count + tail.count <= 7 else { return nil }
        } else {
            guard let all = groups(last, allowIPv4: true), all.count == 8 else { return nil }
            head = all
        }
        let words = head + Array(repeating: 0, count: 8 - head.count - tail.count) + tail
        return words.flatMap { [UInt8($0 >> 8), UInt8($0 & 0xFF)] }
    }
}

/// A block of addresses: `10.0.0.0/8`, `2001:db8::/32`, or one address (`192.0.2.7`, a /32 or /128).
public struct IPNetwork: Sendable, Hashable, CustomStringConvertible {
    /// The network's first address (host bits cleared).
    public let address: IPAddress
    public let prefixLength: Int

    public init(address: IPAddress, prefixLength: Int) {
        let bits = address.bytes.count * 8
        let length = min(max(prefixLength, 0), bits)
        var bytes = address.bytes
        for index in bytes.indices {
            let kept = min(max(length - index * 8, 0), 8)
            bytes[index] &= kept == 0 ? 0 : UInt8(truncatingIfNeeded: 0xFF << (8 - kept))
        }
        self.address = IPAddress(bytes: bytes) ?? address
        self.prefixLength = length
    }

    /// Parses `CIDR` (`10.0.0.0/8`, `fd00::/8`) or a single address; nil for anything else (a prefix longer than
    /// the address, a malformed address).
    public init?(_ text: some StringProtocol) {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count <= 2, let address = IPAddress(parts[0]) else { return nil }
        let bits = address.bytes.count * 8
        var length = bits
        if parts.count == 2 {
            guard !parts[1].isEmpty, parts[1].allSatisfy(\.isDecimalDigit), let parsed = Int(parts[1]), parsed <= bits else { return nil }
            length = parsed
        }
        self.init(address: address, prefixLength: length)
    }

    public func contains(_ other: IPAddress) -> Bool {
        guard other.bytes.count == address.bytes.count else { return false }
        return IPNetwork(address: other, prefixLength: prefixLength).address == address
    }

    public var description: String { "\(address)/\(prefixLength)" }
}

/// The proxies (load balancers, ingress controllers) whose forwarding headers flagsd believes
/// (`--trusted-proxies`), and the source address of a request they forward.
///
/// The source address of a request is its TCP peer, unless the peer is a trusted proxy: then it is the first
/// address that is not a trusted proxy, reading the forwarding chain from the nearest hop back (`Forwarded`'s
/// `for=` parameters, RFC 7239, when the request has that header, else `X-Forwarded-For`). Anything before that
/// address in the chain was written by a party flagsd does not trust, so it is ignored. When a hop cannot be read
/// (`unknown`, an obfuscated name, garbage), the source is the nearest trusted hop: the requests it forwards share
/// one address, which the caps treat as one source (the safe side). When every hop is trusted, the source is the
/// first one.
///
/// One definition for every per-address decision: the crash guard's caps, and rate limits per address.
public struct TrustedProxies: Sendable, Hashable {
    public var networks: [IPNetwork]

    public init(_ networks: [IPNetwork] = []) {
        self.networks = networks
    }

    /// Parses `10.0.0.0/8,192.168.0.1,fd00::/8` (commas, optional spaces).
    ///
    /// - Throws: a message naming the entry that is not an address or CIDR block.
    public init(parsing text: String) throws(TrustedProxiesError) {
        var networks: [IPNetwork] = []
        for entry in text.split(separator: ",").map({ $0.trimmingCharacters(in: .whitespaces) }) where !entry.isEmpty {
            guard let network = IPNetwork(entry) else { throw TrustedProxiesError(entry: entry) }
            networks.append(network)
        }
        self.init(networks)
    }

    public func trusts(_ address: IPAddress) -> Bool {
        networks.contains { $0.contains(address) }
    }

    /// The source address of a request.
    ///
    /// - Parameters:
    ///   - peer: the TCP peer; nil when unknown (then so is the source).
    ///   - headers: the request's header fields.
    public func sourceAddress(peer: IPAddress?, headers: HTTPFields) -> IPAddress? {
        guard let peer else { return nil }
        guard trusts(peer), !networks.isEmpty else { return peer }
        let forwarded = headers[values: .forwarded]
        let chain = forwarded.isEmpty ? Self.forwardedFor(headers[values: .xForwardedFor]) : Self.forwardedFor(rfc7239: forwarded)
        var nearest = peer
        for hop in chain.reversed() {
            guard let address = Self.address(of: hop) else { return nearest }
            guard trusts(address) else { return address }
            nearest = address
        }
        return nearest
    }

    /// The `for=` values of `Forwarded` fields, in order.
    static func forwardedFor(rfc7239 fields: [String]) -> [Substring] {
        var hops: [Substring] = []
        for field in fields {
            for element in field.split(separator: ",") {
                for pair in element.split(separator: ";") {
                    let trimmed = pair.drop { $0 == " " || $0 == "\t" }
                    guard trimmed.count > 4, trimmed.prefix(4).lowercased() == "for=" else { continue }
                    hops.append(trimmed.dropFirst(4))
                }
            }
        }
        return hops
    }

    /// The entries of `X-Forwarded-For` fields, in order.
    static func forwardedFor(_ fields: [String]) -> [Substring] {
        fields.flatMap { $0.split(separator: ",") }
    }

    /// The address of one hop: `203.0.113.7`, `"[2001:db8::17]:4711"`, `203.0.113.7:4711`; nil when it is none.
    static func address(of hop: Substring) -> IPAddress? {
        var text = hop.trimmingCharacters(in: .whitespaces)[...]
        if text.hasPrefix("\""), text.hasSuffix("\""), text.count >= 2 { text = text.dropFirst().dropLast() }
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else { return nil }
            return IPAddress(text[text.index(after: text.startIndex)..<close])
        }
        // IPv4 with a port: one colon.
        if text.filter({ $0 == ":" }).count == 1, let colon = text.firstIndex(of: ":") { text = text[..<colon] }
        return IPAddress(text)
    }
}

/// A `--trusted-proxies` entry that is neither an address nor a CIDR block.
public struct TrustedProxiesError: Error, CustomStringConvertible {
    public let entry: String

    public var description: String {
        "'\(entry)' is not an IP address or CIDR block (write e.g. 10.0.0.0/8, 192.168.1.7 or fd00::/8)"
    }
}

extension HTTPField.Name {
    static let forwarded = HTTPField.Name("Forwarded")!
    static let xForwardedFor = HTTPField.Name("X-Forwarded-For")!
}

extension Character {
    /// `0` to `9`.
    fileprivate var isDecimalDigit: Bool { ("0"..."9").contains(self) }
}
