import Foundation
public import Logging
import SwitchyardCore
import SwitchyardFlagFiles
public import SwitchyardStorage

/// What `bootstrap` did on this start.
public struct BootstrapReport: Sendable {
    /// The namespaces created from flag files (only on a store without namespaces).
    public var seededNamespaces: [String] = []
    /// A generated first admin token: print it once; the store keeps only its hash.
    public var generatedAdminToken: String?
    /// Whether the first admin token came from `SWITCHYARD_ADMIN_TOKEN`.
    public var adminTokenFromEnvironment = false
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
///   - logger: where to report what happened.
/// - Throws: `BootstrapError` when the flag files are invalid or the admin token is too short.
public func bootstrap(store: any FlagStore, flagsDirectory: String?, adminToken: String?, logger: Logger) async throws -> BootstrapReport {
    var report = BootstrapReport()
    let author = ChangeAuthor(actor: "flagsd", source: .apply, reason: "first start: seeded from flag files")
    if let flagsDirectory, try await store.namespaces().isEmpty {
        let directory = FlagDirectory(reading: flagsDirectory)
        if directory.filePaths.isEmpty {
            logger.notice("no flag files to seed from; starting without namespaces", metadata: ["flags": .string(flagsDirectory)])
        } else if !directory.problems.isEmpty {
            throw BootstrapError(description: "the flag files in \(flagsDirectory) are invalid, so flagsd cannot seed from them (fix them, or pass --flags with another folder):\n"
                + directory.problems.map(\.description).joined(separator: "\n"))
        } else {
            for file in directory.files {
                let request = ChangeRequest(author: author, summary: "seeded namespace \(file.namespace) from \(file.path)")
                do {
                    _ = try await store.createNamespace(file.flagSet, reasonPolicy: .kills, request: request)
                } catch let error as StorageError where error.kind == .alreadyExists {
                    // Another instance sharing the database seeded it first.
                    logger.info("namespace seeded by another instance", metadata: ["namespace": .string(file.namespace)])
                    continue
                }
                report.seededNamespaces.append(file.namespace)
                logger.info("seeded namespace from flag file", metadata: ["namespace": .string(file.namespace), "file": .string(file.path)])
            }
        }
    }
    let tokens = try await store.tokens()
    if tokens.isEmpty {
        let admin = ChangeAuthor(actor: "flagsd", source: .apply, reason: "first start: first admin token")
        if let adminToken {
            guard adminToken.count >= TokenSecret.minimumLength, !adminToken.contains(where: \.isWhitespace) else {
                throw BootstrapError(description: "SWITCHYARD_ADMIN_TOKEN must be at least \(TokenSecret.minimumLength) characters without spaces (generate one with: openssl rand -hex 24)")
            }
            let record = TokenRecord(id: TokenSecret.newID(), name: "admin", role: .admin, namespaces: nil,
                                     createdAt: .now, createdBy: "flagsd")
            do {
                try await store.createToken(StoredToken(record: record, secretHash: TokenSecret.hash(adminToken)), by: admin)
                report.adminTokenFromEnvironment = true
            } catch let error as StorageError where error.kind == .alreadyExists {
                logger.info("the first admin token was created by another instance sharing the database")
            }
        } else {
            do {
                let (_, secret) = try await store.issueToken(name: "admin", role: .admin, namespaces: nil, by: admin)
                report.generatedAdminToken = secret
            } catch let error as StorageError where error.kind == .alreadyExists {
                logger.info("the first admin token was created (and printed) by another instance sharing the database")
            }
        }
    } else if let adminToken, !tokens.contains(where: { $0.secretHash == TokenSecret.hash(adminToken) }) {
        logger.warning("SWITCHYARD_ADMIN_TOKEN is ignored: the database has tokens already (manage them with POST /v1/tokens or flagctl tokens)")
    }
    return report
}
