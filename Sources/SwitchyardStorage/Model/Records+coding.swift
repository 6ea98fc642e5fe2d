public import Foundation
public import SwitchyardCore
public import SwitchyardWire

extension TokenRecord {
    /// The token as JSON, without any secret: for audit entries and the API.
    public var tree: JSONValue { body().json }

    /// The token as the API's body (`SwitchyardWire`), with the secret when given (only on creation).
    public func body(secret: String? = nil) -> TokenBody {
        TokenBody(
            id: id, name: name, role: role.rawValue, namespaces: namespaces, ratePerMinute: ratePerMinute,
            createdAt: createdAt.iso8601, createdBy: createdBy, revokedAt: revokedAt?.iso8601, secret: secret)
    }
}

extension Date {
    /// Milliseconds since 1970, as stored.
    package var milliseconds: Int64 { Int64((timeIntervalSince1970 * 1000).rounded(.down)) }

    package init(milliseconds: Int64) {
        self.init(timeIntervalSince1970: Double(milliseconds) / 1000)
    }

    /// RFC 3339 with milliseconds, in UTC: `2026-11-22T04:50:35.123Z`.
    public var iso8601: String {
        formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true))
    }

    /// Parses RFC 3339 text, with or without fractional seconds.
    public init?(iso8601 text: String) {
        if let date = try? Date(text, strategy: Date.ISO8601FormatStyle(includingFractionalSeconds: true)) {
            self = date
        } else if let date = try? Date(text, strategy: Date.ISO8601FormatStyle()) {
            self = date
        } else {
            return nil
        }
    }
}
