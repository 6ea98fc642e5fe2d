import Foundation
import Hummingbird
import SwitchyardCore
import SwitchyardStorage
import SwitchyardWire
import Synchronization

extension API {
    /// Loads a namespace for reading after checking access.
    func readableState(_ request: Request, _ context: FlagsRequestContext, role: Role = .editor) async throws -> (
        String, NamespaceState
    ) {
        let namespace = try parameter("namespace", context)
        try await auth.authorize(request, role: role, namespace: namespace)
        guard let state = try await store.namespace(namespace) else { throw APIError.namespaceNotFound(namespace) }
        return (namespace, state)
    }

    func etagHeaders(_ record: NamespaceRecord) -> HTTPFields {
        var headers = HTTPFields()
        headers[.eTag] = record.entityTag
        return headers
    }

    /// `GET /v1/namespaces/{namespace}/flags`
    func listFlags(_ request: Request, context: FlagsRequestContext) async throws -> Response {
        let (namespace, state) = try await readableState(request, context)
        // Indexed for the flags' plugin points (a no-op for a flag set the store indexed already).
        let flagSet = state.flagSet.indexingSwitches()
        let coverage = KillSwitchCoverage(flagSet)
        let list = ListBody(
            items: flagSet.flags.map { FlagBody($0, in: flagSet, coverage: coverage) },
            namespace: (namespace, state.record.version))
        return .json(list.json, headers: etagHeaders(state.record))
    }

    /// `GET /v1/namespaces/{namespace}/flags/{key}`
    func getFlag(_ request: Request, context: FlagsRequestContext) async throws -> Response {
        let (_, state) = try await readableState(request, context)
        let key = try parameter("key", context)
        let index = try state.flagSet.flagIndex(key)
        var object = View.flag(state.flagSet.flags[index], in: state.flagSet).objectValue!
        object["version"] = .int64(state.record.version)
        return .json(.object(object), headers: etagHeaders(state.record))
    }

    /// Authorizes a write and reads its typed body: a 400 naming every problem of the body.
    func writeInput<Body: ChangeRequestBody>(_ request: Request, _ context: FlagsRequestContext, as type: Body.Type)
        async throws -> (String, TokenRecord, Body)
    {
        try await writeInput(request, context) { Body.read(&$0) }
    }

    /// Authorizes a write and reads its body with one of a typed body's variants of `read`.
    func writeInput<Body>(
        _ request: Request, _ context: FlagsRequestContext, reading read: (inout BodyObject) -> Body?
    ) async throws -> (String, TokenRecord, Body) {
        let namespace = try parameter("namespace", context)
        let token = try await auth.authorize(request, role: .editor, namespace: namespace)
        return (namespace, token, try await request.changeBody(limit: bodyLimit, read))
    }

    /// `POST /v1/namespaces/{namespace}/flags`: `{"key", "flag", "reason"}`; 409 when the key exists.
    func createFlag(_ request: Request, context: FlagsRequestContext) async throws -> Response {
        // A whole flag's tree, read by the flag-set reader inside the change (flagctl does not send these bodies).
        let (namespace, token, (key, definition, reason)) = try await writeInput(request, context) { body in
            let key = body.string("key", required: true)
            let definition = body.value("flag", required: true)
            let reason = body.string("reason")
            body.finish()
            return key.flatMap { key in definition.map { (key, $0, reason) } }
        }
        let change = try changeRequest(request, token: token, reason: reason, summary: "create flag \(key)")
        let result = try await app.service.change(namespace, change) { flagSet in
            guard flagSet.flag(key) == nil else {
                throw APIError.conflict(
                    "namespace '\(namespace)' has a flag '\(key)' already; change it with PUT /v1/namespaces/\(namespace)/flags/\(key)"
                )
            }
            return try flagSet.replacingFlag(key, with: definition)
        }
        return committedResponse(result, status: .created) { $0.flag = flagBody(result, key) }
    }

    /// `PUT /v1/namespaces/{namespace}/flags/{key}`: `{"flag", "reason"}`; creates or replaces the definition.
    func putFlag(_ request: Request, context: FlagsRequestContext) async throws -> Response {
        let key = try parameter("key", context)
        let (namespace, token, (definition, reason)) = try await writeInput(request, context) { body in
            let definition = body.value("flag", required: true)
            let reason = body.string("reason")
            body.finish()
            return definition.map { ($0, reason) }
        }
        let change = try changeRequest(request, token: token, reason: reason, summary: "update flag \(key)")
        let result = try await app.service.change(namespace, change) { current in
            try current.replacingFlag(key, with: definition).keepingReleaseProgress(of: current)
        }
        return committedResponse(result) { $0.flag = flagBody(result, key) }
    }

    /// `DELETE /v1/namespaces/{namespace}/flags/{key}`: removes the flag and every reference to it.
    func deleteFlag(_ request: Request, context: FlagsRequestContext) async throws -> Response {
        let (namespace, token, input) = try await writeInput(request, context, as: ReasonRequest.self)
        let key = try parameter("key", context)
        let reason = input.reason ?? request.uri.queryParameters.get("reason")
        let change = try changeRequest(request, token: token, reason: reason, summary: "delete flag \(key)")
        let result = try await app.service.change(namespace, change) { try $0.deletingFlag(key) }
        return committedResponse(result)
    }

