import Foundation
import Hummingbird
import SwitchyardCore
import SwitchyardStorage
import SwitchyardWire

extension API {
    /// `GET /v1/namespaces`: the namespaces the token may use.
    func listNamespaces(_ request: Request, context: FlagsRequestContext) async throws -> Response {
        let token = try await auth.authorize(request, role: .editor)
        let records = try await store.namespaces().filter { token.allows(namespace: $0.name) }
        return .json(ListBody(items: records.map { View.namespaceBody($0) }).json)
    }

    /// `GET /v1/namespaces/{namespace}`
    func getNamespace(_ request: Request, context: FlagsRequestContext) async throws -> Response {
        let (_, state) = try await readableState(request, context)
        return .json(View.namespace(state.record, flagSet: state.flagSet), headers: etagHeaders(state.record))
    }

    /// `POST /v1/namespaces` (`NamespaceCreateRequest`).
    func createNamespace(_ request: Request, context: FlagsRequestContext) async throws -> Response {
        let token = try await auth.authorize(request, role: .admin)
        let input = try await request.changeBody(limit: bodyLimit) {
            NamespaceCreateRequest.read(&$0, readingFlagSetOf: token.allows(namespace:))
        }
        let name = input.name
        guard token.allows(namespace: name) else {
            throw APIError.forbidden(
                "token '\(token.name)' may not create namespace '\(name)' (it is limited to \(token.namespaces?.joined(separator: ", ") ?? ""))"
            )
        }
        // The name was checked as a flag set checks it (`NamespaceCreateRequest.read`).
        var flagSet = input.flagSet ?? FlagSet(namespace: name)
        if let description = input.description { flagSet.description = description }
        let change = try changeRequest(request, token: token, reason: input.reason)
        let result = try await app.service.createNamespace(
            flagSet, reasonPolicy: input.reasonPolicy ?? .kills, request: change)
        var headers = etagHeaders(result.state.record)
        headers[.location] = "/v1/namespaces/\(name)"
        return .json(
            View.namespace(result.state.record, flagSet: result.state.flagSet), status: .created, headers: headers)
    }

    /// `PATCH /v1/namespaces/{namespace}` (`ReasonPolicyRequest`).
    func updateNamespace(_ request: Request, context: FlagsRequestContext) async throws -> Response {
        let namespace = try parameter("namespace", context)
        let token = try await auth.authorize(request, role: .admin, namespace: namespace)
        let input = try await request.changeBody(limit: bodyLimit) { ReasonPolicyRequest.read(&$0) }
        let author = try changeRequest(request, token: token, reason: input.reason).author
        let record = try await app.service.setReasonPolicy(input.reasonPolicy, of: namespace, by: author)
        return .json(View.namespace(record), headers: etagHeaders(record))
    }

    /// `DELETE /v1/namespaces/{namespace}`: waiters get 404 at once.
    func deleteNamespace(_ request: Request, context: FlagsRequestContext) async throws -> Response {
        let namespace = try parameter("namespace", context)
        let token = try await auth.authorize(request, role: .admin, namespace: namespace)
        let reason = request.uri.queryParameters.get("reason")
        let author = try changeRequest(request, token: token, reason: reason).author
        try await app.service.deleteNamespace(namespace, by: author)
        return Response(status: .noContent)
    }

    /// `GET /v1/namespaces/{namespace}/flag-set`: the whole flag set document, rollouts in basis points.
    func getFlagSet(_ request: Request, context: FlagsRequestContext) async throws -> Response {
        let (_, state) = try await readableState(request, context)
        return .json(View.flagSet(state), headers: etagHeaders(state.record))
    }

    /// `PUT /v1/namespaces/{namespace}/flag-set`: `{"flag_set", "reason"?}` replaces every definition in one change.
    /// A release plan declared as it is now (without its state, as in a flag file) keeps its progress and the
    /// targeting it set.
    func putFlagSet(_ request: Request, context: FlagsRequestContext) async throws -> Response {
        let namespace = try parameter("namespace", context)
        let (_, token, input) = try await writeInput(request, context) {
            FlagSetRequest.read(&$0, namespace: namespace)
        }
        let flagSet = input.flagSet
        let change = try changeRequest(request, token: token, reason: input.reason)
        let result = try await app.service.change(namespace, change) { current in
            flagSet.keepingReleaseProgress(of: current)
        }
        return committedResponse(result)
    }

