public import SwitchyardCore

extension ObjectChange {
    /// `{"kind": "flag", "key": "…", "before": {…} | null, "after": {…} | null}`.
    public var tree: JSONValue {
        .object(
            JSONObject([
                ("kind", .string(kind.rawValue)), ("key", .string(key)),
                ("before", before ?? .null), ("after", after ?? .null),
            ]))
    }

    /// Reads the form `tree` writes; nil when it is not one.
    public init?(tree: JSONValue) {
        guard let kind = tree["kind"]?.stringValue.flatMap(ObjectKind.init(rawValue:)),
            let key = tree["key"]?.stringValue
        else { return nil }
        let before = tree["before"]
        let after = tree["after"]
        self.init(kind: kind, key: key, before: before == .null ? nil : before, after: after == .null ? nil : after)
    }

    /// A list of changes as canonical JSON text, as backends store it.
    package static func encodeList(_ changes: [ObjectChange]) -> String {
        JSONValue.array(changes.map(\.tree)).serializedString(.canonical)
    }

    /// Reads what `encodeList` wrote.
    package static func decodeList(_ text: String) throws(StorageError) -> [ObjectChange] {
        guard let elements = (try? JSONValue.parse(text))?.arrayValue else {
            throw StorageError(.corrupt, "a stored change list is not a JSON list")
        }
        var changes: [ObjectChange] = []
        for element in elements {
            guard let change = ObjectChange(tree: element) else {
                throw StorageError(.corrupt, "a stored change is malformed: \(element.serializedString())")
            }
            changes.append(change)
        }
        return changes
    }
}
