public import SwitchyardCore

/// The bodies of the admin API's change requests that flagctl writes and flagsd reads, typed once for both.
///
/// flagctl writes a request as `object` (its change flow adds `reason` as the namespace's policy asks); flagsd reads
/// it with `read(_:)`, which reports every problem of the body (wrong types, unknown fields, missing members, members
/// that exclude each other) with its field path, so the 400 names them all at once.
public protocol ChangeRequestBody: Sendable, Hashable {
    /// Reads the body's members, reporting problems to the object's ``BodyProblems`` and unread members as unknown.
    /// Nil only when a problem was reported.
    static func read(_ body: inout BodyObject) -> Self?

    /// Why: recorded in the audit log.
    var reason: String? { get }

    /// The body as flagctl sends it, without `reason`.
    var object: JSONObject { get }
}

extension ChangeRequestBody {
    /// The body with its reason, as a request that is not a `ChangeFlow` change sends it.
    public var sent: JSONValue {
        var object = object
        if let reason { object["reason"] = .string(reason) }
        return .object(object)
    }
}

/// `POST …/flags/{key}/enable` and `…/disable`: `{"scope"?, "reason"?}`. No scope is everywhere.
public struct SwitchStateRequest: ChangeRequestBody {
    public var scope: Scope?
    public var reason: String?

    public init(scope: Scope?, reason: String? = nil) {
        self.scope = scope
        self.reason = reason
    }

    public static func read(_ body: inout BodyObject) -> SwitchStateRequest? {
        let request = SwitchStateRequest(scope: body.scope("scope"), reason: body.string("reason"))
        body.finish()
        return request
    }

    public var object: JSONObject {
        var object = JSONObject()
        object.setScope(scope)
        return object
    }
}

/// `POST …/kill-switches/{key}/kill` (`{"scope"?, "reason"}`) and `…/revive` (`{"scope"? | "all"?, "reason"?}`):
/// `all` revives everywhere and in every scope; only a revive accepts it.
public struct KillStateRequest: ChangeRequestBody {
    public var scope: Scope?
    public var all: Bool
    public var reason: String?

    public init(scope: Scope?, all: Bool = false, reason: String? = nil) {
        self.scope = scope
        self.all = all
        self.reason = reason
    }

    /// Reads a revive (which takes `all`); the kill route reads with `read(_:revive: false)`.
    public static func read(_ body: inout BodyObject) -> KillStateRequest? {
        read(&body, revive: true)
    }

    /// Reads a kill (`revive` false: `all` is an unknown field) or a revive.
    public static func read(_ body: inout BodyObject, revive: Bool) -> KillStateRequest? {
        let scope = body.scope("scope")
        let all = revive ? (body.bool("all") ?? false) : false
        if all, scope != nil { body.problems.report("all", "pass either scope or all, not both") }
        let request = KillStateRequest(scope: scope, all: all, reason: body.string("reason"))
        body.finish()
        return request
    }

    public var object: JSONObject {
        var object = JSONObject()
        if all { object["all"] = .bool(true) }
        object.setScope(scope)
        return object
    }
}

/// `POST …/flags/{key}/rollout`: `{"rollout", "rule"? | "conditions"?, "reason"?}`: the default rollout, rule
/// `rule`'s, or the rule whose conditions are exactly `conditions` (cities and cohorts; made when none is).
public struct RolloutRequest: ChangeRequestBody {
    public var rollout: Rollout
    public var rule: Int?
    public var conditions: Conditions?
    public var reason: String?

    public init(rollout: Rollout, rule: Int? = nil, conditions: Conditions? = nil, reason: String? = nil) {
        self.rollout = rollout
        self.rule = rule
        self.conditions = conditions
        self.reason = reason
    }

