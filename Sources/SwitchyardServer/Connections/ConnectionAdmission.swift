package import SwitchyardStorage

/// Which new connections flagsd takes, decided without I/O or locks: its connections' counts per peer address, and
/// which connection makes room at the global cap. `ConnectionGate` owns one behind a lock and does the I/O.
///
/// - **Per address**: a connection whose peer already holds its share of `maximumConnectionsPerAddress` at any
///   block of its address (``AddressBlock``: an IPv4 address with the cap; an IPv6 address's /64, /56 and /48 with
///   1, 4 and 16 times it, the wider ones at most a quarter of `maximumConnections`) is refused. Connections registered without blocks (a trusted proxy's, or an unknown
///   peer's) are not counted per address.
/// - **At the global cap**: the connection idle longest (between requests: since its last response ended, or since it
///   opened when it has sent no request yet; `ConnectionTimeouts.idleSince`) is counted out, for the caller to
///   close, and the new one takes its place. When none is idle (every connection reads a request or answers one,
///   parked long-polls included), the new one is refused.
///
/// Idleness changes with every request, on the connection's own event loop; the state does not follow it. It reads
/// it (`idleSince`) only when it needs a connection to close: then it looks over every open connection once and keeps
/// the `candidatesPerLook` idle longest, the next ones to close while they stay idle since the same instant (a
/// connection idle since later is younger than all of them). When those are spent, the next look comes at once if
/// the last one left idle connections out; if it kept every idle connection it found, the next look comes
/// `lookInterval` after it at the earliest (and a new connection is refused in between, as when none is idle), so a
/// flood of connections at a server whose connections are busy costs one look per interval, not one per connection.
///
/// Generic over the connection (a channel in the gate, a plain value in tests) and over time, so tests drive it with
/// their own instants.
package struct ConnectionAdmission<Connection, Instant: InstantProtocol> where Instant.Duration == Duration {
    /// What to do with a new connection.
    package enum Decision {
        /// Admitted under `id` (for `close(id:)`), in the place of `closing` when the cap was reached: that one is
        /// counted out already, and is to be closed.
        case admitted(id: Int, closing: Connection?)
        /// Close it at once; nothing was counted.
        case refused(ConnectionRefusal)
    }

    private struct Entry {
        var connection: Connection
        var blocks: [AddressBlock]
    }

    package let maximumConnections: Int
    package let maximumConnectionsPerAddress: Int
    /// How many of the longest idle connections a look keeps.
    package let candidatesPerLook: Int
    /// The least time from one look over every connection to the next.
    package let lookInterval: Duration
    private var open: [Int: Entry] = [:]
    private var openOfBlock: [String: Int] = [:]
    private var nextID = 0
    /// The longest idle connections the last look found, the longest idle last, each with the instant it was idle
    /// since then.
    private var candidates: [(id: Int, since: Instant)] = []
    /// When the last look was, and whether it kept every idle connection it found.
    private var lastLook: (at: Instant, keptAll: Bool)?

    package init(
        maximumConnections: Int, maximumConnectionsPerAddress: Int = .max, candidatesPerLook: Int = 256,
        lookInterval: Duration = .milliseconds(50)
    ) {
        self.maximumConnections = maximumConnections
        self.maximumConnectionsPerAddress = maximumConnectionsPerAddress
        self.candidatesPerLook = max(1, candidatesPerLook)
        self.lookInterval = lookInterval
    }

    /// The connections open (admitted and not yet closed or closed to make room).
    package var count: Int { open.count }

    /// Every open connection.
    package var connections: [Connection] { open.values.map(\.connection) }

    /// The open connections from an address block (an address key, or a wider IPv6 prefix).
    package func count(from block: String) -> Int {
        openOfBlock[block] ?? 0
    }

    /// Admits a new connection, refuses it, or admits it in the place of the connection idle longest.
    ///
    /// - Parameters:
    ///   - connection: the new connection.
    ///   - blocks: the blocks of its peer address (``IPAddress/blocks``), each counted against its share of the
    ///     per-address cap; empty when it is not counted per address.
    ///   - now: the present, for spacing looks.
    ///   - idleSince: since when an open connection has been idle; nil while it reads or answers a request.
    package mutating func admit(
        _ connection: Connection, blocks: [AddressBlock], at now: Instant,
        idleSince: (Connection) -> Instant?
    ) -> Decision {
        for block in blocks
        where count(from: block.key) >= block.cap(maximumConnectionsPerAddress, within: maximumConnections) {
            return .refused(.addressCap)
        }
        var closing: Connection?
        if open.count >= maximumConnections {
            guard let idle = takeLongestIdle(at: now, idleSince: idleSince) else { return .refused(.connectionCap) }
            closing = idle
        }
        nextID += 1
        open[nextID] = Entry(connection: connection, blocks: blocks)
        for block in blocks { openOfBlock[block.key, default: 0] += 1 }
        return .admitted(id: nextID, closing: closing)
    }

    /// Counts out a connection that closed; false when it was not counted (closed to make room, or closed before).
    @discardableResult
    package mutating func close(id: Int) -> Bool {
        guard let entry = open.removeValue(forKey: id) else { return false }
        for block in entry.blocks {
            let left = (openOfBlock[block.key] ?? 1) - 1
            openOfBlock[block.key] = left > 0 ? left : nil
        }
        return true
    }

    /// Counts out the connection idle longest and returns it; nil when none is idle (or none is known to be, until
    /// the next look).
    private mutating func takeLongestIdle(at now: Instant, idleSince: (Connection) -> Instant?) -> Connection? {
        while let candidate = candidates.popLast() {
            guard let entry = open[candidate.id], idleSince(entry.connection) == candidate.since else { continue }
            close(id: candidate.id)
            return entry.connection
        }
        if let lastLook, lastLook.keptAll, now < lastLook.at.advanced(by: lookInterval) { return nil }
        look(at: now, idleSince: idleSince)
        guard let longest = candidates.popLast(), let entry = open[longest.id] else { return nil }
        close(id: longest.id)
        return entry.connection
    }

    /// Finds the idle connections and keeps the longest idle ones.
    private mutating func look(at now: Instant, idleSince: (Connection) -> Instant?) {
        var idle: [(id: Int, since: Instant)] = []
        for (id, entry) in open {
            if let since = idleSince(entry.connection) { idle.append((id, since)) }
        }
        // The longest idle last; among those idle since the same instant, the first admitted.
        idle.sort { $0.since != $1.since ? $0.since > $1.since : $0.id > $1.id }
        candidates = Array(idle.suffix(candidatesPerLook))
        lastLook = (now, idle.count <= candidatesPerLook)
    }
}

/// Why a new connection was refused, as the `reason` label of `flagsd_connections_refused_total`.
package enum ConnectionRefusal: String, Sendable, CaseIterable {
    /// The global cap was reached and no connection was idle.
    case connectionCap = "connection_cap"
    /// The peer address held its share of the per-address cap at one of its blocks.
    case addressCap = "address_cap"
}
