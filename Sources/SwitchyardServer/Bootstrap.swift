import Foundation
public import Logging
import SwitchyardCore
import SwitchyardFlagFiles
public import SwitchyardStorage
import SwitchyardWire

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// What `bootstrap` did on this start.
public struct BootstrapReport: Sendable {
    /// The namespaces created from flag files (only on a store without namespaces).
    public var seededNamespaces: [String] = []
    /// A generated first admin token: the store keeps only its hash. Never log it; print it only to a terminal.
    public var generatedAdminToken: String?
    /// Where the generated first admin token was written (mode 0600), when it was.
    public var adminTokenFile: String?
    /// Whether the first admin token came from `SWITCHYARD_ADMIN_TOKEN`.
    public var adminTokenFromEnvironment = false
    /// Whether this start created the metrics token of `SWITCHYARD_METRICS_TOKEN`.
    public var createdMetricsToken = false
}

/// Why flagsd could not start.
public struct BootstrapError: Error, CustomStringConvertible {
    public let description: String
}

/// Prepares a store on start: seeds it from a flag directory when it has no namespace, and creates the first
/// admin token when it has no token.
///
/// - Parameters:
///   - store: the store.
///   - flagsDirectory: the flag files to seed from (`Flags`); a missing directory seeds nothing.
///   - adminToken: the first admin token's secret (`SWITCHYARD_ADMIN_TOKEN`); generated when nil. Ignored,
///     with a warning, when the store has tokens already.
///   - adminTokenFile: where to write a generated first admin token (mode 0600, its folder created 0700),
///     before it is stored, so that it is never lost; nil keeps it in the report only.
///   - metricsToken: a `metrics` token's secret for the scraper (`SWITCHYARD_METRICS_TOKEN`), created as the token
///     `prometheus` unless a token with that secret exists already, so that a deployment can give flagsd and its
///     Prometheus the same secret before either starts.
///   - logger: where to report what happened.
/// - Throws: `BootstrapError` when the flag files are invalid, the admin token is too short, or a generated one
///   cannot be written to `adminTokenFile`.
public func bootstrap(
    store: any FlagStore, flagsDirectory: String?, adminToken: String?, adminTokenFile: String? = nil,
    metricsToken: String? = nil, logger: Logger
) async throws -> BootstrapReport {
    var report = BootstrapReport()
    let author = ChangeAuthor(actor: "flagsd", source: .apply, reason: "first start: seeded from flag files")
    if let flagsDirectory, try await store.namespaces().isEmpty {
        let directory = FlagDirectory(reading: flagsDirectory)
        if directory.filePaths.isEmpty {
            logger.notice(
                "no flag files to seed from; starting without namespaces", metadata: ["flags": .string(flagsDirectory)])
        } else if !directory.problems.isEmpty {
            throw BootstrapError(
                description:
                    "the flag files in \(flagsDirectory) are invalid, so flagsd cannot seed from them (fix them, or pass --flags with another folder):\n"
                    + directory.problems.map(\.description).joined(separator: "\n"))
        } else {
            for file in directory.files {
                let request = ChangeRequest(
                    author: author, summary: "seeded namespace \(file.namespace) from \(file.path)")
                do {
                    _ = try await store.createNamespace(file.flagSet, reasonPolicy: .kills, request: request)
                } catch let error as StorageError where error.kind == .alreadyExists {
                    // Another instance sharing the database seeded it first.
                    logger.info(
                        "namespace seeded by another instance", metadata: ["namespace": .string(file.namespace)])
                    continue
                }
                report.seededNamespaces.append(file.namespace)
                logger.info(
                    "seeded namespace from flag file",
                    metadata: ["namespace": .string(file.namespace), "file": .string(file.path)])
            }
        }
    }
    let tokens = try await store.tokens()
    if tokens.isEmpty {
        let admin = ChangeAuthor(actor: "flagsd", source: .apply, reason: "first start: first admin token")
        if let adminToken {
            guard adminToken.count >= TokenSecret.minimumLength, !adminToken.contains(where: \.isWhitespace) else {
                throw BootstrapError(
                    description:
                        "SWITCHYARD_ADMIN_TOKEN must be at least \(TokenSecret.minimumLength) characters without spaces (generate one with: openssl rand -hex 24)"
                )
            }
            let record = TokenRecord(
                id: TokenSecret.newID(), name: "admin", role: .admin, namespaces: nil,
                createdAt: .now, createdBy: "flagsd")
            do {
                try await store.createToken(
                    StoredToken(record: record, secretHash: TokenSecret.hash(adminToken)), by: admin)
                report.adminTokenFromEnvironment = true
            } catch let error as StorageError where error.kind == .alreadyExists {
                logger.info("the first admin token was created by another instance sharing the database")
            }
        } else {
            let secret = TokenSecret.generate(role: .admin)
            if let adminTokenFile {
                do {
                    try writeSecretFile(secret, to: adminTokenFile)
                } catch {
                    throw BootstrapError(
                        description:
                            "cannot write the first admin token to \(adminTokenFile) (\(error)); make its folder writable, or set SWITCHYARD_ADMIN_TOKEN (e.g. openssl rand -hex 24)"
                    )
                }
            }
            let record = TokenRecord(
                id: TokenSecret.newID(), name: "admin", role: .admin, namespaces: nil,
                createdAt: .now, createdBy: "flagsd")
            do {
                try await store.createToken(
                    StoredToken(record: record, secretHash: TokenSecret.hash(secret)), by: admin)
                report.generatedAdminToken = secret
                report.adminTokenFile = adminTokenFile
            } catch {
                // Not stored: the file must not hold a token that does not work.
                if let adminTokenFile { try? FileManager.default.removeItem(atPath: adminTokenFile) }
                guard let error = error as? StorageError, error.kind == .alreadyExists else { throw error }
                logger.info("the first admin token was created by another instance sharing the database")
            }
        }
    } else if let adminToken, !tokens.contains(where: { $0.secretHash == TokenSecret.hash(adminToken) }) {
        logger.warning(
            "SWITCHYARD_ADMIN_TOKEN is ignored: the database has tokens already (manage them with POST /v1/tokens or flagctl tokens)"
        )
    }
    if let metricsToken {
        guard metricsToken.count >= TokenSecret.minimumLength, !metricsToken.contains(where: \.isWhitespace) else {
            throw BootstrapError(
                description:
                    "SWITCHYARD_METRICS_TOKEN must be at least \(TokenSecret.minimumLength) characters without spaces (generate one with: openssl rand -hex 24)"
            )
        }
        let hash = TokenSecret.hash(metricsToken)
        if let known = tokens.first(where: { $0.secretHash == hash }) {
            if known.record.isRevoked {
                logger.warning(
                    "SWITCHYARD_METRICS_TOKEN was revoked: the scraper is refused; give it another secret (flagsd creates a new token for it)"
                )
            }
        } else {
            let record = TokenRecord(
                id: TokenSecret.newID(), name: "prometheus", role: .metrics, namespaces: nil, createdAt: .now,
                createdBy: "flagsd")
            do {
                try await store.createToken(
                    StoredToken(record: record, secretHash: hash),
                    by: ChangeAuthor(
                        actor: "flagsd", source: .apply, reason: "SWITCHYARD_METRICS_TOKEN: the scraper's token"))
                report.createdMetricsToken = true
            } catch let error as StorageError where error.kind == .alreadyExists {
                // Another instance starting at the same time may have created it with this very secret.
                if try await !store.tokens().contains(where: { $0.secretHash == hash }) {
                    logger.warning(
                        "SWITCHYARD_METRICS_TOKEN is not used: a token named prometheus with another secret exists (revoke it with flagctl tokens revoke prometheus, or give the scraper that token)"
                    )
                }
            }
        }
    }
    // Tokens created before client tokens had to name their namespaces.
    let unlimitedClients = tokens.map(\.record).filter { $0.role == .client && $0.namespaces == nil && !$0.isRevoked }
    if !unlimitedClients.isEmpty {
        logger.warning(
            "client tokens valid in every namespace: client tokens ship inside apps, where anyone can read them; replace each with one limited to its app's namespaces (flagctl tokens create NAME --role client --allow NAMESPACE), then revoke it",
            metadata: ["tokens": .array(unlimitedClients.map { .string($0.name) })])
    }
    return report
}

