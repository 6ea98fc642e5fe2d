import HTTPTypes
import SwitchyardServer
import SwitchyardStorage
import Testing

/// Where a request came from: addresses and blocks as text, and the forwarding chain read back from the nearest
/// hop, trusting only `--trusted-proxies`.
struct SourceAddressTests {
    static let proxies = TrustedProxies([IPNetwork("10.0.0.0/8")!, IPNetwork("fd00::/8")!])

    static func headers(_ fields: [(String, String)]) -> HTTPFields {
        var headers = HTTPFields()
        for (name, value) in fields { headers.append(HTTPField(name: HTTPField.Name(name)!, value: value)) }
        return headers
    }

    func source(peer: String, _ fields: [(String, String)], proxies: TrustedProxies = SourceAddressTests.proxies)
        -> String?
    {
        proxies.sourceAddress(peer: IPAddress(peer), headers: Self.headers(fields))?.description
    }

    @Test(arguments: [
        ("203.0.113.7", "203.0.113.7"), ("::1", "::1"), ("2001:db8::7", "2001:db8::7"),
        ("2001:DB8:0:0:1:0:0:1", "2001:db8::1:0:0:1"),
        ("::ffff:203.0.113.7", "203.0.113.7"), ("fe80::1%eth0", "fe80::1"), ("1:2:3:4:5:6:7:8", "1:2:3:4:5:6:7:8"),
        ("::", "::"), ("64:ff9b::192.0.2.33", "64:ff9b::c000:221"),
    ])
    func addressesReadInEveryTextFormAndPrintInTheShortest(text: String, printed: String) throws {
        #expect(try #require(IPAddress(text)).description == printed)
    }

    @Test(arguments: [
        "", "256.1.1.1", "1.2.3", "1.2.3.4.5", "01234.1.1.1", "1:2:3:4:5:6:7:8:9", "1::2::3", "12345::", "::g",
        "unknown",
        "_hidden", "1.2.3.4:80",
    ])
    func anythingElseIsNoAddress(text: String) {
        #expect(IPAddress(text) == nil)
    }

    @Test func ipv6IsCountedByItsSlash64AndIPv4ByItself() throws {
        #expect(try #require(IPAddress("2001:db8:1:2:aaaa:bbbb:cccc:dddd")).key == "2001:db8:1:2::/64")
        #expect(try #require(IPAddress("2001:db8:1:2::9")).key == IPAddress("2001:db8:1:2:ffff::1")?.key)
        #expect(try #require(IPAddress("198.51.100.23")).key == "198.51.100.23")
    }

    /// Per-address caps hold at an IPv6 address's /64, /56 and /48 with growing shares; the crash guard counts
    /// /24s and /48s.
    @Test func anIPv6AddressIsCountedAtThreePrefixesAndTheGuardCountsSitesAndSlash24s() throws {
        let v6 = try #require(IPAddress("2001:db8:1:2ff:aaaa::5"))
        #expect(v6.blocks.map(\.key) == ["2001:db8:1:2ff::/64", "2001:db8:1:200::/56", "2001:db8:1::/48"])
        #expect(v6.blocks.map(\.share) == [1, 4, 16])
        #expect(v6.blocks.map { $0.cap(100) } == [100, 400, 1600])
        #expect(AddressBlock(key: "x", share: 16).cap(.max) == .max)
        #expect(AddressBlock.blocks(ofKey: v6.key) == v6.blocks)
        #expect(v6.network.description == "2001:db8:1::/48")
        #expect(AddressBlock.network(ofKey: v6.key) == "2001:db8:1::/48")
        let v4 = try #require(IPAddress("198.51.100.23"))
        #expect(v4.blocks == [AddressBlock(key: "198.51.100.23", share: 1)])
        #expect(AddressBlock.network(ofKey: v4.key) == "198.51.100.0/24")
        #expect(AddressBlock.network(ofKey: "unknown:7") == "unknown:7")
        #expect(AddressBlock.blocks(ofKey: "unknown:7") == [AddressBlock(key: "unknown:7", share: 1)])
    }

