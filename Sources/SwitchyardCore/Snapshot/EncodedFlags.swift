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
    private var members: [(key: String, bytes: [UInt8])]
    /// Every kill switch's member (`"<key>":{…}`), sorted by key.
    private var killSwitches: [(key: String, bytes: [UInt8])]
    /// Every plugin point's element (`{…}`), in the flag set's order.
    private var pluginPoints: [(name: String, bytes: [UInt8])]

    /// Serializes every flag, kill switch and plugin point of a flag set.
    package init(_ flagSet: FlagSet) {
        members = flagSet.flags.map { ($0.key, Self.member($0)) }
        members.sort { SnapshotDelta.byUTF8($0.key, $1.key) }
        killSwitches = flagSet.killSwitches.map { ($0.key, Self.member($0)) }
        killSwitches.sort { SnapshotDelta.byUTF8($0.key, $1.key) }
        pluginPoints = flagSet.pluginPoints.map { ($0.name, Self.element($0)) }
    }

    /// The members after some objects changed (added, removed or replaced), the others kept as they are.
    ///
    /// - Parameters:
    ///   - changes: the objects that may have changed since the flag set these members were made from.
    ///   - flagSet: the new flag set.
    ///   - flag: the flag of a key in the new flag set, nil when it is not there (a caller holding an index of the
    ///     flags passes it; `flagSet.flag(_:)` otherwise).
    package func updating(_ changes: ChangedObjects, in flagSet: FlagSet, flag: (String) -> FlagDefinition?) -> EncodedFlags {
        var next = self
        Self.update(&next.members, keys: changes.flags, encode: { flag($0).map(Self.member) })
        if !changes.killSwitches.isEmpty {
            Self.update(&next.killSwitches, keys: changes.killSwitches, encode: { flagSet.killSwitch($0).map(Self.member) })
        }
        if !changes.pluginPoints.isEmpty || changes.pluginPointOrder {
            let kept = Dictionary(pluginPoints.map { ($0.name, $0.bytes) }, uniquingKeysWith: { first, _ in first })
            next.pluginPoints = flagSet.pluginPoints.map { point in
                (point.name, changes.pluginPoints.contains(point.name) ? Self.element(point) : kept[point.name] ?? Self.element(point))
            }
        }
        return next
    }

    /// Replaces, removes or inserts the members of some keys in a list sorted by key.
    private static func update(_ list: inout [(key: String, bytes: [UInt8])], keys: Set<String>, encode: (String) -> [UInt8]?) {
        for key in keys {
            let position = position(of: key, in: list)
            let found = position < list.count && list[position].key == key
            switch (found, encode(key)) {
            case (true, let bytes?): list[position].bytes = bytes
            case (true, nil): list.remove(at: position)
            case (false, let bytes?): list.insert((key, bytes), at: position)
            case (false, nil): break
            }
        }
    }

    /// The canonical document of a snapshot whose flags these are, with its checksum: the same bytes as
    /// `SnapshotDocument.encodeWithChecksum`.
    package func document(for snapshot: Snapshot, sha256: ([UInt8]) -> [UInt8] = SHA256.digest) -> (bytes: [UInt8], checksum: String) {
        // The canonical form without the checksum, members in key order:
        // description?, epoch, flags, format, kill_switches, namespace, plugin_points?, version.
        let flagSet = snapshot.flagSet
        func joined<Element>(_ list: [Element], _ bytes: (Element) -> [UInt8]) -> Int {
            list.reduce(0) { $0 + bytes($1).count + 1 }
        }
        var body: [UInt8] = []
        body.reserveCapacity(joined(members, \.bytes) + joined(killSwitches, \.bytes) + joined(pluginPoints, \.bytes) + 256)
        body.append(UInt8(ascii: "{"))
        if let description = flagSet.description {
            body += Array(#""description":"#.utf8)
            JSONValue.writeString(description, into: &body)
            body.append(UInt8(ascii: ","))
        }
        body += Array(#""epoch":"#.utf8)
        JSONValue.writeString(snapshot.epoch, into: &body)
        func append<Element>(_ list: [Element], _ bytes: (Element) -> [UInt8]) {
            for (index, element) in list.enumerated() {
                if index > 0 { body.append(UInt8(ascii: ",")) }
                body += bytes(element)
            }
        }
        body += Array(#","flags":{"#.utf8)
        append(members, \.bytes)
        body += Array(#"},"format":"#.utf8) + JSONValue.int64(SnapshotDocument.format).serialized(.canonical)
        body += Array(#","kill_switches":{"#.utf8)
        append(killSwitches, \.bytes)
        body += Array(#"},"namespace":"#.utf8)
        JSONValue.writeString(flagSet.namespace, into: &body)
        if !pluginPoints.isEmpty {
            body += Array(#","plugin_points":["#.utf8)
            append(pluginPoints, \.bytes)
            body.append(UInt8(ascii: "]"))
        }
        body += Array(#","version":"#.utf8) + JSONValue.int64(snapshot.version).serialized(.canonical)
        body.append(UInt8(ascii: "}"))
        return SnapshotDocument.withChecksum(body: body, sha256: sha256)
    }

    /// The first position in a list sorted by key whose key is not below `key` (UTF-8 order).
    private static func position(of key: String, in list: [(key: String, bytes: [UInt8])]) -> Int {
        var low = 0, high = list.count
        while low < high {
            let middle = (low + high) / 2
            if SnapshotDelta.byUTF8(list[middle].key, key) { low = middle + 1 } else { high = middle }
        }
        return low
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
