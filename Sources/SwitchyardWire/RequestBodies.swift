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
                body.problems.report(
                    "conditions",
                    "must name cities, cohorts, units or platforms (leave it out to set the default rollout)")
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
        if !add.isEmpty { object["add"] = .object(add.targetingListsTree) }
        if !remove.isEmpty { object["remove"] = .object(remove.targetingListsTree) }
        if let rollout { object["rollout"] = .int(Int(rollout.basisPoints)) }
        return object
    }
}

extension Conditions {
    /// The condition lists that are not empty, by their names (`Conditions.targetingLists`).
    var targetingListsTree: JSONObject {
        var tree = JSONObject()
        for (name, keyPath) in Conditions.targetingLists where !self[keyPath: keyPath].isEmpty {
            tree[name] = .array(self[keyPath: keyPath].map(JSONValue.string))
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

    /// Reads `{"cities": [...], "cohorts": [...], ...}` (`Conditions.targetingLists`) into the lists of a
    /// `Conditions`; other members are unknown fields.
    public mutating func targetingLists() -> Conditions {
        var conditions = Conditions()
        for (field, keyPath) in Conditions.targetingLists {
            conditions[keyPath: keyPath] = stringList(field) ?? []
        }
        finish()
        return conditions
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
