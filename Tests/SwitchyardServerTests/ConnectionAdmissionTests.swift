import SwitchyardStorage
import Testing

@testable import SwitchyardServer

/// The decisions of `ConnectionAdmission`, with plain connections, idle times and instants of our own (no I/O, no
/// waiting).
struct ConnectionAdmissionTests {
    typealias Admission = ConnectionAdmission<String, ContinuousClock.Instant>
    let start = ContinuousClock.now

    func at(_ seconds: Double) -> ContinuousClock.Instant {
        start + .milliseconds(Int64(seconds * 1000))
    }

    /// Since when each connection has been idle, by name; a name not in it is busy.
    final class IdleTimes {
        var since: [String: ContinuousClock.Instant] = [:]
        func of(_ connection: String) -> ContinuousClock.Instant? { since[connection] }
    }

    static func blocks(_ address: String) -> [AddressBlock] {
        IPAddress(address)!.blocks
    }

    /// Admits a connection from an address (none: not counted per address), idle since `now` as a new connection is.
    @discardableResult
    func admit(
        _ name: String, from address: String? = nil, _ admission: inout Admission, _ idle: IdleTimes,
        at now: ContinuousClock.Instant
    ) -> Admission.Decision {
        let decision = admission.admit(name, blocks: address.map(Self.blocks) ?? [], at: now, idleSince: idle.of)
        if case .admitted = decision { idle.since[name] = now }
        return decision
    }

    func id(_ decision: Admission.Decision) -> Int? {
        if case .admitted(let id, _) = decision { return id }
        return nil
    }

    func closing(_ decision: Admission.Decision) -> String? {
        if case .admitted(_, let closing) = decision { return closing }
        return nil
    }

    func refusal(_ decision: Admission.Decision) -> ConnectionRefusal? {
        if case .refused(let refusal) = decision { return refusal }
        return nil
    }

    @Test func anAddressAtItsCapIsRefusedWhileAnotherIsAdmittedUntilOneOfItsConnectionsCloses() {
        var admission = Admission(maximumConnections: 100, maximumConnectionsPerAddress: 3)
        let idle = IdleTimes()
        let ids = (0..<3).compactMap { id(admit("a\($0)", from: "198.51.100.7", &admission, idle, at: at(0))) }
        #expect(ids.count == 3)
        #expect(refusal(admit("a3", from: "198.51.100.7", &admission, idle, at: at(1))) == .addressCap)
        #expect(id(admit("b0", from: "198.51.100.8", &admission, idle, at: at(1))) != nil)
        #expect(admission.count(from: "198.51.100.7") == 3)
        #expect(admission.count == 4)

        let closed = admission.close(id: ids[0])
        let closedAgain = admission.close(id: ids[0])
        #expect(closed)
        #expect(!closedAgain, "a connection is counted out once")
        #expect(admission.count(from: "198.51.100.7") == 2)
        #expect(id(admit("a4", from: "198.51.100.7", &admission, idle, at: at(2))) != nil)
    }

    @Test func connectionsNotCountedPerAddressAreNotCapped() {
        var admission = Admission(maximumConnections: 100, maximumConnectionsPerAddress: 1)
        let idle = IdleTimes()
        for index in 0..<10 {
            #expect(id(admit("proxy\(index)", &admission, idle, at: at(0))) != nil)
        }
        #expect(admission.count == 10)
    }

