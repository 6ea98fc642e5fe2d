import ArgumentParser
import Foundation
import Logging
import Metrics
import Prometheus
import ServiceLifecycle
import SwitchyardCore
import SwitchyardPostgres
import SwitchyardSQLite
import SwitchyardServer
import SwitchyardStorage
import UnixSignals

/// The flags service: `swift run flagsd`.
@main
struct Flagsd: AsyncParsableCommand {
    /// Parses the command line and the environment (``EnvironmentOptions``) with one parser, then runs.
    static func main() async {
        let command: Flagsd
        do {
            command = try EnvironmentOptions.parse(
                Array(CommandLine.arguments.dropFirst()),
                environment: ProcessInfo.processInfo.environment)
        } catch {
            exit(withError: error)
        }
        do {
            try await command.run()
        } catch {
            exit(withError: error)
        }
    }

    static let configuration = CommandConfiguration(
        commandName: "flagsd",
        abstract: "The Switchyard flags service: stores flags, audits changes, streams snapshots over long-poll HTTP.",
        discussion: """
            Every option can also be set by the environment variable named in its help
            (a flag by 1 or 0); the option wins. A variable flagsd cannot read stops it
            at start, naming the variable, as the option would.

            On first start flagsd seeds the database from the flag files in --flags and
            creates an admin token: from SWITCHYARD_ADMIN_TOKEN, or generated and
            written to a file only you can read (mode 0600), admin-token beside the
            SQLite database (on PostgreSQL, .switchyard/admin-token under the working
            directory). The log says where, never what; a terminal also sees it once:
              export TOKEN=$(cat .switchyard/admin-token)
            /metrics needs a metrics token (or --open-metrics): SWITCHYARD_METRICS_TOKEN
            creates one, named prometheus, for the scraper to use as its bearer token.

            Examples:
              flagsd --port 9090 --database /var/lib/switchyard/flags.sqlite
              flagsd --database 'postgres://flagsd:SECRET@db.internal:5432/switchyard?sslmode=verify-full'

            With PostgreSQL, run as many instances as you like on one database behind a load balancer: a change
            through any instance wakes the long-polls of all of them. See docs/operations.md.
            """)

    @Option(help: "The address to listen on (SWITCHYARD_HOST).")
    var host = "127.0.0.1"

    @Option(help: "The port to listen on; 0 picks a free one (SWITCHYARD_PORT).")
    var port = 8080

    @Option(
        help: ArgumentHelp(
            "The database: a SQLite file path or sqlite:PATH, or postgres://USER:PASSWORD@HOST:PORT/DATABASE (SWITCHYARD_DATABASE).",
            discussion:
                "PostgreSQL URL parameters: sslmode=disable|prefer|require|verify-full (default verify-full, or prefer for a loopback host; prefer and require do not check the server's certificate), sslrootcert=PATH (the CA certificates verify-full trusts; default: the system's), pool_size=N (default 10), timeout=SECONDS per operation (default 5)."
        ))
    var database = ".switchyard/flags.sqlite"

    @Option(
        help: "PostgreSQL: how many seconds to wait at start for the database to answer (SWITCHYARD_DATABASE_WAIT).")
    var databaseWait = 30

    @Option(
        help:
            "PostgreSQL: every how many seconds to compare all namespaces with the database, the safety net for missed change notifications (SWITCHYARD_SYNC_INTERVAL)."
    )
    var syncInterval: Double = 5

    @Option(help: "The flag files to seed an empty database from (SWITCHYARD_FLAGS).")
    var flags = "Flags"

    @Option(help: "trace, debug, info, notice, warning, error or critical (SWITCHYARD_LOG_LEVEL).")
    var logLevel = "info"

    @Option(help: "json or text; without it, text on a terminal and json otherwise (SWITCHYARD_LOG_FORMAT).")
    var logFormat: String?

    @Option(help: "The longest long-poll wait in seconds; longer waits are clamped (SWITCHYARD_MAX_WAIT).")
    var maxWait = 30

    @Option(help: "Past this many waiting long-polls, answer 503 with Retry-After (SWITCHYARD_MAX_WAITERS).")
    var maxWaiters = 15_000

    @Option(
        help:
            "The most long-polls one source address may have waiting at once; more get 429 with Retry-After (SWITCHYARD_MAX_WAITERS_PER_ADDRESS)."
    )
    var maxWaitersPerAddress = 1_000

    @Option(
        help: ArgumentHelp(
            "The most long-polls per minute one source address may park with client tokens (a minute's worth at once, then this rate); more get 429 with Retry-After; 0: no limit (SWITCHYARD_LONG_POLL_RATE_PER_ADDRESS).",
            discussion:
                "The default lets an address's whole --max-waiters-per-address come back twelve times a minute, after changes however close together. Requests answered at once (a client behind on versions) are not counted."
        ))
    var longPollRatePerAddress = 12_000

