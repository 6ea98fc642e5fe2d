package import Hummingbird
import HummingbirdCore
public import Logging
import Metrics
import NIOCore
public import Prometheus
public import ServiceLifecycle
import SwitchyardCore
public import SwitchyardStorage

/// flagsd's HTTP service, ready to run: the Hummingbird application and the long-poll hub.
///
/// On graceful shutdown the hub answers every waiting request first, then the server drains.
public struct FlagsServer: Service, CustomStringConvertible {
    let application: Application<RouterResponder<FlagsRequestContext>>
    let app: AppContext
    let routes: [RouteSpec]
    let crashGuard: CrashGuard
    /// Steps release plans on evidence.
    let releasePlans: ReleasePlanRunner
    /// What answers snapshot polls before the router.
    package let snapshotFastPath: SnapshotFastPath
    /// The cap on open connections and their timeouts.
    package let connections: ConnectionGate
    /// Where every connection's router loop runs.
    let routerLoops: RouterLoops
    /// Follows the writes of other processes on a shared store (nil for a store only this process writes).
    var follower: StoreFollower?

    public func run() async throws {
        // ServiceGroup shuts services down in reverse order: the hub (answering waiters) before the server, and
        // the crash guard once no more events come in.
        let services: [any Service] =
            [crashGuard, releasePlans] + (follower.map { [$0] } ?? [])
            + [HTTPService(application: application, connections: connections, routerLoops: routerLoops), app.hub]
        let group = ServiceGroup(configuration: .init(services: services, logger: app.logger))
        try await group.run()
    }

    /// How ServiceGroup names it in its log lines (it keeps `"\(service)"` for the process's life, and a struct's
    /// default description is a dump of everything it holds: 1.9 MiB for this one).
    public var description: String { "flagsd" }

    /// The app's parts, for in-process tests.
    package var context: AppContext { app }

    /// The crash guard, for in-process tests (which call its `drain()` when the service does not run).
    package var guardService: CrashGuard { crashGuard }

    /// The release plans' runner, for in-process tests (which call its `runOnce()` when the service does not run).
    package var releasePlanRunner: ReleasePlanRunner { releasePlans }

    /// A responder over the same routes, for sending requests in-process (tests).
    package func makeResponder() -> RouterResponder<FlagsRequestContext> {
        buildRouter(app: app, routes: routes).buildResponder()
    }

    /// Every route as `(method, path template)`, for the OpenAPI sync test.
    package var routeList: [(method: String, path: String)] {
        routes.map { ($0.method.rawValue, $0.path) }
    }
}

