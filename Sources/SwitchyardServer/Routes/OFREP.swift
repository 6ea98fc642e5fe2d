import HTTPTypes
import Hummingbird
import SwitchyardCore
import SwitchyardStorage
import SwitchyardWire

/// OpenFeature Remote Evaluation Protocol (OFREP) 0.3: `POST /ofrep/v1/evaluate/flags/{key}` and
/// `POST /ofrep/v1/evaluate/flags`, for services in any language through their OpenFeature SDK
/// (docs/openfeature.md; the spec is in docs/specs/ofrep).
///
/// Every answer, errors included, has an OFREP body; none is problem+json.
extension API {
    /// `POST /ofrep/v1/evaluate/flags/{key}`: one flag for the posted context.
    ///
    /// 200 with the evaluation; 400 `PARSE_ERROR`, `INVALID_CONTEXT` or `TARGETING_KEY_MISSING`; 404
    /// `FLAG_NOT_FOUND`; 401, 403, 429 and 500 with OFREP bodies.
    func ofrepEvaluateFlag(_ request: Request, context: FlagsRequestContext) async throws -> Response {
        let key = (try? parameter("key", context)) ?? ""
        return await ofrep(key: key, context: context) {
            let (_, snapshot) = try await ofrepAccess(request)
            let evaluationContext = try OFREPContext.read(try await ofrepBody(request))
            let compiled = snapshot.compiled
            guard let handle = compiled.handle(for: key) else {
                throw OFREPError(
                    .notFound, "FLAG_NOT_FOUND",
                    "flag '\(key)' is not in namespace '\(snapshot.namespace)' (version \(snapshot.version)); check the key, or the namespace the request evaluates in (see X-Switchyard-Namespace)"
                )
            }
            switch OFREPEvaluation.evaluate(handle, with: compiled.evaluator(for: evaluationContext)) {
            case .success(var object):
                var metadata = object["metadata"]?.objectValue ?? JSONObject()
                metadata["namespace"] = .string(snapshot.namespace)
                metadata["version"] = .int64(snapshot.version)
                object["metadata"] = .object(metadata)
                var headers = HTTPFields()
                headers[.cacheControl] = "no-store"
                return .json(.object(object), headers: headers)
            case .failure(let error):
                throw error
            }
        }
    }

