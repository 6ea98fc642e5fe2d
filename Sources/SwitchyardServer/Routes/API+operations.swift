import Hummingbird
import Prometheus
import SwitchyardCore
import SwitchyardStorage

extension API {
    /// `GET /healthz`: the process answers.
    func health(_ request: Request, context: FlagsRequestContext) async throws -> Response {
        .json(.object(JSONObject([("status", .string("ok"))])))
    }

    /// `GET /readyz`: the database answers and the service is not shutting down.
    func ready(_ request: Request, context: FlagsRequestContext) async throws -> Response {
        guard !service.hub.isShutDown else {
            throw APIError(.serviceUnavailable, "not-ready", "Not ready", "flagsd is shutting down")
        }
        do {
            try await store.checkHealth()
        } catch {
            throw APIError(.serviceUnavailable, "not-ready", "Not ready", "the database does not answer: \(error)")
        }
        return .json(.object(JSONObject([("status", .string("ready"))])))
    }

    /// `GET /metrics`: Prometheus text format.
    func metrics(_ request: Request, context: FlagsRequestContext, registry: PrometheusCollectorRegistry) async throws -> Response {
        if service.configuration.metricsRequireToken { _ = try await auth.authenticate(request) }
        var headers = HTTPFields()
        headers[.contentType] = "text/plain; version=0.0.4; charset=utf-8"
        return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: registry.emitToBuffer())))
    }

    /// `GET /openapi.yaml`: the OpenAPI document of this API (docs/openapi.yaml).
    func openAPI(_ request: Request, context: FlagsRequestContext) async throws -> Response {
        var headers = HTTPFields()
        headers[.contentType] = "application/yaml"
        return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(string: OpenAPIDocument.yaml)))
    }
}