    @Test func blocksContainTheirAddressesAndNoOthers() throws {
        let block = try #require(IPNetwork("10.1.2.3/16"))
        #expect(block.description == "10.1.0.0/16")
        #expect(block.contains(try #require(IPAddress("10.1.255.1"))))
        #expect(!block.contains(try #require(IPAddress("10.2.0.1"))))
        #expect(!block.contains(try #require(IPAddress("::ffff:10.3.0.1"))))
        #expect(try #require(IPNetwork("192.0.2.7")).description == "192.0.2.7/32")
        #expect(try #require(IPNetwork("fd00::/8")).contains(try #require(IPAddress("fd12::1"))))
        for bad in ["10.0.0.0/33", "10.0.0.0/", "::/129", "nope/8", "10.0.0.0/8/1"] {
            #expect(IPNetwork(bad) == nil, "\(bad)")
        }
        #expect(throws: TrustedProxiesError.self) { try TrustedProxies(parsing: "10.0.0.0/8, 300.0.0.1") }
        #expect(try TrustedProxies(parsing: " 10.0.0.0/8 ,fd00::/8,").networks.count == 2)
    }

    @Test func aPeerThatIsNoTrustedProxyIsTheSourceWhateverItsHeadersSay() {
        #expect(source(peer: "203.0.113.7", [("X-Forwarded-For", "198.51.100.1")]) == "203.0.113.7")
        #expect(
            source(peer: "10.0.0.5", [("X-Forwarded-For", "198.51.100.1")], proxies: TrustedProxies()) == "10.0.0.5")
    }

    @Test func behindTrustedProxiesTheSourceIsTheFirstUntrustedHopFromTheNearest() {
        // The client wrote 1.1.1.1 itself; the proxies appended what they saw.
        #expect(source(peer: "10.0.0.5", [("X-Forwarded-For", "1.1.1.1, 203.0.113.7, 10.0.0.9")]) == "203.0.113.7")
        #expect(
            source(peer: "10.0.0.5", [("X-Forwarded-For", "1.1.1.1"), ("X-Forwarded-For", "203.0.113.7")])
                == "203.0.113.7")
        #expect(source(peer: "10.0.0.5", [("X-Forwarded-For", "[2001:db8::5]:4711, 203.0.113.7:443")]) == "203.0.113.7")
        // Only the header the operator named is read: a client's own Forwarded passes through a proxy that appends
        // X-Forwarded-For, and the other way round.
        let forwarded = [
            ("Forwarded", #"for=192.0.2.60;proto=http;by=10.0.0.5, For="[2001:db8:cafe::17]:4711""#),
            ("X-Forwarded-For", "198.51.100.1"),
        ]
        #expect(source(peer: "10.0.0.5", forwarded) == "198.51.100.1")
        let rfc7239 = TrustedProxies(Self.proxies.networks, header: .forwarded)
        #expect(source(peer: "10.0.0.5", forwarded, proxies: rfc7239) == "2001:db8:cafe::17")
        #expect(source(peer: "10.0.0.5", [("X-Forwarded-For", "198.51.100.1")], proxies: rfc7239) == "10.0.0.5")
        // Every hop trusted: the first one.
        #expect(source(peer: "10.0.0.5", [("X-Forwarded-For", "10.9.9.9, 10.0.0.8")]) == "10.9.9.9")
        // No header: the proxy itself.
        #expect(source(peer: "10.0.0.5", []) == "10.0.0.5")
        // A hop that is no address (`unknown`, garbage): the nearest trusted hop, so such requests share one source.
        #expect(source(peer: "10.0.0.5", [("X-Forwarded-For", "203.0.113.7, unknown, 10.0.0.8")]) == "10.0.0.8")
        #expect(
            source(
                peer: "10.0.0.5", [("Forwarded", "for=_hidden")],
                proxies: TrustedProxies(Self.proxies.networks, header: .forwarded)) == "10.0.0.5")
        #expect(TrustedProxies().sourceAddress(peer: nil, headers: [:]) == nil)
    }
}
