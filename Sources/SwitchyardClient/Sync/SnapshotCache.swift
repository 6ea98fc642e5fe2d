package import Foundation
package import SwitchyardCore

/// The last known good snapshot on disk, in a checksum envelope.
///
/// `snapshot.cache` holds a magic line, a header line and the snapshot document:
///
/// ```text
/// switchyard-snapshot-cache 1
/// {"body_sha256":"…","body_size":18734,"epoch":"…","fetched_at_ms":1795000000000,"namespace":"rider","version":42}
/// {"checksum":"sha256:…","epoch":"…",…}
/// ```
///
/// The file is replaced atomically (temporary file, fsync, rename). A reader refuses an empty, truncated,
/// altered or foreign file (another namespace, or not a cache at all): the client then starts without it.
/// `snapshot.verified` records when the server last confirmed the cached version (a 304), so the age of a
/// snapshot survives a relaunch.
package struct SnapshotCache: Sendable {
    package static let magic = "switchyard-snapshot-cache 1"
    package static let fileName = "snapshot.cache"
    package static let verifiedFileName = "snapshot.verified"

    package let directory: URL
    package let namespace: String
    package let maximumSnapshotSize: Int

    package init(directory: URL, namespace: String, maximumSnapshotSize: Int) {
        self.directory = directory
        self.namespace = namespace
        self.maximumSnapshotSize = maximumSnapshotSize
    }

    package var fileURL: URL { directory.appendingPathComponent(Self.fileName) }
    package var verifiedURL: URL { directory.appendingPathComponent(Self.verifiedFileName) }

    /// A snapshot read back from disk.
    package struct Entry: Sendable {
        package var snapshot: Snapshot
        /// When it was downloaded.
        package var fetchedAt: Date
        /// When the server last confirmed it (at least `fetchedAt`).
        package var verifiedAt: Date
    }

    /// Reads the cache.
    /// - Returns: the entry, or nil when there is no cache file.
    /// - Throws: `ClientError` (`corruptFile`, `wrongNamespace`, `tooLarge`, `fileSystem`) saying why the file
    ///   is unusable.
    package func load() throws(ClientError) -> Entry? {
        let path = fileURL.path
        guard let bytes = try FileIO.read(fileURL, limit: maximumSnapshotSize + 4096) else { return nil }
        guard !bytes.isEmpty else {
            throw ClientError(.corruptFile, "the snapshot cache \(path) is empty (an interrupted first write?); ignoring it")
        }
        let magicBytes = Array((Self.magic + "\n").utf8)
        guard bytes.starts(with: magicBytes) else {
            throw ClientError(.corruptFile, "\(path) is not a Switchyard snapshot cache (it does not start with '\(Self.magic)'); ignoring it")
        }
        let rest = bytes[magicBytes.count...]
        guard let newline = rest.firstIndex(of: UInt8(ascii: "\n")) else {
            throw ClientError(.corruptFile, "the snapshot cache \(path) is truncated inside its header; ignoring it")
        }
        let parsedHeader: JSONValue
        do {
            parsedHeader = try JSONValue.parse(rest[rest.startIndex..<newline])
        } catch {
            throw ClientError(.corruptFile, "the header of the snapshot cache \(path) is not valid JSON (\(error)); ignoring it")
        }
        guard let header = parsedHeader.objectValue else {
            throw ClientError(.corruptFile, "the header of the snapshot cache \(path) is not a JSON object; ignoring it")
        }
        guard let cachedNamespace = header["namespace"]?.stringValue, let size = header["body_size"]?.int64Value,
              let digest = header["body_sha256"]?.stringValue, let fetchedAt = header["fetched_at_ms"]?.int64Value else {
            throw ClientError(.corruptFile, "the header of the snapshot cache \(path) lacks namespace, body_size, body_sha256 or fetched_at_ms; ignoring it")
        }
        guard cachedNamespace == namespace else {
            throw ClientError(.wrongNamespace, "the snapshot cache \(path) holds namespace '\(cachedNamespace)', not '\(namespace)'; ignoring it (give each namespace its own directory)")
        }
        let body = bytes[(newline + 1)...]
        guard Int64(body.count) == size else {
            throw ClientError(.corruptFile, "the snapshot cache \(path) is truncated or padded: its header announces \(size) bytes, the file holds \(body.count); ignoring it")
        }
        guard SHA256.hexDigest(body) == digest else {
            throw ClientError(.corruptFile, "the snapshot cache \(path) does not match its checksum (altered on disk); ignoring it")
        }
        let snapshot: Snapshot
        do {
            snapshot = try SnapshotDocument.decode(body)
        } catch {
            throw ClientError(.corruptFile, "the snapshot cache \(path) holds an unusable snapshot: \(error); ignoring it")
        }
        guard snapshot.namespace == namespace else {
            throw ClientError(.wrongNamespace, "the snapshot cache \(path) holds a snapshot of namespace '\(snapshot.namespace)', not '\(namespace)'; ignoring it")
        }
        let fetched = Timestamp.date(milliseconds: fetchedAt)
        var verified = fetched
        if let marker = try? FileIO.read(verifiedURL, limit: 4096), let object = try? JSONValue.parse(marker).objectValue,
           object["epoch"]?.stringValue == snapshot.epoch, object["version"]?.int64Value == snapshot.version,
           let milliseconds = object["verified_at_ms"]?.int64Value {
            verified = max(fetched, Timestamp.date(milliseconds: milliseconds))
        }
        return Entry(snapshot: snapshot, fetchedAt: fetched, verifiedAt: verified)
    }

    /// Replaces the cache with a snapshot, atomically.
    /// - Throws: `ClientError` when the file cannot be written.
    package func store(_ snapshot: Snapshot, fetchedAt: Date) throws(ClientError) {
        try FileIO.createDirectory(directory)
        let body = SnapshotDocument.encode(snapshot)
        let header = JSONObject([
            ("body_sha256", .string(SHA256.hexDigest(body))),
            ("body_size", .int(body.count)),
            ("epoch", .string(snapshot.epoch)),
            ("fetched_at_ms", .int64(Timestamp.milliseconds(fetchedAt))),
            ("namespace", .string(snapshot.namespace)),
            ("version", .int64(snapshot.version)),
        ])
        var bytes = Array((Self.magic + "\n").utf8)
        bytes += JSONValue.object(header).serialized(.canonical)
        bytes.append(UInt8(ascii: "\n"))
        bytes += body
        try FileIO.writeAtomically(bytes, to: fileURL)
        FileIO.remove(verifiedURL)
    }

    /// Records that the server confirmed the cached version at a time.
    package func storeVerified(epoch: String, version: Int64, at date: Date) throws(ClientError) {
        let object = JSONObject([
            ("epoch", .string(epoch)), ("verified_at_ms", .int64(Timestamp.milliseconds(date))), ("version", .int64(version)),
        ])
        try FileIO.writeAtomically(JSONValue.object(object).serialized(.canonical), to: verifiedURL, sync: false)
    }
}