    @Option(
        help: ArgumentHelp(
            "The most long-polls per minute one token may park; more get 429 with Retry-After; 0 (the default): no limit (SWITCHYARD_LONG_POLL_RATE_PER_TOKEN).",
            discussion:
                "Leave it off where apps poll with a client token: that token is public and shared by the whole fleet, so a limit on it would let anyone holding it keep every app from hearing of a change. Set it when only a few known callers (server-side SDKs) poll with tokens of their own."
        ))
    var longPollRatePerToken = 0

    @Option(
        help: ArgumentHelp(
            "The most client events waiting to be counted; past it, event batches get 429 with Retry-After and clients send them again later (SWITCHYARD_EVENTS_BACKLOG).",
            discussion:
                "Batches are counted one at a time, in small transactions, so a flag change never waits behind more than one of them; the backlog bounds the memory and delay of the rest."
        ))
    var eventsBacklog = 20_000

    @Option(
        help:
            "The most rows (estimated) one transaction counting events may write: a flag change waits for at most one such transaction; smaller favours changes, larger counts events faster (SWITCHYARD_EVENTS_TRANSACTION_ROWS)."
    )
    var eventsTransactionRows = 2_000

    @Option(
        help: ArgumentHelp(
            "How long event counters are kept, as 30d or 720h: crash guard windows and experiment results reach back this far (SWITCHYARD_EVENTS_RETENTION).",
            discussion:
                "Minute counters roll up into one counter per hour two days after their minute (past the longest crash guard window), and are deleted past the retention; from 2d to 366d.",
            valueName: "duration"))
    var eventsRetention = "30d"

    @Option(
        help: ArgumentHelp(
            "The most units one arm of an experiment's phase holds: once an arm holds this many, no new unit enters the phase (SWITCHYARD_EXPERIMENT_UNITS_PER_ARM).",
            discussion:
                "Bounds what experiments keep per unit (its entry, its totals, its pre-exposure values): about 0.9 KB per unit with a few metrics on SQLite, 1.4 KB on PostgreSQL (bench/README.md, \"Experiments: capacity\"). From 100 to 10,000,000; the default holds 50,000.",
            valueName: "units"))
    var experimentUnitsPerArm = EventAdmission.defaultMaximumUnitsPerArm

    @Option(
        help: ArgumentHelp(
            "The oldest event accepted, as 7d or 36h: older ones are refused, and event ids are remembered a day longer so a retried batch never counts twice (SWITCHYARD_EVENTS_MAX_AGE).",
            discussion:
                "Event ids are most of what events leave in the store (a row of about 170 bytes per event): a shorter age bounds the file lower at a high event rate, and refuses the events of devices offline longer. From 1h to 30d.",
            valueName: "duration"))
    var eventsMaxAge = "7d"

    @Option(
        help: ArgumentHelp(
            "How far ahead of flagsd's clock an event may be stamped, as 10m or 30s: later ones are refused (SWITCHYARD_EVENTS_MAX_SKEW).",
            discussion:
                "An event counts in its own minute, so a release plan counts a stage from the first minute that no event received before the stage began can be in: this much after it began, rounded up to the minute. Smaller: stages decide sooner, and devices whose clocks run further ahead are refused. From 0s to 1h.",
            valueName: "duration"))
    var eventsMaxSkew = "10m"

    @Option(
        help: ArgumentHelp(
            "The most valid events per minute one reporter (or admin) token may post (a minute's worth at once, then this rate); more get 429 with Retry-After; 0: no limit (SWITCHYARD_EVENTS_RATE_PER_TOKEN).",
            discussion: "Client tokens have their own option, off by default."))
    var eventsRatePerToken = 600_000

    @Option(
        help: ArgumentHelp(
            "The most valid events per minute one client token may post; 0 (the default): no limit (SWITCHYARD_EVENTS_RATE_PER_CLIENT_TOKEN).",
            discussion:
                "Leave it off where apps post with a client token: that token is public and shared by the whole fleet, so a limit on it would let anyone holding it spend every app's budget. The rate per source address bounds each sender instead."
        ))
    var eventsRatePerClientToken = 0

    @Option(
        help: ArgumentHelp(
            "The most events per minute one source address may post with client tokens, valid or not (reporter tokens: only their token's rate); more get 429 with Retry-After; 0: no limit (SWITCHYARD_EVENTS_RATE_PER_ADDRESS).",
            discussion:
                "An IPv6 source counts at its /64 with this rate, its /56 with 4 times and its /48 with 16 times this rate. An address with nothing left is refused before its batch is read, and a refused batch costs no other budget."
        ))
    var eventsRatePerAddress = 60_000

