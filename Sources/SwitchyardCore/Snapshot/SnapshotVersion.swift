/// Which snapshot of a namespace: the store's epoch (a new one whenever the namespace's history restarts, so
/// versions are never compared across it) and the version (every change takes the next one).
///
/// Its HTTP form is the entity tag `"<epoch>.<version>"`: flagsd sends it as `ETag` with a namespace and a
/// snapshot, a change names its base in `If-Match`, and a client names what it holds in `If-None-Match`. This
/// type writes and reads that form; nothing else does.
///
/// ```swift
/// let held = SnapshotVersion(entityTag: "W/\"9f2c.41\"")   // epoch "9f2c", version 41
/// held?.entityTag                                        // "\"9f2c.41\""
/// ```
public struct SnapshotVersion: Sendable, Hashable, CustomStringConvertible {
    public var epoch: String
    public var version: Int64

    public init(epoch: String, version: Int64) {
        self.epoch = epoch
        self.version = version
    }

    /// Reads an entity tag `"<epoch>.<version>"`, strong or weak (`W/"…"`), with spaces around it; nil for any
    /// other text (an opaque tag of another resource, `*`, a version that is not decimal digits).
    ///
    /// Reads the text's UTF-8 bytes: every snapshot poll reads one, so this stays off Foundation and characters.
    public init?(entityTag: some StringProtocol) {
        var bytes = Substring(entityTag).utf8[...]
        while bytes.first == UInt8(ascii: " ") { bytes = bytes.dropFirst() }
        while bytes.last == UInt8(ascii: " ") { bytes = bytes.dropLast() }
        if bytes.starts(with: "W/".utf8) { bytes = bytes.dropFirst(2) }
        guard bytes.count >= 2, bytes.first == UInt8(ascii: "\""), bytes.last == UInt8(ascii: "\"") else { return nil }
        let inner = bytes.dropFirst().dropLast()
        guard let dot = inner.lastIndex(of: UInt8(ascii: ".")), dot != inner.startIndex,
            case let digits = inner[inner.index(after: dot)...],
            digits.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }),
            let version = Int64(Substring(digits))
        else { return nil }
        self.init(epoch: String(Substring(inner[..<dot])), version: version)
    }

    /// The strong entity tag: `"<epoch>.<version>"`.
    public var entityTag: String { "\"\(epoch).\(version)\"" }

    public var description: String { entityTag }
}

extension Snapshot {
    /// Which snapshot this is.
    public var snapshotVersion: SnapshotVersion { SnapshotVersion(epoch: epoch, version: version) }

    /// The strong entity tag of this snapshot: `"<epoch>.<version>"`.
    public var entityTag: String { snapshotVersion.entityTag }
}
