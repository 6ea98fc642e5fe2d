/// The delta document: canonical JSON, members named as in the snapshot document.
///
/// ```json
/// {"base_version":41,"checksum":"sha256:…","digest":"sha256:…","epoch":"…","flags":{"plugin_switch_x":{…}},
///  "format":1,"namespace":"rider","removed_flags":["plugin_switch_y"],"version":42}
/// ```
///
/// `docs/snapshot.md` ("Deltas") describes every member; `docs/openapi.yaml` (`SnapshotDelta`) its schema.
extension SnapshotDelta {
    /// The media type of the delta document, which a client names in `Accept` to receive deltas.
    public static let mediaType = "application/vnd.switchyard.snapshot-delta+json"
    /// The delta format written by this library; a reader refuses a newer one.
    public static let format: Int64 = 1

    static let headerFields = ["format", "namespace", "epoch", "base_version", "version", "checksum", "digest"]
    static let bodyFields = [
        "flags", "removed_flags", "kill_switches", "removed_kill_switches", "plugin_points",
        "removed_plugin_points", "plugin_point_order", "description",
    ]

    /// The delta as canonical JSON.
    public func encode() -> [UInt8] {
        var tree = JSONObject()
        tree["base_version"] = .int64(baseVersion)
        tree["checksum"] = .string(checksum)
        tree["digest"] = .string(digest)
        tree["epoch"] = .string(epoch)
        if !upsertedFlags.isEmpty {
            tree["flags"] = .object(
                JSONObject(
                    upsertedFlags.map {
                        ($0.key, .object($0.tree(unit: .basisPoints, includingServerPolicies: false)))
                    }))
        }
        tree["format"] = .int64(Self.format)
        if !upsertedKillSwitches.isEmpty {
            tree["kill_switches"] = .object(JSONObject(upsertedKillSwitches.map { ($0.key, .object($0.tree)) }))
        }
        tree["namespace"] = .string(namespace)
        if let pluginPointOrder { tree["plugin_point_order"] = .array(pluginPointOrder.map(JSONValue.string)) }
        if !upsertedPluginPoints.isEmpty {
            tree["plugin_points"] = .array(upsertedPluginPoints.map { .object($0.tree) })
        }
        if !removedFlags.isEmpty { tree["removed_flags"] = .array(removedFlags.map(JSONValue.string)) }
        if !removedKillSwitches.isEmpty {
            tree["removed_kill_switches"] = .array(removedKillSwitches.map(JSONValue.string))
        }
        if !removedPluginPoints.isEmpty {
            tree["removed_plugin_points"] = .array(removedPluginPoints.map(JSONValue.string))
        }
        switch namespaceDescription {
        case .unchanged: break
        case .set(let text): tree["description"] = .string(text)
        case .removed: tree["description"] = .null
        }
        tree["version"] = .int64(version)
        return JSONValue.object(tree).serialized(.canonical)
    }

