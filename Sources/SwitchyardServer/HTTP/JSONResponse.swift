import HTTPTypes
import Hummingbird
import SwitchyardCore

extension Response {
    /// A JSON response with canonical (sorted, compact) serialisation.
    static func json(_ value: JSONValue, status: HTTPResponse.Status = .ok, headers: HTTPFields = [:]) -> Response {
        var fields = headers
        fields[.contentType] = "application/json"
        return Response(
            status: status, headers: fields,
            body: ResponseBody(byteBuffer: ByteBuffer(bytes: value.serialized(.canonical))))
    }

    /// An RFC 9457 problem response.
    static func problem(_ error: APIError, instance: String, requestID: String) -> Response {
        Reply.problem(error, instance: instance, requestID: requestID).response
    }
}

/// A response whose body is already in memory, before it becomes a Hummingbird `Response` (routes) or is written
/// to a channel as HTTP parts (the snapshot fast path), so both send the same thing.
struct Reply: Sendable {
    var status: HTTPResponse.Status
    var headers: HTTPFields
    /// The body; nil for none.
    var body: ByteBuffer?

    /// The response, with `Content-Length` as Hummingbird adds it.
    var response: Response {
        Response(status: status, headers: headers, body: body.map { ResponseBody(byteBuffer: $0) } ?? ResponseBody())
    }

    /// An RFC 9457 problem reply.
    static func problem(_ error: APIError, instance: String, requestID: String) -> Reply {
        var fields = error.headers
        fields[.contentType] = "application/problem+json"
        let body = error.document(instance: instance, requestID: requestID).serialized(.canonical)
        return Reply(status: error.status, headers: fields, body: ByteBuffer(bytes: body))
    }
}

extension HTTPField.Name {
    static let requestID = HTTPField.Name("X-Request-Id")!
    static let switchyardSource = HTTPField.Name("X-Switchyard-Source")!
}
