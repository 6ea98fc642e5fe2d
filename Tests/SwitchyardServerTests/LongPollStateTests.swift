import SwitchyardCore
import SwitchyardStorage
import Testing

@testable import SwitchyardServer

/// The long-poll decisions, driven with plain integers for waiters and instants.
struct LongPollStateTests {
    typealias State = LongPollState<String, Int>
    let v1 = SnapshotVersion(epoch: "e", version: 1)
    let v2 = SnapshotVersion(epoch: "e", version: 2)

    func state(maximumWaiters: Int = 10) -> State {
        var state = State(maximumWaiters: maximumWaiters)
        _ = state.publish("rider", v1)
        return state
    }

    func isParked(_ action: State.RegisterAction) -> Bool {
        if case .parked = action { return true }
        return false
    }

    func answer(_ action: State.RegisterAction) -> WakeReason? {
        if case .answerNow(let reason) = action { return reason }
        return nil
    }

    @Test func aWaiterAtTheCurrentVersionIsParkedAndWokenByTheNextOne() {
        var state = state()
        #expect(isParked(state.register(id: 1, namespace: "rider", after: v1, deadline: 30, waiter: "a")))
        #expect(isParked(state.register(id: 2, namespace: "rider", after: v1, deadline: 30, waiter: "b")))
        #expect(state.count == 2)
        #expect(Set(state.publish("rider", v2)) == ["a", "b"])
        #expect(state.count == 0)
    }

