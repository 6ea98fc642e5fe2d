/// What changed in a namespace between two versions of one epoch: the flags, kill switches and plugin points
/// to upsert and to remove, and the checksum and digest of the full snapshot it leads to.
///
/// flagsd sends one instead of the whole snapshot to a client that holds the base version and asks for deltas
/// (`docs/snapshot.md`, "Deltas"); the client applies it and proves, with ``digest``, that it holds exactly the
/// snapshot a full download would give.
///
/// ```swift
/// let delta = SnapshotDelta(from: old, to: new)          // what the server sends
/// let same = try old.applying(delta)                      // == new
/// ```
public struct SnapshotDelta: Sendable, Hashable {
    /// How the namespace description changes.
    public enum DescriptionChange: Sendable, Hashable {
        case unchanged
        case set(String)
        case removed
    }

    public var namespace: String
    public var epoch: String
    /// The version the delta applies to.
    public var baseVersion: Int64
    /// The version it leads to.
    public var version: Int64
    /// The `checksum` member of the full snapshot at `version`.
    public var checksum: String
    /// The ``SnapshotDigest`` of the full snapshot at `version`.
    public var digest: String
    /// Flags to add or replace, whole.
    public var upsertedFlags: [FlagDefinition]
    public var removedFlags: [String]
    public var upsertedKillSwitches: [KillSwitch]
    public var removedKillSwitches: [String]
    public var upsertedPluginPoints: [PluginPointDefinition]
    public var removedPluginPoints: [String]
    /// Every plugin point's name in the order of the snapshot at `version`; nil when the delta leaves the plugin
    /// points as they are (then it upserts and removes none).
    public var pluginPointOrder: [String]?
    public var namespaceDescription: DescriptionChange

    public init(
        namespace: String, epoch: String, baseVersion: Int64, version: Int64, checksum: String, digest: String,
        upsertedFlags: [FlagDefinition] = [], removedFlags: [String] = [], upsertedKillSwitches: [KillSwitch] = [],
        removedKillSwitches: [String] = [], upsertedPluginPoints: [PluginPointDefinition] = [],
        removedPluginPoints: [String] = [], pluginPointOrder: [String]? = nil,
        namespaceDescription: DescriptionChange = .unchanged
    ) {
        self.namespace = namespace
        self.epoch = epoch
        self.baseVersion = baseVersion
        self.version = version
        self.checksum = checksum
        self.digest = digest
        self.upsertedFlags = upsertedFlags
        self.removedFlags = removedFlags
        self.upsertedKillSwitches = upsertedKillSwitches
        self.removedKillSwitches = removedKillSwitches
        self.upsertedPluginPoints = upsertedPluginPoints
        self.removedPluginPoints = removedPluginPoints
        self.pluginPointOrder = pluginPointOrder
        self.namespaceDescription = namespaceDescription
    }

    /// The delta from one snapshot to a later one of the same epoch: exactly the objects that differ.
    ///
    /// - Parameter digest: the target's digest when the caller has it already (computed otherwise).
    public init(from base: Snapshot, to target: Snapshot, digest: String? = nil) {
        self.init(
            base: base.version, target: target, changes: ChangedObjects(from: base.flagSet, to: target.flagSet),
            checksum: SnapshotDocument.checksum(of: target),
            digest: digest ?? SnapshotDigest(target.flagSet).value(for: target))
    }

    /// The delta from a base version to a snapshot, given the objects that may have changed in between (a key
    /// changed and changed back is upserted as it is now: harmless).
    ///
    /// - Parameters:
    ///   - base: the version the client holds, of the target's epoch.
    ///   - target: the snapshot the delta leads to.
    ///   - changes: the objects changed after `base` up to `target`.
    ///   - checksum: the target's `checksum` member.
    ///   - digest: the target's digest.
    public init(base: Int64, target: Snapshot, changes: ChangedObjects, checksum: String, digest: String) {
        // A few changed flags are found by a scan; many, through an index of every flag.
        var index: [String: FlagDefinition]?
        if changes.flags.count > 8 {
            index = Dictionary(target.flagSet.flags.map { ($0.key, $0) }, uniquingKeysWith: { first, _ in first })
        }
        self.init(base: base, target: target, changes: changes, checksum: checksum, digest: digest) { key in
            index.map { $0[key] } ?? target.flagSet.flag(key)
        }
    }