    /// A host that may pick any address of an IPv6 block holds the cap at its /64, 4 times it at its /56 and 16 times
    /// it at its /48.
    @Test func anIPv6PeerIsCappedAtItsSlash64AndItsWiderBlocks() {
        var admission = Admission(maximumConnections: 1_000, maximumConnectionsPerAddress: 2)
        let idle = IdleTimes()
        // Another host in the same /64 shares its cap.
        #expect(id(admit("a", from: "2001:db8:1:100::1", &admission, idle, at: at(0))) != nil)
        #expect(id(admit("b", from: "2001:db8:1:100::2", &admission, idle, at: at(0))) != nil)
        #expect(refusal(admit("c", from: "2001:db8:1:100::3", &admission, idle, at: at(0))) == .addressCap)
        // The /56 (2001:db8:1:100::/56) holds 8: three more /64s of it, 2 each.
        for network in 1...3 {
            for host in 1...2 {
                #expect(
                    id(
                        admit(
                            "\(network).\(host)", from: "2001:db8:1:10\(network)::\(host)", &admission, idle, at: at(0))
                    ) != nil)
            }
        }
        #expect(refusal(admit("d", from: "2001:db8:1:1a0::1", &admission, idle, at: at(0))) == .addressCap)
        // The /48 holds 32: six more /56s of it, 4 each, and the 33rd is refused.
        for network in 2...7 {
            for host in 1...4 {
                #expect(
                    id(
                        admit(
                            "\(network)/56.\(host)", from: "2001:db8:1:\(network)0\(host)::1", &admission, idle,
                            at: at(0))) != nil)
            }
        }
        #expect(admission.count(from: "2001:db8:1::/48") == 32)
        #expect(refusal(admit("e", from: "2001:db8:1:ff00::1", &admission, idle, at: at(0))) == .addressCap)
        // Another /48 is another party.
        #expect(id(admit("f", from: "2001:db8:2::1", &admission, idle, at: at(0))) != nil)
    }

    @Test func atTheCapTheLongestIdleConnectionMakesRoomAndBusyOnesAreKept() {
        var admission = Admission(maximumConnections: 3)
        let idle = IdleTimes()
        admit("a", &admission, idle, at: at(0))
        admit("b", &admission, idle, at: at(1))
        admit("c", &admission, idle, at: at(2))
        // a answers a request (a parked long-poll), c has answered one since b opened.
        idle.since["a"] = nil
        idle.since["c"] = at(3)
        #expect(closing(admit("d", &admission, idle, at: at(10))) == "b")
        #expect(admission.count == 3)
        #expect(closing(admit("e", &admission, idle, at: at(11))) == "c")
        #expect(closing(admit("f", &admission, idle, at: at(12))) == "d")
        #expect(admission.count == 3)
    }

    @Test func atTheCapWithNoConnectionIdleANewOneIsRefused() {
        var admission = Admission(maximumConnections: 2)
        let idle = IdleTimes()
        admit("a", &admission, idle, at: at(0))
        admit("b", &admission, idle, at: at(0))
        idle.since = [:]
        #expect(refusal(admit("c", &admission, idle, at: at(1))) == .connectionCap)
        #expect(admission.count == 2)
    }

    @Test func anAddressAtItsCapClosesNoIdleConnection() {
        var admission = Admission(maximumConnections: 2, maximumConnectionsPerAddress: 1)
        let idle = IdleTimes()
        admit("a", from: "198.51.100.7", &admission, idle, at: at(0))
        admit("b", from: "198.51.100.8", &admission, idle, at: at(0))
        #expect(refusal(admit("c", from: "198.51.100.7", &admission, idle, at: at(1))) == .addressCap)
        #expect(admission.count == 2)
        // Room made by closing a's connection is counted out of a's address.
        #expect(closing(admit("d", from: "198.51.100.9", &admission, idle, at: at(2))) == "a")
        #expect(admission.count(from: "198.51.100.7") == 0)
    }

    /// The longest idle ones found by a look are closed only while they stay idle since the same instant: one that
    /// answered a request since is passed over.
    @Test func aConnectionFoundIdleThatTookARequestSinceIsPassedOver() {
        var admission = Admission(maximumConnections: 3, candidatesPerLook: 3)
        let idle = IdleTimes()
        admit("a", &admission, idle, at: at(0))
        admit("b", &admission, idle, at: at(1))
        admit("c", &admission, idle, at: at(2))
        #expect(closing(admit("d", &admission, idle, at: at(10))) == "a")
        // b took a request and went idle again after c: c is now the longest idle.
        idle.since["b"] = at(11)
        #expect(closing(admit("e", &admission, idle, at: at(12))) == "c")
        #expect(closing(admit("f", &admission, idle, at: at(13))) == "d")
    }

    /// A look that found every idle connection is not repeated within the look interval (a flood of connections at
    /// a server whose connections are busy costs one look per interval); a look that left some out is.
    @Test func looksOverEveryConnectionAreSpacedOnlyWhenTheLastFoundAllThatWereIdle() {
        var admission = Admission(maximumConnections: 3, candidatesPerLook: 1, lookInterval: .seconds(1))
        let idle = IdleTimes()
        admit("a", &admission, idle, at: at(0))
        admit("b", &admission, idle, at: at(0.1))
        admit("c", &admission, idle, at: at(0.2))
        // The first look kept one of three idle connections: the next one looks again at once.
        #expect(closing(admit("d", &admission, idle, at: at(10))) == "a")
        #expect(closing(admit("e", &admission, idle, at: at(10))) == "b")
        // That look left c and d out; now every connection is busy.
        idle.since = [:]
        #expect(refusal(admit("f", &admission, idle, at: at(10.1))) == .connectionCap)
        // That look found none; d goes idle, but the next look waits for the interval.
        idle.since["d"] = at(10.2)
        #expect(refusal(admit("g", &admission, idle, at: at(10.5))) == .connectionCap)
        #expect(closing(admit("h", &admission, idle, at: at(11.1))) == "d")
    }
}