    @Test func aWaiterBehindOrOnAnotherEpochIsAnsweredAtOnce() {
        var state = state()
        _ = state.publish("rider", v2)
        #expect(answer(state.register(id: 1, namespace: "rider", after: v1, deadline: 30, waiter: "a")) == .changed)
        #expect(
            answer(
                state.register(
                    id: 2, namespace: "rider", after: SnapshotVersion(epoch: "old", version: 9), deadline: 30,
                    waiter: "b")) == .changed)
        #expect(answer(state.register(id: 3, namespace: "nope", after: v1, deadline: 30, waiter: "c")) == .gone)
        #expect(state.count == 0)
    }

    @Test func aWaiterAheadOfTheNamespaceWaitsUntilItIsPassed() {
        var state = state()
        #expect(
            isParked(
                state.register(
                    id: 1, namespace: "rider", after: SnapshotVersion(epoch: "e", version: 3), deadline: 30, waiter: "a"
                )))
        #expect(state.publish("rider", v2).isEmpty)
        #expect(state.count == 1)
        #expect(state.publish("rider", SnapshotVersion(epoch: "e", version: 4)) == ["a"])
    }

    @Test func aNewEpochWakesEveryWaiter() {
        var state = state()
        _ = state.register(
            id: 1, namespace: "rider", after: SnapshotVersion(epoch: "e", version: 7), deadline: 30, waiter: "a")
        #expect(state.publish("rider", SnapshotVersion(epoch: "f", version: 1)) == ["a"])
    }

    @Test func anOlderPublishIsIgnored() {
        var state = state()
        _ = state.publish("rider", SnapshotVersion(epoch: "e", version: 5))
        _ = state.register(
            id: 1, namespace: "rider", after: SnapshotVersion(epoch: "e", version: 5), deadline: 30, waiter: "a")
        #expect(state.publish("rider", SnapshotVersion(epoch: "e", version: 4)).isEmpty)
        #expect(state.position(of: "rider")?.version == 5)
        #expect(state.count == 1)
    }

    @Test func waitersOfOtherNamespacesStayParked() {
        var state = state()
        _ = state.publish("driver", v1)
        _ = state.register(id: 1, namespace: "rider", after: v1, deadline: 30, waiter: "a")
        _ = state.register(id: 2, namespace: "driver", after: v1, deadline: 30, waiter: "b")
        #expect(state.publish("rider", v2) == ["a"])
        #expect(state.count == 1)
    }

    @Test func waitersExpireAtTheirDeadlineAndNotBefore() {
        var state = state()
        _ = state.register(id: 1, namespace: "rider", after: v1, deadline: 10, waiter: "a")
        _ = state.register(id: 2, namespace: "rider", after: v1, deadline: 20, waiter: "b")
        #expect(state.expire(now: 9).isEmpty)
        #expect(state.expire(now: 10) == ["a"])
        #expect(state.expire(now: 19).isEmpty)
        #expect(state.expire(now: 25) == ["b"])
        #expect(state.count == 0)
    }

    @Test func aCancelledWaiterIsRemovedOnce() {
        var state = state()
        _ = state.register(id: 1, namespace: "rider", after: v1, deadline: 10, waiter: "a")
        #expect(state.cancel(id: 1) == "a")
        #expect(state.cancel(id: 1) == nil)
        #expect(state.publish("rider", v2).isEmpty)
        #expect(state.expire(now: 100).isEmpty)
    }

    @Test func pastTheCapWaitersAreRefused() {
        var state = state(maximumWaiters: 2)
        _ = state.register(id: 1, namespace: "rider", after: v1, deadline: 10, waiter: "a")
        _ = state.register(id: 2, namespace: "rider", after: v1, deadline: 10, waiter: "b")
        #expect(answer(state.register(id: 3, namespace: "rider", after: v1, deadline: 10, waiter: "c")) == .overloaded)
        _ = state.cancel(id: 1)
        #expect(isParked(state.register(id: 4, namespace: "rider", after: v1, deadline: 10, waiter: "d")))
    }

    @Test func pastTheCapPerAddressWaitersFromThatAddressAreRefusedUntilOneLeaves() {
        var state = State(maximumWaiters: 10, maximumWaitersPerAddress: 2)
        _ = state.publish("rider", v1)
        _ = state.register(
            id: 1, namespace: "rider", after: v1, deadline: 10, waiter: "a",
            address: [AddressBlock(key: "192.0.2.1", share: 1)])
        _ = state.register(
            id: 2, namespace: "rider", after: v1, deadline: 20, waiter: "b",
            address: [AddressBlock(key: "192.0.2.1", share: 1)])
        #expect(
            answer(
                state.register(
                    id: 3, namespace: "rider", after: v1, deadline: 10, waiter: "c",
                    address: [AddressBlock(key: "192.0.2.1", share: 1)])) == .addressBusy)
        // Other addresses, and requests whose address is unknown, are not held back.
        #expect(
            isParked(
                state.register(
                    id: 4, namespace: "rider", after: v1, deadline: 10, waiter: "d",
                    address: [AddressBlock(key: "192.0.2.2", share: 1)])))
        #expect(isParked(state.register(id: 5, namespace: "rider", after: v1, deadline: 10, waiter: "e")))
        // Each way of leaving gives the address its place back: cancel, expiry, a publish.
        _ = state.cancel(id: 1)
        #expect(state.count(from: "192.0.2.1") == 1)
        #expect(
            isParked(
                state.register(
                    id: 6, namespace: "rider", after: v1, deadline: 10, waiter: "f",
                    address: [AddressBlock(key: "192.0.2.1", share: 1)])))
        #expect(Set(state.expire(now: 10)) == ["d", "e", "f"])
        #expect(state.count(from: "192.0.2.1") == 1)
        #expect(state.count(from: "192.0.2.2") == 0)
        #expect(state.publish("rider", v2) == ["b"])
        #expect(state.count(from: "192.0.2.1") == 0)
        for id in 7...8 {
            #expect(
                isParked(
                    state.register(
                        id: id, namespace: "rider", after: v2, deadline: 30, waiter: "g",
                        address: [AddressBlock(key: "192.0.2.1", share: 1)])))
        }
        #expect(
            answer(
                state.register(
                    id: 9, namespace: "rider", after: v2, deadline: 30, waiter: "h",
                    address: [AddressBlock(key: "192.0.2.1", share: 1)])) == .addressBusy)
    }

    /// An IPv6 source is held at its /64 with the cap, its /56 with 4 times and its /48 with 16 times it: a host that
    /// may pick any /64 of a /48 parks at most 16 addresses' worth.
    @Test func anIPv6SourceParksAtMostItsShareAtEachPrefix() throws {
        var state = State(maximumWaiters: 100, maximumWaitersPerAddress: 1)
        _ = state.publish("rider", v1)
        func blocks(_ text: String) throws -> [AddressBlock] { try #require(IPAddress(text)).blocks }
        // Five /64s of one /56: four park, the fifth is over the /56's 4.
        for index in 0..<4 {
            #expect(
                isParked(
                    state.register(
                        id: index, namespace: "rider", after: v1, deadline: 10, waiter: "a",
                        address: try blocks("2001:db8:1:\(index)::1"))))
        }
        #expect(
            answer(
                state.register(
                    id: 4, namespace: "rider", after: v1, deadline: 10, waiter: "b",
                    address: try blocks("2001:db8:1:4::1"))) == .addressBusy)
        // Another /64 already parked is over its own cap of 1.
        #expect(
            answer(
                state.register(
                    id: 5, namespace: "rider", after: v1, deadline: 10, waiter: "c",
                    address: try blocks("2001:db8:1:0::2"))) == .addressBusy)
        // /64s of other /56s of the same /48: twelve more, then the /48's 16 are parked.
        for index in 1...12 {
            #expect(
                isParked(
                    state.register(
                        id: 10 + index, namespace: "rider", after: v1, deadline: 10, waiter: "d",
                        address: try blocks("2001:db8:1:\(String(index, radix: 16))00::1"))))
        }
        #expect(
            answer(
                state.register(
                    id: 30, namespace: "rider", after: v1, deadline: 10, waiter: "e",
                    address: try blocks("2001:db8:1:f000::1"))) == .addressBusy)
        #expect(state.count(from: "2001:db8:1::/48") == 16)
        // Leaving gives every block its place back.
        _ = state.cancel(id: 0)
        #expect(state.count(from: "2001:db8:1::/48") == 15 && state.count(from: "2001:db8:1::/56") == 3)
        #expect(
            isParked(
                state.register(
                    id: 31, namespace: "rider", after: v1, deadline: 10, waiter: "f",
                    address: try blocks("2001:db8:1:4::1"))))
    }

    /// However its shares multiply, a /48 parks at most a quarter of the waiters for everyone: others still park.
    @Test func anIPv6Slash48ParksAtMostAQuarterOfAllWaiters() throws {
        var state = State(maximumWaiters: 100, maximumWaitersPerAddress: 10)
        _ = state.publish("rider", v1)
        var parked = 0
        for index in 0..<40 {
            let blocks = try #require(IPAddress("2001:db8:7:\(String(index, radix: 16))00::1")).blocks
            if isParked(
                state.register(id: index, namespace: "rider", after: v1, deadline: 10, waiter: "a", address: blocks))
            {
                parked += 1
            }
        }
        #expect(parked == 25)
        #expect(
            isParked(
                state.register(
                    id: 99, namespace: "rider", after: v1, deadline: 10, waiter: "b",
                    address: [AddressBlock(key: "192.0.2.9", share: 1)])))
        #expect(
            AddressBlock(key: "x", share: 16).cap(10, within: 100) == 25
                && AddressBlock(key: "x", share: 1).cap(10, within: 4) == 10)
    }

    @Test func shutdownAnswersEveryWaiterAndRefusesLaterOnes() {
        var state = state()
        _ = state.register(id: 1, namespace: "rider", after: v1, deadline: 10, waiter: "a")
        _ = state.register(id: 2, namespace: "rider", after: v1, deadline: 10, waiter: "b")
        #expect(Set(state.shutdown()) == ["a", "b"])
        #expect(answer(state.register(id: 3, namespace: "rider", after: v1, deadline: 10, waiter: "c")) == .shutdown)
        #expect(state.count == 0)
    }

    @Test func removingANamespaceAnswersItsWaiters() {
        var state = state()
        _ = state.register(id: 1, namespace: "rider", after: v1, deadline: 10, waiter: "a")
        #expect(state.remove("rider") == ["a"])
        #expect(answer(state.register(id: 2, namespace: "rider", after: v1, deadline: 10, waiter: "b")) == .gone)
    }
}

