import ArgumentParser
import Foundation
import Logging
import Metrics
import Prometheus
import ServiceLifecycle
import SwitchyardCore
import SwitchyardPostgres
import SwitchyardServer
import SwitchyardSQLite
import SwitchyardStorage
import UnixSignals

/// The flags service: `swift run flagsd`.
@main
struct Flagsd: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "flagsd",
        abstract: "The Switchyard flags service: stores flags, audits changes, streams snapshots over long-poll HTTP.",
        discussion: """
            Every option can also be set by the environment variable named in its help;
            the option wins.

            On first start flagsd seeds the database from the flag files in --flags and
            creates an admin token: from SWITCHYARD_ADMIN_TOKEN, or generated and
            written to a file only you can read (mode 0600), admin-token beside the
            SQLite database (on PostgreSQL, .switchyard/admin-token under the working
            directory). The log says where, never what; a terminal also sees it once:
              export TOKEN=$(cat .switchyard/admin-token)

            Examples:
              flagsd --port 9090 --database /var/lib/switchyard/flags.sqlite
              flagsd --database 'postgres://flagsd:SECRET@db.internal:5432/switchyard?sslmode=verify-full'

            With PostgreSQL, run as many instances as you like on one database behind a load balancer: a change
            through any instance wakes the long-polls of all of them. See docs/operations.md.
            """)

    @Option(help: "The address to listen on (SWITCHYARD_HOST).")
    var host = env("SWITCHYARD_HOST") ?? "127.0.0.1"

    @Option(help: "The port to listen on; 0 picks a free one (SWITCHYARD_PORT).")
    var port = env("SWITCHYARD_PORT").flatMap(Int.init) ?? 8080

    @Option(help: ArgumentHelp(
        "The database: a SQLite file path or sqlite:PATH, or postgres://USER:PASSWORD@HOST:PORT/DATABASE (SWITCHYARD_DATABASE).",
        discussion: "PostgreSQL URL parameters: sslmode=disable|prefer|require|verify-full (default verify-full, or prefer for a loopback host; prefer and require do not check the server's certificate), sslrootcert=PATH (the CA certificates verify-full trusts; default: the system's), pool_size=N (default 10), timeout=SECONDS per operation (default 5)."))
    var database = env("SWITCHYARD_DATABASE") ?? ".switchyard/flags.sqlite"

    @Option(help: "PostgreSQL: how many seconds to wait at start for the database to answer (SWITCHYARD_DATABASE_WAIT).")
    var databaseWait = env("SWITCHYARD_DATABASE_WAIT").flatMap(Int.init) ?? 30

    @Option(help: "PostgreSQL: every how many seconds to compare all namespaces with the database, the safety net for missed change notifications (SWITCHYARD_SYNC_INTERVAL).")
    var syncInterval = env("SWITCHYARD_SYNC_INTERVAL").flatMap(Double.init) ?? 5

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

    @Option(help: "The most long-polls one source address may have waiting at once; more get 429 with Retry-After (SWITCHYARD_MAX_WAITERS_PER_ADDRESS).")
    var maxWaitersPerAddress = env("SWITCHYARD_MAX_WAITERS_PER_ADDRESS").flatMap(Int.init) ?? 1_000

    @Option(help: ArgumentHelp(
        "The most long-polls per minute one source address may park with client tokens (a minute's worth at once, then this rate); more get 429 with Retry-After; 0: no limit (SWITCHYARD_LONG_POLL_RATE_PER_ADDRESS).",
        discussion: "The default lets an address's whole --max-waiters-per-address come back twelve times a minute, after changes however close together. Requests answered at once (a client behind on versions) are not counted."))
    var longPollRatePerAddress = env("SWITCHYARD_LONG_POLL_RATE_PER_ADDRESS").flatMap(Int.init) ?? 12_000

    @Option(help: ArgumentHelp(
        "The most long-polls per minute one token may park; more get 429 with Retry-After; 0 (the default): no limit (SWITCHYARD_LONG_POLL_RATE_PER_TOKEN).",
        discussion: "Leave it off where apps poll with a client token: that token is public and shared by the whole fleet, so a limit on it would let anyone holding it keep every app from hearing of a change. Set it when only a few known callers (server-side SDKs) poll with tokens of their own."))
    var longPollRatePerToken = env("SWITCHYARD_LONG_POLL_RATE_PER_TOKEN").flatMap(Int.init) ?? 0

    @Option(help: ArgumentHelp(
        "The most client events waiting to be counted; past it, event batches get 429 with Retry-After and clients send them again later (SWITCHYARD_EVENTS_BACKLOG).",
        discussion: "Batches are counted one at a time, in small transactions, so a flag change never waits behind more than one of them; the backlog bounds the memory and delay of the rest."))
    var eventsBacklog = env("SWITCHYARD_EVENTS_BACKLOG").flatMap(Int.init) ?? 20_000

    @Option(help: "The most rows (estimated) one transaction counting events may write: a flag change waits for at most one such transaction; smaller favours changes, larger counts events faster (SWITCHYARD_EVENTS_TRANSACTION_ROWS).")
    var eventsTransactionRows = env("SWITCHYARD_EVENTS_TRANSACTION_ROWS").flatMap(Int.init) ?? 2_000

    @Option(help: ArgumentHelp(
        "How long event counters are kept, as 30d or 720h: crash guard windows and experiment results reach back this far (SWITCHYARD_EVENTS_RETENTION).",
        discussion: "Minute counters roll up into one counter per hour two days after their minute (past the longest crash guard window), and are deleted past the retention; from 2d to 366d.",
        valueName: "duration"))
    var eventsRetention = env("SWITCHYARD_EVENTS_RETENTION") ?? "30d"

    @Option(help: ArgumentHelp(
        "The oldest event accepted, as 7d or 36h: older ones are refused, and event ids are remembered a day longer so a retried batch never counts twice (SWITCHYARD_EVENTS_MAX_AGE).",
        discussion: "Event ids are most of what events leave in the store (a row of about 170 bytes per event): a shorter age bounds the file lower at a high event rate, and refuses the events of devices offline longer. From 1h to 30d.",
        valueName: "duration"))
    var eventsMaxAge = env("SWITCHYARD_EVENTS_MAX_AGE") ?? "7d"

    @Option(help: "The most events per minute one token may post (a minute's worth at once, then this rate); more get 429 with Retry-After; 0: no limit (SWITCHYARD_EVENTS_RATE_PER_TOKEN).")
    var eventsRatePerToken = env("SWITCHYARD_EVENTS_RATE_PER_TOKEN").flatMap(Int.init) ?? 600_000

    @Option(help: "The most events per minute one source address may post with client tokens (reporter tokens: only their token's rate); more get 429 with Retry-After; 0: no limit (SWITCHYARD_EVENTS_RATE_PER_ADDRESS).")
    var eventsRatePerAddress = env("SWITCHYARD_EVENTS_RATE_PER_ADDRESS").flatMap(Int.init) ?? 60_000

    @Option(help: ArgumentHelp(
        "How many versions back a client may be and still get a delta instead of the whole snapshot (SWITCHYARD_DELTA_VERSIONS).",
        discussion: "Clients that ask for deltas (Accept: application/vnd.switchyard.snapshot-delta+json) get only what changed since their version when it is at most this many versions old and the delta is smaller than the snapshot; otherwise the full snapshot. 0 turns deltas off: every client gets full snapshots."))
    var deltaVersions = env("SWITCHYARD_DELTA_VERSIONS").flatMap(Int.init) ?? 100

    @Option(help: "The largest request body in bytes (SWITCHYARD_MAX_BODY_SIZE).")
    var maxBodySize = env("SWITCHYARD_MAX_BODY_SIZE").flatMap(Int.init) ?? 1 << 20

    @Option(help: ArgumentHelp(
        "The most connections open at once; past it, new connections are closed as soon as they are accepted (SWITCHYARD_MAX_CONNECTIONS).",
        discussion: "Default: 16384, or the open-file limit minus 256 when that is lower (flagsd raises its soft limit to the hard one at start). A parked long-poll holds a connection: keep it above --max-waiters."))
    var maxConnections: Int?

    @Option(help: "Seconds a connection may wait for its client between requests, or between two bytes of a request body; a request being answered, a parked long-poll included, is never cut (SWITCHYARD_IDLE_TIMEOUT).")
    var idleTimeout = env("SWITCHYARD_IDLE_TIMEOUT").flatMap(Double.init) ?? 75

    @Option(help: "Seconds a client may take to send a request's head, from connecting or from the head's first byte, however slowly the bytes come (SWITCHYARD_HEADER_TIMEOUT).")
    var headerTimeout = env("SWITCHYARD_HEADER_TIMEOUT").flatMap(Double.init) ?? 10

    @Flag(help: "Require a token on /metrics (SWITCHYARD_METRICS_REQUIRE_TOKEN=1).")
    var metricsRequireToken = env("SWITCHYARD_METRICS_REQUIRE_TOKEN") == "1"

    @Flag(inversion: .prefixedNo, help: "Serve the web console at /console/ (SWITCHYARD_CONSOLE=0 turns it off).")
    var console = env("SWITCHYARD_CONSOLE").map { !["0", "false", "no", "off"].contains($0.lowercased()) } ?? true

    @Option(help: "The namespace OFREP requests evaluate in when neither their token (limited to one namespace) nor their X-Switchyard-Namespace header names one (SWITCHYARD_DEFAULT_NAMESPACE).")
    var defaultNamespace: String?

    @Option(help: "The most OFREP evaluation requests per minute per token, for tokens created without --rate; more get 429 with Retry-After (default: no limit) (SWITCHYARD_OFREP_RATE_LIMIT).")
    var ofrepRateLimit: Int?

    @Option(help: "A URL the crash guard POSTs a JSON announcement to when it disables a plugin switch, and release plans when they advance, complete or roll back; retried with backoff, never in the way of ingestion (SWITCHYARD_GUARD_WEBHOOK).")
    var guardWebhook: String?

    @Option(help: "Every how many seconds running release plans are looked at, and stepped when their evidence says so (SWITCHYARD_RELEASE_INTERVAL).")
    var releaseInterval = env("SWITCHYARD_RELEASE_INTERVAL").flatMap(Double.init) ?? 30

    @Option(help: ArgumentHelp(
        "The load balancers and proxies in front of flagsd, as addresses or CIDR blocks separated by commas (10.0.0.0/8,fd00::/8); a request from one of them comes from the first address of its Forwarded or X-Forwarded-For header that is not one of them. Without it (the default) every request comes from its TCP peer (SWITCHYARD_TRUSTED_PROXIES).",
        valueName: "cidr,…"))
    var trustedProxies: String?

    /// The options' values, or their environment variables' (an Optional option cannot default to one).
    var crashGuardWebhook: String? { guardWebhook ?? env("SWITCHYARD_GUARD_WEBHOOK") }
    var proxies: String? { trustedProxies ?? env("SWITCHYARD_TRUSTED_PROXIES") }
    var ofrepDefaultNamespace: String? { defaultNamespace ?? env("SWITCHYARD_DEFAULT_NAMESPACE") }
    var ofrepRatePerMinute: Int? { ofrepRateLimit ?? env("SWITCHYARD_OFREP_RATE_LIMIT").flatMap(Int.init) }
    var connectionCap: Int? { maxConnections ?? env("SWITCHYARD_MAX_CONNECTIONS").flatMap(Int.init) }

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
        guard maxWaitersPerAddress >= 1, eventsBacklog >= 1, eventsTransactionRows >= 1 else {
            throw ValidationError("--max-waiters-per-address, --events-backlog and --events-transaction-rows take 1 or more.")
        }
        for (name, rate) in [("--events-rate-per-token", eventsRatePerToken), ("--events-rate-per-address", eventsRatePerAddress)] {
            guard (0...100_000_000).contains(rate) else {
                throw ValidationError("\(name) \(rate) is not a number of events per minute from 0 (no limit) to 100000000.")
            }
        }
        for (name, rate) in [("--long-poll-rate-per-address", longPollRatePerAddress), ("--long-poll-rate-per-token", longPollRatePerToken)] {
            guard (0...100_000_000).contains(rate) else {
                throw ValidationError("\(name) \(rate) is not a number of long-polls per minute from 0 (no limit) to 100000000.")
            }
        }
        guard let retention = GuardDurationText.parse(eventsRetention), retention >= EventIDPruner.rollUpAfter else {
            throw ValidationError("--events-retention '\(eventsRetention)' is not a duration from 2d to 366d (a whole number and d, h or m: 30d, 720h).")
        }
        guard let age = GuardDurationText.parse(eventsMaxAge), age >= .seconds(3600), age <= .seconds(30 * 86_400) else {
            throw ValidationError("--events-max-age '\(eventsMaxAge)' is not a duration from 1h to 30d (a whole number and d, h or m: 7d, 36h).")
        }
        if let text = env("SWITCHYARD_MAX_CONNECTIONS"), maxConnections == nil, Int(text) == nil {
            throw ValidationError("SWITCHYARD_MAX_CONNECTIONS '\(text)' is not a whole number of connections.")
        }
        for name in ["SWITCHYARD_IDLE_TIMEOUT", "SWITCHYARD_HEADER_TIMEOUT"] {
            if let text = env(name), Double(text) == nil {
                throw ValidationError("\(name) '\(text)' is not a number of seconds.")
            }
        }
        if let cap = connectionCap, cap < 1 {
            throw ValidationError("--max-connections \(cap) must be at least 1 (leave it out for the default).")
        }
        for (option, seconds) in [("--idle-timeout", idleTimeout), ("--header-timeout", headerTimeout)] where !(0.1...86_400).contains(seconds) {
            throw ValidationError("\(option) \(seconds) is not between 0.1 and 86400 seconds.")
        }
        guard (0...100_000).contains(deltaVersions) else {
            throw ValidationError("--delta-versions \(deltaVersions) is not between 0 (no deltas) and 100000 versions, e.g. --delta-versions 100.")
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
        if let proxies {
            do {
                _ = try TrustedProxies(parsing: proxies)
            } catch {
                throw ValidationError("--trusted-proxies: \(error)")
            }
        }
        if PostgresStoreConfiguration.isPostgresURL(database) {
            do {
                _ = try PostgresStoreConfiguration(url: database)
            } catch {
                throw ValidationError("--database: \(error)")
            }
        }
        guard databaseWait >= 0, syncInterval >= 0.1, syncInterval <= 3600 else {
            throw ValidationError("--database-wait takes 0 or more seconds, --sync-interval between 0.1 and 3600 seconds.")
        }
        guard releaseInterval >= 0.1, releaseInterval <= 3600 else {
            throw ValidationError("--release-interval \(releaseInterval) is not between 0.1 and 3600 seconds.")
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
        let openFiles = FileDescriptorLimit.raiseToHardLimit()
        let connections = connectionCap ?? min(16_384, max(64, (openFiles ?? 16_640) - 256))
        if let openFiles, connections > openFiles - 64 {
            logger.warning("--max-connections is close to the open-file limit: flagsd may run out of file descriptors before it refuses connections; raise ulimit -n or lower --max-connections",
                           metadata: ["max_connections": .stringConvertible(connections), "open_file_limit": .stringConvertible(openFiles)])
        }
        if maxWaiters >= connections {
            logger.warning("--max-waiters is not below --max-connections: every parked long-poll holds a connection, so the connection cap refuses clients first",
                           metadata: ["max_waiters": .stringConvertible(maxWaiters), "max_connections": .stringConvertible(connections)])
        }

        if PostgresStoreConfiguration.isPostgresURL(database) {
            let postgres = try PostgresStoreConfiguration(url: database)
            let store = try PostgresFlagStore(configuration: postgres, logger: logger)
            let wait = databaseWait
            let serving = Serving {
                try await store.migrate(waitingUpTo: .seconds(wait))
                try await prepare(store: store, describedAs: postgres.displayURL, maximumConnections: connections, registry: registry, logger: logger).run()
            }
            // Shut down in reverse order: the server drains first, then the store closes its connections.
            let group = ServiceGroup(configuration: .init(
                services: [
                    .init(service: store),
                    .init(service: serving, successTerminationBehavior: .gracefullyShutdownGroup,
                          failureTerminationBehavior: .gracefullyShutdownGroup),
                ],
                gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
            try await group.run()
        } else {
            let path = database.hasPrefix("sqlite:") ? String(database.dropFirst("sqlite:".count)) : database
            let store = try await SQLiteFlagStore(path: path, logger: logger)
            let server = try await prepare(store: store, describedAs: path, maximumConnections: connections, registry: registry, logger: logger)
            let group = ServiceGroup(configuration: .init(
                services: [server], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
            try await group.run()
        }
    }

    /// Where a generated first admin token is written: beside the SQLite database, or in `.switchyard/` under the
    /// working directory on PostgreSQL.
    var adminTokenFile: String {
        guard !PostgresStoreConfiguration.isPostgresURL(database) else { return ".switchyard/admin-token" }
        let path = database.hasPrefix("sqlite:") ? String(database.dropFirst("sqlite:".count)) : database
        let folder = (path as NSString).deletingLastPathComponent
        return folder.isEmpty ? "admin-token" : folder + "/admin-token"
    }

    /// Seeds an empty store, writes a generated admin token to a file (printing it once on a terminal), and builds
    /// the server.
    func prepare(store: any FlagStore, describedAs databaseName: String, maximumConnections: Int,
                 registry: PrometheusCollectorRegistry, logger: Logger) async throws -> FlagsServer {
        let report = try await bootstrap(store: store, flagsDirectory: flags, adminToken: env("SWITCHYARD_ADMIN_TOKEN"),
                                         adminTokenFile: adminTokenFile, logger: logger)
        if let token = report.generatedAdminToken, let file = report.adminTokenFile {
            // Standard output and the log end up in container and journal logs: they say where the token is, not
            // what it is. A person at a terminal sees it once.
            logger.notice("created the first admin token; its secret is in the file named here (mode 0600), not in this log",
                          metadata: ["file": .string(file)])
            if isatty(STDOUT_FILENO) == 1 {
                FileHandle.standardOutput.write(Data("""
                    flagsd created the first admin token. It is shown only this once, and kept in \(file)
                    (mode 0600: only you can read it; delete the file once the token is somewhere safe):

                        \(token)

                    Use it with flagctl or curl:
                        export FLAGCTL_TOKEN=$(cat \(file)) TOKEN=$(cat \(file))
                        curl -H "Authorization: Bearer $TOKEN" http://\(host):\(port)/v1/namespaces
                    Create narrower tokens with POST /v1/tokens (flagctl tokens create).


                    """.utf8))
            }
        }
        var configuration = ServerConfiguration(
            host: host, port: port, maximumWait: maxWait, maximumWaiters: maxWaiters,
            maximumBodySize: maxBodySize, metricsRequireToken: metricsRequireToken,
            defaultNamespace: ofrepDefaultNamespace, ofrepRatePerMinute: ofrepRatePerMinute)
        configuration.storeCheckInterval = .milliseconds(Int64(syncInterval * 1000))
        configuration.releasePlanInterval = .milliseconds(Int64(releaseInterval * 1000))
        configuration.deltaVersions = deltaVersions
        configuration.maximumConnections = maximumConnections
        configuration.idleTimeout = .milliseconds(Int64(idleTimeout * 1000))
        configuration.headerTimeout = .milliseconds(Int64(headerTimeout * 1000))
        configuration.console = console
        configuration.maximumWaitersPerAddress = maxWaitersPerAddress
        configuration.longPollRatePerAddress = longPollRatePerAddress > 0 ? longPollRatePerAddress : nil
        configuration.longPollRatePerToken = longPollRatePerToken > 0 ? longPollRatePerToken : nil
        configuration.maximumEventBacklog = eventsBacklog
        configuration.eventRowsPerTransaction = eventsTransactionRows
        configuration.eventCountRetention = GuardDurationText.parse(eventsRetention) ?? configuration.eventCountRetention
        configuration.maximumEventAge = GuardDurationText.parse(eventsMaxAge) ?? configuration.maximumEventAge
        configuration.eventRatePerToken = eventsRatePerToken > 0 ? eventsRatePerToken : nil
        configuration.eventRatePerAddress = eventsRatePerAddress > 0 ? eventsRatePerAddress : nil
        configuration.guardWebhookURL = crashGuardWebhook.flatMap(URL.init(string:))
        if let proxies { configuration.trustedProxies = try TrustedProxies(parsing: proxies) }
        let host = self.host
        return try await buildApplication(configuration: configuration, store: store, registry: registry, logger: logger) { port in
            FileHandle.standardOutput.write(Data("flagsd listening on http://\(host):\(port) (database \(databaseName))\n".utf8))
        }
    }
}

/// A piece of work run as a service of flagsd's group.
struct Serving: Service {
    let body: @Sendable () async throws -> Void

    func run() async throws {
        try await body()
    }
}

func env(_ name: String) -> String? {
    ProcessInfo.processInfo.environment[name].flatMap { $0.isEmpty ? nil : $0 }
}
