import Foundation
package import Hummingbird
package import SwitchyardCore
package import SwitchyardStorage
package import SwitchyardWire

/// An error a handler answers with: an HTTP status and an RFC 9457 problem document.
///
/// `ProblemMiddleware` turns it (and `StorageError`, and anything unexpected) into the response, in one place.
package struct APIError: Error, Sendable {
    package var status: HTTPResponse.Status
    /// The last part of the problem type URI (`urn:switchyard:problem:<slug>`).
    package var slug: String
    package var title: String
    /// What failed, with which input, and what to do next.
    package var detail: String
    /// For 400s: every field at fault.
    package var problems: [ValidationProblem] = []
    /// Where the namespace is, for a version conflict.
    package var conflict: ProblemBody.Conflict?
    package var headers = HTTPFields()

    package init(
        _ status: HTTPResponse.Status, _ slug: String, _ title: String, _ detail: String,
        problems: [ValidationProblem] = []
    ) {
        self.status = status
        self.slug = slug
        self.title = title
        self.detail = detail
        self.problems = problems
    }

    package static func badRequest(_ detail: String, path: FieldPath? = nil) -> APIError {
        APIError(
            .badRequest, "invalid-request", "The request is invalid", detail,
            problems: path.map { [ValidationProblem(path: $0, message: detail)] } ?? [])
    }

    package static func invalid(_ detail: String, problems: [ValidationProblem]) -> APIError {
        APIError(.badRequest, "invalid-request", "The request is invalid", detail, problems: problems)
    }

    package static func notFound(_ detail: String) -> APIError {
        APIError(.notFound, "not-found", "Not found", detail)
    }

    package static func unauthorized(_ detail: String) -> APIError {
        var error = APIError(.unauthorized, "unauthorized", "Authentication required", detail)
        error.headers[.wwwAuthenticate] = "Bearer realm=\"flagsd\""
        return error
    }

    package static func forbidden(_ detail: String) -> APIError {
        APIError(.forbidden, "forbidden", "Not allowed", detail)
    }

    package static func conflict(_ detail: String) -> APIError {
        APIError(.conflict, "conflict", "Conflict", detail)
    }

    package static func overloaded(retryAfter seconds: Int, _ detail: String) -> APIError {
        var error = APIError(.serviceUnavailable, "overloaded", "Too many waiting requests", detail)
        error.headers[.retryAfter] = String(seconds)
        return error
    }

    /// 429: a budget (a rate, a backlog) is spent; retry after `seconds`.
    package static func tooManyRequests(retryAfter seconds: Int, _ title: String, _ detail: String) -> APIError {
        var error = APIError(.tooManyRequests, "too-many-requests", title, detail)
        error.headers[.retryAfter] = String(max(1, seconds))
        return error
    }

    package static func methodNotAllowed(_ method: HTTPRequest.Method, path: String, allowed: [HTTPRequest.Method])
        -> APIError
    {
        let list = allowed.map(\.rawValue).joined(separator: ", ")
        var error = APIError(
            .methodNotAllowed, "method-not-allowed", "Method not allowed",
            "\(method.rawValue) is not allowed on \(path); use \(list)")
        error.headers[.allow] = list
        return error
    }

    /// The HTTP form of a storage error.
    package init(_ error: StorageError) {
        switch error.kind {
        case .notFound:
            self.init(.notFound, "not-found", "Not found", error.message)
        case .alreadyExists:
            self.init(.conflict, "already-exists", "Already exists", error.message)
        case .conflict:
            self.init(.conflict, "version-conflict", "The namespace changed since your view", error.message)
            if let conflict = error.conflict {
                self.conflict = ProblemBody.Conflict(
                    currentVersion: conflict.currentVersion,
                    currentEntityTag: SnapshotVersion(epoch: conflict.currentEpoch, version: conflict.currentVersion)
                        .entityTag,
                    changedBy: conflict.changedBy, changedAt: conflict.changedAt?.iso8601)
            }
        case .invalid:
            self.init(
                .badRequest, "invalid-flag-set", "The change would leave an invalid flag set", error.message,
                problems: error.problems)
        case .reasonRequired:
            self.init(
                .badRequest, "reason-required", "A reason is required", error.message,
                problems: [ValidationProblem(path: "reason", message: "is required by this namespace's reason policy")])
        case .unavailable:
            self.init(.serviceUnavailable, "storage-unavailable", "Storage unavailable", error.message)
            headers[.retryAfter] = "1"
        case .lastAdminToken:
            self.init(.conflict, "last-admin-token", "The last admin token", error.message)
        default:
            self.init(.internalServerError, "internal", "Internal error", error.message)
        }
    }

    /// An edit of a flag set that cannot be made as asked: 404 for a flag or kill switch that does not exist, 400
    /// naming the fields at fault otherwise.
    package init(_ error: FlagEditError) {
        switch error.kind {
        case .notFound: self = .notFound(error.message)
        case .invalid: self = .invalid(error.message, problems: error.problems)
        case .conflict: self = .conflict(error.message)
        }
    }

    /// The problem document.
    package func document(instance: String, requestID: String) -> JSONValue {
        ProblemBody(
            slug: slug, title: title, status: status.code, detail: detail, instance: instance,
            requestID: requestID.isEmpty ? nil : requestID,
            errors: problems.map { ProblemBody.FieldProblem(path: $0.path.description, message: $0.message) },
            conflict: conflict
        ).json
    }
}
