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

    /// `POST /v1/namespaces`: `{"name", "description"?, "reason_policy"?, "flag_set"?, "reason"?}`.
    func createNamespace(_ request: Request, context: FlagsRequestContext) async throws -> Response {
        let token = try await auth.authorize(request, role: .admin)
        let problems = BodyProblems()
        guard var body = BodyObject(try await request.jsonBody(limit: bodyLimit), problems: problems) else {
            try problems.check()
            throw APIError.badRequest("the body must be a JSON object")
        }
        let name = body.string("name", required: true)
        let description = body.string("description")
        let policy = reasonPolicy(&body)
        let flagSetTree = body.value("flag_set")
        let reason = API.reason(&body)
        body.finish()
        try problems.check()
        guard let name else { throw APIError.badRequest("name is required", path: "name") }
        let named = FlagSet(namespace: name, description: description).validate()
        if let problem = named.first(where: { $0.path == "namespace" }) {
            throw APIError.badRequest("name: \(problem.message)", path: "name")
        }
        if let problem = named.first(where: { $0.path == "description" }) {
            throw APIError.badRequest("description: \(problem.message)", path: "description")
        }
        guard token.allows(namespace: name) else {
            throw APIError.forbidden(
                "token '\(token.name)' may not create namespace '\(name)' (it is limited to \(token.namespaces?.joined(separator: ", ") ?? ""))"
            )
        }
        var flagSet = try readFlagSet(flagSetTree ?? .object(JSONObject()), namespace: name, at: "flag_set")
        if let description { flagSet.description = description }
        let change = try changeRequest(request, token: token, reason: reason)
        let result = try await app.service.createNamespace(flagSet, reasonPolicy: policy ?? .kills, request: change)
        var headers = etagHeaders(result.state.record)
        headers[.location] = "/v1/namespaces/\(name)"
        return .json(
            View.namespace(result.state.record, flagSet: result.state.flagSet), status: .created, headers: headers)
    }

    func reasonPolicy(_ body: inout BodyObject) -> ReasonPolicy? {
        guard let text = body.string("reason_policy") else { return nil }
        guard let policy = ReasonPolicy(rawValue: text) else {
            body.problems.report("reason_policy", "'\(text)' is not a reason policy (always, kills or never)")
            return nil
        }
        return policy
    }

    /// Reads a flag set document with rollouts in basis points; `namespace` may be left out.
    func readFlagSet(_ tree: JSONValue, namespace: String, at path: FieldPath) throws -> FlagSet {
        guard case .object(var object) = tree else {
            throw APIError.badRequest("\(path) must be an object, not \(tree.typeDescription)", path: path)
        }
        if let named = object["namespace"], named != .string(namespace) {
            throw APIError.badRequest(
                "\(path).namespace must be '\(namespace)' (or left out), not \(named.serializedString())",
                path: path / "namespace")
        }
        object["namespace"] = .string(namespace)
        do {
            return try FlagSet(tree: .object(object), unit: .basisPoints)
        } catch {
            let problems = error.problems.map { problem in
                var problem = problem
                problem.path = FieldPath(path.components + problem.path.components)
                return problem
            }
            throw APIError.invalid(
                "the flag set is not valid: \(problems.first?.description ?? "")", problems: problems)
        }
    }

    /// `PATCH /v1/namespaces/{namespace}`: `{"reason_policy"}`.
    func updateNamespace(_ request: Request, context: FlagsRequestContext) async throws -> Response {
        let namespace = try parameter("namespace", context)
        let token = try await auth.authorize(request, role: .admin, namespace: namespace)
        let problems = BodyProblems()
        guard var body = BodyObject(try await request.jsonBody(limit: bodyLimit), problems: problems) else {
            try problems.check()
            throw APIError.badRequest("the body must be a JSON object")
        }
        let policy = reasonPolicy(&body)
        let reason = API.reason(&body)
        body.finish()
        if policy == nil, problems.problems.isEmpty { problems.report("reason_policy", "is required") }
        try problems.check()
        let author = try changeRequest(request, token: token, reason: reason).author
        let record = try await app.service.setReasonPolicy(policy!, of: namespace, by: author)
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
        let (namespace, token, input, problems) = try await writeInput(request, context)
        var body = input
        let tree = body.value("flag_set", required: true)
        let reason = API.reason(&body)
        body.finish()
        try problems.check()
        let flagSet = try readFlagSet(tree!, namespace: namespace, at: "flag_set")
        let change = try changeRequest(request, token: token, reason: reason)
        let result = try await app.service.change(namespace, change) { current in
            flagSet.keepingReleaseProgress(of: current)
        }
        return committedResponse(result)
    }

    /// `POST /v1/namespaces/{namespace}/changes/{version}/revert`: `{"reason"?}`.
    func revert(_ request: Request, context: FlagsRequestContext) async throws -> Response {
        let (namespace, token, input, problems) = try await writeInput(request, context)
        var body = input
        let version = try versionParameter(context)
        let reason = API.reason(&body)
        body.finish()
        try problems.check()
        let change = try changeRequest(request, token: token, reason: reason)
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

    /// `POST /v1/tokens`: `{"name", "role", "namespaces"?, "rate_per_minute"?}`; the secret is in the response, once.
    func createToken(_ request: Request, context: FlagsRequestContext) async throws -> Response {
        let token = try await authorizeTokenAdmin(request)
        let problems = BodyProblems()
        guard var body = BodyObject(try await request.jsonBody(limit: bodyLimit), problems: problems) else {
            try problems.check()
            throw APIError.badRequest("the body must be a JSON object")
        }
        let name = body.string("name", required: true)
        if let name, name.isEmpty || name.count > 64 || name.contains(where: { $0.isNewline || $0 == "\t" }) {
            problems.report("name", "must be 1 to 64 characters on one line")
        }
        let roleText = body.string("role", required: true)
        let role = roleText.flatMap(Role.init(rawValue:))
        if let roleText, role == nil {
            problems.report("role", "'\(roleText)' is not a role (client, reporter, editor, admin or metrics)")
        }
        let namespaces = body.stringList("namespaces")
        if let namespaces, namespaces.isEmpty {
            problems.report("namespaces", "must list at least one namespace (leave it out for every namespace)")
        }
        // Client tokens ship inside apps, so anyone may extract one: each is limited to the namespaces it serves.
        if role == .client, namespaces == nil,
            !problems.problems.contains(where: { $0.path.description == "namespaces" })
        {
            problems.report(
                "namespaces",
                "is required for a client token: client tokens ship inside apps, where anyone can read them, so each is limited to the namespaces its app uses, e.g. \"namespaces\": [\"rider\"] (flagctl tokens create \(name ?? "NAME") --role client --allow rider)"
            )
        }
        if role == .metrics, namespaces != nil {
            problems.report("namespaces", "must be left out for a metrics token: /metrics covers every namespace")
        }
        let rate = body.integer("rate_per_minute", in: 1...1_000_000)
        body.finish()
        try problems.check()
        guard let name, let role else { throw APIError.badRequest("name and role are required") }
        let author = try changeRequest(request, token: token, reason: nil).author
        let (record, secret) = try await store.issueToken(
            name: name, role: role, namespaces: namespaces,
            ratePerMinute: rate.map { Int($0) }, by: author)
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