    public static func read(_ body: inout BodyObject) -> RolloutRequest? {
        let basisPoints = body.integer("rollout", required: true, in: 0...Int64(Rollout.maximum))
        let rule = body.integer("rule", in: 0...10_000).map(Int.init)
        var conditions: Conditions?
        if var object = body.object("conditions") {
            let lists = object.targetingLists()
            conditions = lists
            if lists.isEmpty {
                let fields = TargetingList.allCases.map(\.field)
                body.problems.report(
                    "conditions",
                    "must name \(fields.dropLast().joined(separator: ", ")) or \(fields.last ?? "")"
                        + " (leave it out to set the default rollout)")
            }
        }
        if rule != nil, conditions != nil {
            body.problems.report("conditions", "pass either rule or conditions, not both")
        }
        let reason = body.string("reason")
        body.finish()
        guard let basisPoints, let rollout = Rollout(basisPoints: Int(basisPoints)) else { return nil }
        return RolloutRequest(rollout: rollout, rule: rule, conditions: conditions, reason: reason)
    }

    public var object: JSONObject {
        var object = JSONObject([("rollout", .int(Int(rollout.basisPoints)))])
        if let rule { object["rule"] = .int(rule) }
        if let conditions { object["conditions"] = .object(conditions.targetingListsTree) }
        return object
    }
}

/// `POST …/flags/{key}/targeting`: `{"rule"?, "add"?, "remove"?, "rollout"?, "reason"?}`: edits rule `rule`'s
/// condition lists (a new rule 0 when the switch has none) and its rollout; at least one of add, remove, rollout.
public struct TargetingRequest: ChangeRequestBody {
    public var rule: Int?
    public var add: Conditions
    public var remove: Conditions
    public var rollout: Rollout?
    public var reason: String?

    public init(
        rule: Int?, add: Conditions = Conditions(), remove: Conditions = Conditions(), rollout: Rollout? = nil,
        reason: String? = nil
    ) {
        self.rule = rule
        self.add = add
        self.remove = remove
        self.rollout = rollout
        self.reason = reason
    }

    public static func read(_ body: inout BodyObject) -> TargetingRequest? {
        let rule = body.integer("rule", in: 0...10_000).map(Int.init)
        var add = Conditions()
        var remove = Conditions()
        if var object = body.object("add") { add = object.targetingLists() }
        if var object = body.object("remove") { remove = object.targetingLists() }
        let basisPoints = body.integer("rollout", in: 0...Int64(Rollout.maximum))
        let reason = body.string("reason")
        body.finish()
        if add.isEmpty && remove.isEmpty && basisPoints == nil {
            body.problems.report(.root, "pass add, remove or rollout")
            return nil
        }
        return TargetingRequest(
            rule: rule, add: add, remove: remove, rollout: basisPoints.flatMap { Rollout(basisPoints: Int($0)) },
            reason: reason)
    }

    public var object: JSONObject {
        var object = JSONObject()
        if let rule { object["rule"] = .int(rule) }
        // Only the lists: a targeting edit carries no version bounds (they are set in the flag's definition).
        let (addTree, removeTree) = (add.targetingListsTree, remove.targetingListsTree)
        if !addTree.isEmpty { object["add"] = .object(addTree) }
        if !removeTree.isEmpty { object["remove"] = .object(removeTree) }
        if let rollout { object["rollout"] = .int(Int(rollout.basisPoints)) }
        return object
    }
}

/// A request that carries nothing but its reason: reverting a change (`POST …/changes/{version}/revert`), deleting a
/// flag (`DELETE …/flags/{key}`) and a person's decision on a proposal of the crash guard or a release plan
/// (`…/proposals/{id}/apply|dismiss|confirm`).
public struct ReasonRequest: ChangeRequestBody {
    public var reason: String?

    public init(reason: String? = nil) {
        self.reason = reason
    }

    public static func read(_ body: inout BodyObject) -> ReasonRequest? {
        read(&body, requiredBecause: nil)
    }

    /// Reads the body; with `requiredBecause`, a reason that is missing or blank is a problem saying why one is
    /// needed (a dismissal: "say why the switch should stay on").
    public static func read(_ body: inout BodyObject, requiredBecause why: String?) -> ReasonRequest? {
        let reason = body.string("reason")
        body.finish()
        if let why, reason?.allSatisfy(\.isWhitespace) ?? true {
            body.problems.report("reason", "is required: \(why)")
            return nil
        }
        return ReasonRequest(reason: reason)
    }

    public var object: JSONObject { JSONObject() }
}