/// Writes a secret to a file that only this user may read (mode 0600, written under another name and renamed
/// into place, so it is never readable by others, not even half-written), creating its folder with mode 0700.
func writeSecretFile(_ secret: String, to path: String) throws {
    let url = URL(fileURLWithPath: path)
    let folder = url.deletingLastPathComponent()
    if !FileManager.default.fileExists(atPath: folder.path) {
        try FileManager.default.createDirectory(
            at: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
    }
    let temporary = folder.appendingPathComponent(".\(url.lastPathComponent).\(UUID().uuidString)").path
    let descriptor = open(temporary, O_WRONLY | O_CREAT | O_EXCL, 0o600)
    guard descriptor >= 0 else { throw SecretFileError(operation: "create", errno: errno) }
    let bytes = Array((secret + "\n").utf8)
    var written = 0
    while written < bytes.count {
        let count = bytes[written...].withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        guard count > 0 else {
            let failure = SecretFileError(operation: "write", errno: errno)
            close(descriptor)
            unlink(temporary)
            throw failure
        }
        written += count
    }
    let synced = fsync(descriptor) == 0
    close(descriptor)
    guard synced, rename(temporary, path) == 0 else {
        let failure = SecretFileError(operation: synced ? "rename" : "sync", errno: errno)
        unlink(temporary)
        throw failure
    }
}

/// A system call on a secret file failed.
struct SecretFileError: Error, CustomStringConvertible {
    let operation: String
    let errno: Int32

    var description: String { "\(operation): \(String(cString: strerror(errno)))" }
}