    @Option(
        help: ArgumentHelp(
            "How many versions back a client may be and still get a delta instead of the whole snapshot (SWITCHYARD_DELTA_VERSIONS).",
            discussion:
                "Clients that ask for deltas (Accept: application/vnd.switchyard.snapshot-delta+json) get only what changed since their version when it is at most this many versions old and the delta is smaller than the snapshot; otherwise the full snapshot. 0 turns deltas off: every client gets full snapshots."
        ))
    var deltaVersions = 100

    @Option(help: "The largest request body in bytes (SWITCHYARD_MAX_BODY_SIZE).")
    var maxBodySize = 1 << 20

    @Option(
        help: ArgumentHelp(
            "The most connections open at once; past it, a new connection takes the place of the longest idle one, or is closed as soon as it is accepted when none is idle (SWITCHYARD_MAX_CONNECTIONS).",
            discussion:
                "Default: 16384, or the open-file limit minus 256 when that is lower (flagsd raises its soft limit to the hard one at start). A parked long-poll holds a connection: keep it above --max-waiters."
        ))
    var maxConnections: Int?

    @Option(
        help: ArgumentHelp(
            "The most connections one peer address may hold open at once; more are closed as soon as they are accepted; 0: no limit (SWITCHYARD_MAX_CONNECTIONS_PER_ADDRESS).",
            discussion:
                "Counted by the TCP peer: an IPv6 peer at its /64 with this cap, its /56 with 4 times and its /48 with 16 times it (those two at most a quarter of --max-connections). Peers in --trusted-proxies carry many clients and are not capped. Keep it above --max-waiters-per-address."
        ))
    var maxConnectionsPerAddress = 1_100

    @Option(
        help: ArgumentHelp(
            "The most new connections the kernel holds for flagsd to accept, handshake done (the listen backlog); past it a new connection's handshake is dropped and its client waits a second to retry (SWITCHYARD_LISTEN_BACKLOG).",
            discussion:
                "Default: the kernel's cap, net.core.somaxconn (4096 on current Linux), which also caps a larger value. Keep it near the number of clients that may connect in the same instant, as a fleet does after a restart."
        ))
    var listenBacklog: Int?

    @Option(
        help:
            "Seconds a connection may wait for its client between requests, or between two bytes of a request body; a request being answered, a parked long-poll included, is never cut (SWITCHYARD_IDLE_TIMEOUT)."
    )
    var idleTimeout: Double = 75

    @Option(
        help:
            "Seconds a client may take to send a request's head, from connecting or from the head's first byte, however slowly the bytes come (SWITCHYARD_HEADER_TIMEOUT)."
    )
    var headerTimeout: Double = 10

    @Flag(
        help: ArgumentHelp(
            "Serve /metrics to anyone; without it /metrics needs a metrics token, or an editor's or admin's valid in every namespace (SWITCHYARD_OPEN_METRICS=1).",
            discussion:
                "Metrics name every namespace, switch and release plan, and their rates: open them only where no client reaches flagsd. Create the scraper's token with 'flagctl tokens create prometheus --role metrics'."
        ))
    var openMetrics = false

    /// What `/metrics` needed before it needed a token by default; accepted so old settings still start.
    @Flag(help: .hidden)
    var metricsRequireToken = false

    @Flag(inversion: .prefixedNo, help: "Serve the web console at /console/ (SWITCHYARD_CONSOLE=0 turns it off).")
    var console = true

    @Option(
        help:
            "The namespace OFREP requests evaluate in when neither their token (limited to one namespace) nor their X-Switchyard-Namespace header names one (SWITCHYARD_DEFAULT_NAMESPACE)."
    )
    var defaultNamespace: String?

    @Option(
        help:
            "The most OFREP evaluation requests per minute per token, for tokens created without --rate; more get 429 with Retry-After (default: no limit) (SWITCHYARD_OFREP_RATE_LIMIT)."
    )
    var ofrepRateLimit: Int?

    @Option(
        help: ArgumentHelp(
            "A URL the crash guard POSTs a JSON announcement to when it disables a plugin switch, and release plans when they advance, complete or roll back; retried with backoff, never in the way of ingestion (SWITCHYARD_GUARD_WEBHOOK).",
            discussion:
                "With a secret (--guard-webhook-secret-file, or SWITCHYARD_GUARD_WEBHOOK_SECRET), each post is signed: X-Switchyard-Signature: t=<unix time>,v1=<hex HMAC-SHA256 of '<t>.<body>'>. The log names the webhook's host only."
        ))
    var guardWebhook: String?

