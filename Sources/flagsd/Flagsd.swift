import ArgumentParser
import Foundation
import Logging
import Metrics
import Prometheus
import ServiceLifecycle
import SwitchyardServer
import SwitchyardStorage
import UnixSignals

/// The flags service: `swift run flagsd`.
@main
struct Flagsd: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "flagsd",
        abstract: "The Switchyard flags service: stores flags, audits changes, streams snapshots over long-poll HTTP.",
        discussion: """
            Every option can also be set by the environment variable named in its help; the option wins.
            On first start flagsd seeds the database from the flag files in --flags and creates an admin token
            (from SWITCHYARD_ADMIN_TOKEN, or generated and printed once).

            Example: flagsd --port 9090 --database /var/lib/switchyard/flags.sqlite
            """)

    @Option(help: "The address to listen on (SWITCHYARD_HOST).")
    var host = env("SWITCHYARD_HOST") ?? "127.0.0.1"

    @Option(help: "The port to listen on; 0 picks a free one (SWITCHYARD_PORT).")
    var port = env("SWITCHYARD_PORT").flatMap(Int.init) ?? 8080

    @Option(help: "The database: a SQLite file path or sqlite:PATH (SWITCHYARD_DATABASE).")
    var database = env("SWITCHYARD_DATABASE") ?? ".switchyard/flags.sqlite"

    @Option(help: "The flag files to seed an empty database from (SWITCHYARD_FLAGS).")
    var flags = env("SWITCHYARD_FLAGS") ?? "Flags"

    @Option(help: "trace, debug, info, notice, warning, error or critical (SWITCHYARD_LOG_LEVEL).")
    var logLevel = env("SWITCHYARD_LOG_LEVEL") ?? "info"

    @Option(help: "json, or text (the default on a terminal) (SWITCHYARD_LOG_FORMAT).")
    var logFormat = env("SWITCHYARD_LOG_FORMAT") ?? (isatty(STDERR_FILENO) == 1 ? "text" : "json")

    @Option(help: "The longest long-poll wait in seconds; longer waits are clamped (SWITCHYARD_MAX_WAIT).")
    var maxWait = env("SWITCHYARD_MAX_WAIT").flatMap(Int.init) ?? 30

    @Option(help: "Past this many waiting long-polls, answer 503 with Retry-After (SWITCHYARD_MAX_WAITERS).")
    var maxWaiters = env("SWITCHYARD_MAX_WAITERS").flatMap(Int.init) ?? 15_000

    @Option(help: "The largest request body in bytes (SWITCHYARD_MAX_BODY_SIZE).")
    var maxBodySize = env("SWITCHYARD_MAX_BODY_SIZE").flatMap(Int.init) ?? 1 << 20

    @Flag(help: "Require a token on /metrics (SWITCHYARD_METRICS_REQUIRE_TOKEN=1).")
    var metricsRequireToken = env("SWITCHYARD_METRICS_REQUIRE_TOKEN") == "1"

    @Flag(inversion: .prefixedNo, help: "Serve the web console at /console/ (SWITCHYARD_CONSOLE=0 turns it off).")
    var console = env("SWITCHYARD_CONSOLE").map { !["0", "false", "no", "off"].contains($0.lowercased()) } ?? true

    @Option(help: "The namespace OFREP requests evaluate in when neither their token (limited to one namespace) nor their X-Switchyard-Namespace header names one (SWITCHYARD_DEFAULT_NAMESPACE).")
    var defaultNamespace: String?

    @Option(help: "The most OFREP evaluation requests per minute per token, for tokens created without --rate; more get 429 with Retry-After (default: no limit) (SWITCHYARD_OFREP_RATE_LIMIT).")
    var ofrepRateLimit: Int?

    @Option(help: "A URL the crash guard POSTs a JSON announcement to when it disables a plugin switch; retried with backoff, never in the way of ingestion (SWITCHYARD_GUARD_WEBHOOK).")
    var guardWebhook: String?

    /// The options' values, or their environment variables' (an Optional option cannot default to one).
    var crashGuardWebhook: String? { guardWebhook ?? env("SWITCHYARD_GUARD_WEBHOOK") }
    var ofrepDefaultNamespace: String? { defaultNamespace ?? env("SWITCHYARD_DEFAULT_NAMESPACE") }
    var ofrepRatePerMinute: Int? { ofrepRateLimit ?? env("SWITCHYARD_OFREP_RATE_LIMIT").flatMap(Int.init) }

    func validate() throws {
        guard Logger.Level(rawValue: logLevel) != nil else {
            throw ValidationError("--log-level '\(logLevel)' is not a level; use trace, debug, info, notice, warning, error or critical.")
        }
        guard ["json", "text"].contains(logFormat) else {
            throw ValidationError("--log-format '\(logFormat)' is not a format; use json or text.")
        }
        guard (0...65535).contains(port) else { throw ValidationError("--port \(port) is not a port (0 to 65535).") }
        guard maxWait >= 0, maxWaiters >= 0, maxBodySize > 0 else {
            throw ValidationError("--max-wait and --max-waiters take 0 or more, --max-body-size more than 0.")
        }
        if let text = env("SWITCHYARD_OFREP_RATE_LIMIT"), ofrepRateLimit == nil, Int(text) == nil {
            throw ValidationError("SWITCHYARD_OFREP_RATE_LIMIT '\(text)' is not a whole number of requests per minute.")
        }
        if let rate = ofrepRatePerMinute, !(1...1_000_000).contains(rate) {
            throw ValidationError("--ofrep-rate-limit \(rate) is not between 1 and 1000000 requests per minute; leave it out for no limit.")
        }
        if let defaultNamespace = ofrepDefaultNamespace, defaultNamespace.isEmpty || defaultNamespace.contains(where: \.isWhitespace) {
            throw ValidationError("--default-namespace '\(defaultNamespace)' is not a namespace name, e.g. --default-namespace rider.")
        }
        if let text = crashGuardWebhook {
            guard let url = URL(string: text), ["http", "https"].contains(url.scheme?.lowercased() ?? ""), url.host?.isEmpty == false else {
                throw ValidationError("--guard-webhook '\(text)' is not an http or https URL, e.g. --guard-webhook https://hooks.example.com/switchyard.")
            }
        }
        if database.hasPrefix("postgres://") || database.hasPrefix("postgresql://") {
            throw ValidationError("PostgreSQL is not supported by this build yet; pass a SQLite path, e.g. --database .switchyard/flags.sqlite.")
        }
    }

    func run() async throws {
        let level = Logger.Level(rawValue: logLevel)!
        let json = logFormat == "json"
        LoggingSystem.bootstrap { label in
            if json { return JSONLogHandler(label: label, level: level) }
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        let registry = PrometheusCollectorRegistry()
        MetricsSystem.bootstrap(PrometheusMetricsFactory(registry: registry))
        let logger = Logger(label: "flagsd")

        let path = database.hasPrefix("sqlite:") ? String(database.dropFirst("sqlite:".count)) : database
        let store = try SQLiteFlagStore(path: path, logger: logger)
        let report = try await bootstrap(store: store, flagsDirectory: flags, adminToken: env("SWITCHYARD_ADMIN_TOKEN"), logger: logger)
        if let token = report.generatedAdminToken {
            FileHandle.standardOutput.write(Data("""
                flagsd created the first admin token. It is shown only this once; keep it somewhere safe:

                    \(token)

                Use it with flagctl (export FLAGCTL_TOKEN=\(token)) or curl:
                    curl -H 'Authorization: Bearer \(token)' http://\(host):\(port)/v1/namespaces
                Create narrower tokens with POST /v1/tokens (flagctl tokens create).


                """.utf8))
        }
        var configuration = ServerConfiguration(
            host: host, port: port, maximumWait: maxWait, maximumWaiters: maxWaiters,
            maximumBodySize: maxBodySize, metricsRequireToken: metricsRequireToken,
            defaultNamespace: ofrepDefaultNamespace, ofrepRatePerMinute: ofrepRatePerMinute)
        configuration.console = console
        configuration.guardWebhookURL = crashGuardWebhook.flatMap(URL.init(string:))
        let host = self.host
        let server = try await buildApplication(configuration: configuration, store: store, registry: registry, logger: logger) { port in
            FileHandle.standardOutput.write(Data("flagsd listening on http://\(host):\(port) (database \(path))\n".utf8))
        }
        let group = ServiceGroup(configuration: .init(
            services: [server], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
        try await group.run()
    }
}

func env(_ name: String) -> String? {
    ProcessInfo.processInfo.environment[name].flatMap { $0.isEmpty ? nil : $0 }
}
