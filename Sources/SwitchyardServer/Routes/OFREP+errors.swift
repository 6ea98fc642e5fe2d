import HTTPTypes
import Hummingbird
import Logging
import SwitchyardCore
import SwitchyardStorage

/// An OFREP error answer: a status and OFREP's own body, `{"key", "errorCode", "errorDetails"}` (the key on the
/// single-flag route only), never problem+json: OpenFeature providers read these fields.
struct OFREPError: Error, Sendable {
    var status: HTTPResponse.Status
    /// An OpenFeature error code: `FLAG_NOT_FOUND`, `PARSE_ERROR`, `INVALID_CONTEXT`, `TARGETING_KEY_MISSING`
    /// or `GENERAL`.
    var errorCode: String
    /// What failed, with which input, and what to do next.
    var errorDetails: String
    var headers = HTTPFields()

    init(_ status: HTTPResponse.Status, _ errorCode: String, _ errorDetails: String) {
        self.status = status
        self.errorCode = errorCode
        self.errorDetails = errorDetails
    }

    static func parse(_ details: String) -> OFREPError {
        OFREPError(.badRequest, "PARSE_ERROR", details)
    }

    static func invalidContext(_ details: String) -> OFREPError {
        OFREPError(.badRequest, "INVALID_CONTEXT", details)
    }

    static func general(_ status: HTTPResponse.Status, _ details: String) -> OFREPError {
        OFREPError(status, "GENERAL", details)
    }

    /// The OFREP form of an API error (401 and 403 from token checks, 413 from the body limit, 405).
    init(_ error: APIError) {
        self.init(error.status, "GENERAL", error.detail)
        headers = error.headers
    }

    /// The response, with the flag key when the request named one.
    func response(key: String?) -> Response {
        var object = JSONObject()
        if let key { object["key"] = .string(key) }
        object["errorCode"] = .string(errorCode)
        object["errorDetails"] = .string(errorDetails)
        var fields = headers
        fields[.cacheControl] = "no-store"
        return .json(.object(object), status: status, headers: fields)
    }
}

extension API {
    /// Runs an OFREP handler and answers every error it throws with an OFREP body, so no error reaches the
    /// problem+json middleware: token checks (401, 403), rate limits (429), bad input (400), unknown flags (404),
    /// and anything unexpected (500, logged once with the request id).
    func ofrep(key: String?, context: FlagsRequestContext, _ body: () async throws -> Response) async -> Response {
        do {
            return try await body()
        } catch {
            return ofrepError(error, context: context).response(key: key)
        }
    }

    func ofrepError(_ error: any Error, context: FlagsRequestContext) -> OFREPError {
        switch error {
        case let error as OFREPError:
            return error
        case let error as APIError where error.status.code < 500:
            return OFREPError(error)
        case let error as StorageError:
            context.logger.error("storage error during an OFREP evaluation", metadata: ["error": "\(error)"])
            return .general(
                .internalServerError,
                "the flag store failed while checking the request (\(error.message)); retry later, and tell the operator the request id \(context.requestID)"
            )
        default:
            context.logger.error(
                "unexpected error during an OFREP evaluation", metadata: ["error": "\(String(reflecting: error))"])
            return .general(
                .internalServerError,
                "an unexpected error occurred; it was logged with request id \(context.requestID)")
        }
    }
}