/// `POST …/flags/{key}/release/{start|pause|resume|advance|abort}`: `{"reason"?}`, and for `start` an optional
/// `plan` (as under `release:`, rollouts in basis points, without its state; without it, the declared plan) and
/// optional `guardrails` (`{"trip_booked": "-0.5pp"}`), which replace the plan's.
public struct ReleaseActionRequest: ChangeRequestBody {
    public var plan: ReleasePlan?
    public var guardrails: [ReleaseGuardrail]?
    public var reason: String?

    public init(plan: ReleasePlan? = nil, guardrails: [ReleaseGuardrail]? = nil, reason: String? = nil) {
        self.plan = plan
        self.guardrails = guardrails
        self.reason = reason
    }

    /// Reads a `start` (which takes a plan and guardrails); the other actions read with `read(_:action:)`.
    public static func read(_ body: inout BodyObject) -> ReleaseActionRequest? {
        read(&body, action: .start)
    }

    /// Reads the body of an action: only `start` takes `plan` and `guardrails` (elsewhere they are unknown fields).
    public static func read(_ body: inout BodyObject, action: ReleaseAction) -> ReleaseActionRequest? {
        var request = ReleaseActionRequest()
        var readable = true
        if action == .start, let tree = body.value("plan") {
            if tree["state"] != nil {
                body.problems.report(body.path / "plan" / "state", "is kept by flagsd; leave it out")
            }
            do { request.plan = try ReleasePlan(tree: tree, unit: .basisPoints, at: body.path / "plan") } catch {
                body.problems.add(error.problems)
                readable = false
            }
        }
        if action == .start, let tree = body.value("guardrails") {
            do {
                request.guardrails = try ReleasePlan.guardrails(tree: tree, at: body.path / "guardrails")
            } catch {
                body.problems.add(error.problems)
                readable = false
            }
        }
        request.reason = body.string("reason")
        body.finish()
        return readable ? request : nil
    }

    public var object: JSONObject {
        var object = JSONObject()
        if let plan { object["plan"] = .object(plan.tree(unit: .basisPoints, includingState: false)) }
        if let guardrails { object["guardrails"] = .object(ReleasePlan.guardrailTree(guardrails)) }
        return object
    }
}

/// `PUT /v1/namespaces/{namespace}/flag-set`: `{"flag_set", "reason"?}`, every definition of the namespace in one
/// change (`flagctl apply`).
public struct FlagSetRequest: ChangeRequestBody {
    public var flagSet: FlagSet
    public var reason: String?

    public init(flagSet: FlagSet, reason: String? = nil) {
        self.flagSet = flagSet
        self.reason = reason
    }

    /// Reads a flag set that names its namespace (a body alone has no other); a route reads with
    /// `read(_:namespace:)`, which holds the flag set to the namespace of its path.
    public static func read(_ body: inout BodyObject) -> FlagSetRequest? {
        guard let namespace = body.object["flag_set"]?["namespace"]?.stringValue else {
            body.problems.report(body.path / "flag_set" / "namespace", "is required")
            _ = body.value("flag_set")
            _ = body.value("reason")
            body.finish()
            return nil
        }
        return read(&body, namespace: namespace)
    }

    /// Reads the body of a request to the namespace `namespace` (the flag set may leave its name out).
    public static func read(_ body: inout BodyObject, namespace: String) -> FlagSetRequest? {
        let flagSet = body.flagSet("flag_set", namespace: namespace, required: true)
        let reason = body.string("reason")
        body.finish()
        return flagSet.map { FlagSetRequest(flagSet: $0, reason: reason) }
    }

    public var object: JSONObject {
        JSONObject([("flag_set", .object(flagSet.tree(unit: .basisPoints)))])
    }
}

/// `POST /v1/namespaces`: `{"name", "description"?, "reason_policy"?, "flag_set"?, "reason"?}`: a namespace, empty
/// or holding a flag set (`flagctl namespaces create`, `flagctl apply` for a namespace that is new).
public struct NamespaceCreateRequest: ChangeRequestBody {
    public var name: String
    public var description: String?
    public var reasonPolicy: ReasonPolicy?
    /// The definitions it starts with; nil for none.
    public var flagSet: FlagSet?
    public var reason: String?

