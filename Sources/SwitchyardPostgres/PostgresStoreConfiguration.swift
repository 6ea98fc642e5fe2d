import Foundation

/// Where the PostgreSQL backend connects, and how it behaves when the database is slow or gone.
///
/// Usually read from a URL (`--database`):
///
/// ```swift
/// let configuration = try PostgresStoreConfiguration(url: "postgres://flagsd:secret@db.internal:5432/switchyard?sslmode=require")
/// ```
public struct PostgresStoreConfiguration: Sendable, Hashable {
    /// How the connection is encrypted (`sslmode` in the URL, with libpq's names).
    ///
    /// Only `verifyFull` protects the password and the data from someone on the network path: `prefer` and
    /// `require` encrypt without checking who answers, so an attacker in the middle can answer instead (and
    /// `prefer` falls back to plain TCP when the server, or the attacker, offers no TLS).
    public enum TLSMode: String, Sendable, Hashable, CaseIterable {
        /// Plain TCP (loopback, or a network you trust).
        case disable
        /// TLS when the server offers it, without verifying its certificate: proof against eavesdropping only
        /// while nobody tampers with the connection (libpq's default; flagsd's for a loopback host).
        case prefer
        /// TLS, without verifying the server's certificate: proof against eavesdropping, not against someone who
        /// answers in the server's place.
        case require
        /// TLS, verifying the certificate chain (against `rootCertificates`, or the system's) and the host name
        /// (flagsd's default for a host that is not loopback).
        case verifyFull = "verify-full"

        /// `verifyFull`, except `prefer` for a loopback host (`localhost`, `127.x.x.x`, `::1`), where no network
        /// path lies between flagsd and the database.
        public static func defaultMode(forHost host: String) -> TLSMode {
            PostgresStoreConfiguration.isLoopback(host) ? .prefer : .verifyFull
        }
    }

    public var host: String
    public var port: Int
    public var username: String
    public var password: String?
    public var database: String
    public var tls: TLSMode
    /// A PEM file of the certificate authorities `verifyFull` trusts (`sslrootcert`), for a server whose
    /// certificate a private authority signed (a cloud provider's, your own); nil: the system's.
    public var rootCertificates: String?
    /// The most connections one flagsd process opens for queries (one more listens for notifications).
    public var maximumConnections: Int
    /// The most connections one flagsd process opens for client events (`events_pool_size`), apart from the
    /// others, so that events never take the connections flag changes need.
    public var maximumEventConnections: Int
    /// The longest a store operation may take (waiting for a connection included) before it fails with
    /// `unavailable`. A slow operation alone never makes the database count as unreachable: it asks for a probe,
    /// and the database counts as unreachable when a connection fails or three probes in a row get no answer
    /// within this time.
    public var operationTimeout: Duration
    /// How often an unreachable database is probed, and the longest pause between attempts to listen again.
    public var retryInterval: Duration
    /// `application_name`, shown in `pg_stat_activity`.
    public var applicationName: String

    /// - Parameter tls: how the connection is encrypted; nil: `TLSMode.defaultMode(forHost:)`.
    public init(
        host: String = "127.0.0.1", port: Int = 5432, username: String = "postgres", password: String? = nil,
        database: String = "switchyard", tls: TLSMode? = nil, rootCertificates: String? = nil,
        maximumConnections: Int = 10,
        maximumEventConnections: Int = 2, operationTimeout: Duration = .seconds(5),
        retryInterval: Duration = .seconds(1), applicationName: String = "flagsd"
    ) {
        self.host = host
        self.port = port
        self.username = username
        self.password = password
        self.database = database
        self.tls = tls ?? TLSMode.defaultMode(forHost: host)
        self.rootCertificates = rootCertificates
        self.maximumConnections = maximumConnections
        self.maximumEventConnections = maximumEventConnections
        self.operationTimeout = operationTimeout
        self.retryInterval = retryInterval
        self.applicationName = applicationName
    }

    /// Whether a `--database` value names PostgreSQL (`postgres://` or `postgresql://`).
    public static func isPostgresURL(_ text: String) -> Bool {
        text.hasPrefix("postgres://") || text.hasPrefix("postgresql://")
    }

