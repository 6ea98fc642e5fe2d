public import Logging
public import Prometheus
public import ServiceLifecycle
public import SwitchyardServer
public import SwitchyardStorage

/// Runs the real flagsd application (`buildApplication`) over a store on a free loopback port for the duration of
/// `body`, given the server and its port, then shuts it down gracefully (also when `body` throws). Every test that
/// needs a live flagsd in-process goes through here.
///
/// ```swift
/// try await withLiveFlagsd(store: store) { server, port in
///     let answer = try await URLSession.shared.data(from: URL(string: "http://127.0.0.1:\(port)/healthz")!)
/// }
/// ```
public func withLiveFlagsd<T: Sendable>(
    store: any FlagStore, configuration: ServerConfiguration = ServerConfiguration(port: 0),
    registry: PrometheusCollectorRegistry = PrometheusCollectorRegistry(), logger: Logger = quietLogger,
    _ body: (FlagsServer, Int) async throws -> T
) async throws -> T {
    let (ports, continuation) = AsyncStream<Int>.makeStream()
    let server = try await buildApplication(
        configuration: configuration, store: store, registry: registry, logger: logger
    ) {
        continuation.yield($0)
    }
    return try await whileServing(server, ports: ports, logger: logger) { port in try await body(server, port) }
}

/// A logger that prints only what is critical: live servers in tests stay quiet.
public let quietLogger: Logger = {
    var logger = Logger(label: "switchyard-test")
    logger.logLevel = .critical
    return logger
}()

/// Runs a service (a server announcing its port on `ports`) for the duration of `body`, given that port, then shuts
/// it down gracefully, also when `body` throws.
public func whileServing<T: Sendable>(
    _ service: some Service, ports: AsyncStream<Int>, logger: Logger,
    _ body: (Int) async throws -> T
) async throws -> T {
    let group = ServiceGroup(configuration: .init(services: [service], logger: logger))
    return try await withThrowingTaskGroup(of: T?.self) { tasks in
        tasks.addTask {
            try await group.run()
            return nil
        }
        guard let port = await ports.first(where: { _ in true }) else { throw CancellationError() }
        do {
            let result = try await body(port)
            await group.triggerGracefulShutdown()
            for try await _ in tasks {}
            return result
        } catch {
            await group.triggerGracefulShutdown()
            throw error
        }
    }
}
