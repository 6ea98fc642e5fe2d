import Foundation
package import Hummingbird
package import Metrics
import SwitchyardCore
package import SwitchyardStorage
package import SwitchyardWire
import Synchronization

/// Verifies bearer tokens against the stored hashes and checks roles and namespaces.
///
/// Tokens are cached in memory by the SHA-256 of their secret, reloaded after every token change made through
/// this process or notified by the store, and at most `maximumAge` after the last load (for changes made by other
/// instances). While the database is unreachable, the cached tokens stay valid (degraded mode), and a token not
/// in the cache gets 503 rather than 401, as it cannot be checked. The final comparison of digests takes
/// constant time.
package final class Authenticator: Sendable {
    private struct Cache {
        var tokens: [TokenDigest: StoredToken] = [:]
        var loadedAt: ContinuousClock.Instant?
        /// Why the last reload failed; nil after a successful one.
        var reloadFailure: StorageError?
    }

    private let store: any FlagStore
    private let cache = Mutex(Cache())
    private let clock = ContinuousClock()
    private let maximumAge: Duration
    private let metricsFactory: any MetricsFactory

    package init(store: any FlagStore, maximumAge: Duration = .seconds(10), metricsFactory: any MetricsFactory) {
        self.store = store
        self.maximumAge = maximumAge
        self.metricsFactory = metricsFactory
    }

    /// Loads every token from the store.
    package func reload() async throws {
        let tokens: [StoredToken]
        do {
            tokens = try await store.tokens()
        } catch {
            let failure =
                error as? StorageError ?? StorageError(.unavailable, "cannot read tokens", diagnostic: "\(error)")
            cache.withLock { $0.reloadFailure = failure }
            throw error
        }
        let now = clock.now
        cache.withLock { cache in
            cache.tokens = Dictionary(
                tokens.map { (TokenDigest($0.secretHash), $0) }, uniquingKeysWith: { first, _ in first })
            cache.loadedAt = now
            cache.reloadFailure = nil
        }
    }

    /// The live token a request presents (`Authorization: Bearer …`).
    ///
    /// - Throws: `APIError` 401 when the token is missing, unknown or revoked.
    package func authenticate(_ request: Request) async throws -> TokenRecord {
        guard let secret = Self.bearerToken(request) else {
            fail("missing")
            throw APIError.unauthorized(
                "this route needs a token: send 'Authorization: Bearer <token>' (create tokens with POST /v1/tokens or flagctl tokens create)"
            )
        }
        return try await authenticate(secret: secret)
    }

    /// The live token with a secret, however the request presented it.
    ///
    /// - Parameters:
    ///   - secret: the token's secret.
    ///   - presentedAs: how the request sent it, for the error message (`bearer token`, `X-API-Key`).
    /// - Throws: `APIError` 401 when the token is unknown or revoked; a `StorageError` when tokens cannot be
    ///   reloaded.
    package func authenticate(secret: String, presentedAs: String = "bearer token") async throws -> TokenRecord {
        let hash = TokenSecret.hash(secret)
        // One request reloads a stale cache; the others go on with what is cached meanwhile.
        let now = clock.now
        let reloads = cache.withLock { cache in
            guard cache.loadedAt.map({ now - $0 > maximumAge }) ?? true else { return false }
            cache.loadedAt = now
            return true
        }
        if reloads {
            // Degraded mode: a store that does not answer leaves the cached tokens in use.
            do {
                try await reload()
            } catch {
                Counter(label: "flagsd_token_reload_failures_total", factory: metricsFactory).increment()
            }
        }
        let (found, failure) = cache.withLock { ($0.tokens[TokenDigest(hash)], $0.reloadFailure) }
        guard let stored = found, TokenSecret.constantTimeEquals(stored.secretHash, hash) else {
            if let failure {
                throw StorageError(
                    .unavailable,
                    "the \(presentedAs) cannot be checked while the database is unreachable (\(failure.message))")
            }
            fail("invalid")
            throw APIError.unauthorized(
                "the \(presentedAs) is not valid (check for a typo, or ask an admin for a new token)")
        }
        guard !stored.record.isRevoked else {
            fail("revoked")
            throw APIError.unauthorized("token '\(stored.record.name)' was revoked; ask an admin for a new token")
        }
        return stored.record
    }

    /// The live token a request presents, from the cache alone, without waiting and without counting failures:
    /// for the snapshot fast path, which sends every request this does not accept to `authorize`.
    ///
    /// - Parameters:
    ///   - request: the request.
    ///   - lastPresented: what this connection presented last; when the request presents the same
    ///     `Authorization` header (compared in constant time), its digest is reused instead of hashing the secret
    ///     again. Updated with this request's.
    /// - Returns: the token; nil when the request presents none, the token is unknown or revoked, or the cache is
    ///   due for a reload (the same age `authenticate` reloads at).
    package func cachedToken(_ request: Request, lastPresented: inout PresentedToken?) -> TokenRecord? {
        guard let header = request.headers.value(.authorization) else { return nil }
        let hash: [UInt8]
        if let last = lastPresented, TokenSecret.constantTimeEquals(last.header, header.utf8) {
            hash = last.secretHash
        } else {
            guard let secret = Self.bearerToken(header) else { return nil }
            hash = TokenSecret.hash(secret)
            lastPresented = PresentedToken(header: Array(header.utf8), secretHash: hash)
        }
        let now = clock.now
        return cache.withLock { cache -> TokenRecord? in
            guard let loadedAt = cache.loadedAt, now - loadedAt <= maximumAge,
                let stored = cache.tokens[TokenDigest(hash)], TokenSecret.constantTimeEquals(stored.secretHash, hash),
                !stored.record.isRevoked
            else { return nil }
            return stored.record
        }
    }

    /// The token of a request, when it has at least `role` and may use `namespace`.
    ///
    /// - Throws: `APIError` 401 (see `authenticate`), 403 when the role is too low or the namespace not allowed.
    @discardableResult
    package func authorize(_ request: Request, role: Role, namespace: String? = nil) async throws -> TokenRecord {
        let token = try await authenticate(request)
        guard token.role >= role else {
            fail("role")
            throw APIError.forbidden("this needs the \(role) role; token '\(token.name)' has the \(token.role) role")
        }
        if let namespace, !token.allows(namespace: namespace) {
            fail("namespace")
            let allowed = token.namespaces?.joined(separator: ", ") ?? ""
            throw APIError.forbidden(
                "token '\(token.name)' may not use namespace '\(namespace)' (it is limited to \(allowed))")
        }
        return token
    }

    package func fail(_ reason: String) {
        Counter(label: "flagsd_auth_failures_total", dimensions: [("reason", reason)], factory: metricsFactory)
            .increment()
    }

    /// The token of `Authorization: Bearer <token>` (scheme case-insensitive), without Foundation's string
    /// scanning: this runs on every request.
    static func bearerToken(_ request: Request) -> String? {
        request.headers.value(.authorization).flatMap { bearerToken($0) }
    }

    /// The token of an `Authorization` header's value, `Bearer <token>`.
    static func bearerToken(_ header: String) -> String? {
        let bytes = header.utf8
        let scheme = "bearer ".utf8
        guard bytes.count > scheme.count,
            zip(bytes, scheme).allSatisfy({ $1 == 0x20 ? $0 == 0x20 : ($0 | 0x20) == $1 })
        else { return nil }
        let token = bytes.dropFirst(scheme.count).drop { $0 == 0x20 }
        var end = token.endIndex
        while end > token.startIndex, bytes[bytes.index(before: end)] == 0x20 { end = bytes.index(before: end) }
        let trimmed = token[..<end]
        return trimmed.isEmpty ? nil : String(Substring(trimmed))
    }
}