/// Builds flagsd's application over a store: loads every namespace and token, and sets up the routes.
///
/// ```swift
/// let store = try await SQLiteFlagStore(path: ".switchyard/flags.sqlite")
/// let server = try await buildApplication(configuration: ServerConfiguration(), store: store, logger: logger)
/// try await ServiceGroup(services: [server], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger).run()
/// ```
/// - Parameters:
///   - configuration: address, wait cap, waiter cap, body size limit, connection cap and timeouts.
///   - store: where flags, logs and tokens live.
///   - registry: the Prometheus registry `/metrics` renders; the server records its metrics there.
///   - logger: the server's logger (requests add `request_id`).
///   - onServerRunning: called with the bound port once the server listens.
/// - Throws: a `StorageError` when the store cannot be read.
public func buildApplication(
    configuration: ServerConfiguration, store: any FlagStore,
    registry: PrometheusCollectorRegistry = PrometheusCollectorRegistry(),
    logger: Logger, onServerRunning: @escaping @Sendable (Int) async -> Void = { _ in }
) async throws -> FlagsServer {
    var factory = PrometheusMetricsFactory(registry: registry)
    factory.defaultDurationHistogramBuckets = [
        .microseconds(100), .microseconds(250), .microseconds(500), .milliseconds(1), .milliseconds(2),
        .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50), .milliseconds(100),
        .milliseconds(250), .milliseconds(500), .seconds(1), .seconds(5), .seconds(15), .seconds(30), .seconds(60),
    ]
    let hub = LongPollHub(
        maximumWaiters: configuration.maximumWaiters, maximumWaitersPerAddress: configuration.maximumWaitersPerAddress,
        deltaVersions: configuration.deltaVersions,
        metricsFactory: factory, logger: logger)
    let app = AppContext(
        store: store, hub: hub, service: FlagService(store: store, hub: hub, metricsFactory: factory, logger: logger),
        auth: Authenticator(store: store, maximumAge: configuration.tokenCacheMaximumAge, metricsFactory: factory),
        configuration: configuration,
        metricsFactory: factory, logger: logger, rateLimiter: RateLimiter(clock: configuration.rateClock),
        console: ConsoleSite.load(enabled: configuration.console, logger: logger),
        eventIngestor: EventIngestor(
            capacity: configuration.maximumEventBacklog, rowBudget: configuration.eventRowsPerTransaction,
            metricsFactory: factory),
        eventRates: RateLimiter(clock: configuration.rateClock),
        longPollRates: RateLimiter(clock: configuration.rateClock))
    // Subscribe before loading, so no write committed elsewhere meanwhile is missed.
    let notifications = store.notifications()
    try await app.load()
    var guardOptions = CrashGuard.Options(
        refreshInterval: configuration.guardRefreshInterval, webhookURL: configuration.guardWebhookURL)
    guardOptions.webhookSecret = configuration.guardWebhookSecret
    // One clock for every time a change records: the store's (FlagService and the routes read it too).
    guardOptions.now = store.now
    let crashGuard = CrashGuard(app: app, options: guardOptions)
    app.eventObservers.add(crashGuard)
    var releaseOptions = ReleasePlanRunner.Options(
        interval: configuration.releasePlanInterval, webhookURL: configuration.guardWebhookURL)
    releaseOptions.webhookSecret = configuration.guardWebhookSecret
    releaseOptions.now = store.now
    releaseOptions.futureSkew = configuration.maximumEventClockSkew
    let releasePlans = ReleasePlanRunner(app: app, options: releaseOptions)
    let routes = makeRoutes(
        API(app: app, crashGuard: crashGuard, releasePlans: releasePlans), registry: registry)
    // Snapshot polls are answered before the router, on the connection's event loop (HTTP/SnapshotFastPath.swift).
    let snapshotFastPath = SnapshotFastPath(app: app, serverName: "flagsd")
    // Every connection is counted against the caps (in all and per peer address) and timed from its start
    // (Connections/ConnectionGate.swift); the timeouts see what both the fast path and the router read and write.
    let connections = ConnectionGate(
        limits: .init(
            maximumConnections: configuration.maximumConnections, idleTimeout: configuration.idleTimeout,
            headerTimeout: configuration.headerTimeout,
            maximumConnectionsPerAddress: configuration.maximumConnectionsPerAddress,
            trustedProxies: configuration.trustedProxies),
        metricsFactory: factory, logger: logger)
    let routerLoops = RouterLoops()
    let application = Application(
        router: buildRouter(app: app, routes: routes),
        server: HTTPServerBuilder { responder in
            GatedHTTP1Channel(
                http1: HTTP1Channel(
                    responder: responder,
                    configuration: .init(
                        additionalChannelHandlers: [snapshotFastPath.makeHandler()])),
                gate: connections, routerLoops: routerLoops)
        },
        configuration: .init(
            address: .hostname(configuration.host, port: configuration.port), serverName: "flagsd",
            backlog: configuration.listenBacklog),
        onServerRunning: { channel in
            // Accept up to 64 connections per wake of the listening socket (NIO's default is 4), so a burst of new
            // connections leaves the kernel's backlog while the event loop also reads the requests of the ones
            // before (bench/flagsd-parking.sh).
            try? await channel.setOption(ChannelOptions.maxMessagesPerRead, value: 64)
            await onServerRunning(channel.localAddress?.port ?? configuration.port)
        },
        logger: logger)
    var server = FlagsServer(
        application: application, app: app, routes: routes, crashGuard: crashGuard,
        releasePlans: releasePlans,
        snapshotFastPath: snapshotFastPath, connections: connections, routerLoops: routerLoops)
    if let notifications {
        server.follower = StoreFollower(
            app: app, notifications: notifications, interval: configuration.storeCheckInterval)
    }
    return server
}

