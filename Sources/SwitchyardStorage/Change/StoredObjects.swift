package import SwitchyardCore

/// One object of a namespace's flag set as every backend stores it: a row per flag, kill switch, plugin point,
/// metric and namespace field (`description`, `crash_guard`), keyed by the namespace's epoch, the object's kind and
/// key, holding the object's canonical JSON (rollouts in basis points) as it appears in the flag set's document.
///
/// A change writes the rows of the objects it touched and no others, so its cost follows the change, not the
/// namespace (a one-flag change on ten thousand flags writes one row). Plugin points keep their order in `position`
/// (the only ordered kind: flags, kill switches and metrics are read back in key order).
package struct StoredObject: Sendable, Hashable {
    /// An ``ObjectKind`` raw value.
    package var kind: String
    package var key: String
    /// The plugin point's place among the namespace's points; 0 for every other kind.
    package var position: Int64
    /// Canonical JSON of the object's tree.
    package var body: String

    package init(kind: String, key: String, position: Int64 = 0, body: String) {
        self.kind = kind
        self.key = key
        self.position = position
        self.body = body
    }
}

/// What a committed change writes: rows to insert or replace, rows to delete, and kinds whose rows are replaced
/// as a whole (the plugin points, when one of them changed: their order is one fact).
package struct StoredObjectWrites: Sendable {
    /// Delete every row of these kinds first.
    package var replacedKinds: [String] = []
    package var deletions: [(kind: String, key: String)] = []
    package var upserts: [StoredObject] = []

    package init() {}
}

extension FlagSet {
    /// The namespace fields stored as rows of kind `namespace`.
    static let storedNamespaceFields = ["description", "crash_guard"]

    /// Every object of the flag set as stored rows (a namespace's first version).
    package var storedObjects: [StoredObject] {
        Self.storedObjects(ofTree: tree(unit: .basisPoints))
    }

    /// Splits a flag set's document (rollouts in basis points) into stored rows; used by the migrations from the
    /// single-text form too, so it reads the tree, not the model.
    package static func storedObjects(ofTree tree: JSONObject) -> [StoredObject] {
        var objects: [StoredObject] = []
        for field in storedNamespaceFields {
            if let value = tree[field] {
                objects.append(
                    StoredObject(
                        kind: ObjectKind.namespace.rawValue, key: field, body: value.serializedString(.canonical)))
            }
        }
        for (index, point) in (tree["plugin_points"]?.arrayValue ?? []).enumerated() {
            objects.append(
                StoredObject(
                    kind: ObjectKind.pluginPoint.rawValue, key: point["name"]?.stringValue ?? "#\(index)",
                    position: Int64(index), body: point.serializedString(.canonical)))
        }
        for (kind, member) in [(ObjectKind.killSwitch, "kill_switches"), (.flag, "flags"), (.metric, "metrics")] {
            for (key, value) in tree[member]?.objectValue ?? JSONObject() {
                objects.append(StoredObject(kind: kind.rawValue, key: key, body: value.serializedString(.canonical)))
            }
        }
        return objects
    }

    /// Reads a namespace's flag set back from its stored rows (in any order).
    ///
    /// - Throws: `StorageError` `corrupt` when a row is not JSON, has an unknown kind, or the whole is not a valid
    ///   flag set.
    package init(storedObjects objects: [StoredObject], namespace: String) throws(StorageError) {
        var root = JSONObject()
        root["namespace"] = .string(namespace)
        var points: [(Int64, JSONValue)] = []
        var killSwitches: [(String, JSONValue)] = []
        var flags: [(String, JSONValue)] = []
        var metrics: [(String, JSONValue)] = []
        for object in objects {
            let value: JSONValue
            do {
                value = try JSONValue.parse(object.body)
            } catch {
                throw StorageError(
                    .corrupt,
                    "the stored \(object.kind) '\(object.key)' of namespace '\(namespace)' is not JSON: \(error)")
            }
            switch ObjectKind(rawValue: object.kind) {
            case .namespace where Self.storedNamespaceFields.contains(object.key): root[object.key] = value
            case .pluginPoint: points.append((object.position, value))
            case .killSwitch: killSwitches.append((object.key, value))
            case .flag: flags.append((object.key, value))
            case .metric: metrics.append((object.key, value))
            default:
                throw StorageError(
                    .corrupt,
                    "namespace '\(namespace)' has a stored object of unknown kind '\(object.kind)' ('\(object.key)')")
            }
        }
        if !points.isEmpty { root["plugin_points"] = .array(points.sorted { $0.0 < $1.0 }.map(\.1)) }
        root["kill_switches"] = .object(
            JSONObject(killSwitches.sorted { $0.0.utf8.lexicographicallyPrecedes($1.0.utf8) }))
        root["flags"] = .object(JSONObject(flags.sorted { $0.0.utf8.lexicographicallyPrecedes($1.0.utf8) }))
        if !metrics.isEmpty {
            root["metrics"] = .object(JSONObject(metrics.sorted { $0.0.utf8.lexicographicallyPrecedes($1.0.utf8) }))
        }
        do {
            // Every change of the namespace starts from a flag set read here (then kept): index it once.
            self = try FlagSet(tree: .object(root), unit: .basisPoints).indexingSwitches()
        } catch {
            throw StorageError(
                .corrupt, "the stored flag set of namespace '\(namespace)' is invalid", problems: error.problems)
        }
    }
}

extension ChangeRecord {
    /// The rows a committed change writes: each touched object's new row (its tree as the change log has it) or
    /// its deletion, and all plugin points again when one of them changed.
    ///
    /// - Parameter after: the flag set the change left (for the plugin points' order).
    package func storedWrites(after: FlagSet) -> StoredObjectWrites {
        var writes = StoredObjectWrites()
        var pointsChanged = false
        for change in changes {
            switch change.kind {
            case .pluginPoint:
                pointsChanged = true
            case .namespace where !FlagSet.storedNamespaceFields.contains(change.key):
                continue
            default:
                if let tree = change.after {
                    writes.upserts.append(
                        StoredObject(
                            kind: change.kind.rawValue, key: change.key, body: tree.serializedString(.canonical)))
                } else {
                    writes.deletions.append((change.kind.rawValue, change.key))
                }
            }
        }
        if pointsChanged {
            writes.replacedKinds.append(ObjectKind.pluginPoint.rawValue)
            for (index, point) in after.pluginPoints.enumerated() {
                writes.upserts.append(
                    StoredObject(
                        kind: ObjectKind.pluginPoint.rawValue, key: point.name, position: Int64(index),
                        body: point.jsonTree.serializedString(.canonical)))
            }
        }
        return writes
    }
}
