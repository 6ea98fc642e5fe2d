import Foundation
import Hummingbird
import SwitchyardCore
import SwitchyardStorage
import SwitchyardWire

/// The handlers of every route. Each checks access first (PRODUCT.md "Access"), then reads its input,
/// reporting every problem with its field path.
struct API: Sendable {
    let app: AppContext
    /// The crash guard, for its status and trips (nil in an API that serves no guard route).
    let guardService: CrashGuard?
    /// The release plans' runner, for their status (nil in an API that serves no release route).
    let releasePlans: ReleasePlanRunner?

    init(app: AppContext, crashGuard: CrashGuard? = nil, releasePlans: ReleasePlanRunner? = nil) {
        self.app = app
        self.guardService = crashGuard
        self.releasePlans = releasePlans
    }

    var auth: Authenticator { app.auth }
    /// For reads and tokens. Flag and namespace changes go through `app.service` (`FlagService.change` and its
    /// siblings), which delivers them.
    var store: any FlagStore { app.store }
    var bodyLimit: Int { app.configuration.maximumBodySize }

    /// A path parameter, percent-decoded.
    func parameter(_ name: String, _ context: FlagsRequestContext) throws -> String {
        guard let raw = context.parameters.get(name) else {
            throw APIError.badRequest("the path is missing its \(name)")
        }
        guard raw.utf8.contains(UInt8(ascii: "%")) else { return raw }
        return raw.removingPercentEncoding ?? raw
    }

    /// The change request of a write: who (the token), through what (`X-Switchyard-Source`), why, and the
    /// version it is based on (`If-Match`).
    func changeRequest(_ request: Request, token: TokenRecord, reason: String?, summary: String? = nil) throws
        -> ChangeRequest
    {
        var source = ChangeSource.api
        if let header = request.headers[.switchyardSource] {
            let named = ChangeSource(rawValue: header.lowercased())
            guard ChangeSource.requestable.contains(named) else {
                let allowed = ChangeSource.requestable.map(\.rawValue).joined(separator: ", ")
                throw APIError.badRequest(
                    "X-Switchyard-Source '\(header)' is not one of \(allowed)", path: "X-Switchyard-Source")
            }
            source = named
        }
        var basedOn: SnapshotVersion?
        if let header = request.headers[.ifMatch], header.trimmingCharacters(in: .whitespaces) != "*" {
            guard let tag = SnapshotVersion(entityTag: header) else {
                throw APIError.badRequest(
                    "If-Match '\(header)' is not an entity tag of this API (\"<epoch>.<version>\", as sent in ETag)",
                    path: "If-Match")
            }
            basedOn = tag
        }
        return ChangeRequest(
            author: ChangeAuthor(actor: token.name, source: source, reason: reason), basedOn: basedOn, summary: summary)
    }

    /// An integer query parameter.
    func queryInteger(_ request: Request, _ name: String, default value: Int64? = nil, in range: ClosedRange<Int64>)
        throws -> Int64?
    {
        guard let text = request.uri.queryParameters.get(name) else { return value }
        guard let integer = Int64(text) else {
            throw APIError.badRequest(
                "query parameter \(name)='\(text)' is not an integer", path: FieldPath([.key(name)]))
        }
        guard range.contains(integer) else {
            throw APIError.badRequest(
                "query parameter \(name)=\(integer) is not between \(range.lowerBound) and \(range.upperBound)",
                path: FieldPath([.key(name)]))
        }
        return integer
    }

    /// `wait`: whole seconds, clamped to the server's cap; negative or non-numeric is a 400.
    func waitSeconds(_ request: Request) throws -> Int? {
        guard let text = request.uri.queryParameters.get("wait") else { return nil }
        guard let seconds = Int(text), seconds >= 0 else {
            throw APIError.badRequest(
                "query parameter wait='\(text)' must be a whole number of seconds, 0 or more (the server caps it at \(app.configuration.maximumWait))",
                path: "wait")
        }
        return min(seconds, app.configuration.maximumWait)
    }

    /// A response to a write, with the new version as ETag.
    ///
    /// - Parameter answer: adds what the route changed to the answer (`View.committed`).
    func committedResponse(
        _ result: CommittedChange, status: HTTPResponse.Status = .ok, _ answer: (inout CommittedBody) -> Void = { _ in }
    ) -> Response {
        var body = View.committed(result)
        answer(&body)
        var headers = HTTPFields()
        headers[.eTag] = body.version.entityTag
        return .json(body.json, status: status, headers: headers)
    }
}