    @Option(
        help: ArgumentHelp(
            "A file holding the secret that signs webhook posts (its first line; mode 0600 advised) (SWITCHYARD_GUARD_WEBHOOK_SECRET_FILE).",
            discussion:
                "Or the secret itself in SWITCHYARD_GUARD_WEBHOOK_SECRET (never on the command line, where other users of the machine can read it). At least 16 bytes.",
            valueName: "path"))
    var guardWebhookSecretFile: String?

    @Option(
        help:
            "Every how many seconds running release plans are looked at, and stepped when their evidence says so (SWITCHYARD_RELEASE_INTERVAL)."
    )
    var releaseInterval: Double = 30

    @Option(
        help: ArgumentHelp(
            "The load balancers and proxies in front of flagsd, as addresses or CIDR blocks separated by commas (10.0.0.0/8,fd00::/8); a request from one of them comes from the first address of its --forwarded-header that is not one of them. Without it (the default) every request comes from its TCP peer (SWITCHYARD_TRUSTED_PROXIES).",
            valueName: "cidr,…"))
    var trustedProxies: String?

    @Option(
        help: ArgumentHelp(
            "The one header your proxies append the client's address to: x-forwarded-for (the default) or forwarded (RFC 7239); the other is never read (SWITCHYARD_FORWARDED_HEADER).",
            discussion:
                "Proxies pass the header they do not write through as the client sent it: reading it would let any client name its own address. See docs/operations.md for each proxy's setting.",
            valueName: "header"))
    var forwardedHeader = TrustedProxies.Header.xForwardedFor.rawValue

    func validate() throws {
        guard Logger.Level(rawValue: logLevel) != nil else {
            throw ValidationError(
                "--log-level '\(logLevel)' is not a level; use trace, debug, info, notice, warning, error or critical.")
        }
        if let logFormat, !["json", "text"].contains(logFormat) {
            throw ValidationError("--log-format '\(logFormat)' is not a format; use json or text.")
        }
        guard (0...65535).contains(port) else { throw ValidationError("--port \(port) is not a port (0 to 65535).") }
        guard maxWait >= 0, maxWaiters >= 0, maxBodySize > 0 else {
            throw ValidationError("--max-wait and --max-waiters take 0 or more, --max-body-size more than 0.")
        }
        guard maxWaitersPerAddress >= 1, eventsBacklog >= 1, eventsTransactionRows >= 1 else {
            throw ValidationError(
                "--max-waiters-per-address, --events-backlog and --events-transaction-rows take 1 or more.")
        }
        for (name, rate) in [
            ("--events-rate-per-token", eventsRatePerToken),
            ("--events-rate-per-client-token", eventsRatePerClientToken),
            ("--events-rate-per-address", eventsRatePerAddress),
        ] {
            guard (0...100_000_000).contains(rate) else {
                throw ValidationError(
                    "\(name) \(rate) is not a number of events per minute from 0 (no limit) to 100000000.")
            }
        }
        for (name, rate) in [
            ("--long-poll-rate-per-address", longPollRatePerAddress),
            ("--long-poll-rate-per-token", longPollRatePerToken),
        ] {
            guard (0...100_000_000).contains(rate) else {
                throw ValidationError(
                    "\(name) \(rate) is not a number of long-polls per minute from 0 (no limit) to 100000000.")
            }
        }
        guard (100...10_000_000).contains(experimentUnitsPerArm) else {
            throw ValidationError("--experiment-units-per-arm \(experimentUnitsPerArm) is not from 100 to 10000000.")
        }
        guard let retention = GuardDurationText.parse(eventsRetention), retention >= EventIDPruner.rollUpAfter else {
            throw ValidationError(
                "--events-retention '\(eventsRetention)' is not a duration from 2d to 366d (a whole number and d, h or m: 30d, 720h)."
            )
        }
        guard let age = GuardDurationText.parse(eventsMaxAge), age >= .seconds(3600), age <= .seconds(30 * 86_400)
        else {
            throw ValidationError(
                "--events-max-age '\(eventsMaxAge)' is not a duration from 1h to 30d (a whole number and d, h or m: 7d, 36h)."
            )
        }
        guard let skew = GuardDurationText.parse(eventsMaxSkew), skew <= .seconds(3600) else {
            throw ValidationError(
                "--events-max-skew '\(eventsMaxSkew)' is not a duration from 0s to 1h (a whole number and h, m or s: 10m, 30s)."
            )
        }
        if let cap = maxConnections, cap < 1 {
            throw ValidationError("--max-connections \(cap) must be at least 1 (leave it out for the default).")
        }
        if let backlog = listenBacklog, backlog < 1 {
            throw ValidationError("--listen-backlog \(backlog) must be at least 1 (leave it out for the kernel's cap).")
        }
        guard maxConnectionsPerAddress >= 0 else {
            throw ValidationError(
                "--max-connections-per-address \(maxConnectionsPerAddress) is not a number of connections (0: no limit)."
            )
        }
        for (option, seconds) in [("--idle-timeout", idleTimeout), ("--header-timeout", headerTimeout)]
        where !(0.1...86_400).contains(seconds) {
            throw ValidationError("\(option) \(seconds) is not between 0.1 and 86400 seconds.")
        }
        guard (0...100_000).contains(deltaVersions) else {
            throw ValidationError(
                "--delta-versions \(deltaVersions) is not between 0 (no deltas) and 100000 versions, e.g. --delta-versions 100."
            )
        }
        if let rate = ofrepRateLimit, !(1...1_000_000).contains(rate) {
            throw ValidationError(
                "--ofrep-rate-limit \(rate) is not between 1 and 1000000 requests per minute; leave it out for no limit."
            )
        }
        if let defaultNamespace, defaultNamespace.isEmpty || defaultNamespace.contains(where: \.isWhitespace) {
            throw ValidationError(
                "--default-namespace '\(defaultNamespace)' is not a namespace name, e.g. --default-namespace rider.")
        }
        if let text = guardWebhook {
            guard let url = URL(string: text), ["http", "https"].contains(url.scheme?.lowercased() ?? ""),
                url.host?.isEmpty == false
            else {
                // The value is not repeated: a webhook URL often carries the receiver's token.
                throw ValidationError(
                    "--guard-webhook is not an http or https URL (its value is not shown here: it may hold a token), e.g. --guard-webhook https://hooks.example.com/switchyard."
                )
            }
        }
        if let trustedProxies {
            do {
                _ = try TrustedProxies(parsing: trustedProxies)
            } catch {
                throw ValidationError("--trusted-proxies: \(error)")
            }
        }
        guard TrustedProxies.Header(rawValue: forwardedHeader.lowercased()) != nil else {
            throw ValidationError(
                "--forwarded-header '\(forwardedHeader)' is not a forwarding header; use x-forwarded-for or forwarded.")
        }
        if guardWebhookSecretFile != nil || env("SWITCHYARD_GUARD_WEBHOOK_SECRET") != nil {
            guard guardWebhook != nil else {
                throw ValidationError(
                    "a webhook secret (--guard-webhook-secret-file or SWITCHYARD_GUARD_WEBHOOK_SECRET) needs --guard-webhook."
                )
            }
            _ = try webhookSecret()
        }
        if PostgresStoreConfiguration.isPostgresURL(database) {
            do {
                _ = try PostgresStoreConfiguration(url: database)
            } catch {
                throw ValidationError("--database: \(error)")
            }
        }
        guard databaseWait >= 0, syncInterval >= 0.1, syncInterval <= 3600 else {
            throw ValidationError(
                "--database-wait takes 0 or more seconds, --sync-interval between 0.1 and 3600 seconds.")
        }
        guard releaseInterval >= 0.1, releaseInterval <= 3600 else {
            throw ValidationError("--release-interval \(releaseInterval) is not between 0.1 and 3600 seconds.")
        }
    }