    public init(
        name: String, description: String? = nil, reasonPolicy: ReasonPolicy? = nil, flagSet: FlagSet? = nil,
        reason: String? = nil
    ) {
        self.name = name
        self.description = description
        self.reasonPolicy = reasonPolicy
        self.flagSet = flagSet
        self.reason = reason
    }

    public static func read(_ body: inout BodyObject) -> NamespaceCreateRequest? {
        read(&body, readingFlagSetOf: { _ in true })
    }

    /// Reads the body, and its flag set only for a name `mayCreate` allows (a caller that may not create the
    /// namespace is refused for that, not for its flag set; the flag set is then left unread and nil).
    public static func read(_ body: inout BodyObject, readingFlagSetOf mayCreate: (String) -> Bool)
        -> NamespaceCreateRequest?
    {
        let name = body.string("name", required: true)
        let description = body.string("description")
        let policy = body.reasonPolicy()
        // The name and description as a flag set checks them, each at its own member.
        var named = true
        for problem in FlagSet(namespace: name ?? "", description: description).validate() {
            switch problem.path {
            case "namespace" where name != nil:
                body.problems.report(body.path / "name", problem.message)
                named = false
            case "description":
                body.problems.report(body.path / "description", problem.message)
            default: break
            }
        }
        var flagSet: FlagSet?
        if let name, named, mayCreate(name) {
            flagSet = body.flagSet("flag_set", namespace: name)
        } else {
            _ = body.value("flag_set")
        }
        let reason = body.string("reason")
        body.finish()
        guard let name, named else { return nil }
        return NamespaceCreateRequest(
            name: name, description: description, reasonPolicy: policy, flagSet: flagSet, reason: reason)
    }

    public var object: JSONObject {
        var object = JSONObject([("name", .string(name))])
        if let description { object["description"] = .string(description) }
        if let reasonPolicy { object["reason_policy"] = .string(reasonPolicy.rawValue) }
        if let flagSet { object["flag_set"] = .object(flagSet.tree(unit: .basisPoints)) }
        return object
    }
}

/// `PATCH /v1/namespaces/{namespace}`: `{"reason_policy", "reason"?}`.
public struct ReasonPolicyRequest: ChangeRequestBody {
    public var reasonPolicy: ReasonPolicy
    public var reason: String?

    public init(reasonPolicy: ReasonPolicy, reason: String? = nil) {
        self.reasonPolicy = reasonPolicy
        self.reason = reason
    }

    public static func read(_ body: inout BodyObject) -> ReasonPolicyRequest? {
        let before = body.problems.problems.count
        let policy = body.reasonPolicy()
        let reason = body.string("reason")
        body.finish()
        guard let policy else {
            if body.problems.problems.count == before {
                body.problems.report(body.path / "reason_policy", "is required")
            }
            return nil
        }
        return ReasonPolicyRequest(reasonPolicy: policy, reason: reason)
    }

    public var object: JSONObject {
        JSONObject([("reason_policy", .string(reasonPolicy.rawValue))])
    }
}

/// `POST /v1/tokens`: `{"name", "role", "namespaces"?, "rate_per_minute"?}` (`flagctl tokens create`). Not a change
/// of a namespace, so it takes no reason.
public struct TokenCreateRequest: Sendable, Hashable {
    public var name: String
    public var role: Role
    /// The namespaces the token may use; nil for every namespace (required for a client token, refused for a
    /// metrics token).
    public var namespaces: [String]?
    /// OFREP evaluation requests per minute; nil for the server's default.
    public var ratePerMinute: Int?

    public init(name: String, role: Role, namespaces: [String]? = nil, ratePerMinute: Int? = nil) {
        self.name = name
        self.role = role
        self.namespaces = namespaces
        self.ratePerMinute = ratePerMinute
    }

    /// What is wrong with a token's name (flagsd refuses it with this, flagctl before sending it); nil when nothing.
    public static func nameProblem(_ name: String) -> String? {
        name.isEmpty || name.count > 64 || name.contains(where: { $0.isNewline || $0 == "\t" })
            ? "must be 1 to 64 characters on one line" : nil
    }

