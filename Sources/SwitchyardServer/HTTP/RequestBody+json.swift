import Hummingbird
import SwitchyardCore
import SwitchyardStorage
import SwitchyardWire

extension Request {
    /// Reads the body as a JSON tree, refusing more than `limit` bytes; an empty body reads as `{}`.
    ///
    /// - Throws: `APIError` 413 past the limit, 400 naming the line and column of malformed JSON.
    func jsonBody(limit: Int) async throws -> JSONValue {
        if let length = headers[.contentLength].flatMap(Int.init), length > limit {
            throw APIError.tooLarge(limit: limit)
        }
        var bytes: [UInt8] = []
        for try await chunk in body {
            guard bytes.count + chunk.readableBytes <= limit else { throw APIError.tooLarge(limit: limit) }
            bytes.append(contentsOf: chunk.readableBytesView)
        }
        if bytes.allSatisfy({ $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }) { return .object(JSONObject()) }
        do {
            return try JSONValue.parse(bytes)
        } catch {
            throw APIError.badRequest("the body is not valid JSON: \(error)", path: .root)
        }
    }
}

extension Request {
    /// Reads a typed request body (`ChangeRequestBody.read` or one of its variants).
    ///
    /// - Throws: `APIError` 400 naming every problem of the body, besides `jsonBody`'s.
    func changeBody<Body>(limit: Int, _ read: (inout BodyObject) -> Body?) async throws -> Body {
        let problems = BodyProblems()
        guard var object = BodyObject(try await jsonBody(limit: limit), problems: problems) else {
            try problems.check()
            throw APIError.badRequest("the body must be a JSON object")
        }
        let body = read(&object)
        try problems.check()
        guard let body else { throw APIError.badRequest("the body is not a valid request") }
        return body
    }
}

extension APIError {
    static func tooLarge(limit: Int) -> APIError {
        APIError(
            .contentTooLarge, "body-too-large", "The body is too large",
            "the request body is larger than \(limit) bytes, the limit of this server (--max-body-size)")
    }
}

extension BodyProblems {
    /// Throws a 400 naming every problem, when there is any.
    func check() throws(APIError) {
        guard !problems.isEmpty else { return }
        let first = problems[0].description
        let detail = problems.count == 1 ? first : "\(first) (and \(problems.count - 1) more problems)"
        throw APIError.invalid(detail, problems: problems)
    }
}
