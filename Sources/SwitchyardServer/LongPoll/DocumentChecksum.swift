import Crypto
import SwitchyardCore

/// A published document's checksum with the SHA-256 states it passed through, so that the next version's checksum
/// hashes again only from the first run of flags that changed.
///
/// The checksum covers the whole canonical body ([snapshot.md](../../../docs/snapshot.md#checksum)), and SHA-256 reads
/// bytes in order: the state after the head and the first runs of flags does not depend on what follows them. A
/// version's pieces (``DocumentPieces``) share their unchanged runs with the previous version's (the same arrays), so
/// the state kept before the first run that is not the same array, under the same head, is where hashing resumes: a
/// one-flag change of a namespace of ten thousand flags hashes the document from that flag's run to the end, not from
/// its start.
struct DocumentChecksum: Sendable {
    /// The `checksum` member: `sha256:` and the hex digest.
    let value: String
    private let head: [UInt8]
    private let runs: [[UInt8]]
    /// `states[i]`: after the head and runs `0..<i` (with the commas between them); one more than `runs`.
    private let states: [Crypto.SHA256]

    /// The checksum of `pieces`, resuming from `previous` (the previous version's) where their heads and first runs
    /// are the same.
    init(_ pieces: DocumentPieces, previous: DocumentChecksum?) {
        var states: [Crypto.SHA256] = []
        states.reserveCapacity(pieces.runs.count + 1)
        if let previous, previous.head == pieces.head {
            // Runs compared by identity: an unchanged run is the previous version's array, not a copy of it.
            var same = 0
            while same < min(previous.runs.count, pieces.runs.count),
                Self.isSameArray(previous.runs[same], pieces.runs[same])
            {
                same += 1
            }
            states += previous.states[0...same]
        } else {
            var hasher = Crypto.SHA256()
            hasher.update(data: pieces.head)
            states.append(hasher)
        }
        var hasher = states[states.count - 1]
        for index in (states.count - 1)..<pieces.runs.count {
            if index > 0 { hasher.update(data: DocumentPieces.comma) }
            hasher.update(data: pieces.runs[index])
            states.append(hasher)
        }
        hasher.update(data: pieces.tail)
        value = "sha256:" + SwitchyardCore.SHA256.hex(Array(hasher.finalize()))
        head = pieces.head
        runs = pieces.runs
        self.states = states
    }

    /// Whether two arrays share their storage (a copy of one is the other).
    private static func isSameArray(_ one: [UInt8], _ other: [UInt8]) -> Bool {
        one.count == other.count
            && one.withUnsafeBufferPointer { a in other.withUnsafeBufferPointer { b in a.baseAddress == b.baseAddress }
            }
    }
}
