package import Foundation
package import SwitchyardCore

/// The last known good snapshot on disk, in a checksum envelope, and the deltas applied to it since.
///
/// `snapshot.cache` holds a magic line, a header line and the snapshot document:
///
/// ```text
/// switchyard-snapshot-cache 1
/// {"body_sha256":"…","body_size":18734,"epoch":"…","fetched_at_ms":1795000000000,"namespace":"rider","version":42}
/// {"checksum":"sha256:…","epoch":"…",…}
/// ```
///
/// `snapshot.deltas` holds the deltas installed after that snapshot, each appended (and synced) as it is installed,
/// so keeping a large namespace's last known good costs the bytes of the change, not of the namespace:
///
/// ```text
/// switchyard-snapshot-deltas 1
/// {"base_version":42,"body_sha256":"…","body_size":612,"epoch":"…","fetched_at_ms":1795000060000,"version":43}
/// {"base_version":42,"checksum":"sha256:…",…}
/// ```
///
/// Reading replays the deltas that chain from the snapshot, each checked as a live one is (its digest), and stops
/// at the first that is torn, altered or does not chain: the client then starts from the last good version before
/// it. When the deltas grow past half the snapshot (or 64 of them), the next one rewrites the snapshot instead.
/// The snapshot file is replaced atomically (temporary file, fsync, rename). A reader refuses an empty, truncated,
/// altered or foreign file (another namespace, or not a cache at all): the client then starts without it.
/// `snapshot.verified` records when the server last confirmed the cached version (a 304), so the age of a
/// snapshot survives a relaunch.
package struct SnapshotCache: Sendable {
    package static let magic = "switchyard-snapshot-cache 1"
    package static let fileName = "snapshot.cache"
    package static let verifiedFileName = "snapshot.verified"
    package static let deltasFileName = "snapshot.deltas"
    package static let deltasMagic = "switchyard-snapshot-deltas 1"
    /// Past this many deltas, the next install rewrites the snapshot.
    package static let maximumDeltas = 64

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
    package var deltasURL: URL { directory.appendingPathComponent(Self.deltasFileName) }

    /// What the files hold: the snapshot file's version and size, and the deltas after it. Deltas are appended
    /// only when they chain from what the files hold (otherwise the snapshot is rewritten).
    private struct Written: Sendable {
        var epoch: String
        var version: Int64
        var snapshotSize: Int
        var deltaCount = 0
        var deltaBytes = 0
    }

    private let written = LockedBox<Written?>(nil)

    /// A snapshot read back from disk.
    package struct Entry: Sendable {
        package var snapshot: Snapshot
        /// Compiled already when deltas were replayed onto it (with its digest sums, for the next delta).
        package var compiled: (snapshot: CompiledSnapshot, digest: SnapshotDigest)?
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
            throw ClientError(
                .corruptFile, "the snapshot cache \(path) is empty (an interrupted first write?); ignoring it")
        }
        let magicBytes = Array((Self.magic + "\n").utf8)
        guard bytes.starts(with: magicBytes) else {
            throw ClientError(
                .corruptFile,
                "\(path) is not a Switchyard snapshot cache (it does not start with '\(Self.magic)'); ignoring it")
        }
        let rest = bytes[magicBytes.count...]
        guard let newline = rest.firstIndex(of: UInt8(ascii: "\n")) else {
            throw ClientError(.corruptFile, "the snapshot cache \(path) is truncated inside its header; ignoring it")
        }
        let parsedHeader: JSONValue
        do {
            parsedHeader = try JSONValue.parse(rest[rest.startIndex..<newline])
        } catch {
            throw ClientError(
                .corruptFile, "the header of the snapshot cache \(path) is not valid JSON (\(error)); ignoring it")
        }
        guard let header = parsedHeader.objectValue else {
            throw ClientError(
                .corruptFile, "the header of the snapshot cache \(path) is not a JSON object; ignoring it")
        }
        guard let cachedNamespace = header["namespace"]?.stringValue, let size = header["body_size"]?.int64Value,
            let digest = header["body_sha256"]?.stringValue, let fetchedAt = header["fetched_at_ms"]?.int64Value
        else {
            throw ClientError(
                .corruptFile,
                "the header of the snapshot cache \(path) lacks namespace, body_size, body_sha256 or fetched_at_ms; ignoring it"
            )
        }
        guard cachedNamespace == namespace else {
            throw ClientError(
                .wrongNamespace,
                "the snapshot cache \(path) holds namespace '\(cachedNamespace)', not '\(namespace)'; ignoring it (give each namespace its own directory)"
            )
        }
        let body = bytes[(newline + 1)...]
        guard Int64(body.count) == size else {
            throw ClientError(
                .corruptFile,
                "the snapshot cache \(path) is truncated or padded: its header announces \(size) bytes, the file holds \(body.count); ignoring it"
            )
        }
        guard SHA256.hexDigest(body) == digest else {
            throw ClientError(
                .corruptFile, "the snapshot cache \(path) does not match its checksum (altered on disk); ignoring it")
        }
        let snapshot: Snapshot
        do {
            snapshot = try SnapshotDocument.decode(body)
        } catch {
            throw ClientError(
                .corruptFile, "the snapshot cache \(path) holds an unusable snapshot: \(error); ignoring it")
        }
        guard snapshot.namespace == namespace else {
            throw ClientError(
                .wrongNamespace,
                "the snapshot cache \(path) holds a snapshot of namespace '\(snapshot.namespace)', not '\(namespace)'; ignoring it"
            )
        }
        var fetched = Timestamp.date(milliseconds: fetchedAt)
        written.withLock { $0 = Written(epoch: snapshot.epoch, version: snapshot.version, snapshotSize: body.count) }
        let replayed = replayDeltas(onto: snapshot, fetched: &fetched)
        let current = replayed?.snapshot.snapshot ?? snapshot
        var verified = fetched
        if let marker = try? FileIO.read(verifiedURL, limit: 4096),
            let object = try? JSONValue.parse(marker).objectValue,
            object["epoch"]?.stringValue == current.epoch, object["version"]?.int64Value == current.version,
            let milliseconds = object["verified_at_ms"]?.int64Value
        {
            verified = max(fetched, Timestamp.date(milliseconds: milliseconds))
        }
        return Entry(snapshot: current, compiled: replayed, fetchedAt: fetched, verifiedAt: verified)
    }

    /// The deltas of `snapshot.deltas` that chain from a snapshot, applied; nil when there are none. Stops at the
    /// first record that is torn, altered or does not chain (a crash while appending), keeping what came before.
    private func replayDeltas(onto snapshot: Snapshot, fetched: inout Date) -> (
        snapshot: CompiledSnapshot, digest: SnapshotDigest
    )? {
        guard let bytes = try? FileIO.read(deltasURL, limit: maximumSnapshotSize * 2 + 65_536) else { return nil }
        let magic = Array((Self.deltasMagic + "\n").utf8)
        guard bytes.starts(with: magic) else { return nil }
        var compiled: (snapshot: CompiledSnapshot, digest: SnapshotDigest)?
        var count = 0
        var position = magic.count
        while position < bytes.count {
            guard let newline = bytes[position...].firstIndex(of: UInt8(ascii: "\n")),
                let header = try? JSONValue.parse(bytes[position..<newline]).objectValue,
                let size = header["body_size"]?.int64Value, let digest = header["body_sha256"]?.stringValue,
                let milliseconds = header["fetched_at_ms"]?.int64Value, size >= 0,
                Int64(bytes.count - newline - 1) >= size + 1
            else { break }
            let body = bytes[(newline + 1)..<(newline + 1 + Int(size))]
            guard bytes[newline + 1 + Int(size)] == UInt8(ascii: "\n"), SHA256.hexDigest(body) == digest,
                let delta = try? SnapshotDelta.decode(body)
            else { break }
            let base = compiled ?? (CompiledSnapshot(snapshot), SnapshotDigest(snapshot.flagSet))
            guard let next = try? base.snapshot.applying(delta, digest: base.digest) else { break }
            compiled = next
            fetched = Timestamp.date(milliseconds: milliseconds)
            count += 1
            position = newline + 2 + Int(size)
        }
        if let compiled {
            let complete = position >= bytes.count
            written.withLock { written in
                written?.version = compiled.snapshot.version
                // What follows a bad record would never be read: the next install rewrites the snapshot instead.
                written?.deltaCount = complete ? count : Self.maximumDeltas
                written?.deltaBytes = position
            }
        } else {
            FileIO.remove(deltasURL)
        }
        return compiled
    }

    /// Records a delta installed over the snapshot it applied to: appended to `snapshot.deltas` when it chains from
    /// what the files hold and they stay small, otherwise the whole result replaces the snapshot file.
    ///
    /// - Parameters:
    ///   - delta: the delta installed.
    ///   - result: the snapshot it led to.
    /// - Throws: `ClientError` when the files cannot be written.
    package func append(_ delta: SnapshotDelta, result: Snapshot, fetchedAt: Date) throws(ClientError) {
        let state = written.withLock { $0 }
        guard let state, state.epoch == delta.epoch, state.version == delta.baseVersion,
            state.deltaCount < Self.maximumDeltas, state.deltaBytes < max(state.snapshotSize / 2, 65_536)
        else {
            try store(result, fetchedAt: fetchedAt)
            return
        }
        let body = delta.encode()
        let header = JSONObject([
            ("base_version", .int64(delta.baseVersion)),
            ("body_sha256", .string(SHA256.hexDigest(body))),
            ("body_size", .int(body.count)),
            ("epoch", .string(delta.epoch)),
            ("fetched_at_ms", .int64(Timestamp.milliseconds(fetchedAt))),
            ("version", .int64(delta.version)),
        ])
        var record = state.deltaCount == 0 ? Array((Self.deltasMagic + "\n").utf8) : []
        record += JSONValue.object(header).serialized(.canonical)
        record.append(UInt8(ascii: "\n"))
        record += body
        record.append(UInt8(ascii: "\n"))
        if state.deltaCount == 0 { FileIO.remove(deltasURL) }
        try FileIO.append(record, to: deltasURL)
        written.withLock { written in
            written?.version = delta.version
            written?.deltaCount += 1
            written?.deltaBytes += record.count
        }
        FileIO.remove(verifiedURL)
    }

    /// Replaces the cache with a snapshot, atomically.
    /// - Parameter document: the document the snapshot was decoded (and verified) from, stored as it is; nil to
    ///   encode the snapshot.
    /// - Throws: `ClientError` when the file cannot be written.
    package func store(_ snapshot: Snapshot, document: [UInt8]? = nil, fetchedAt: Date) throws(ClientError) {
        try FileIO.createDirectory(directory)
        let body = document ?? SnapshotDocument.encode(snapshot)
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
        // Deltas after the old snapshot no longer chain: removed first, so a crash in between leaves an older
        // snapshot rather than deltas that do not apply to the new one (they would be skipped anyway).
        FileIO.remove(deltasURL)
        try FileIO.writeAtomically(bytes, to: fileURL)
        written.withLock { $0 = Written(epoch: snapshot.epoch, version: snapshot.version, snapshotSize: body.count) }
        FileIO.remove(verifiedURL)
    }

    /// Records that the server confirmed the cached version at a time.
    package func storeVerified(epoch: String, version: Int64, at date: Date) throws(ClientError) {
        let object = JSONObject([
            ("epoch", .string(epoch)), ("verified_at_ms", .int64(Timestamp.milliseconds(date))),
            ("version", .int64(version)),
        ])
        try FileIO.writeAtomically(JSONValue.object(object).serialized(.canonical), to: verifiedURL, sync: false)
    }
}
