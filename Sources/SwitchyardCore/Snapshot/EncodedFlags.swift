/// A snapshot document kept as its objects' canonical members (`"<key>":<value>` for flags and kill switches, each
/// plugin point's element), so that the next version's document is written by serializing again only the objects
/// that changed: a server publishing a version of a large namespace copies bytes rather than writing every object
/// anew.
///
/// ```swift
/// var flags = EncodedFlags(snapshot.flagSet)                                 // once
/// let (bytes, checksum) = flags.document(for: snapshot)                     // == SnapshotDocument.encodeWithChecksum
/// flags = flags.updating(changes, in: next.flagSet, flag: next.flagSet.flag)  // each later version
/// ```
package struct EncodedFlags: Sendable {
    /// Every flag's member, sorted by key as the canonical form sorts them.
    private var members: SortedMembers
    /// Every kill switch's member (`"<key>":{…}`), sorted by key.
    private var killSwitches: SortedMembers
    /// Every plugin point's element (`{…}`), in the flag set's order.
    private var pluginPoints: [(name: String, bytes: [UInt8])]

    /// Serializes every flag, kill switch and plugin point of a flag set.
    package init(_ flagSet: FlagSet) {
        members = SortedMembers(flagSet.flags.map { ($0.key, Self.member($0)) })
        killSwitches = SortedMembers(flagSet.killSwitches.map { ($0.key, Self.member($0)) })
        pluginPoints = flagSet.pluginPoints.map { ($0.name, Self.element($0)) }
    }

    /// The members after some objects changed (added, removed or replaced), the others kept as they are.
    ///
    /// - Parameters:
    ///   - changes: the objects that may have changed since the flag set these members were made from.
    ///   - flagSet: the new flag set.
    ///   - flag: the flag of a key in the new flag set, nil when it is not there (a caller holding an index of the
    ///     flags passes it; `flagSet.flag(_:)` otherwise).
    package func updating(_ changes: ChangedObjects, in flagSet: FlagSet, flag: (String) -> FlagDefinition?)
        -> EncodedFlags
    {
        var next = self
        next.members.update(changes.flags) { flag($0).map(Self.member) }
        next.killSwitches.update(changes.killSwitches) { flagSet.killSwitch($0).map(Self.member) }
        if !changes.pluginPoints.isEmpty || changes.pluginPointOrder {
            let kept = Dictionary(pluginPoints.map { ($0.name, $0.bytes) }, uniquingKeysWith: { first, _ in first })
            next.pluginPoints = flagSet.pluginPoints.map { point in
                (
                    point.name,
                    (changes.pluginPoints.contains(point.name) ? nil : kept[point.name]) ?? Self.element(point)
                )
            }
        }
        return next
    }

    /// The canonical document of a snapshot whose flags these are, with its checksum: the same bytes as
    /// `SnapshotDocument.encodeWithChecksum`.
    package func document(for snapshot: Snapshot) -> (bytes: [UInt8], checksum: String) {
        SnapshotDocument.withChecksum(body: body(for: snapshot))
    }

    /// The canonical form of the document without its checksum (`{…}`): ``DocumentPieces`` joined.
    package func body(for snapshot: Snapshot) -> [UInt8] {
        pieces(for: snapshot).joined()
    }

    /// The canonical form of the document without its checksum in pieces, for a caller that hashes it and writes the
    /// document straight into its own buffer (``SnapshotDocument/prefix(checksum:)`` and then the body without its
    /// first byte, `{`): the flags' runs are this value's own arrays, shared with the next version's pieces where
    /// their members did not change, so that the caller can tell which parts of a document it hashed before.
    package func pieces(for snapshot: Snapshot) -> DocumentPieces {
        // The canonical form without the checksum, members in key order:
        // description?, epoch, flags, format, kill_switches, namespace, plugin_points?, version.
        let flagSet = snapshot.flagSet
        var head: [UInt8] = [UInt8(ascii: "{")]
        if let description = flagSet.description {
            head += Array(#""description":"#.utf8)
            JSONValue.writeString(description, into: &head)
            head.append(UInt8(ascii: ","))
        }
        head += Array(#""epoch":"#.utf8)
        JSONValue.writeString(snapshot.epoch, into: &head)
        head += Array(#","flags":{"#.utf8)

        var tail: [UInt8] = []
        tail.reserveCapacity(killSwitches.byteCount + pluginPoints.reduce(0) { $0 + $1.bytes.count + 1 } + 128)
        func append<Element>(_ list: [Element], _ bytes: (Element) -> [UInt8]) {
            for (index, element) in list.enumerated() {
                if index > 0 { tail.append(UInt8(ascii: ",")) }
                tail += bytes(element)
            }
        }
        tail += Array(#"},"format":"#.utf8) + JSONValue.int64(SnapshotDocument.format).serialized(.canonical)
        tail += Array(#","kill_switches":{"#.utf8)
        append(killSwitches.runs) { $0 }
        tail += Array(#"},"namespace":"#.utf8)
        JSONValue.writeString(flagSet.namespace, into: &tail)
        if !pluginPoints.isEmpty {
            tail += Array(#","plugin_points":["#.utf8)
            append(pluginPoints, \.bytes)
            tail.append(UInt8(ascii: "]"))
        }
        tail += Array(#","version":"#.utf8) + JSONValue.int64(snapshot.version).serialized(.canonical)
        tail.append(UInt8(ascii: "}"))
        return DocumentPieces(head: head, runs: members.runs, tail: tail)
    }

    /// `"<key>":<flag>` in canonical form, as in a snapshot (no crash guard policy).
    static func member(_ flag: FlagDefinition) -> [UInt8] {
        SnapshotDigest.member(flag.key, .object(flag.tree(unit: .basisPoints, includingServerPolicies: false)))
    }

    /// `"<key>":<kill switch>` in canonical form.
    static func member(_ kill: KillSwitch) -> [UInt8] {
        SnapshotDigest.member(kill.key, .object(kill.tree))
    }

    /// A plugin point in canonical form, as an element of `plugin_points`.
    static func element(_ point: PluginPointDefinition) -> [UInt8] {
        JSONValue.object(point.tree).serialized(.canonical)
    }
}

/// A snapshot's canonical body (the document without its checksum) as written from ``EncodedFlags``: `head`, then
/// the flags' `runs` joined by commas, then `tail`.
package struct DocumentPieces: Sendable {
    /// `{`, the description and epoch members, and `"flags":{`.
    package let head: [UInt8]
    /// The flags' members in key order, several members (joined by commas) in each run.
    package let runs: [[UInt8]]
    /// From the end of the flags (`}`) to the end of the body: format, kill switches, namespace, plugin points,
    /// version.
    package let tail: [UInt8]

    /// The body's length in bytes.
    package var count: Int {
        head.count + runs.reduce(0) { $0 + $1.count } + max(0, runs.count - 1) + tail.count
    }

    /// Calls `body` with the body's bytes in order, a piece at a time (the commas between runs included).
    package func forEachPiece(_ body: (ArraySlice<UInt8>) -> Void) {
        body(head[...])
        for (index, run) in runs.enumerated() {
            if index > 0 { body(Self.comma[...]) }
            body(run[...])
        }
        body(tail[...])
    }

    /// The body in one array.
    package func joined() -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(count)
        forEachPiece { bytes += $0 }
        return bytes
    }

    package static let comma: [UInt8] = [UInt8(ascii: ",")]
}

/// Members (`"<key>":<value>`) sorted by key, kept in chunks of a few hundred so that a copy shares every chunk and
/// replacing, inserting or removing one member copies only its chunk: the next version of a namespace of ten thousand
/// flags copies one chunk, not every member.
///
/// A chunk holds its members once, joined with commas (its run), with each member's key and where it ends in the run:
/// a document is then a few dozen copies rather than one per member, a run a change did not touch stays the same
/// array, and no member is held a second time on its own (4 MB less for a namespace of ten thousand switches).
struct SortedMembers: Sendable {
    typealias Member = (key: String, bytes: ArraySlice<UInt8>)
    static let chunkSize = 128

    /// Members in key order: their keys, their bytes joined with commas, and where each ends in `run`.
    private struct Chunk: Sendable {
        private(set) var keys: [String] = []
        /// Where each member's bytes end in `run` (at the comma after it, or at the run's end).
        private var ends: [Int] = []
        private(set) var run: [UInt8] = []

        init(_ members: some Collection<Member>) {
            keys.reserveCapacity(members.count)
            ends.reserveCapacity(members.count)
            run.reserveCapacity(members.reduce(0) { $0 + $1.bytes.count + 1 })
            for member in members {
                if !keys.isEmpty { run.append(UInt8(ascii: ",")) }
                run += member.bytes
                keys.append(member.key)
                ends.append(run.count)
            }
        }

        /// The members, their bytes slices of `run`.
        var members: [Member] {
            keys.indices.map { index in (keys[index], run[(index == 0 ? 0 : ends[index - 1] + 1)..<ends[index]]) }
        }
    }

    private var chunks: [Chunk]
    /// Each chunk's members joined with commas, in key order.
    var runs: [[UInt8]] { chunks.map(\.run) }
    /// The bytes of every member with a comma each, for reserving a document's capacity (a run holds one comma
    /// fewer than its members, and no chunk is empty).
    var byteCount: Int { chunks.reduce(0) { $0 + $1.run.count + 1 } }

    init(_ members: [(key: String, bytes: [UInt8])]) {
        let sorted = members.sorted { SnapshotDelta.byUTF8($0.key, $1.key) }
        chunks = stride(from: 0, to: sorted.count, by: Self.chunkSize).map { start in
            Chunk(sorted[start..<min(start + Self.chunkSize, sorted.count)].lazy.map { ($0.key, $0.bytes[...]) })
        }
    }

    /// Replaces, removes (`encode` gives nil) or inserts the members of some keys, in key order: where a chunk
    /// splits depends on the order its keys arrive in, so a set's order (a per-process hash seed) must not decide it.
    mutating func update(_ keys: Set<String>, encode: (String) -> [UInt8]?) {
        for key in keys.sorted(by: SnapshotDelta.byUTF8) {
            let bytes = encode(key)
            // The chunk that holds the key, or would: the first whose last key is not below it (else the last).
            var low = 0
            var high = chunks.count
            while low < high {
                let middle = (low + high) / 2
                if SnapshotDelta.byUTF8(chunks[middle].keys.last!, key) { low = middle + 1 } else { high = middle }
            }
            guard !chunks.isEmpty || bytes != nil else { continue }
            if chunks.isEmpty { chunks = [Chunk([])] }
            let index = min(low, chunks.count - 1)
            var members = chunks[index].members
            let position = members.partitioningIndex { !SnapshotDelta.byUTF8($0.key, key) }
            let found = position < members.count && members[position].key == key
            switch (found, bytes) {
            case (true, let bytes?): members[position].bytes = bytes[...]
            case (true, nil): members.remove(at: position)
            case (false, let bytes?): members.insert((key, bytes[...]), at: position)
            case (false, nil): continue
            }
            if members.isEmpty {
                chunks.remove(at: index)
            } else if members.count > 2 * Self.chunkSize {
                let half = members.count / 2
                chunks[index] = Chunk(members[..<half])
                chunks.insert(Chunk(members[half...]), at: index + 1)
            } else {
                chunks[index] = Chunk(members)
            }
        }
    }
}

extension Array {
    /// The first index whose element satisfies `predicate`, in an array where every element that does follows
    /// every element that does not.
    fileprivate func partitioningIndex(where predicate: (Element) -> Bool) -> Int {
        var low = 0
        var high = count
        while low < high {
            let middle = (low + high) / 2
            if predicate(self[middle]) { high = middle } else { low = middle + 1 }
        }
        return low
    }
}