/// One route: method, path template, handler.
struct RouteSpec: Sendable {
    let method: HTTPRequest.Method
    let path: String
    let handler: @Sendable (Request, FlagsRequestContext) async throws -> Response

    init(
        _ method: HTTPRequest.Method, _ path: String,
        _ handler: @escaping @Sendable (Request, FlagsRequestContext) async throws -> Response
    ) {
        self.method = method
        self.path = path
        self.handler = handler
    }
}

func makeRoutes(_ api: API, registry: PrometheusCollectorRegistry) -> [RouteSpec] {
    let ns = "/v1/namespaces/{namespace}"
    return [
        RouteSpec(.get, "/healthz") { try await api.health($0, context: $1) },
        RouteSpec(.get, "/readyz") { try await api.ready($0, context: $1) },
        RouteSpec(.get, "/metrics") { try await api.metrics($0, context: $1, registry: registry) },
        RouteSpec(.get, "/openapi.yaml") { try await api.openAPI($0, context: $1) },
        RouteSpec(.get, "/console") { try await api.console($0, context: $1) },
        RouteSpec(.get, "/console/{asset}") { try await api.consoleAsset($0, context: $1) },

        RouteSpec(.get, "/v1/namespaces") { try await api.listNamespaces($0, context: $1) },
        RouteSpec(.post, "/v1/namespaces") { try await api.createNamespace($0, context: $1) },
        RouteSpec(.get, ns) { try await api.getNamespace($0, context: $1) },
        RouteSpec(.patch, ns) { try await api.updateNamespace($0, context: $1) },
        RouteSpec(.delete, ns) { try await api.deleteNamespace($0, context: $1) },

        RouteSpec(.get, "\(ns)/snapshot") { try await api.snapshot($0, context: $1) },
        RouteSpec(.get, "\(ns)/changes") { try await api.changes($0, context: $1) },
        RouteSpec(.get, "\(ns)/changes/{version}") { try await api.change($0, context: $1) },
        RouteSpec(.post, "\(ns)/changes/{version}/revert") { try await api.revert($0, context: $1) },
        RouteSpec(.post, "\(ns)/events") { try await api.postEvents($0, context: $1) },
        RouteSpec(.get, "\(ns)/guard") { try await api.guardStatus($0, context: $1) },
        RouteSpec(.get, "\(ns)/guard/trips") { try await api.guardTrips($0, context: $1) },
        RouteSpec(.get, "\(ns)/guard/proposals") { try await api.guardProposals($0, context: $1) },
        RouteSpec(.post, "\(ns)/guard/proposals/{id}/apply") { try await api.applyGuardProposal($0, context: $1) },
        RouteSpec(.post, "\(ns)/guard/proposals/{id}/dismiss") { try await api.dismissGuardProposal($0, context: $1) },
        RouteSpec(.get, "\(ns)/series") { try await api.series($0, context: $1) },
        RouteSpec(.get, "\(ns)/experiments/{key}") { try await api.experimentResults($0, context: $1) },
        RouteSpec(.get, "\(ns)/experiments/{key}/units") { try await api.experimentUnits($0, context: $1) },
        RouteSpec(.get, "\(ns)/releases") { try await api.listReleases($0, context: $1) },
        RouteSpec(.get, "\(ns)/flags/{key}/release") { try await api.getRelease($0, context: $1) },
        RouteSpec(.post, "\(ns)/flags/{key}/release/proposals/{id}/confirm") {
            try await api.confirmReleaseProposal($0, context: $1)
        },
        RouteSpec(.post, "\(ns)/flags/{key}/release/proposals/{id}/dismiss") {
            try await api.dismissReleaseProposal($0, context: $1)
        },

        RouteSpec(.get, "\(ns)/flag-set") { try await api.getFlagSet($0, context: $1) },
        RouteSpec(.put, "\(ns)/flag-set") { try await api.putFlagSet($0, context: $1) },
        RouteSpec(.get, "\(ns)/flags") { try await api.listFlags($0, context: $1) },
        RouteSpec(.post, "\(ns)/flags") { try await api.createFlag($0, context: $1) },
        RouteSpec(.get, "\(ns)/flags/{key}") { try await api.getFlag($0, context: $1) },
        RouteSpec(.put, "\(ns)/flags/{key}") { try await api.putFlag($0, context: $1) },
        RouteSpec(.delete, "\(ns)/flags/{key}") { try await api.deleteFlag($0, context: $1) },
        RouteSpec(.post, "\(ns)/flags/{key}/enable") { try await api.switchState($0, context: $1, enable: true) },
        RouteSpec(.post, "\(ns)/flags/{key}/disable") { try await api.switchState($0, context: $1, enable: false) },
        RouteSpec(.post, "\(ns)/flags/{key}/rollout") { try await api.setRollout($0, context: $1) },
        RouteSpec(.post, "\(ns)/flags/{key}/targeting") { try await api.target($0, context: $1) },
    ]
        + ReleaseAction.allCases.map { action in
            RouteSpec(.post, "\(ns)/flags/{key}/release/\(action.rawValue)") {
                try await api.releaseAction($0, context: $1, action: action)
            }
        } + [
            RouteSpec(.get, "\(ns)/kill-switches") { try await api.listKillSwitches($0, context: $1) },
            RouteSpec(.post, "\(ns)/kill-switches/{key}/kill") { try await api.killState($0, context: $1, kill: true) },
            RouteSpec(.post, "\(ns)/kill-switches/{key}/revive") {
                try await api.killState($0, context: $1, kill: false)
            },

            RouteSpec(.post, "/ofrep/v1/evaluate/flags") { try await api.ofrepEvaluateFlags($0, context: $1) },
            RouteSpec(.post, "/ofrep/v1/evaluate/flags/{key}") { try await api.ofrepEvaluateFlag($0, context: $1) },

            RouteSpec(.get, "/v1/audit") { try await api.audit($0, context: $1) },
            RouteSpec(.get, "/v1/tokens") { try await api.listTokens($0, context: $1) },
            RouteSpec(.post, "/v1/tokens") { try await api.createToken($0, context: $1) },
            RouteSpec(.delete, "/v1/tokens/{token}") { try await api.revokeToken($0, context: $1) },
        ]
}

