import Foundation
public import HTTPTypes
public import SwitchyardStorage

/// The proxies (load balancers, ingress controllers) whose forwarding header flagsd believes
/// (`--trusted-proxies`, `--forwarded-header`), and the source address of a request they forward.
///
/// The source address of a request is its TCP peer, unless the peer is a trusted proxy: then it is the first
/// address that is not a trusted proxy, reading the forwarding chain of the one header the operator named
/// (`X-Forwarded-For` by default, or `Forwarded`'s `for=` parameters, RFC 7239) from the nearest hop back. The other
/// header is never read: proxies append to one of them and pass the other through as the client sent it, so reading
/// it would let a client name its own address. Anything before the source in the chain was written by a party
/// flagsd does not trust, so it is ignored. When a hop cannot be read (`unknown`, an obfuscated name, garbage), the
/// source is the nearest trusted hop: the requests it forwards share one address, which the caps treat as one
/// source (the safe side). When every hop is trusted, the source is the first one.
///
/// One definition for every per-address decision: the crash guard's caps, and rate limits per address.
public struct TrustedProxies: Sendable, Hashable {
    /// The header a trusted proxy appends the address it saw to.
    public enum Header: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
        /// `X-Forwarded-For: client, proxy1` (nginx `$proxy_add_x_forwarded_for`, HAProxy `option forwardfor`, AWS
        /// ALB, Envoy, Traefik).
        case xForwardedFor = "x-forwarded-for"
        /// `Forwarded: for=client, for=proxy1` (RFC 7239; HAProxy `option forwarded`, nginx with a `map`).
        case forwarded

        public var description: String { rawValue }
    }

    public var networks: [IPNetwork]
    /// The one forwarding header read from a trusted proxy.
    public var header: Header

    public init(_ networks: [IPNetwork] = [], header: Header = .xForwardedFor) {
        self.networks = networks
        self.header = header
    }

    /// Parses `10.0.0.0/8,192.168.0.1,fd00::/8` (commas, optional spaces).
    ///
    /// - Throws: a message naming the entry that is not an address or CIDR block.
    public init(parsing text: String, header: Header = .xForwardedFor) throws(TrustedProxiesError) {
        var networks: [IPNetwork] = []
        for entry in text.split(separator: ",").map({ $0.trimmingCharacters(in: .whitespaces) }) where !entry.isEmpty {
            guard let network = IPNetwork(entry) else { throw TrustedProxiesError(entry: entry) }
            networks.append(network)
        }
        self.init(networks, header: header)
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
        let chain =
            switch header {
            case .xForwardedFor: Self.forwardedFor(headers[values: .xForwardedFor])
            case .forwarded: Self.forwardedFor(rfc7239: headers[values: .forwarded])
            }
        var nearest = peer
        for hop in chain.reversed() {
            guard let address = Self.address(of: hop) else { return nearest }
            guard trusts(address) else { return address }
            nearest = address
        }
        return nearest
    }

    /// Whether a trusted peer sent the forwarding header flagsd does not read and not the one it does (a proxy set up
    /// for the other header).
    public func sendsOnlyTheOtherHeader(peer: IPAddress, headers: HTTPFields) -> Bool {
        guard trusts(peer) else { return false }
        let (read, other): (HTTPField.Name, HTTPField.Name) =
            header == .xForwardedFor ? (.xForwardedFor, .forwarded) : (.forwarded, .xForwardedFor)
        return headers[read] == nil && headers[other] != nil
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