    /// `POST /v1/namespaces/{namespace}/changes/{version}/revert`: `{"reason"?}`.
    func revert(_ request: Request, context: FlagsRequestContext) async throws -> Response {
        let (namespace, token, input) = try await writeInput(request, context, as: ReasonRequest.self)
        let version = try versionParameter(context)
        let change = try changeRequest(request, token: token, reason: input.reason)
        let result = try await app.service.revert(namespace, version: version, request: change)
        return committedResponse(result)
    }

    /// `GET /v1/audit?namespace=&flag=&actor=&source=&since=&until=&limit=&cursor=`
    func audit(_ request: Request, context: FlagsRequestContext) async throws -> Response {
        let token = try await auth.authorize(request, role: .editor)
        let query = request.uri.queryParameters
        var audit = AuditQuery(limit: Int(try queryInteger(request, "limit", default: 50, in: 1...1000)!))
        audit.before = try queryInteger(request, "cursor", in: 1...Int64.max)
        audit.namespace = query.get("namespace")
        if let namespace = audit.namespace, !token.allows(namespace: namespace) {
            throw APIError.forbidden("token '\(token.name)' may not read namespace '\(namespace)'")
        }
        audit.visibleNamespaces = token.namespaces
        audit.target = query.get("flag")
        audit.actor = query.get("actor")
        if let text = query.get("source") {
            let source = ChangeSource(rawValue: text)
            guard ChangeSource.all.contains(source) else {
                throw APIError.badRequest(
                    "source '\(text)' is not one of \(ChangeSource.all.map(\.rawValue).joined(separator: ", "))",
                    path: "source")
            }
            audit.source = source
        }
        for (name, keyPath) in [("since", \AuditQuery.since), ("until", \AuditQuery.until)] {
            guard let text = query.get(name) else { continue }
            guard let date = Date(iso8601: text) else {
                throw APIError.badRequest(
                    "\(name) '\(text)' is not an RFC 3339 time (e.g. 2026-11-22T10:00:00Z)",
                    path: FieldPath([.key(name)]))
            }
            audit[keyPath: keyPath] = date
        }
        let page = try await store.audit(audit)
        return .json(AuditPageBody(entries: page.entries.map(View.auditBody), nextCursor: page.nextCursor).json)
    }

    /// Token routes need an admin token that is not limited to namespaces (it could otherwise widen itself).
    func authorizeTokenAdmin(_ request: Request) async throws -> TokenRecord {
        let token = try await auth.authorize(request, role: .admin)
        guard token.namespaces == nil else {
            throw APIError.forbidden(
                "token '\(token.name)' is limited to namespaces; managing tokens needs an admin token for every namespace"
            )
        }
        return token
    }

    /// `GET /v1/tokens`
    func listTokens(_ request: Request, context: FlagsRequestContext) async throws -> Response {
        _ = try await authorizeTokenAdmin(request)
        let tokens = try await store.tokens()
        return .json(ListBody(items: tokens.map { $0.record.body() }).json)
    }

    /// `POST /v1/tokens` (`TokenCreateRequest`); the secret is in the response, once.
    func createToken(_ request: Request, context: FlagsRequestContext) async throws -> Response {
        let token = try await authorizeTokenAdmin(request)
        let input = try await request.changeBody(limit: bodyLimit) { TokenCreateRequest.read(&$0) }
        let author = try changeRequest(request, token: token, reason: nil).author
        let (record, secret) = try await store.issueToken(
            name: input.name, role: input.role, namespaces: input.namespaces, ratePerMinute: input.ratePerMinute,
            by: author)
        try await auth.reload()
        return .json(record.body(secret: secret).json, status: .created)
    }

    /// `DELETE /v1/tokens/{token}`: by id or live name.
    func revokeToken(_ request: Request, context: FlagsRequestContext) async throws -> Response {
        let token = try await authorizeTokenAdmin(request)
        let idOrName = try parameter("token", context)
        let author = try changeRequest(request, token: token, reason: request.uri.queryParameters.get("reason")).author
        let record = try await store.revokeToken(idOrName, by: author)
        try await auth.reload()
        return .json(record.tree)
    }
}
