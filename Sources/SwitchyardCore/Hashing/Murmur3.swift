/// MurmurHash3 x86_32, fed in pieces.
///
/// Feeding `a` then `b` gives the same hash as feeding the concatenation, so a compiled snapshot can hash a
/// flag key once and continue from that state with each unit id.
public struct Murmur3Hasher: Sendable, Hashable, BitwiseCopyable {
    private static let c1: UInt32 = 0xCC9E_2D51
    private static let c2: UInt32 = 0x1B87_3593

    private var state: UInt32
    /// Bytes of an incomplete 4-byte block, little-endian.
    private var pending: UInt32 = 0
    /// How many bytes `pending` holds, 0...3.
    private var pendingCount: UInt32 = 0
    private var length: UInt32 = 0

    public init(seed: UInt32 = 0) {
        state = seed
    }

    @inline(__always)
    private static func mixBlock(_ block: UInt32) -> UInt32 {
        var k = block &* c1
        k = (k << 15) | (k >> 17)
        return k &* c2
    }

    @inline(__always)
    private mutating func absorb(_ block: UInt32) {
        state ^= Self.mixBlock(block)
        state = (state << 13) | (state >> 19)
        state = state &* 5 &+ 0xE654_6B64
    }

    /// Feeds bytes.
    @inlinable
    public mutating func combine(_ bytes: UnsafeRawBufferPointer) {
        for byte in bytes { combine(byte: byte) }
    }

    /// Feeds the UTF-8 bytes of a string.
    public mutating func combine(_ string: String) {
        var string = string
        string.withUTF8 { combine(contiguous: $0) }
    }

    /// Feeds one byte.
    @usableFromInline @inline(__always)
    mutating func combine(byte: UInt8) {
        pending |= UInt32(byte) << (pendingCount * 8)
        pendingCount += 1
        length &+= 1
        if pendingCount == 4 {
            absorb(pending)
            pending = 0
            pendingCount = 0
        }
    }

    /// Feeds bytes known to be contiguous: completes a pending block byte by byte, then reads whole 4-byte
    /// blocks with one load each.
    @inline(__always)
    public mutating func combine(contiguous buffer: UnsafeBufferPointer<UInt8>) {
        guard let base = buffer.baseAddress else { return }
        var index = 0
        let count = buffer.count
        while pendingCount != 0 && index < count {
            combine(byte: base[index])
            index += 1
        }
        // Whole blocks, one unaligned little-endian load each.
        var block = UnsafeRawPointer(base + index)
        let blockBytes = (count &- index) & ~3
        let blocksEnd = block + blockBytes
        while block < blocksEnd {
            absorb(UInt32(littleEndian: block.loadUnaligned(as: UInt32.self)))
            block += 4
        }
        index &+= blockBytes
        length &+= UInt32(truncatingIfNeeded: blockBytes)
        // At most three bytes remain, and no block is pending unless the input ran out while completing one.
        var tail: UInt32 = 0
        var shift: UInt32 = 0
        let remaining = count &- index
        while index < count {
            tail |= UInt32(base[index]) << shift
            shift &+= 8
            index &+= 1
        }
        if remaining > 0 {
            pending = tail
            pendingCount = UInt32(remaining)
            length &+= UInt32(remaining)
        }
    }

    /// The hash of everything fed so far.
    @inline(__always)
    public func finalize() -> UInt32 {
        var h = state
        if pendingCount > 0 { h ^= Self.mixBlock(pending) }
        h ^= length
        h ^= h >> 16
        h = h &* 0x85EB_CA6B
        h ^= h >> 13
        h = h &* 0xC2B2_AE35
        h ^= h >> 16
        return h
    }

