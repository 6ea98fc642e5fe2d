/// The snapshot document clients download: canonical JSON with a checksum.
///
/// ```json
/// {"checksum":"sha256:…","epoch":"…","flags":{…},"format":1,"kill_switches":{…},"namespace":"rider",
///  "plugin_points":[…],"version":42}
/// ```
///
/// Rollouts are integer basis points. The checksum is the SHA-256 of the canonical form of the document without
/// its `checksum` member (members sorted by the UTF-8 bytes of their keys, no whitespace, integers in
/// decimal, floats in shortest round-trip form with a decimal point, only `"`, `\` and control characters
/// escaped), so a truncated or altered document is detected. `docs/snapshot.md` describes the format and
/// `docs/schemas/snapshot.schema.json` its JSON Schema.
public enum SnapshotDocument {
    /// The format version written by this library; a reader refuses a newer format.
    public static let format: Int64 = 1
    /// The largest document a reader accepts.
    public static let maximumSize = 64 << 20

    static let headerFields = ["format", "epoch", "version", "checksum"]

    /// Encodes a snapshot as canonical JSON with its checksum.
    public static func encode(_ snapshot: Snapshot) -> [UInt8] {
        // Crash guard policies are flagsd's own business: clients neither need nor know them.
        var tree = snapshot.flagSet.tree(unit: .basisPoints, includingCrashGuard: false)
        tree["format"] = .int64(format)
        tree["epoch"] = .string(snapshot.epoch)
        tree["version"] = .int64(snapshot.version)
        let body = JSONValue.object(tree).serialized(.canonical)
        tree["checksum"] = .string("sha256:" + SHA256.hexDigest(body))
        return JSONValue.object(tree).serialized(.canonical)
    }

    /// Decodes untrusted bytes: parses strictly, verifies the format and checksum, then reads and validates
    /// the flag set.
    ///
    /// Never traps, whatever the bytes.
    /// - Throws: `SnapshotDecodingError` saying what is wrong.
    public static func decode(_ bytes: some Collection<UInt8>) throws(SnapshotDecodingError) -> Snapshot {
        guard bytes.count <= maximumSize else {
            throw SnapshotDecodingError(.tooLarge, "the document is \(bytes.count) bytes; the limit is \(maximumSize)")
        }
        let tree: JSONValue
        do {
            tree = try JSONValue.parse(bytes)
        } catch {
            throw SnapshotDecodingError(.malformed, "not valid JSON: \(error)")
        }
        guard case .object(var object) = tree else {
            throw SnapshotDecodingError(.malformed, "the document must be a JSON object, not \(tree.typeDescription)")
        }
        guard case .number(let formatNumber)? = object["format"], let format = formatNumber.int64Value else {
            throw SnapshotDecodingError(.malformed, "format: is required and must be an integer")
        }
        guard format <= Self.format, format >= 1 else {
            throw SnapshotDecodingError(.unsupportedFormat, "format \(format) is not supported (this reader knows format 1)")
        }
        guard case .string(let checksum)? = object["checksum"] else {
            throw SnapshotDecodingError(.malformed, "checksum: is required and must be a string")
        }
        object["checksum"] = nil
        let expected = "sha256:" + SHA256.hexDigest(JSONValue.object(object).serialized(.canonical))
        guard checksum == expected else {
            throw SnapshotDecodingError(.checksumMismatch, "checksum \(checksum) does not match the content (\(expected))")
        }
        guard case .string(let epoch)? = object["epoch"], !epoch.isEmpty, epoch.count <= 128 else {
            throw SnapshotDecodingError(.malformed, "epoch: is required and must be a non-empty string")
        }
        guard case .number(let versionNumber)? = object["version"], let version = versionNumber.int64Value, version >= 0 else {
            throw SnapshotDecodingError(.malformed, "version: is required and must be a non-negative integer")
        }
        let flagSet: FlagSet
        do {
            flagSet = try FlagSet(tree: .object(object), unit: .basisPoints, extraFields: headerFields)
        } catch {
            throw SnapshotDecodingError(.invalid, error.description)
        }
        return Snapshot(epoch: epoch, version: version, flagSet: flagSet)
    }
}

/// Why bytes are not a usable snapshot.
public struct SnapshotDecodingError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What kind of problem it is; new kinds may be added.
    public struct Kind: Sendable, Hashable, CustomStringConvertible {
        fileprivate enum Base: String, Sendable { case tooLarge, malformed, unsupportedFormat, checksumMismatch, invalid }
        fileprivate let base: Base
        fileprivate init(_ base: Base) { self.base = base }

        public static let tooLarge = Kind(.tooLarge)
        public static let malformed = Kind(.malformed)
        public static let unsupportedFormat = Kind(.unsupportedFormat)
        public static let checksumMismatch = Kind(.checksumMismatch)
        /// Well-formed JSON that is not a valid flag set.
        public static let invalid = Kind(.invalid)

        public var description: String { base.rawValue }
    }

    public let kind: Kind
    public let message: String

    init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    public var description: String { "invalid snapshot: \(message)" }
}