    /// The same, looking the changed flags up in the target's compiled form (without indexing every flag).
    public init(base: Int64, target: CompiledSnapshot, changes: ChangedObjects, checksum: String, digest: String) {
        self.init(base: base, target: target.snapshot, changes: changes, checksum: checksum, digest: digest) { key in
            target.handle(for: key).flatMap(target.flag)
        }
    }

    private init(
        base: Int64, target: Snapshot, changes: ChangedObjects, checksum: String, digest: String,
        flag: (String) -> FlagDefinition?
    ) {
        let flagSet = target.flagSet
        var flags: [FlagDefinition] = []
        var removedFlags: [String] = []
        for key in changes.flags.sorted(by: Self.byUTF8) {
            if let found = flag(key) { flags.append(found) } else { removedFlags.append(key) }
        }
        var kills: [KillSwitch] = []
        var removedKills: [String] = []
        for key in changes.killSwitches.sorted(by: Self.byUTF8) {
            if let kill = flagSet.killSwitch(key) { kills.append(kill) } else { removedKills.append(key) }
        }
        var points: [PluginPointDefinition] = []
        var removedPoints: [String] = []
        for name in changes.pluginPoints.sorted(by: Self.byUTF8) {
            if let point = flagSet.pluginPoints.first(where: { $0.name == name }) {
                points.append(point)
            } else {
                removedPoints.append(name)
            }
        }
        let pointsChanged = !changes.pluginPoints.isEmpty || changes.pluginPointOrder
        self.init(
            namespace: flagSet.namespace, epoch: target.epoch, baseVersion: base, version: target.version,
            checksum: checksum, digest: digest, upsertedFlags: flags, removedFlags: removedFlags,
            upsertedKillSwitches: kills, removedKillSwitches: removedKills, upsertedPluginPoints: points,
            removedPluginPoints: removedPoints,
            pluginPointOrder: pointsChanged ? flagSet.pluginPoints.map(\.name) : nil,
            namespaceDescription: changes.description
                ? flagSet.description.map(DescriptionChange.set) ?? .removed : .unchanged)
    }

    /// Whether the delta changes nothing but the version (a change to what snapshots leave out, such as a crash
    /// guard policy).
    public var isEmpty: Bool {
        upsertedFlags.isEmpty && removedFlags.isEmpty && upsertedKillSwitches.isEmpty && removedKillSwitches.isEmpty
            && upsertedPluginPoints.isEmpty && removedPluginPoints.isEmpty && pluginPointOrder == nil
            && namespaceDescription == .unchanged
    }

    /// The entity tag of the snapshot the delta leads to: `"<epoch>.<version>"`.
    public var entityTag: String { SnapshotVersion(epoch: epoch, version: version).entityTag }

    static func byUTF8(_ lhs: String, _ rhs: String) -> Bool {
        lhs.utf8.lexicographicallyPrecedes(rhs.utf8)
    }
}

/// Where the changed flags and kill switches are, when a change left every key in place (the same keys at the same
/// positions before and after, as a change of definitions does): their positions in both lists; nil for a kind whose
/// keys moved, or were added or removed. Lets a change be validated and described without searching for its objects.
package struct AlignedChanges: Sendable {
    package var flags: [Int]?
    package var killSwitches: [Int]?

    package init() {}
}

/// The keys of the objects that differ between two flag sets, by kind.
public struct ChangedObjects: Sendable, Hashable {
    public var flags: Set<String> = []
    public var killSwitches: Set<String> = []
    public var pluginPoints: Set<String> = []
    /// Whether the plugin points are in another order.
    public var pluginPointOrder = false
    /// Whether the namespace description differs.
    public var description = false

    public init() {}

    /// The objects that differ between two flag sets (added, removed or changed), comparing as snapshots do:
    /// crash guard policies, which snapshots leave out, count too (a flag with only its policy changed is
    /// upserted as it is).
    public init(from old: FlagSet, to new: FlagSet) {
        var aligned = AlignedChanges()
        self.init(from: old, to: new, aligned: &aligned)
    }