    /// Reads the body, reporting every problem; nil when one was reported.
    public static func read(_ body: inout BodyObject) -> TokenCreateRequest? {
        let before = body.problems.problems.count
        let problems = body.problems
        let name = body.string("name", required: true)
        if let problem = name.flatMap(nameProblem) { problems.report(body.path / "name", problem) }
        let roleText = body.string("role", required: true)
        let role = roleText.flatMap(Role.init(rawValue:))
        if let roleText, role == nil {
            problems.report(
                body.path / "role", "'\(roleText)' is not a role (client, reporter, editor, admin or metrics)")
        }
        let namespacesAt = body.path / "namespaces"
        let namespaces = body.stringList("namespaces")
        if let namespaces, namespaces.isEmpty {
            problems.report(namespacesAt, "must list at least one namespace (leave it out for every namespace)")
        }
        // Client tokens ship inside apps, so anyone may extract one: each is limited to the namespaces it serves.
        if role == .client, namespaces == nil, !problems.problems.contains(where: { $0.path == namespacesAt }) {
            problems.report(
                namespacesAt,
                "is required for a client token: client tokens ship inside apps, where anyone can read them, so each is limited to the namespaces its app uses, e.g. \"namespaces\": [\"rider\"] (flagctl tokens create \(name ?? "NAME") --role client --allow rider)"
            )
        }
        if role == .metrics, namespaces != nil {
            problems.report(namespacesAt, "must be left out for a metrics token: /metrics covers every namespace")
        }
        let rate = body.integer("rate_per_minute", in: 1...1_000_000)
        body.finish()
        guard let name, let role, problems.problems.count == before else { return nil }
        return TokenCreateRequest(name: name, role: role, namespaces: namespaces, ratePerMinute: rate.map { Int($0) })
    }

    /// The body as flagctl sends it.
    public var sent: JSONValue {
        var object = JSONObject([("name", .string(name)), ("role", .string(role.rawValue))])
        if let namespaces { object["namespaces"] = .array(namespaces.map(JSONValue.string)) }
        if let ratePerMinute { object["rate_per_minute"] = .int(ratePerMinute) }
        return .object(object)
    }
}

extension Conditions {
    /// The condition lists that are not empty, by their fields (`TargetingList`).
    var targetingListsTree: JSONObject {
        var tree = JSONObject()
        for list in TargetingList.allCases where !self[list: list].isEmpty {
            tree[list.field] = .array(self[list: list].map(JSONValue.string))
        }
        return tree
    }
}

extension JSONObject {
    /// Sets `scope` to a scope's cities and cohorts; leaves it out for none or everywhere.
    fileprivate mutating func setScope(_ scope: Scope?) {
        if let scope, !scope.isEverywhere { self["scope"] = .object(scope.tree) }
    }
}

/// Collects every problem in a request body, with field paths, so a 400 names them all at once.
public final class BodyProblems {
    public private(set) var problems: [ValidationProblem] = []

    public init() {}

    public func report(_ path: FieldPath, _ message: String) {
        problems.append(ValidationProblem(path: path, message: message))
    }

    public func add(_ more: [ValidationProblem]) {
        problems += more
    }
}

/// Reads the members of a JSON object in a request body, reporting wrong types and unknown fields.
public struct BodyObject {
    public let object: JSONObject
    public let path: FieldPath
    public let problems: BodyProblems
    private var consumed: Set<String> = []

    /// The object at a path, or nil (reported) when the value is not an object.
    public init?(_ value: JSONValue, at path: FieldPath = .root, problems: BodyProblems) {
        guard case .object(let object) = value else {
            problems.report(path, "must be an object, not \(value.typeDescription)")
            return nil
        }
        self.object = object
        self.path = path
        self.problems = problems
    }

    public mutating func value(_ key: String, required: Bool = false) -> JSONValue? {
        consumed.insert(key)
        guard let value = object[key], value != .null else {
            if required { problems.report(path / key, "is required") }
            return nil
        }
        return value
    }

