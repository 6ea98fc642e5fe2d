extension Snapshot {
    /// The snapshot a delta leads to from this one, checked as a full download is: the result must be a valid
    /// flag set whose checksum and digest are the ones the delta names.
    ///
    /// Linear in the flag set (it validates the whole result and hashes it twice); `CompiledSnapshot.applying`
    /// is the incremental form clients use.
    /// - Throws: `SnapshotDeltaError` saying why the delta does not apply; nothing is changed then.
    public func applying(_ delta: SnapshotDelta) throws(SnapshotDeltaError) -> Snapshot {
        var keyIndex: [String: Int32] = [:]
        keyIndex.reserveCapacity(flagSet.flags.count)
        for (index, flag) in flagSet.flags.enumerated() where keyIndex[flag.key] == nil {
            keyIndex[flag.key] = Int32(index)
        }
        let application = try DeltaApplication(base: self, keyIndex: keyIndex, delta: delta)
        let result = application.snapshot
        let problems = result.flagSet.validate()
        guard problems.isEmpty else { throw SnapshotDeltaError.invalid(problems, delta) }
        let digest = SnapshotDigest(result.flagSet).value(for: result)
        guard digest == delta.digest else { throw SnapshotDeltaError.digestMismatch(digest, delta) }
        let checksum = SnapshotDocument.checksum(of: result)
        guard checksum == delta.checksum else {
            throw SnapshotDeltaError(
                .checksumMismatch, "the result's checksum \(checksum) is not the delta's \(delta.checksum)")
        }
        return result
    }
}

/// A delta applied to a base snapshot's model: the new flag set and what moved, for the compiled form to follow.
///
/// Flags keep their positions when replaced; a new flag is appended; a removed flag's place is taken by the last
/// flag (so nothing else moves). Kill switches stay sorted by key as in a decoded snapshot when the delta touches
/// them; plugin points take the delta's order.
struct DeltaApplication {
    let snapshot: Snapshot
    /// Flag key → position in `snapshot.flagSet.flags`.
    let keyIndex: [String: Int32]
    /// Positions whose flag is new or replaced, or which the last flag moved to.
    let changedPositions: [Int32]
    /// The flags the delta replaced or removed, as they were (for the digest).
    let replacedFlags: [FlagDefinition]
    /// The kill switches it replaced or removed, as they were.
    let replacedKillSwitches: [KillSwitch]
    /// Whether the delta adds or removes flags, or touches kill switches or plugin points (beyond that, a delta
    /// only replaces flags, and checking those flags alone keeps the flag set valid).
    let isStructural: Bool
    let touchesKillSwitches: Bool
    let touchesPluginPoints: Bool