    /// `POST …/flags/{key}/enable` and `…/disable` (`SwitchStateRequest`).
    func switchState(_ request: Request, context: FlagsRequestContext, enable: Bool) async throws -> Response {
        let (namespace, token, input) = try await writeInput(request, context, as: SwitchStateRequest.self)
        let key = try parameter("key", context)
        let scope = input.scope
        let verb = enable ? "enable" : "disable"
        let scopeText = scope.flatMap { $0.isEverywhere ? nil : " in \($0)" } ?? ""
        let change = try changeRequest(
            request, token: token, reason: input.reason, summary: "\(verb) \(key)\(scopeText)")
        let result = try await app.service.change(namespace, change) { flagSet in
            enable ? try flagSet.enabling(key, scope: scope) : try flagSet.disabling(key, scope: scope)
        }
        return committedResponse(result) { $0.flag = flagBody(result, key) }
    }

    /// `POST …/flags/{key}/rollout` (`RolloutRequest`).
    func setRollout(_ request: Request, context: FlagsRequestContext) async throws -> Response {
        let (namespace, token, input) = try await writeInput(request, context, as: RolloutRequest.self)
        let key = try parameter("key", context)
        let target = input.rule.map { " rule \($0)" } ?? input.conditions.map { _ in " (targeted rule)" } ?? ""
        let change = try changeRequest(
            request, token: token, reason: input.reason, summary: "roll out \(key)\(target) to \(input.rollout)")
        let editedRule = RuleIndexBox()
        let result = try await app.service.change(namespace, change) { flagSet in
            let (changed, index) = try flagSet.settingRollout(
                key, input.rollout, rule: input.rule, conditions: input.conditions)
            editedRule.set(index)
            return changed
        }
        return committedResponse(result) { answer in
            answer.flag = flagBody(result, key)
            answer.rule = editedRule.value.map(CommittedBody.EditedRule.rule) ?? .defaultRollout
        }
    }

    /// `POST …/flags/{key}/targeting` (`TargetingRequest`).
    func target(_ request: Request, context: FlagsRequestContext) async throws -> Response {
        let (namespace, token, input) = try await writeInput(request, context, as: TargetingRequest.self)
        let key = try parameter("key", context)
        let change = try changeRequest(
            request, token: token, reason: input.reason, summary: "edit targeting of \(key)")
        let editedRule = RuleIndexBox()
        let result = try await app.service.change(namespace, change) { flagSet in
            let (changed, index) = try flagSet.targeting(
                key, rule: input.rule, add: input.add, remove: input.remove, rollout: input.rollout)
            editedRule.set(index)
            return changed
        }
        return committedResponse(result) { answer in
            answer.flag = flagBody(result, key)
            answer.rule = editedRule.value.map(CommittedBody.EditedRule.rule) ?? .defaultRollout
        }
    }

    func flagBody(_ result: CommittedChange, _ key: String) -> FlagBody? {
        result.state.flagSet.flag(key).map { FlagBody($0, in: result.state.flagSet) }
    }

    /// `GET /v1/namespaces/{namespace}/kill-switches`
    func listKillSwitches(_ request: Request, context: FlagsRequestContext) async throws -> Response {
        let (namespace, state) = try await readableState(request, context)
        let coverage = KillSwitchCoverage(state.flagSet, flags: false)
        let list = ListBody(
            items: state.flagSet.killSwitches.map { KillSwitchBody($0, in: state.flagSet, coverage: coverage) },
            namespace: (namespace, state.record.version))
        return .json(list.json, headers: etagHeaders(state.record))
    }

    /// `POST …/kill-switches/{key}/kill` and `…/revive` (`KillStateRequest`; only a revive takes `all`).
    func killState(_ request: Request, context: FlagsRequestContext, kill: Bool) async throws -> Response {
        let (namespace, token, input) = try await writeInput(request, context) {
            KillStateRequest.read(&$0, revive: !kill)
        }
        let key = try parameter("key", context)
        let (scope, all, reason) = (input.scope, input.all, input.reason)
        let scopeText =
            all
            ? " everywhere and in every scope"
            : " \(scope.map { $0.isEverywhere ? "everywhere" : "in \($0)" } ?? "everywhere")"
        let change = try changeRequest(
            request, token: token, reason: reason, summary: "\(kill ? "kill" : "revive") \(key)\(scopeText)")
        let result = try await app.service.change(namespace, change) { flagSet in
            kill
                ? try flagSet.killing(key, scope: scope ?? .everywhere)
                : try flagSet.reviving(key, scope: scope, all: all)
        }
        return committedResponse(result) { answer in
            answer.killSwitch = result.state.flagSet.killSwitch(key).map {
                KillSwitchBody($0, in: result.state.flagSet)
            }
        }
    }
}

/// Carries which rule a mutation edited out of the store's transaction.
final class RuleIndexBox: Sendable {
    private let stored = Mutex<Int?>(nil)

    func set(_ value: Int?) {
        stored.withLock { $0 = value }
    }

    var value: Int? { stored.withLock { $0 } }
}
