import HTTPTypes
package import NIOCore
package import SwitchyardCore
import Synchronization

/// What changed at each recent version of one namespace's epoch: the keys a delta from an older version must
/// carry. Kept by the hub from the flag sets it publishes (a diff of each with the one before).
///
/// An entry covers the versions from `from` (exclusive) to `to`: one version normally, several when this
/// instance skipped some (another instance committed them faster than this one read them). A delta can start
/// only where an entry starts.
package struct DeltaHistory: Sendable {
    package struct Entry: Sendable {
        package var from: Int64
        package var to: Int64
        package var changes: ChangedObjects
    }

    package let epoch: String
    /// Oldest first, contiguous: each entry starts where the previous one ends.
    package private(set) var entries: [Entry] = []

    package init(epoch: String) {
        self.epoch = epoch
    }

    /// The history after one more publication, keeping the entries of the last `limit` versions.
    package func appending(from: Int64, to: Int64, changes: ChangedObjects, limit: Int) -> DeltaHistory {
        var next = self
        if let last = next.entries.last, last.to != from { next.entries = [] }
        next.entries.append(Entry(from: from, to: to, changes: changes))
        // Oldest first and contiguous, so dropping from the front keeps the rest contiguous.
        next.entries.removeAll { $0.from < to - Int64(limit) }
        return next
    }

    /// The objects changed after `base` up to the newest version; nil when the history does not start an entry
    /// at `base` (older than what is kept, inside a skipped range, or unknown).
    package func changes(since base: Int64) -> ChangedObjects? {
        var changes = ChangedObjects()
        for entry in entries.reversed() {
            changes.formUnion(entry.changes)
            if entry.from == base { return changes }
            if entry.from < base { return nil }
        }
        return nil
    }

    /// The oldest version a delta can start from; nil when none can.
    package var oldestBase: Int64? { entries.first?.from }
}

/// A delta of one namespace's current snapshot from an older version, encoded once (identity and gzip) and
/// shared by every request from that version, like the snapshot itself.
package final class PublishedDelta: Sendable {
    package let baseVersion: Int64
    package let body: ByteBuffer
    package let gzipBody: ByteBuffer
    let identityHeaders: HTTPFields
    let gzipHeaders: HTTPFields

    init(_ delta: SnapshotDelta, bytes: [UInt8], entityTag: String) {
        baseVersion = delta.baseVersion
        body = ByteBuffer(bytes: bytes)
        gzipBody = ByteBuffer(bytes: Gzip.compress(bytes))
        var headers = HTTPFields()
        headers[.eTag] = entityTag
        headers[.vary] = PublishedSnapshot.vary
        // A delta suits only requests from its base version: no shared cache may hand it to another.
        headers[.cacheControl] = "no-store"
        headers[.contentType] = SnapshotDelta.mediaType
        var gzip = headers
        headers[.contentLength] = String(body.readableBytes)
        identityHeaders = headers
        gzip[.contentEncoding] = "gzip"
        gzip[.contentLength] = String(gzipBody.readableBytes)
        gzipHeaders = gzip
    }
}

/// The deltas of one published snapshot, built on first request from each base version and kept while their
/// bytes stay within a budget (a few times the snapshot's own size).
final class DeltaCache: Sendable {
    enum Answer: Sendable {
        case delta(PublishedDelta)
        /// Send the full snapshot: the base is unknown or too old, or the delta would not be smaller.
        case full(FullReason)
    }

    /// Why a request that accepts deltas gets the full snapshot.
    enum FullReason: String, Sendable {
        case unknownBase = "unknown_base"
        case notSmaller = "not_smaller"
        case overBudget = "over_budget"
    }

    private struct State {
        var answers: [Int64: Answer] = [:]
        var bytes = 0
    }

    private let state = Mutex(State())
    private let budget: Int

    init(budget: Int) {
        self.budget = budget
    }

    /// The answer for a base version, built with `build` (under the lock, so once) when not known yet.
    func answer(from base: Int64, build: () -> Answer) -> Answer {
        state.withLock { state in
            if let known = state.answers[base] { return known }
            var answer = build()
            if case .delta(let delta) = answer {
                let size = delta.body.readableBytes + delta.gzipBody.readableBytes
                if state.bytes + size > budget {
                    answer = .full(.overBudget)
                } else {
                    state.bytes += size
                }
            }
            state.answers[base] = answer
            return answer
        }
    }
}
