import Foundation
import SwitchyardCore
import SwitchyardWire

/// What changed in one object, field by field, for people: `rules[1].rollout: 1% → 10%`.
///
/// Works on the API's object trees (rollouts in basis points); rollouts are shown as percentages and scope
/// lists (`entries`, `disabled_scopes`) as `cities lagos; cohorts beta`.
enum ObjectDiff {
    /// One field that differs; nil on a side means the field is absent there.
    struct Field: Equatable {
        var path: String
        var before: JSONValue?
        var after: JSONValue?
    }

    /// Lines for one object a change touched.
    static func lines(_ change: ChangedObject) -> [String] {
        lines(
            kind: change.kind.replacingOccurrences(of: "_", with: " "), key: change.key, before: change.before,
            after: change.after)
    }

    static func lines(kind: String, key: String, before: JSONValue?, after: JSONValue?) -> [String] {
        switch (before, after) {
        case (nil, nil): return []
        case (nil, _?):
            return [kind == "namespace" && key == "namespace" ? "namespace: created" : "\(kind) \(key): created"]
        case (_?, nil): return ["\(kind) \(key): removed"]
        case (let before?, let after?):
            return fields(before, after).map { field in
                "\(kind) \(key): \(field.path) \(text(field.before, key: lastKey(field.path))) → \(text(field.after, key: lastKey(field.path)))"
            }
        }
    }

    /// The fields that differ between two trees, in the order of `before` then new fields of `after`.
    static func fields(_ before: JSONValue?, _ after: JSONValue?, path: String = "") -> [Field] {
        guard before != after else { return [] }
        let key = lastKey(path)
        if key == "entries" || key == "disabled_scopes" { return [Field(path: path, before: before, after: after)] }
        switch (before, after) {
        case (.object(let old)?, .object(let new)?):
            var keys = old.memberKeys
            for name in new.memberKeys where old[name] == nil { keys.append(name) }
            return keys.flatMap { name in fields(old[name], new[name], path: path.isEmpty ? name : "\(path).\(name)") }
        case (.array(let old)?, .array(let new)?)
        where old.contains(where: isContainer) || new.contains(where: isContainer):
            return (0..<max(old.count, new.count)).flatMap { index in
                fields(
                    index < old.count ? old[index] : nil, index < new.count ? new[index] : nil,
                    path: "\(path)[\(index)]")
            }
        default:
            return [Field(path: path, before: before, after: after)]
        }
    }

    private static func isContainer(_ value: JSONValue) -> Bool {
        value.objectValue != nil || value.arrayValue != nil
    }

    /// The last member name of a path: `rollout` for `rules[1].rollout`.
    static func lastKey(_ path: String) -> String {
        let last = path.split(separator: ".").last.map(String.init) ?? path
        return last.split(separator: "[").first.map(String.init) ?? last
    }

    /// A field's value for people; `none` when absent.
    static func text(_ value: JSONValue?, key: String) -> String {
        guard let value else { return key == "disabled" ? "false" : key == "better" ? "higher" : "none" }
        return inline(value, key: key)
    }

    /// A value on one line: rollouts as percentages, scope lists as scopes, objects as `name value; ...`.
    static func inline(_ value: JSONValue, key: String) -> String {
        if key == "rollout", let basisPoints = value.int64Value, let rollout = Rollout(basisPoints: Int(basisPoints)) {
            return rollout.description
        }
        if key == "entries" || key == "disabled_scopes", let scopes = value.arrayValue {
            if scopes.isEmpty { return "none" }
            return "["
                + scopes.map { scope in
                    Scope(
                        cities: scope["cities"]?.arrayValue?.compactMap(\.stringValue) ?? [],
                        cohorts: scope["cohorts"]?.arrayValue?.compactMap(\.stringValue) ?? []
                    ).description
                }.joined(separator: "; ") + "]"
        }
        switch value {
        case .string(let text): return text
        case .array(let elements): return "[" + elements.map { inline($0, key: key) }.joined(separator: ", ") + "]"
        case .object(let object):
            return object.map { member in "\(member.key) \(inline(member.value, key: member.key))" }.joined(
                separator: "; ")
        default: return value.serializedString()
        }
    }
}
