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
        encodeWithChecksum(snapshot).bytes
    }

    /// Encodes a snapshot as canonical JSON, returning its `checksum` member too.
    public static func encodeWithChecksum(_ snapshot: Snapshot) -> (bytes: [UInt8], checksum: String) {
        withChecksum(body: body(of: snapshot))
    }

    /// The document of a canonical body (a JSON object without `checksum`) and its `checksum` member.
    static func withChecksum(body: [UInt8]) -> (bytes: [UInt8], checksum: String) {
        let checksum = Self.checksum(ofBody: body)
        var document = prefix(checksum: checksum)
        document.reserveCapacity(body.count + 90)
        document += body.dropFirst()
        return (document, checksum)
    }

    /// The start of a document up to its body: the checksum sorts first, so the document is
    /// `{"checksum":"sha256:…",` and then the body after its `{`.
    package static func prefix(checksum: String) -> [UInt8] {
        Array(#"{"checksum":""#.utf8) + Array(checksum.utf8) + Array(#"","#.utf8)
    }

    /// The `checksum` member of a snapshot's document: `sha256:` and the hex digest of its canonical form without it.
    public static func checksum(of snapshot: Snapshot) -> String {
        checksum(ofBody: body(of: snapshot))
    }

    /// The `checksum` member of a document whose canonical form without it is `body`.
    ///
    /// - Parameter sha256: computes SHA-256 (flagsd passes swift-crypto's, which uses the processor's SHA
    ///   instructions; the core's own serves every platform).
    package static func checksum(ofBody body: [UInt8], sha256: ([UInt8]) -> [UInt8] = SHA256.digest) -> String {
        "sha256:" + SHA256.hex(sha256(body))
    }

    /// The canonical form of a snapshot's document without its `checksum` member.
    static func body(of snapshot: Snapshot) -> [UInt8] {
        // Crash guard policies and release plans are flagsd's own business: clients neither need nor know them.
        var tree = snapshot.flagSet.tree(unit: .basisPoints, includingServerPolicies: false)
        tree["format"] = .int64(format)
        tree["epoch"] = .string(snapshot.epoch)
        tree["version"] = .int64(snapshot.version)
        return JSONValue.object(tree).serialized(.canonical)
    }

    /// The canonical form of a snapshot's document without its `checksum`, `flags`, `kill_switches` and
    /// `plugin_points` members: the header that `SnapshotDigest` hashes.
    static func headerBytes(_ snapshot: Snapshot) -> [UInt8] {
        let flagSet = snapshot.flagSet
        var tree = JSONObject()
        if let description = flagSet.description { tree["description"] = .string(description) }
        tree["epoch"] = .string(snapshot.epoch)
        tree["format"] = .int64(format)
        tree["namespace"] = .string(flagSet.namespace)
        tree["version"] = .int64(snapshot.version)
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
            throw SnapshotDecodingError(
                .unsupportedFormat, "format \(format) is not supported (this reader knows format 1)")
        }
        guard case .string(let checksum)? = object["checksum"] else {
            throw SnapshotDecodingError(.malformed, "checksum: is required and must be a string")
        }
        object["checksum"] = nil
        if !bodyFollowsChecksum(bytes, checksum) {
            // Not as flagsd writes it (re-indented, members reordered): hash the canonical form of what was parsed.
            let expected = "sha256:" + SHA256.hexDigest(JSONValue.object(object).serialized(.canonical))
            guard checksum == expected else {
                throw SnapshotDecodingError(
                    .checksumMismatch, "checksum \(checksum) does not match the content (\(expected))")
            }
        }
        guard case .string(let epoch)? = object["epoch"], !epoch.isEmpty, epoch.count <= 128 else {
            throw SnapshotDecodingError(.malformed, "epoch: is required and must be a non-empty string")
        }
        guard case .number(let versionNumber)? = object["version"], let version = versionNumber.int64Value, version >= 0
        else {
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

    /// Whether the bytes are a document in canonical form with a correct checksum, checked without writing the
    /// canonical form again: a canonical document is `{"checksum":"<checksum>",` followed by the rest of the
    /// canonical form without the checksum, so hashing `{` and those bytes gives the checksum when they are
    /// exactly what the writer hashed. False does not mean a mismatch: the document may be in another form.
    static func bodyFollowsChecksum(_ bytes: some Collection<UInt8>, _ checksum: String) -> Bool {
        let prefix = Array(#"{"checksum":""#.utf8) + Array(checksum.utf8) + Array(#"","#.utf8)
        guard checksum.hasPrefix("sha256:"), bytes.count > prefix.count, bytes.starts(with: prefix) else {
            return false
        }
        var hasher = SHA256.Hasher()
        hasher.update(CollectionOfOne(UInt8(ascii: "{")))
        hasher.update(bytes.dropFirst(prefix.count))
        return "sha256:" + SHA256.hex(hasher.finalize()) == checksum
    }
}

/// Why bytes are not a usable snapshot.
public struct SnapshotDecodingError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The kind of problem; new kinds may be added.
    public typealias Kind = ErrorKind<SnapshotDecodingError>

    public let kind: Kind
    public let message: String

    init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    public var description: String { "invalid snapshot: \(message)" }
}

extension ErrorKind where Owner == SnapshotDecodingError {
    public static var tooLarge: Self { Self("tooLarge") }
    public static var malformed: Self { Self("malformed") }
    public static var unsupportedFormat: Self { Self("unsupportedFormat") }
    public static var checksumMismatch: Self { Self("checksumMismatch") }
    /// Well-formed JSON that is not a valid flag set.
    public static var invalid: Self { Self("invalid") }
}
