import Foundation

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

    /// What per-address caps and rates count by, and what is stored with events: an IPv4 address as is, an IPv6
    /// address by its /64 (one subscriber's network: a host picks any address in it, so counting single addresses
    /// would let one host be thousands).
    public var key: String {
        isIPv4 ? description : IPNetwork(address: self, prefixLength: 64).description
    }

    /// The blocks a per-address cap or rate holds at (``AddressBlock``).
    public var blocks: [AddressBlock] {
        guard !isIPv4 else { return [AddressBlock(key: description, share: 1)] }
        return AddressBlock.ipv6Levels.map {
            AddressBlock(key: IPNetwork(address: self, prefixLength: $0.prefixLength).description, share: $0.share)
        }
    }

    /// The network the crash guard counts as one party toward `min_addresses`: an IPv4 address's /24, an IPv6
    /// address's /48 (a site: what one subscriber, or one tunnel broker's customer, can hold).
    public var network: IPNetwork {
        IPNetwork(address: self, prefixLength: isIPv4 ? 24 : 48)
    }

    public var description: String {
        if isIPv4 { return bytes.map(String.init).joined(separator: ".") }
        var groups: [UInt16] = []
        for index in stride(from: 0, to: 16, by: 2) {
            groups.append(UInt16(bytes[index]) << 8 | UInt16(bytes[index + 1]))
        }
        // RFC 5952: the longest run of two or more zero groups (the first of equal ones) becomes "::".
        var best = (start: -1, length: 0)
        var index = 0
        while index < 8 {
            guard groups[index] == 0 else {
                index += 1
                continue
            }
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
            guard !part.isEmpty, part.count <= 3, part.allSatisfy(\.isDecimalDigit), let value = UInt8(part) else {
                return nil
            }
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
            guard let first = groups(pieces[0], allowIPv4: false), let rest = groups(last, allowIPv4: true) else {
                return nil
            }
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
            guard !parts[1].isEmpty, parts[1].allSatisfy(\.isDecimalDigit), let parsed = Int(parts[1]), parsed <= bits
            else { return nil }
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

extension Character {
    /// `0` to `9`.
    fileprivate var isDecimalDigit: Bool { ("0"..."9").contains(self) }
}

/// A block of addresses that a per-address cap or rate counts as one party, and the share of the per-address cap
/// or rate it holds.
///
/// An IPv4 address is one block: itself, with the whole cap. An IPv6 address is counted at three prefix lengths at
/// once: its /64 with the cap, its /56 with 4 times the cap, its /48 with 16 times the cap. A host that may pick any
/// address of a /48 (a tunnel broker hands those out) is then at most 16 addresses' worth, not 65,536; a network
/// shared by many subscribers still gets several addresses' worth.
///
/// ```swift
/// IPAddress("2001:db8:1:2::5")!.blocks.map(\.key)
/// // ["2001:db8:1:2::/64", "2001:db8:1::/56", "2001:db8:1::/48"]
/// ```
public struct AddressBlock: Sendable, Hashable, CustomStringConvertible {
    /// The block as text: `203.0.113.7`, `2001:db8:1:2::/64`.
    public var key: String
    /// How many addresses' worth of a per-address cap or rate it holds.
    public var share: Int

    public init(key: String, share: Int) {
        self.key = key
        self.share = share
    }

    /// The IPv6 prefix lengths a per-address cap holds at, with their shares.
    public static let ipv6Levels: [(prefixLength: Int, share: Int)] = [(64, 1), (56, 4), (48, 16)]

    /// This block's cap from a per-address one (saturating).
    public func cap(_ perAddress: Int) -> Int {
        let (product, overflow) = perAddress.multipliedReportingOverflow(by: share)
        return overflow ? Int.max : product
    }

    /// This block's cap from a per-address one, where the cap for everyone together is `whole`: a wider block holds
    /// at most a quarter of the whole (or one address's cap, when that is more), so that no one /48 can take every
    /// place however its shares multiply.
    public func cap(_ perAddress: Int, within whole: Int) -> Int {
        share == 1 ? cap(perAddress) : min(cap(perAddress), max(perAddress, whole / Self.wideBlockFraction))
    }

    /// A wider block (an IPv6 /56 or /48) holds at most 1/4 of a cap for everyone together.
    public static let wideBlockFraction = 4

    /// The blocks of an address key as ``IPAddress/key`` writes it (stored with events: `203.0.113.7`,
    /// `2001:db8:1:2::/64`); a key that is no address is one block of its own.
    public static func blocks(ofKey key: String) -> [AddressBlock] {
        guard let address = IPNetwork(key)?.address else { return [AddressBlock(key: key, share: 1)] }
        return address.blocks
    }

    /// The network of an address key (``IPAddress/network``), as text; a key that is no address is its own.
    public static func network(ofKey key: String) -> String {
        guard let address = IPNetwork(key)?.address else { return key }
        return address.network.description
    }

    public var description: String { share == 1 ? key : "\(key) (×\(share))" }
}
