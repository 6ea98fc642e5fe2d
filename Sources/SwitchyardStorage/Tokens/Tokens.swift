public import Foundation
import SwitchyardCore
public import SwitchyardWire

/// An API token as stored: never the secret itself, only its SHA-256.
///
/// Its wire form is `TokenBody` (times as text, the role by name, the secret once), made in `body(secret:)`.
public struct TokenRecord: Sendable, Hashable {
    /// A public id (`tok_…`) for listing and revoking.
    public var id: String
    /// A unique name among live tokens; changes record it as their actor.
    public var name: String
    public var role: Role
    /// The namespaces the token may use; nil for every namespace.
    public var namespaces: [String]?
    /// The most OFREP evaluation requests per minute the token may send; nil for the server's default.
    public var ratePerMinute: Int?
    public var createdAt: Date
    public var createdBy: String
    public var revokedAt: Date?

    public init(
        id: String, name: String, role: Role, namespaces: [String]?, ratePerMinute: Int? = nil, createdAt: Date,
        createdBy: String, revokedAt: Date? = nil
    ) {
        self.id = id
        self.name = name
        self.role = role
        self.namespaces = namespaces
        self.ratePerMinute = ratePerMinute
        self.createdAt = createdAt
        self.createdBy = createdBy
        self.revokedAt = revokedAt
    }

    public var isRevoked: Bool { revokedAt != nil }

    /// Whether the token may use a namespace.
    public func allows(namespace: String) -> Bool {
        namespaces?.contains(namespace) ?? true
    }
}

/// A token record with the SHA-256 of its secret, for verification.
public struct StoredToken: Sendable, Hashable {
    public var record: TokenRecord
    public var secretHash: [UInt8]

    public init(record: TokenRecord, secretHash: [UInt8]) {
        self.record = record
        self.secretHash = secretHash
    }
}

/// Token secrets: generation, hashing and constant-time comparison.
public enum TokenSecret {
    /// The prefix of every generated token, so scanners and people recognise a leaked one.
    public static let prefix = "sy_"
    /// The shortest secret accepted from outside (`SWITCHYARD_ADMIN_TOKEN`).
    public static let minimumLength = 16

    private static let alphabet = Array("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")

    /// A new secret: `sy_<role>_` and 40 random base62 characters (about 238 bits).
    public static func generate(role: Role) -> String {
        var generator = SystemRandomNumberGenerator()
        return generate(role: role, using: &generator)
    }

    /// A new secret from a given source of randomness.
    public static func generate(role: Role, using generator: inout some RandomNumberGenerator) -> String {
        let random = (0..<40).map { _ in alphabet[Int.random(in: 0..<alphabet.count, using: &generator)] }
        return "\(prefix)\(role.rawValue)_\(String(random))"
    }

    /// A new public token id: `tok_` and 12 random base62 characters.
    public static func newID() -> String {
        var generator = SystemRandomNumberGenerator()
        return "tok_" + String((0..<12).map { _ in alphabet[Int.random(in: 0..<alphabet.count, using: &generator)] })
    }

    /// The SHA-256 of a secret, as stored.
    public static func hash(_ secret: String) -> [UInt8] {
        SHA256.digest(Array(secret.utf8))
    }

    /// Compares two digests in time that depends only on their length.
    public static func constantTimeEquals(_ lhs: [UInt8], _ rhs: [UInt8]) -> Bool {
        guard lhs.count == rhs.count else { return false }
        var difference: UInt8 = 0
        for index in lhs.indices { difference |= lhs[index] ^ rhs[index] }
        return difference == 0
    }
}