func buildRouter(app: AppContext, routes: [RouteSpec]) -> Router<FlagsRequestContext> {
    let router = Router(context: FlagsRequestContext.self)
    // Middleware applies to routes added after it, so it comes first.
    router.add(middleware: ObservabilityMiddleware(metricsFactory: app.metricsFactory))
    router.add(middleware: ProblemMiddleware(routes: RouteTable(routes.map { ($0.method, $0.path) })))
    for route in routes {
        router.on(RouterPath(route.path), method: route.method, use: route.handler)
    }
    return router
}

/// Hummingbird's application (under a short name: ServiceGroup keeps `"\(service)"` as a service's name, which for
/// `Application`, a struct, is a dump of the whole application, router included), the connections' router loops
/// (`RouterLoops`), and, at the end, the wait for the last connection to close: Hummingbird's server returns once its
/// connections' tasks end, and those only launch a router loop or leave it to be launched (`RouterSide`).
struct HTTPService<App: Service>: Service, CustomStringConvertible {
    let application: App
    let connections: ConnectionGate
    let routerLoops: RouterLoops
    var description: String { "http server" }

    func run() async throws {
        async let loops: Void = routerLoops.run()
        let served: Result<Void, any Error>
        do {
            try await application.run()
            served = .success(())
        } catch {
            served = .failure(error)
        }
        // Graceful shutdown: quiescing closed the idle connections and the rest close after their answers; on
        // cancellation, every open one is closed.
        await connections.allClosed()
        routerLoops.finish()
        await loops
        try served.get()
    }
}