    /// `POST /ofrep/v1/evaluate/flags`: every flag of the namespace for the posted context, with an ETag of the
    /// result; `If-None-Match` with that tag gets 304 while the result for this context stays the same.
    func ofrepEvaluateFlags(_ request: Request, context: FlagsRequestContext) async throws -> Response {
        await ofrep(key: nil, context: context) {
            let (_, snapshot) = try await ofrepAccess(request)
            let evaluationContext = try OFREPContext.read(try await ofrepBody(request))
            let evaluator = snapshot.compiled.evaluator(for: evaluationContext)
            let document = JSONValue.object(
                JSONObject([
                    ("flags", .array(OFREPEvaluation.evaluateAll(with: evaluator))),
                    ("metadata", .object(JSONObject([("namespace", .string(snapshot.namespace))]))),
                ]))
            let body = document.serialized(.canonical)
            // The tag hashes the body itself, so it changes exactly when the result for this context does (not
            // on changes to other flags or other contexts), and two contexts with the same result share it.
            let entityTag = "\"" + SHA256.digest(body).prefix(16).map(Self.hexByte).joined() + "\""
            var headers = HTTPFields()
            headers[.eTag] = entityTag
            headers[.cacheControl] = "private, no-cache"
            if OFREPEntityTags(request.headers[.ifNoneMatch]).matches(entityTag) {
                return Response(status: .notModified, headers: headers)
            }
            headers[.contentType] = "application/json"
            return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: body)))
        }
    }

    private static func hexByte(_ byte: UInt8) -> String {
        let digits = Array("0123456789abcdef")
        return String([digits[Int(byte >> 4)], digits[Int(byte & 0x0F)]])
    }

    /// The request body as JSON; malformed JSON is `PARSE_ERROR`.
    private func ofrepBody(_ request: Request) async throws -> JSONValue {
        do {
            return try await request.jsonBody(limit: bodyLimit)
        } catch let error as APIError where error.status == .badRequest {
            throw OFREPError.parse(error.detail)
        }
    }

    /// Checks the token (`Authorization: Bearer` or `X-API-Key`) and its request rate, and picks the namespace
    /// (PRODUCT.md "Access"): the token's when it is limited to one, else `X-Switchyard-Namespace`, else the
    /// server's default.
    ///
    /// - Throws: `OFREPError` 401 (no, unknown or revoked token), 429 with `Retry-After` (over the token's rate),
    ///   403 (a namespace the token may not use), 400 `GENERAL` (no namespace named, or it does not exist).
    func ofrepAccess(_ request: Request) async throws -> (token: TokenRecord, snapshot: PublishedSnapshot) {
        let token: TokenRecord
        if let bearer = Authenticator.bearerToken(request) {
            token = try await auth.authenticate(secret: bearer, presentedAs: "bearer token")
        } else if let key = request.headers[.apiKey]?.trimmingSpaces, !key.isEmpty {
            token = try await auth.authenticate(secret: key, presentedAs: "X-API-Key")
        } else {
            auth.fail("missing")
            throw APIError.unauthorized(
                "OFREP needs a token: send 'Authorization: Bearer <token>' or 'X-API-Key: <token>' (an admin creates client tokens with flagctl tokens create NAME --role client --allow NAMESPACE)"
            )
        }
        guard token.role >= .client else {
            auth.fail("role")
            throw OFREPError.general(
                .forbidden,
                "token '\(token.name)' has the \(token.role) role, which only reads /metrics; evaluating flags needs a client token (or higher)"
            )
        }

        if let rate = token.ratePerMinute ?? app.configuration.ofrepRatePerMinute,
            case .limited(let seconds) = app.rateLimiter.spend(token.id, ratePerMinute: rate)
        {
            var error = OFREPError.general(
                .tooManyRequests,
                "token '\(token.name)' may send \(rate) OFREP requests per minute and has used them; retry after \(seconds) s (Retry-After), or ask an admin for a higher rate"
            )
            error.headers[.retryAfter] = String(seconds)
            throw error
        }

        let header = request.headers[.switchyardNamespace]?.trimmingSpaces.nonEmpty
        let namespace: String
        if let only = token.namespaces, only.count == 1 {
            if let header, header != only[0] {
                throw OFREPError.general(
                    .forbidden,
                    "token '\(token.name)' is limited to namespace '\(only[0])'; it may not evaluate in '\(header)' (X-Switchyard-Namespace); leave the header out or use a token for '\(header)'"
                )
            }
            namespace = only[0]
        } else if let header {
            namespace = header
        } else if let fallback = app.configuration.defaultNamespace {
            namespace = fallback
        } else {
            throw OFREPError.general(
                .badRequest,
                "no namespace to evaluate in: send the X-Switchyard-Namespace header, use a token limited to one namespace, or start flagsd with --default-namespace"
            )
        }
        guard token.allows(namespace: namespace) else {
            auth.fail("namespace")
            let allowed = token.namespaces?.joined(separator: ", ") ?? ""
            throw OFREPError.general(
                .forbidden, "token '\(token.name)' may not use namespace '\(namespace)' (it is limited to \(allowed))")
        }
        guard let snapshot = app.hub.snapshot(of: namespace) else {
            let source =
                header != nil
                ? "named by X-Switchyard-Namespace"
                : (token.namespaces?.count == 1 ? "the token's namespace" : "flagsd's --default-namespace")
            throw OFREPError.general(
                .badRequest,
                "namespace '\(namespace)' (\(source)) does not exist; check the name (an editor lists namespaces with flagctl namespaces list)"
            )
        }
        return (token, snapshot)
    }
}

/// The entity tags of an `If-None-Match` header, compared weakly (`W/` ignored); `*` matches any.
struct OFREPEntityTags {
    private var any = false
    private var tags: [Substring] = []

    init(_ header: String?) {
        for part in (header ?? "").split(separator: ",") {
            var tag = part.drop { $0 == " " }
            while tag.last == " " { tag = tag.dropLast() }
            if tag == "*" { any = true }
            if tag.hasPrefix("W/") { tag = tag.dropFirst(2) }
            if tag.count >= 2, tag.first == "\"", tag.last == "\"" { tag = tag.dropFirst().dropLast() }
            if !tag.isEmpty { tags.append(tag) }
        }
    }

    /// Whether a strong tag (`"…"`) matches.
    func matches(_ entityTag: String) -> Bool {
        let opaque = entityTag.dropFirst().dropLast()
        return any || tags.contains { $0 == opaque }
    }
}

extension HTTPField.Name {
    static let apiKey = HTTPField.Name("X-API-Key")!
    static let switchyardNamespace = HTTPField.Name("X-Switchyard-Namespace")!
}

extension String {
    var trimmingSpaces: String {
        var text = Substring(self).drop { $0 == " " || $0 == "\t" }
        while text.last == " " || text.last == "\t" { text = text.dropLast() }
        return String(text)
    }

    var nonEmpty: String? { isEmpty ? nil : self }
}