    /// The same, also saying where the changed flags and kill switches are when the change left every key in place.
    package init(from old: FlagSet, to new: FlagSet, aligned: inout AlignedChanges) {
        description = old.description != new.description
        // Closures, not key paths: these run for every object of the namespace.
        flags = Self.changedKeys(old.flags, new.flags, key: { $0.key }, positions: &aligned.flags)
        killSwitches = Self.changedKeys(
            old.killSwitches, new.killSwitches, key: { $0.key }, positions: &aligned.killSwitches)
        var points: [Int]?
        pluginPoints = Self.changedKeys(old.pluginPoints, new.pluginPoints, key: { $0.name }, positions: &points)
        pluginPointOrder =
            old.pluginPoints.count != new.pluginPoints.count
            || zip(old.pluginPoints, new.pluginPoints).contains { $0.name != $1.name }
    }

    /// The keys of the objects that differ between two lists keyed by `key` (added, removed or changed).
    ///
    /// Objects usually stay where they were (a change replaces one in place): the lists are compared position by
    /// position, and by key only from the first position where the keys part. A key listed twice in `new` is
    /// reported changed (a list that repeats a key is not what `old` was).
    ///
    /// - Parameter positions: set to the positions of the objects that differ when both lists hold the same keys at
    ///   the same positions, nil otherwise.
    package static func changedKeys<Object: Equatable>(
        _ old: [Object], _ new: [Object], key: (Object) -> String,
        positions: inout [Int]?
    ) -> Set<String> {
        var changed = Set<String>()
        var found: [Int] = []
        var position = 0
        while position < min(old.count, new.count), key(old[position]) == key(new[position]) {
            if old[position] != new[position] {
                changed.insert(key(new[position]))
                found.append(position)
            }
            position += 1
        }
        positions = nil
        guard position < old.count || position < new.count else {
            positions = found
            return changed
        }
        let rest = old[position...]
        let oldByKey = Dictionary(rest.map { (key($0), $0) }, uniquingKeysWith: { first, _ in first })
        var seen = Set<String>()
        for object in new[position...] {
            let name = key(object)
            if !seen.insert(name).inserted || oldByKey[name] != object { changed.insert(name) }
        }
        for object in rest where !seen.contains(key(object)) { changed.insert(key(object)) }
        return changed
    }

    /// Exactly what a delta changes in the snapshot it applies to: the objects it upserts with another definition
    /// or removes (an object upserted as it was is left out), the plugin point order, the description.
    public init(_ delta: SnapshotDelta, appliedTo base: CompiledSnapshot) {
        let flagSet = base.snapshot.flagSet
        for flag in delta.upsertedFlags where base.handle(for: flag.key).flatMap(base.flag) != flag {
            flags.insert(flag.key)
        }
        flags.formUnion(delta.removedFlags)
        for kill in delta.upsertedKillSwitches where flagSet.killSwitch(kill.key) != kill {
            killSwitches.insert(kill.key)
        }
        killSwitches.formUnion(delta.removedKillSwitches)
        for point in delta.upsertedPluginPoints where !flagSet.pluginPoints.contains(point) {
            pluginPoints.insert(point.name)
        }
        pluginPoints.formUnion(delta.removedPluginPoints)
        if let order = delta.pluginPointOrder { pluginPointOrder = order != flagSet.pluginPoints.map(\.name) }
        switch delta.namespaceDescription {
        case .unchanged: break
        case .set(let text): description = text != flagSet.description
        case .removed: description = flagSet.description != nil
        }
    }

    public var isEmpty: Bool {
        flags.isEmpty && killSwitches.isEmpty && pluginPoints.isEmpty && !pluginPointOrder && !description
    }

    /// Adds the objects another change touched.
    public mutating func formUnion(_ other: ChangedObjects) {
        flags.formUnion(other.flags)
        killSwitches.formUnion(other.killSwitches)
        pluginPoints.formUnion(other.pluginPoints)
        pluginPointOrder = pluginPointOrder || other.pluginPointOrder
        description = description || other.description
    }
}