    /// The hash of everything fed so far followed by a prepared suffix; the same as feeding the suffix's
    /// bytes and finalizing, without touching them one at a time.
    @inline(__always)
    func finalize(appending suffix: Murmur3Suffix) -> UInt32 {
        guard suffix.length >= 3 else {
            var hasher = self
            suffix.bytes.withUnsafeBufferPointer { hasher.combine(contiguous: $0) }
            return hasher.finalize()
        }
        return suffix.words.withUnsafeBufferPointer { words in
            let alignment = Int(pendingCount)
            var hasher = self
            // The suffix's first bytes complete the pending block.
            if alignment != 0 { hasher.absorb(pending | words[Murmur3Suffix.heads + alignment]) }
            var index = Int(words[Murmur3Suffix.blockStarts + alignment])
            let end = Int(words[Murmur3Suffix.blockStarts + alignment + 1])
            while index < end {
                hasher.absorb(words[index])
                index &+= 1
            }
            hasher.pending = words[Murmur3Suffix.tails + alignment]
            hasher.pendingCount = words[Murmur3Suffix.tailCounts + alignment]
            hasher.length = length &+ suffix.length
            return hasher.finalize()
        }
    }

    /// The murmur3 x86_32 hash of some bytes.
    public static func hash(_ bytes: some Sequence<UInt8>, seed: UInt32 = 0) -> UInt32 {
        var hasher = Murmur3Hasher(seed: seed)
        for byte in bytes { hasher.combine(byte: byte) }
        return hasher.finalize()
    }
}

/// Bytes prepared once to be hashed after many different hasher states (a unit id after each flag key): cut
/// into little-endian blocks for each of the four numbers of bytes (0...3) a state can have pending.
struct Murmur3Suffix: Sendable {
    static let heads = 0
    static let tails = 4
    static let tailCounts = 8
    static let blockStarts = 12
    static let blocksStart = 17

    let bytes: [UInt8]
    let length: UInt32
    /// `heads[a]`: the first `4 - a` bytes shifted to follow `a` pending bytes (unused for a = 0);
    /// `tails[a]`, `tailCounts[a]`: the bytes left after the last whole block; `blockStarts[a]..<blockStarts[a+1]`:
    /// where the whole blocks for alignment `a` are in this same array.
    let words: [UInt32]

    init(_ bytes: [UInt8]) {
        self.bytes = bytes
        length = UInt32(truncatingIfNeeded: bytes.count)
        var words = [UInt32](repeating: 0, count: Self.blocksStart)
        guard bytes.count >= 3 else {
            self.words = words
            return
        }
        for alignment in 0..<4 {
            let offset = alignment == 0 ? 0 : 4 - alignment
            var head: UInt32 = 0
            for index in 0..<offset { head |= UInt32(bytes[index]) << (8 * UInt32(alignment + index)) }
            words[Self.heads + alignment] = head
            words[Self.blockStarts + alignment] = UInt32(words.count)
            var index = offset
            while bytes.count - index >= 4 {
                words.append(
                    UInt32(bytes[index]) | UInt32(bytes[index + 1]) << 8
                        | UInt32(bytes[index + 2]) << 16 | UInt32(bytes[index + 3]) << 24)
                index += 4
            }
            var tail: UInt32 = 0
            for (position, byte) in bytes[index...].enumerated() { tail |= UInt32(byte) << (8 * UInt32(position)) }
            words[Self.tails + alignment] = tail
            words[Self.tailCounts + alignment] = UInt32(bytes.count - index)
        }
        words[Self.blockStarts + 4] = UInt32(words.count)
        self.words = words
    }
}

/// The fixed bucketing of PRODUCT.md, which every implementation must match.
public enum Bucketing {
    /// The hash of a unit for a flag: murmur3_x86_32 (seed 0) over the UTF-8 of `flagKey + unitId`.
    public static func hash(flagKey: String, unitId: String) -> UInt32 {
        var hasher = Murmur3Hasher()
        hasher.combine(flagKey)
        hasher.combine(unitId)
        return hasher.finalize()
    }

    /// The unit's bucket in 0...9999: `(UInt64(h) * 10000) >> 32`.
    @inline(__always)
    public static func bucket(hash: UInt32) -> Int {
        Int((UInt64(hash) &* 10_000) >> 32)
    }

    /// The bucket of a unit for a flag.
    public static func bucket(flagKey: String, unitId: String) -> Int {
        bucket(hash: hash(flagKey: flagKey, unitId: unitId))
    }

    /// The point in `0..<totalWeight` that picks a variant: `(UInt64(h) * W) >> 32`.
    @inline(__always)
    public static func weightPoint(hash: UInt32, totalWeight: UInt64) -> UInt64 {
        (UInt64(hash) &* totalWeight) >> 32
    }
}
