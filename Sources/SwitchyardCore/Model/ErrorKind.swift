/// The kind of an error, for callers to compare: `error.kind == .checksumMismatch`.
///
/// A struct over a name rather than an enum, so a new kind never breaks a caller's `switch` (swift-nio and
/// AsyncHTTPClient shape their errors the same way). `Owner` is the error the kinds belong to; each error declares
/// its kinds in an `extension ErrorKind where Owner == ThatError`, and only this package makes kinds.
public struct ErrorKind<Owner>: Sendable, Hashable, CustomStringConvertible {
    /// The kind's name, as `description` prints it.
    public let name: String

    package init(_ name: String) {
        self.name = name
    }

    public var description: String { name }
}