/// An `Authorization` header a connection presented and the SHA-256 of its secret (`Authenticator.cachedToken`).
package struct PresentedToken: Sendable {
    let header: [UInt8]
    let secretHash: [UInt8]
}

/// A token's SHA-256 as the cache's key: hashed as four words rather than byte by byte. (Lookups by it are not
/// what keeps comparisons constant-time: a found token's digest is compared in constant time after.)
struct TokenDigest: Hashable {
    let words: (UInt64, UInt64, UInt64, UInt64)

    /// The 32 bytes of a SHA-256 as four words (a shorter array is padded with zeros).
    init(_ digest: [UInt8]) {
        func word(_ at: Int) -> UInt64 {
            (at..<(at + 8)).reduce(0) { $0 << 8 | UInt64($1 < digest.count ? digest[$1] : 0) }
        }
        words = (word(0), word(8), word(16), word(24))
    }

    static func == (lhs: TokenDigest, rhs: TokenDigest) -> Bool {
        lhs.words == rhs.words
    }

    func hash(into hasher: inout Hasher) {
        hasher.combine(words.0)
        hasher.combine(words.1)
        hasher.combine(words.2)
        hasher.combine(words.3)
    }
}

extension TokenSecret {
    /// Compares stored bytes with a string's UTF-8 in time that depends only on their lengths.
    static func constantTimeEquals(_ bytes: [UInt8], _ utf8: String.UTF8View) -> Bool {
        guard bytes.count == utf8.count else { return false }
        var difference: UInt8 = 0
        for (left, right) in zip(bytes, utf8) { difference |= left ^ right }
        return difference == 0
    }
}
