public import SwitchyardCore

/// A refusal (RFC 9457 problem details, `application/problem+json`): every route's 4xx and 5xx but OFREP's. flagsd
/// writes it from an `APIError`; flagctl reads it into an `APIFailure`.
public struct ProblemBody: WireBody {
    /// A field of the request at fault, with what is wrong with it.
    public struct FieldProblem: Sendable, Hashable {
        /// `flags.plugin_switch_feed_promos.rules[1].rollout`, `If-Match`, a query parameter's name.
        public var path: String
        public var message: String

        public init(path: String, message: String) {
            self.path = path
            self.message = message
        }
    }

    /// Where the namespace is, for a change refused because it moved on (`version-conflict`).
    public struct Conflict: Sendable, Hashable {
        public var currentVersion: Int64
        public var currentEntityTag: String
        /// Who made the current version, and when (RFC 3339); nil when the change log does not say.
        public var changedBy: String?
        public var changedAt: String?

        public init(currentVersion: Int64, currentEntityTag: String, changedBy: String?, changedAt: String?) {
            self.currentVersion = currentVersion
            self.currentEntityTag = currentEntityTag
            self.changedBy = changedBy
            self.changedAt = changedAt
        }
    }

    /// The prefix of every problem type flagsd writes: `urn:switchyard:problem:<slug>`.
    public static let typePrefix = "urn:switchyard:problem:"

    /// The last part of the type (`version-conflict`, `reason-required`, `not-found`, ...).
    public var slug: String
    public var title: String
    public var status: Int
    /// What failed, with which input, and what to do next.
    public var detail: String
    /// The request's path.
    public var instance: String
    /// The request's id, as in flagsd's log; nil for a request flagsd gave none.
    public var requestID: String?
    /// For 400s: every field at fault.
    public var errors: [FieldProblem]
    public var conflict: Conflict?

    public init(
        slug: String, title: String, status: Int, detail: String, instance: String, requestID: String? = nil,
        errors: [FieldProblem] = [], conflict: Conflict? = nil
    ) {
        self.slug = slug
        self.title = title
        self.status = status
        self.detail = detail
        self.instance = instance
        self.requestID = requestID
        self.errors = errors
        self.conflict = conflict
    }

    public var json: JSONValue {
        var object = JSONObject([
            ("type", .string(Self.typePrefix + slug)), ("title", .string(title)), ("status", .int(status)),
            ("detail", .string(detail)), ("instance", .string(instance)),
        ])
        if let requestID { object["request_id"] = .string(requestID) }
        if !errors.isEmpty {
            object["errors"] = .array(
                errors.map { .object(JSONObject([("path", .string($0.path)), ("message", .string($0.message))])) })
        }
        if let conflict {
            object["current_version"] = .int64(conflict.currentVersion)
            object["current_etag"] = .string(conflict.currentEntityTag)
            object["changed_by"] = conflict.changedBy.map(JSONValue.string) ?? .null
            object["changed_at"] = conflict.changedAt.map(JSONValue.string) ?? .null
        }
        return .object(object)
    }

    public init(json: JSONValue) throws(WireError) {
        var reader = try WireReader(json, "problem")
        let type = try reader.string("type")
        slug = type.hasPrefix(Self.typePrefix) ? String(type.dropFirst(Self.typePrefix.count)) : type
        // The type and the detail make a problem; a title or status left out (a proxy's document) reads as empty.
        title = json["title"]?.stringValue ?? ""
        status = Int(json["status"]?.int64Value ?? 0)
        detail = try reader.string("detail")
        instance = json["instance"]?.stringValue ?? ""
        requestID = json["request_id"]?.stringValue
        errors = try (json["errors"]?.arrayValue ?? []).map { element throws(WireError) in
            var errorReader = try WireReader(element, "problem.errors")
            return FieldProblem(path: try errorReader.string("path"), message: try errorReader.string("message"))
        }
        if let version = json["current_version"]?.int64Value {
            conflict = Conflict(
                currentVersion: version, currentEntityTag: json["current_etag"]?.stringValue ?? "",
                changedBy: json["changed_by"]?.stringValue, changedAt: json["changed_at"]?.stringValue)
        } else {
            conflict = nil
        }
    }
}