    /// - Throws: `SnapshotDeltaError` when the delta is for another base or does not fit it.
    init(base: Snapshot, keyIndex baseIndex: [String: Int32], delta: SnapshotDelta) throws(SnapshotDeltaError) {
        guard delta.namespace == base.namespace else {
            throw SnapshotDeltaError(
                .baseMismatch, "the delta is for namespace '\(delta.namespace)', the snapshot is of '\(base.namespace)'"
            )
        }
        guard delta.epoch == base.epoch, delta.baseVersion == base.version else {
            throw SnapshotDeltaError(
                .baseMismatch,
                "the delta applies to \(delta.epoch).\(delta.baseVersion); the snapshot is \(base.epoch).\(base.version)"
            )
        }
        guard delta.version > base.version else {
            throw SnapshotDeltaError(
                .inconsistent, "the delta leads to version \(delta.version), not past \(base.version)")
        }
        var flagSet = base.flagSet
        var keyIndex = baseIndex
        var changed: [Int32] = []
        var replaced: [FlagDefinition] = []
        // A delta names what is not in its result; what the base never had (added and removed again since) is
        // simply not there.
        for key in delta.removedFlags {
            guard let position = keyIndex.removeValue(forKey: key) else { continue }
            replaced.append(flagSet.flags[Int(position)])
            let last = Int32(flagSet.flags.count - 1)
            if position != last {
                flagSet.flags[Int(position)] = flagSet.flags[Int(last)]
                keyIndex[flagSet.flags[Int(position)].key] = position
                changed.append(position)
            }
            flagSet.flags.removeLast()
        }
        for flag in delta.upsertedFlags {
            if let position = keyIndex[flag.key] {
                replaced.append(flagSet.flags[Int(position)])
                flagSet.flags[Int(position)] = flag
                changed.append(position)
            } else {
                keyIndex[flag.key] = Int32(flagSet.flags.count)
                changed.append(Int32(flagSet.flags.count))
                flagSet.flags.append(flag)
            }
        }
        // A position filled by the last flag and then upserted is listed twice; later positions may be gone.
        changed = Array(Set(changed.filter { Int($0) < flagSet.flags.count })).sorted()

        var replacedKills: [KillSwitch] = []
        let touchesKillSwitches = !delta.upsertedKillSwitches.isEmpty || !delta.removedKillSwitches.isEmpty
        if touchesKillSwitches {
            var kills = Dictionary(flagSet.killSwitches.map { ($0.key, $0) }, uniquingKeysWith: { first, _ in first })
            for key in delta.removedKillSwitches {
                guard key != KillSwitch.masterKey else {
                    throw SnapshotDeltaError(
                        .inconsistent, "the delta removes the master kill switch, which always exists")
                }
                if let old = kills.removeValue(forKey: key) { replacedKills.append(old) }
            }
            for kill in delta.upsertedKillSwitches {
                if let old = kills.updateValue(kill, forKey: kill.key) { replacedKills.append(old) }
            }
            flagSet.killSwitches = kills.values.sorted { SnapshotDelta.byUTF8($0.key, $1.key) }
        }

        let touchesPluginPoints = delta.pluginPointOrder != nil
        if let order = delta.pluginPointOrder {
            var points = Dictionary(flagSet.pluginPoints.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
            for name in delta.removedPluginPoints { points[name] = nil }
            for point in delta.upsertedPluginPoints { points[point.name] = point }
            guard order.count == points.count, Set(order) == Set(points.keys) else {
                throw SnapshotDeltaError(
                    .inconsistent,
                    "the delta's plugin_point_order (\(order.joined(separator: ", "))) does not name the plugin points it leaves (\(points.keys.sorted().joined(separator: ", ")))"
                )
            }
            flagSet.pluginPoints = order.compactMap { points[$0] }
        } else if !delta.upsertedPluginPoints.isEmpty || !delta.removedPluginPoints.isEmpty {
            throw SnapshotDeltaError(.inconsistent, "the delta changes plugin points without plugin_point_order")
        }

        switch delta.namespaceDescription {
        case .unchanged: break
        case .set(let text): flagSet.description = text
        case .removed: flagSet.description = nil
        }

        snapshot = Snapshot(epoch: delta.epoch, version: delta.version, flagSet: flagSet)
        self.keyIndex = keyIndex
        changedPositions = changed
        replacedFlags = replaced
        replacedKillSwitches = replacedKills
        self.touchesKillSwitches = touchesKillSwitches
        self.touchesPluginPoints = touchesPluginPoints
        isStructural =
            touchesKillSwitches || touchesPluginPoints || !delta.removedFlags.isEmpty
            || delta.upsertedFlags.contains { baseIndex[$0.key] == nil }
    }

    /// Every problem of the resulting flag set: the whole set when the delta changed its structure, otherwise
    /// only the replaced flags (whose references to and from the rest cannot have changed: a key keeps its kind).
    func problems(upserted flags: [FlagDefinition]) -> [ValidationProblem] {
        if isStructural { return snapshot.flagSet.validate() }
        return flags.flatMap { FlagSet.problems(of: $0) }
    }

    /// The digest of the result, from the base's by replacing the leaves of what changed.
    func digest(from base: SnapshotDigest, delta: SnapshotDelta) -> (SnapshotDigest, String) {
        var digest = base
        for flag in replacedFlags { digest.replace(flag: flag, with: nil) }
        for flag in delta.upsertedFlags { digest.replace(flag: nil, with: flag) }
        for kill in replacedKillSwitches { digest.replace(killSwitch: kill, with: nil) }
        for kill in delta.upsertedKillSwitches { digest.replace(killSwitch: nil, with: kill) }
        if touchesPluginPoints { digest.replacePluginPoints(with: snapshot.flagSet.pluginPoints) }
        return (digest, digest.value(for: snapshot))
    }
}

/// Why a delta does not apply to a snapshot; the client then downloads the full snapshot.
public struct SnapshotDeltaError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The kind of problem; new kinds may be added.
    public typealias Kind = ErrorKind<SnapshotDeltaError>

    public let kind: Kind
    public let message: String

    init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    static func invalid(_ problems: [ValidationProblem], _ delta: SnapshotDelta) -> SnapshotDeltaError {
        SnapshotDeltaError(
            .invalid,
            "version \(delta.version) would not be a valid flag set: "
                + problems.prefix(5).map(\.description).joined(separator: "; "))
    }

    static func digestMismatch(_ computed: String, _ delta: SnapshotDelta) -> SnapshotDeltaError {
        SnapshotDeltaError(
            .checksumMismatch,
            "the result's digest \(computed) is not the delta's \(delta.digest) (version \(delta.version))")
    }

    public var description: String { "unusable delta: \(message)" }
}

extension ErrorKind where Owner == SnapshotDeltaError {
    /// The delta is for another namespace, epoch or base version (a gap).
    public static var baseMismatch: Self { Self("baseMismatch") }
    /// It removes the master kill switch, or names plugin points that do not add up.
    public static var inconsistent: Self { Self("inconsistent") }
    /// The result is not a valid flag set.
    public static var invalid: Self { Self("invalid") }
    /// The result's digest or checksum is not the one the delta names.
    public static var checksumMismatch: Self { Self("checksumMismatch") }
}