    /// Decodes untrusted bytes: parses strictly and reads every member, reporting every problem with its path.
    ///
    /// Never traps. Whether the delta applies (its base, its checksum and digest, the validity of the result) is
    /// checked when it is applied.
    /// - Throws: `SnapshotDecodingError` (`tooLarge`, `malformed`, `unsupportedFormat`, `invalid`).
    public static func decode(_ bytes: some Collection<UInt8>) throws(SnapshotDecodingError) -> SnapshotDelta {
        guard bytes.count <= SnapshotDocument.maximumSize else {
            throw SnapshotDecodingError(
                .tooLarge, "the delta is \(bytes.count) bytes; the limit is \(SnapshotDocument.maximumSize)")
        }
        let tree: JSONValue
        do {
            tree = try JSONValue.parse(bytes)
        } catch {
            throw SnapshotDecodingError(.malformed, "the delta is not valid JSON: \(error)")
        }
        guard case .object(let object) = tree else {
            throw SnapshotDecodingError(.malformed, "the delta must be a JSON object, not \(tree.typeDescription)")
        }
        guard case .number(let formatNumber)? = object["format"], let format = formatNumber.int64Value else {
            throw SnapshotDecodingError(.malformed, "format: is required and must be an integer")
        }
        guard format >= 1, format <= Self.format else {
            throw SnapshotDecodingError(
                .unsupportedFormat, "delta format \(format) is not supported (this reader knows format 1)")
        }
        let reader = TreeReader(file: nil)
        guard var root = reader.object(tree, at: .root) else {
            throw SnapshotDecodingError(.malformed, "not an object")
        }
        _ = root.value("format")
        let namespace = root.string("namespace", required: true, rule: .namespace)
        let epoch = root.string("epoch", required: true)
        let baseVersion = root.integer("base_version", required: true)
        let version = root.integer("version", required: true)
        let checksum = root.string("checksum", required: true)
        let digest = root.string("digest", required: true)
        if let epoch, epoch.isEmpty || epoch.count > 128 { reader.report("epoch", "must be 1 to 128 characters") }
        if let baseVersion, baseVersion < 0 { reader.report("base_version", "must not be negative") }
        if let baseVersion, let version, version <= baseVersion {
            reader.report("version", "\(version) must be above base_version \(baseVersion)")
        }
        for (field, value) in [("checksum", checksum), ("digest", digest)] {
            if let value, !Self.isDigestText(value) {
                reader.report(FieldPath.root / field, "must be 'sha256:' and 64 lowercase hex digits")
            }
        }

        // The upserted objects read as in a flag set document, by the same parts.
        let flags = reader.keyedMembers(&root, "flags") { element, key, path in
            FlagDefinition.read(element, key: key, at: path, unit: .basisPoints, reader: reader)
        }
        let kills = reader.keyedMembers(&root, "kill_switches") { element, key, path in
            KillSwitch.read(element, key: key, at: path, reader: reader)
        }
        let points = PluginPointDefinition.readList(&root, reader: reader)
        let removedFlags = root.stringList("removed_flags", rule: .key)
        let removedKills = root.stringList("removed_kill_switches", rule: .key)
        let removedPoints = root.stringList("removed_plugin_points", rule: .key)
        let order: [String]? =
            root.object["plugin_point_order"] == nil
            ? nil : root.stringList("plugin_point_order", rule: .key, allowEmpty: true)
        var description = DescriptionChange.unchanged
        if case .null? = root.object["description"] {
            description = .removed
            _ = root.value("description")
        } else if let text = root.string("description", rule: .text) {
            description = .set(text)
        }
        root.finish()
        for key in Set(flags.map(\.key)).intersection(removedFlags) {
            reader.report(FieldPath("removed_flags"), "'\(key)' is also upserted")
        }
        for key in Set(kills.map(\.key)).intersection(removedKills) {
            reader.report(FieldPath("removed_kill_switches"), "'\(key)' is also upserted")
        }
        if order == nil, !points.isEmpty || !removedPoints.isEmpty {
            reader.report("plugin_point_order", "is required when plugin points are upserted or removed")
        }
        guard reader.problems.isEmpty, let namespace, let epoch, let baseVersion, let version, let checksum, let digest
        else {
            throw SnapshotDecodingError(.invalid, reader.problems.map(\.description).joined(separator: "; "))
        }
        return SnapshotDelta(
            namespace: namespace, epoch: epoch, baseVersion: baseVersion, version: version,
            checksum: checksum, digest: digest, upsertedFlags: flags, removedFlags: removedFlags,
            upsertedKillSwitches: kills, removedKillSwitches: removedKills, upsertedPluginPoints: points,
            removedPluginPoints: removedPoints, pluginPointOrder: order, namespaceDescription: description)
    }

    static func isDigestText(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        guard bytes.count == 71, bytes.starts(with: Array("sha256:".utf8)) else { return false }
        return bytes.dropFirst(7).allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
    }
}