    /// Reads `postgres://[user[:password]@]host[:port]/database[?sslmode=…&pool_size=…&timeout=…]`.
    ///
    /// Query parameters: `sslmode` (`disable`, `prefer`, `require`, `verify-full`; default `verify-full`, or
    /// `prefer` for a loopback host), `sslrootcert` (a PEM file of trusted authorities, with `verify-full`),
    /// `pool_size` (connections per process, default 10), `events_pool_size` (more connections per process, for
    /// client events only, default 2), `timeout` (seconds an operation may take, default 5),
    /// `application_name`.
    /// The user defaults to `postgres`, the port to 5432, the database to `switchyard`; percent-encode special
    /// characters of the password.
    /// - Throws: `PostgresConfigurationError` naming the part at fault.
    public init(url text: String) throws(PostgresConfigurationError) {
        self.init()
        guard Self.isPostgresURL(text), let components = URLComponents(string: text) else {
            throw PostgresConfigurationError(
                "'\(Self.redacted(text))' is not a PostgreSQL URL; use postgres://USER:PASSWORD@HOST:PORT/DATABASE")
        }
        guard let host = components.percentEncodedHost, !host.isEmpty else {
            throw PostgresConfigurationError(
                "'\(Self.redacted(text))' names no host; use postgres://USER:PASSWORD@HOST:PORT/DATABASE")
        }
        self.host = host.removingPercentEncoding ?? host
        tls = TLSMode.defaultMode(forHost: self.host)
        if let port = components.port {
            guard (1...65535).contains(port) else {
                throw PostgresConfigurationError("port \(port) in the database URL is not a port (1 to 65535)")
            }
            self.port = port
        }
        if let user = components.percentEncodedUser, !user.isEmpty { username = user.removingPercentEncoding ?? user }
        if let password = components.percentEncodedPassword {
            self.password = password.removingPercentEncoding ?? password
        }
        let path = components.percentEncodedPath.drop { $0 == "/" }
        if !path.isEmpty {
            guard !path.contains("/") else {
                throw PostgresConfigurationError("the database URL's path '/\(path)' must be a single database name")
            }
            database = String(path).removingPercentEncoding ?? String(path)
        }
        for item in components.queryItems ?? [] {
            let value = item.value ?? ""
            switch item.name {
            case "sslmode":
                guard let mode = TLSMode(rawValue: value) else {
                    throw PostgresConfigurationError(
                        "sslmode=\(value) in the database URL is not one of \(TLSMode.allCases.map(\.rawValue).joined(separator: ", "))"
                    )
                }
                tls = mode
            case "sslrootcert":
                guard FileManager.default.isReadableFile(atPath: value) else {
                    throw PostgresConfigurationError(
                        "sslrootcert=\(value) in the database URL is not a readable file (a PEM file of the certificate authorities to trust)"
                    )
                }
                rootCertificates = value
            case "pool_size":
                guard let size = Int(value), (1...1000).contains(size) else {
                    throw PostgresConfigurationError(
                        "pool_size=\(value) in the database URL is not a number of connections between 1 and 1000")
                }
                maximumConnections = size
            case "events_pool_size":
                guard let size = Int(value), (1...100).contains(size) else {
                    throw PostgresConfigurationError(
                        "events_pool_size=\(value) in the database URL is not a number of connections between 1 and 100"
                    )
                }
                maximumEventConnections = size
            case "timeout":
                guard let seconds = Double(value), seconds > 0, seconds <= 600 else {
                    throw PostgresConfigurationError(
                        "timeout=\(value) in the database URL is not a number of seconds above 0 and at most 600")
                }
                operationTimeout = .milliseconds(Int64(seconds * 1000))
            case "application_name":
                applicationName = value
            default:
                throw PostgresConfigurationError(
                    "the database URL has an unknown parameter '\(item.name)'; known: sslmode, sslrootcert, pool_size, events_pool_size, timeout, application_name"
                )
            }
        }
        if rootCertificates != nil, tls != .verifyFull {
            throw PostgresConfigurationError(
                "sslrootcert in the database URL needs sslmode=verify-full (sslmode=\(tls.rawValue) does not check the server's certificate)"
            )
        }
    }

    /// Whether a host names this machine: `localhost`, an IPv4 address in 127.0.0.0/8, or `::1`.
    static func isLoopback(_ host: String) -> Bool {
        let bare = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        if bare.lowercased() == "localhost" || bare == "::1" { return true }
        let octets = bare.split(separator: ".", omittingEmptySubsequences: false)
        return octets.count == 4 && octets[0] == "127" && octets.allSatisfy { UInt8($0) != nil }
    }

    /// The URL without its password, for logs and messages.
    public var displayURL: String {
        "postgres://\(username)@\(host.contains(":") ? "[\(host)]" : host):\(port)/\(database)"
    }

    /// A URL text with its password replaced by `***`.
    static func redacted(_ text: String) -> String {
        guard let at = text.lastIndex(of: "@"), let scheme = text.range(of: "://"), scheme.upperBound < at else {
            return text
        }
        let credentials = text[scheme.upperBound..<at]
        guard let colon = credentials.firstIndex(of: ":") else { return text }
        return String(text[..<colon]) + ":***" + String(text[at...])
    }
}

/// A database URL that cannot be used, with what is wrong in it.
public struct PostgresConfigurationError: Error, Sendable, Hashable, CustomStringConvertible {
    public let description: String

    init(_ description: String) {
        self.description = description
    }
}