    public mutating func string(_ key: String, required: Bool = false) -> String? {
        guard let value = value(key, required: required) else { return nil }
        guard case .string(let string) = value else {
            problems.report(path / key, "must be a string, not \(value.typeDescription)")
            return nil
        }
        return string
    }

    public mutating func integer(_ key: String, required: Bool = false, in range: ClosedRange<Int64>) -> Int64? {
        guard let value = value(key, required: required) else { return nil }
        guard case .number(let number) = value, let integer = number.int64Value else {
            problems.report(path / key, "must be an integer, not \(value.typeDescription)")
            return nil
        }
        guard range.contains(integer) else {
            problems.report(path / key, "\(integer) is not between \(range.lowerBound) and \(range.upperBound)")
            return nil
        }
        return integer
    }

    public mutating func bool(_ key: String) -> Bool? {
        guard let value = value(key) else { return nil }
        guard case .bool(let bool) = value else {
            problems.report(path / key, "must be true or false, not \(value.typeDescription)")
            return nil
        }
        return bool
    }

    public mutating func stringList(_ key: String) -> [String]? {
        guard let value = value(key) else { return nil }
        guard case .array(let elements) = value else {
            problems.report(path / key, "must be a list of strings, not \(value.typeDescription)")
            return nil
        }
        var strings: [String] = []
        for (index, element) in elements.enumerated() {
            guard case .string(let string) = element, !string.isEmpty else {
                problems.report(path / key / index, "must be a non-empty string, not \(element.typeDescription)")
                continue
            }
            if !strings.contains(string) { strings.append(string) }
        }
        return strings
    }

    public mutating func object(_ key: String, required: Bool = false) -> BodyObject? {
        guard let value = value(key, required: required) else { return nil }
        return BodyObject(value, at: path / key, problems: problems)
    }

    /// A scope object: `{"cities": [...], "cohorts": [...]}`.
    public mutating func scope(_ key: String) -> Scope? {
        guard var object = object(key) else { return nil }
        let scope = Scope(cities: object.stringList("cities") ?? [], cohorts: object.stringList("cohorts") ?? [])
        object.finish()
        return scope
    }

    /// Reads `{"cities": [...], "cohorts": [...], ...}` (every `TargetingList`) into the lists of a `Conditions`;
    /// other members are unknown fields.
    public mutating func targetingLists() -> Conditions {
        var conditions = Conditions()
        for list in TargetingList.allCases {
            conditions[list: list] = stringList(list.field) ?? []
        }
        finish()
        return conditions
    }

    /// `reason_policy`: always, kills or never.
    public mutating func reasonPolicy() -> ReasonPolicy? {
        guard let text = string("reason_policy") else { return nil }
        guard let policy = ReasonPolicy(rawValue: text) else {
            problems.report(path / "reason_policy", "'\(text)' is not a reason policy (always, kills or never)")
            return nil
        }
        return policy
    }

    /// A flag set document (rollouts in basis points) for the namespace `namespace`, which it may leave out; every
    /// problem of the document is reported at its path below `key`. Nil when absent or not valid.
    public mutating func flagSet(_ key: String, namespace: String, required: Bool = false) -> FlagSet? {
        guard let tree = value(key, required: required) else { return nil }
        let at = path / key
        guard case .object(var object) = tree else {
            problems.report(at, "must be an object, not \(tree.typeDescription)")
            return nil
        }
        if let named = object["namespace"], named != .string(namespace) {
            problems.report(
                at / "namespace", "must be '\(namespace)' (or left out), not \(named.serializedString())")
            return nil
        }
        object["namespace"] = .string(namespace)
        do {
            return try FlagSet(tree: .object(object), unit: .basisPoints)
        } catch {
            for problem in error.problems {
                problems.report(FieldPath(at.components + problem.path.components), problem.message)
            }
            return nil
        }
    }

    /// Reports every member that was not read.
    public func finish() {
        for (key, _) in object where !consumed.contains(key) {
            var message = "unknown field"
            let known = consumed.sorted()
            if !known.isEmpty { message += " (known fields: \(known.joined(separator: ", ")))" }
            problems.report(path / key, message)
        }
    }
}