    func run() async throws {
        let level = Logger.Level(rawValue: logLevel)!
        let json = (logFormat ?? (isatty(STDERR_FILENO) == 1 ? "text" : "json")) == "json"
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
        let connections = maxConnections ?? min(16_384, max(64, (openFiles ?? 16_640) - 256))
        if let openFiles, connections > openFiles - 64 {
            logger.warning(
                "--max-connections is close to the open-file limit: flagsd may run out of file descriptors before it refuses connections; raise ulimit -n or lower --max-connections",
                metadata: [
                    "max_connections": .stringConvertible(connections),
                    "open_file_limit": .stringConvertible(openFiles),
                ])
        }
        if maxConnectionsPerAddress > 0, maxConnectionsPerAddress <= maxWaitersPerAddress {
            logger.warning(
                "--max-connections-per-address is not above --max-waiters-per-address: every parked long-poll holds a connection, so an address meets the connection cap first and its other requests cannot connect",
                metadata: [
                    "max_connections_per_address": .stringConvertible(maxConnectionsPerAddress),
                    "max_waiters_per_address": .stringConvertible(maxWaitersPerAddress),
                ])
        }
        if maxWaiters >= connections {
            logger.warning(
                "--max-waiters is not below --max-connections: every parked long-poll holds a connection, so the connection cap refuses clients first",
                metadata: [
                    "max_waiters": .stringConvertible(maxWaiters), "max_connections": .stringConvertible(connections),
                ])
        }
        // A port another process holds stops flagsd here, before its database is opened, migrated or seeded.
        try ListenAddress(host: host, port: port).check()

        if PostgresStoreConfiguration.isPostgresURL(database) {
            let postgres = try PostgresStoreConfiguration(url: database)
            let store = try PostgresFlagStore(configuration: postgres, logger: logger)
            let wait = databaseWait
            let serving = Serving {
                try await store.migrate(waitingUpTo: .seconds(wait))
                try await prepare(
                    store: store, describedAs: postgres.displayURL, maximumConnections: connections, registry: registry,
                    logger: logger
                ).run()
            }
            // Shut down in reverse order: the server drains first, then the store closes its connections.
            let group = ServiceGroup(
                configuration: .init(
                    services: [
                        .init(service: store),
                        .init(
                            service: serving, successTerminationBehavior: .gracefullyShutdownGroup,
                            failureTerminationBehavior: .gracefullyShutdownGroup),
                    ],
                    gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
            try await group.run()
        } else {
            let path = database.hasPrefix("sqlite:") ? String(database.dropFirst("sqlite:".count)) : database
            let store = try await SQLiteFlagStore(path: path, logger: logger)
            let server = try await prepare(
                store: store, describedAs: path, maximumConnections: connections, registry: registry, logger: logger)
            let group = ServiceGroup(
                configuration: .init(
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
    func prepare(
        store: any FlagStore, describedAs databaseName: String, maximumConnections: Int,
        registry: PrometheusCollectorRegistry, logger: Logger
    ) async throws -> FlagsServer {
        let report = try await bootstrap(
            store: store, flagsDirectory: flags, adminToken: env("SWITCHYARD_ADMIN_TOKEN"),
            adminTokenFile: adminTokenFile, metricsToken: env("SWITCHYARD_METRICS_TOKEN"), logger: logger)
        if let token = report.generatedAdminToken, let file = report.adminTokenFile {
            // Standard output and the log end up in container and journal logs: they say where the token is, not
            // what it is. A person at a terminal sees it once.
            logger.notice(
                "created the first admin token; its secret is in the file named here (mode 0600), not in this log",
                metadata: ["file": .string(file)])
            if isatty(STDOUT_FILENO) == 1 {
                FileHandle.standardOutput.write(
                    Data(
                        """
                        flagsd created the first admin token. It is shown only this once, and kept in \(file)
                        (mode 0600: only you can read it; delete the file once the token is somewhere safe):

                            \(token)

                        Use it with flagctl or curl:
                            export FLAGCTL_TOKEN=$(cat \(file)) TOKEN=$(cat \(file))
                            curl -H "Authorization: Bearer $TOKEN" \(ListenAddress.url(host: host, port: port))/v1/namespaces
                        Create narrower tokens with POST /v1/tokens (flagctl tokens create).


                        """.utf8))
            }
        }
        var configuration = ServerConfiguration(
            host: host, port: port, maximumWait: maxWait, maximumWaiters: maxWaiters,
            maximumBodySize: maxBodySize, openMetrics: openMetrics,
            defaultNamespace: defaultNamespace, ofrepRatePerMinute: ofrepRateLimit)
        configuration.storeCheckInterval = .milliseconds(Int64(syncInterval * 1000))
        configuration.releasePlanInterval = .milliseconds(Int64(releaseInterval * 1000))
        configuration.deltaVersions = deltaVersions
        configuration.maximumConnections = maximumConnections
        configuration.maximumConnectionsPerAddress = maxConnectionsPerAddress > 0 ? maxConnectionsPerAddress : nil
        if let listenBacklog { configuration.listenBacklog = listenBacklog }
        configuration.idleTimeout = .milliseconds(Int64(idleTimeout * 1000))
        configuration.headerTimeout = .milliseconds(Int64(headerTimeout * 1000))
        configuration.console = console
        configuration.maximumWaitersPerAddress = maxWaitersPerAddress
        configuration.longPollRatePerAddress = longPollRatePerAddress > 0 ? longPollRatePerAddress : nil
        configuration.longPollRatePerToken = longPollRatePerToken > 0 ? longPollRatePerToken : nil
        configuration.maximumEventBacklog = eventsBacklog
        configuration.eventRowsPerTransaction = eventsTransactionRows
        configuration.eventCountRetention =
            GuardDurationText.parse(eventsRetention) ?? configuration.eventCountRetention
        configuration.experimentUnitsPerArm = experimentUnitsPerArm
        configuration.maximumEventAge = GuardDurationText.parse(eventsMaxAge) ?? configuration.maximumEventAge
        configuration.maximumEventClockSkew =
            GuardDurationText.parse(eventsMaxSkew) ?? configuration.maximumEventClockSkew
        configuration.eventRatePerToken = eventsRatePerToken > 0 ? eventsRatePerToken : nil
        configuration.eventRatePerClientToken = eventsRatePerClientToken > 0 ? eventsRatePerClientToken : nil
        configuration.eventRatePerAddress = eventsRatePerAddress > 0 ? eventsRatePerAddress : nil
        configuration.guardWebhookURL = guardWebhook.flatMap(URL.init(string:))
        configuration.guardWebhookSecret = try webhookSecret()
        let header = TrustedProxies.Header(rawValue: forwardedHeader.lowercased()) ?? .xForwardedFor
        configuration.trustedProxies = try TrustedProxies(parsing: trustedProxies ?? "", header: header)
        let host = self.host
        let console = self.console
        return try await buildApplication(
            configuration: configuration, store: store, registry: registry, logger: logger
        ) { port in
            let url = ListenAddress.url(host: host, port: port)
            var banner = "flagsd listening on \(url) (database \(databaseName))\n"
            if console { banner += "console: \(url)/console/ (sign in with an editor's or admin's token)\n" }
            FileHandle.standardOutput.write(Data(banner.utf8))
        }
    }
}

extension Flagsd {
    /// The secret that signs webhook posts: the first line of `--guard-webhook-secret-file`, else
    /// `SWITCHYARD_GUARD_WEBHOOK_SECRET`; nil when neither is set.
    ///
    /// - Throws: `ValidationError` when the file cannot be read or the secret is shorter than 16 bytes.
    func webhookSecret() throws -> [UInt8]? {
        var secret: String
        var origin: String
        if let path = guardWebhookSecretFile {
            guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
                throw ValidationError(
                    "--guard-webhook-secret-file '\(path)' cannot be read; give a file holding the secret on its first line."
                )
            }
            secret = String(text.split(separator: "\n", omittingEmptySubsequences: false).first ?? "")
            origin = "--guard-webhook-secret-file '\(path)'"
        } else if let text = env("SWITCHYARD_GUARD_WEBHOOK_SECRET") {
            secret = text
            origin = "SWITCHYARD_GUARD_WEBHOOK_SECRET"
        } else {
            return nil
        }
        secret = secret.trimmingCharacters(in: .whitespacesAndNewlines)
        guard secret.utf8.count >= 16 else {
            throw ValidationError(
                "\(origin): the webhook secret has \(secret.utf8.count) bytes; give at least 16 (e.g. openssl rand -hex 32)."
            )
        }
        return Array(secret.utf8)
    }
}

/// flagsd's environment variables, read as the options they stand for: each set variable becomes its option's
/// arguments (unless the command line gives the option), so a value is checked exactly as the option's would be, and
/// one flagsd cannot read stops it at start with a message that names the variable.
enum EnvironmentOptions {
    /// How a variable becomes arguments.
    enum Kind {
        /// `--option=value`.
        case value
        /// A flag: `1`, `true`, `yes`, `on` give `--option`; `0`, `false`, `no`, `off` give `--no-option` when the
        /// flag has one, else nothing.
        case flag(inverted: Bool)
    }

    /// Every variable with its option (`SWITCHYARD_ADMIN_TOKEN` is read where it is used: it is no option, so that
    /// the secret never sits in a command line).
    static let variables: [(name: String, option: String, kind: Kind)] = [
        ("SWITCHYARD_HOST", "--host", .value), ("SWITCHYARD_PORT", "--port", .value),
        ("SWITCHYARD_DATABASE", "--database", .value), ("SWITCHYARD_DATABASE_WAIT", "--database-wait", .value),
        ("SWITCHYARD_SYNC_INTERVAL", "--sync-interval", .value), ("SWITCHYARD_FLAGS", "--flags", .value),
        ("SWITCHYARD_LOG_LEVEL", "--log-level", .value), ("SWITCHYARD_LOG_FORMAT", "--log-format", .value),
        ("SWITCHYARD_MAX_WAIT", "--max-wait", .value), ("SWITCHYARD_MAX_WAITERS", "--max-waiters", .value),
        ("SWITCHYARD_MAX_WAITERS_PER_ADDRESS", "--max-waiters-per-address", .value),
        ("SWITCHYARD_LONG_POLL_RATE_PER_ADDRESS", "--long-poll-rate-per-address", .value),
        ("SWITCHYARD_LONG_POLL_RATE_PER_TOKEN", "--long-poll-rate-per-token", .value),
        ("SWITCHYARD_EVENTS_BACKLOG", "--events-backlog", .value),
        ("SWITCHYARD_EVENTS_TRANSACTION_ROWS", "--events-transaction-rows", .value),
        ("SWITCHYARD_EVENTS_RETENTION", "--events-retention", .value),
        ("SWITCHYARD_EXPERIMENT_UNITS_PER_ARM", "--experiment-units-per-arm", .value),
        ("SWITCHYARD_EVENTS_MAX_AGE", "--events-max-age", .value),
        ("SWITCHYARD_EVENTS_MAX_SKEW", "--events-max-skew", .value),
        ("SWITCHYARD_EVENTS_RATE_PER_TOKEN", "--events-rate-per-token", .value),
        ("SWITCHYARD_EVENTS_RATE_PER_CLIENT_TOKEN", "--events-rate-per-client-token", .value),
        ("SWITCHYARD_EVENTS_RATE_PER_ADDRESS", "--events-rate-per-address", .value),
        ("SWITCHYARD_DELTA_VERSIONS", "--delta-versions", .value),
        ("SWITCHYARD_MAX_BODY_SIZE", "--max-body-size", .value),
        ("SWITCHYARD_MAX_CONNECTIONS", "--max-connections", .value),
        ("SWITCHYARD_MAX_CONNECTIONS_PER_ADDRESS", "--max-connections-per-address", .value),
        ("SWITCHYARD_LISTEN_BACKLOG", "--listen-backlog", .value),
        ("SWITCHYARD_IDLE_TIMEOUT", "--idle-timeout", .value),
        ("SWITCHYARD_HEADER_TIMEOUT", "--header-timeout", .value),
        ("SWITCHYARD_OPEN_METRICS", "--open-metrics", .flag(inverted: false)),
        ("SWITCHYARD_METRICS_REQUIRE_TOKEN", "--metrics-require-token", .flag(inverted: false)),
        ("SWITCHYARD_CONSOLE", "--console", .flag(inverted: true)),
        ("SWITCHYARD_DEFAULT_NAMESPACE", "--default-namespace", .value),
        ("SWITCHYARD_OFREP_RATE_LIMIT", "--ofrep-rate-limit", .value),
        ("SWITCHYARD_GUARD_WEBHOOK", "--guard-webhook", .value),
        ("SWITCHYARD_GUARD_WEBHOOK_SECRET_FILE", "--guard-webhook-secret-file", .value),
        ("SWITCHYARD_RELEASE_INTERVAL", "--release-interval", .value),
        ("SWITCHYARD_TRUSTED_PROXIES", "--trusted-proxies", .value),
        ("SWITCHYARD_FORWARDED_HEADER", "--forwarded-header", .value),
    ]

    /// The arguments the set variables stand for, each variable's apart, leaving out options the command line gives.
    ///
    /// - Throws: `ValidationError` for a flag variable that is not a yes or a no.
    static func arguments(for commandLine: [String], environment: [String: String]) throws -> [(
        name: String, arguments: [String]
    )] {
        func given(_ option: String) -> Bool {
            let negated = "--no-" + option.dropFirst(2)
            return commandLine.contains { $0 == option || $0.hasPrefix(option + "=") || $0 == negated }
        }
        var result: [(name: String, arguments: [String])] = []
        for (name, option, kind) in variables {
            guard let value = environment[name], !value.isEmpty, !given(option) else { continue }
            switch kind {
            case .value:
                result.append((name, ["\(option)=\(value)"]))
            case .flag(let inverted):
                switch value.lowercased() {
                case "1", "true", "yes", "on": result.append((name, [option]))
                case "0", "false", "no", "off": if inverted { result.append((name, ["--no-" + option.dropFirst(2)])) }
                default: throw ValidationError("\(name)='\(value)' is not a yes or no: set it to 1 or 0.")
                }
            }
        }
        return result
    }

    /// Variables whose values may hold a secret, never repeated in an error.
    static let secretVariables: Set<String> = ["SWITCHYARD_DATABASE", "SWITCHYARD_GUARD_WEBHOOK"]

    /// Parses the command line with the environment's options, saying which variable is at fault when one is.
    static func parse(_ commandLine: [String], environment: [String: String]) throws -> Flagsd {
        let fromEnvironment = try arguments(for: commandLine, environment: environment)
        do {
            return try Flagsd.parse(commandLine + fromEnvironment.flatMap(\.arguments))
        } catch {
            // The command line alone fails the same way: its own error. Else the first variable that makes it fail.
            guard !fromEnvironment.isEmpty, (try? Flagsd.parse(commandLine)) != nil else { throw error }
            for (name, arguments) in fromEnvironment {
                do {
                    _ = try Flagsd.parse(commandLine + arguments)
                } catch {
                    // A value that may hold a secret (a password in a URL, a receiver's token) is not repeated: errors
                    // end up in journals and container logs.
                    let shown = secretVariables.contains(name) ? "" : "='\(environment[name] ?? "")'"
                    throw ValidationError("\(name)\(shown): \(Flagsd.message(for: error))")
                }
            }
            throw error
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
