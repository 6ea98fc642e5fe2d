public import SwitchyardCore

/// A body flagsd writes and flagctl reads: written with `json`, read back with `init(json:)`, which throws naming the
/// member at fault.
public protocol WireBody: Sendable, Hashable {
    var json: JSONValue { get }
    init(json: JSONValue) throws(WireError)
}

/// A body listed by a list answer, under its plural member name.
public protocol ListedBody: WireBody {
    /// The list's member: `flags`, `kill_switches`, `releases`, `namespaces`, `tokens`.
    static var listMember: String { get }
}

/// A list answer (`GET …/flags`, `…/kill-switches`, `…/releases`, `GET /v1/namespaces`, `GET /v1/tokens`): the items
/// under their member name, with the namespace and its version when the list is one namespace's.
public struct ListBody<Item: ListedBody>: WireBody {
    /// The namespace listed from and its version, for the lists of one namespace.
    public var namespace: (name: String, version: Int64)?
    public var items: [Item]

    public init(items: [Item], namespace: (name: String, version: Int64)? = nil) {
        self.items = items
        self.namespace = namespace
    }

    public var json: JSONValue {
        var object = JSONObject()
        if let namespace {
            object["namespace"] = .string(namespace.name)
            object["version"] = .int64(namespace.version)
        }
        object[Item.listMember] = .array(items.map(\.json))
        return .object(object)
    }

    public init(json: JSONValue) throws(WireError) {
        var reader = try WireReader(json, "\(Item.listMember) list")
        guard let elements = json[Item.listMember]?.arrayValue else {
            throw WireError("\(Item.listMember) list: \(Item.listMember) is missing or not a list")
        }
        items = try elements.map { element throws(WireError) in try Item(json: element) }
        namespace =
            reader.object["namespace"] == nil ? nil : (try reader.string("namespace"), try reader.int64("version"))
    }

    public static func == (lhs: ListBody, rhs: ListBody) -> Bool {
        lhs.items == rhs.items && lhs.namespace?.name == rhs.namespace?.name
            && lhs.namespace?.version == rhs.namespace?.version
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(items)
        hasher.combine(namespace?.name)
        hasher.combine(namespace?.version)
    }
}

/// A page of the audit log (`GET /v1/audit`): entries, newest first, and the cursor of the next page (nil at the end).
public struct AuditPageBody: WireBody {
    public var entries: [AuditEntryBody]
    public var nextCursor: Int64?

    public init(entries: [AuditEntryBody], nextCursor: Int64?) {
        self.entries = entries
        self.nextCursor = nextCursor
    }

    public var json: JSONValue {
        .object(
            JSONObject([
                ("entries", .array(entries.map(\.json))), ("next_cursor", nextCursor.map(JSONValue.int64) ?? .null),
            ]))
    }

    public init(json: JSONValue) throws(WireError) {
        guard let elements = json["entries"]?.arrayValue else {
            throw WireError("audit page: entries is missing or not a list")
        }
        entries = try elements.map { element throws(WireError) in try AuditEntryBody(json: element) }
        nextCursor = json["next_cursor"]?.int64Value
    }
}

extension FlagBody: ListedBody { public static var listMember: String { "flags" } }
extension KillSwitchBody: ListedBody { public static var listMember: String { "kill_switches" } }
extension ReleaseStatusBody: ListedBody { public static var listMember: String { "releases" } }
extension NamespaceBody: ListedBody { public static var listMember: String { "namespaces" } }
extension TokenBody: ListedBody { public static var listMember: String { "tokens" } }
