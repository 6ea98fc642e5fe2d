import Hummingbird
import Logging
import Prometheus
import SwitchyardConsole
import SwitchyardCore
import SwitchyardStorage
import SwitchyardWire

extension API {
    /// `GET /healthz`: the process answers.
    func health(_ request: Request, context: FlagsRequestContext) async throws -> Response {
        .json(HealthBody(status: "ok").json)
    }

    /// `GET /readyz`: 200 `ready` when the database answers; 200 `degraded` when it does not but the snapshots
    /// held are served (a load balancer keeps routing reads; writes get 503); 503 while shutting down.
    func ready(_ request: Request, context: FlagsRequestContext) async throws -> Response {
        guard !app.hub.isShutDown else {
            throw APIError(.serviceUnavailable, "not-ready", "Not ready", "flagsd is shutting down")
        }
        do {
            try await store.checkHealth()
        } catch {
            // The route is open: the database's identity and own text go to the log only.
            context.logger.debug("readiness: the database does not answer", metadata: ["error": "\(error)"])
            let detail = (error as? StorageError)?.message ?? "the check failed; flagsd's log has the details"
            return .json(
                HealthBody(
                    status: "degraded", database: "unavailable", namespaces: app.hub.positions().count,
                    detail:
                        "the database does not answer, so changes fail with 503; snapshots held are served, and long-polls wait for the next change: \(detail)"
                ).json)
        }
        return .json(HealthBody(status: "ready", database: "ok").json)
    }

    /// `GET /metrics`: Prometheus text format: the registry's series, then the crash guard's per switch
    /// (`GuardSeries`).
    func metrics(_ request: Request, context: FlagsRequestContext, registry: PrometheusCollectorRegistry) async throws
        -> Response
    {
        if !app.configuration.openMetrics {
            let token = try await auth.authenticate(request)
            // Client tokens are public (they ship inside apps), and metrics cover every namespace.
            guard token.role == .metrics || (token.role >= .editor && token.namespaces == nil) else {
                auth.fail("role")
                let held =
                    token.namespaces == nil ? "the \(token.role) role" : "the \(token.role) role limited to namespaces"
                throw APIError.forbidden(
                    "/metrics needs a metrics token, or an editor's or admin's valid in every namespace (metrics cover every namespace); token '\(token.name)' has \(held). Create one for the scraper with: flagctl tokens create prometheus --role metrics"
                )
            }
        }
        var headers = HTTPFields()
        headers[.contentType] = "text/plain; version=0.0.4; charset=utf-8"
        var text = registry.emitToBuffer()
        app.guardSeries.write(into: &text)
        return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: text)))
    }

    /// `GET /openapi.yaml`: the OpenAPI document of this API (docs/openapi.yaml), from the resource bundle beside
    /// flagsd; 404 saying how to install it when the bundle is missing.
    func openAPI(_ request: Request, context: FlagsRequestContext) async throws -> Response {
        let document: [UInt8]
        do {
            document = try OpenAPIDocument.bundled()
        } catch {
            throw APIError.notFound("the OpenAPI document is not available on this flagsd: \(error.description)")
        }
        var headers = HTTPFields()
        headers[.contentType] = "application/yaml"
        return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: document)))
    }
}