/// Reading `Accept-Encoding` and `If-None-Match`.
struct HeaderParsingTests {
    @Test(arguments: [
        ("gzip", true), ("GZIP", true), ("deflate, gzip , br", true), ("x-gzip", true), ("*", true), ("br", false),
        ("", false), ("gzip;q=0", false), ("gzip;q=0.5, br", true), ("*;q=0.1", true), ("identity, *;q=0", false),
        ("br;q=1, gzip;q=0", false), ("gzipped", false),
    ])
    func acceptEncodingAcceptsGzipWithANonZeroQuality(header: String, expected: Bool) {
        #expect(AcceptEncoding(header).acceptsGzip == expected)
    }

    @Test func ifNoneMatchWaitsFromTheHighestVersionOfTheCurrentEpoch() {
        let current = SnapshotVersion(epoch: "e", version: 5)
        #expect(EntityTagList("\"e.5\"").waitPosition(current: current)?.version == 5)
        #expect(EntityTagList("W/\"e.4\", \"e.7\"").waitPosition(current: current)?.version == 7)
        #expect(EntityTagList("*").waitPosition(current: current)?.version == 5)
        #expect(EntityTagList("\"e.4\"").waitPosition(current: current) == nil)
        #expect(EntityTagList("\"f.9\"").waitPosition(current: current) == nil)
        #expect(EntityTagList("junk").waitPosition(current: current) == nil)
        #expect(EntityTagList(nil).waitPosition(current: current) == nil)
    }
}
