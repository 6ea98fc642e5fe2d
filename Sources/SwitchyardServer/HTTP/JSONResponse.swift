import HTTPTypes
import Hummingbird
import SwitchyardCore

extension Response {
    /// A JSON response with canonical (sorted, compact) serialisation.
    static func json(_ value: JSONValue, status: HTTPResponse.Status = .ok, headers: HTTPFields = [:]) -> Response {
        var fields = headers
        fields[.contentType] = "application/json"
        return Response(status: status, headers: fields, body: ResponseBody(byteBuffer: ByteBuffer(bytes: value.serialized(.canonical))))
    }

    /// An RFC 9457 problem response.
    static func problem(_ error: APIError, instance: String, requestID: String) -> Response {
        var fields = error.headers
        fields[.contentType] = "application/problem+json"
        let body = error.document(instance: instance, requestID: requestID).serialized(.canonical)
        return Response(status: error.status, headers: fields, body: ResponseBody(byteBuffer: ByteBuffer(bytes: body)))
    }
}

extension HTTPField.Name {
    static let requestID = HTTPField.Name("X-Request-Id")!
    static let switchyardSource = HTTPField.Name("X-Switchyard-Source")!
}
