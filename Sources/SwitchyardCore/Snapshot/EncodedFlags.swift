/// A snapshot document kept as its flags' canonical members (`"<key>":<value>`), so that the next version's
/// document is written by serializing again only the flags that changed: a server publishing a version of a large
/// namespace copies bytes rather than writing every flag anew.
///
/// ```swift
/// var flags = EncodedFlags(snapshot.flagSet)                                 // once
/// let (bytes, checksum) = flags.document(for: snapshot)                     // == SnapshotDocument.encodeWithChecksum
/// flags = flags.updating(changedKeys, in: next.flagSet, flag: { … })        // each later version
/// ```
package struct EncodedFlags: Sendable {
    /// Every flag's member, sorted by key as the canonical form sorts them.
    private var members: [(key: String, bytes: [UInt8])]

    /// Serializes every flag of a flag set.
    package init(_ flagSet: FlagSet) {
        members = flagSet.flags.map { ($0.key, Self.member($0)) }
        members.sort { SnapshotDelta.byUTF8($0.key, $1.key) }
    }

    /// The members after some flags changed (added, removed or replaced), the others kept as they are.
    ///
    /// - Parameters:
    ///   - keys: the keys of the flags that may have changed.
    ///   - flag: the flag of a key in the new flag set, nil when it is not there.
    package func updating(_ keys: Set<String>, flag: (String) -> FlagDefinition?) -> EncodedFlags {
        var next = self
        for key in keys {
            let position = next.position(of: key)
            let found = position < next.members.count && next.members[position].key == key
            switch (found, flag(key)) {
            case (true, let definition?): next.members[position].bytes = Self.member(definition)
            case (true, nil): next.members.remove(at: position)
            case (false, let definition?): next.members.insert((key, Self.member(definition)), at: position)
            case (false, nil): break
            }
        }
        return next
    }

    /// The canonical document of a snapshot whose flags these are, with its checksum: the same bytes as
    /// `SnapshotDocument.encodeWithChecksum`.
    package func document(for snapshot: Snapshot, sha256: ([UInt8]) -> [UInt8] = SHA256.digest) -> (bytes: [UInt8], checksum: String) {
        // The canonical form without the checksum: the header members around "flags", sorted.
        let flagSet = snapshot.flagSet
        var before = JSONObject()
        if let description = flagSet.description { before["description"] = .string(description) }
        before["epoch"] = .string(snapshot.epoch)
        var after = JSONObject()
        after["format"] = .int64(SnapshotDocument.format)
        after["kill_switches"] = .object(JSONObject(flagSet.killSwitches.map { ($0.key, .object($0.tree)) }))
        after["namespace"] = .string(flagSet.namespace)
        if !flagSet.pluginPoints.isEmpty { after["plugin_points"] = .array(flagSet.pluginPoints.map { .object($0.tree) }) }
        after["version"] = .int64(snapshot.version)
        let head = JSONValue.object(before).serialized(.canonical)
        let tail = JSONValue.object(after).serialized(.canonical)
        var body: [UInt8] = []
        body.reserveCapacity(head.count + tail.count + members.reduce(0) { $0 + $1.bytes.count + 1 } + 16)
        body += head.dropLast()                    // `{"description":…,"epoch":"…"` without its `}`
        body += Array(#","flags":{"#.utf8)
        for (index, member) in members.enumerated() {
            if index > 0 { body.append(UInt8(ascii: ",")) }
            body += member.bytes
        }
        body += Array("},".utf8)
        body += tail.dropFirst()                   // `"format":1,…}` without its `{`
        return SnapshotDocument.withChecksum(body: body, sha256: sha256)
    }

    /// The first position whose key is not below `key` (UTF-8 order).
    private func position(of key: String) -> Int {
        var low = 0, high = members.count
        while low < high {
            let middle = (low + high) / 2
            if SnapshotDelta.byUTF8(members[middle].key, key) { low = middle + 1 } else { high = middle }
        }
        return low
    }

    /// `"<key>":<flag>` in canonical form, as in a snapshot (no crash guard policy).
    static func member(_ flag: FlagDefinition) -> [UInt8] {
        SnapshotDigest.member(flag.key, .object(flag.tree(unit: .basisPoints, includingServerPolicies: false)))
    }
}
