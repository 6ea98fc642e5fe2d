/// SHA-256 (FIPS 180-4), for snapshot and cache checksums.
///
/// The core library depends on Foundation only and must build for iOS and Linux alike, where CryptoKit and
/// swift-crypto are not both available, so it carries this small implementation (checked against Python's
/// `hashlib` in the tests).
///
/// ```swift
/// let digest = SHA256.digest(bytes)              // one call
/// var hasher = SHA256.Hasher()                   // or in pieces: the same digest
/// hasher.update(head); hasher.update(body)
/// let same = hasher.finalize()
/// ```
public enum SHA256 {
    /// The 32-byte digest of some bytes.
    public static func digest(_ bytes: some Collection<UInt8>) -> [UInt8] {
        var hasher = Hasher()
        hasher.update(bytes)
        return hasher.finalize()
    }

    /// The digest as lowercase hex.
    public static func hexDigest(_ bytes: some Collection<UInt8>) -> String {
        hex(digest(bytes))
    }

    /// Lowercase hex of some bytes (a digest).
    public static func hex(_ digest: some Collection<UInt8>) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(digest.count * 2)
        for byte in digest {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Hashes bytes given in pieces; a copy continues from where the original was (a saved midstate).
    public struct Hasher: Sendable {
        private var state: (UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32) =
            (0x6a09_e667, 0xbb67_ae85, 0x3c6e_f372, 0xa54f_f53a, 0x510e_527f, 0x9b05_688c, 0x1f83_d9ab, 0x5be0_cd19)
        /// Bytes of an unfinished block.
        private var pending: [UInt8] = []
        /// Bytes hashed so far.
        public private(set) var count: UInt64 = 0

        public init() {}

        /// Adds bytes.
        public mutating func update(_ bytes: some Collection<UInt8>) {
            let done = bytes.withContiguousStorageIfAvailable { buffer in
                update(raw: UnsafeRawBufferPointer(buffer))
                return true
            }
            guard done == nil else { return }
            let copy = Array(bytes)
            copy.withUnsafeBytes { update(raw: $0) }
        }

        /// Adds bytes from raw memory.
        public mutating func update(raw bytes: UnsafeRawBufferPointer) {
            guard !bytes.isEmpty else { return }
            count &+= UInt64(bytes.count)
            var rest = bytes[...]
            if !pending.isEmpty {
                let take = min(64 - pending.count, rest.count)
                pending.append(contentsOf: rest.prefix(take))
                rest = rest.dropFirst(take)
                guard pending.count == 64 else { return }
                let block = pending
                pending.removeAll(keepingCapacity: true)
                block.withUnsafeBytes { compress(UnsafeRawBufferPointer($0)) }
            }
            let whole = rest.count & ~63
            if whole > 0 {
                compress(UnsafeRawBufferPointer(rebasing: rest.prefix(whole)))
            }
            if whole < rest.count { pending.append(contentsOf: rest.dropFirst(whole)) }
        }

        /// The digest of everything added; the hasher is left as it was.
        public func finalize() -> [UInt8] {
            var copy = self
            let bitLength = count &* 8
            var tail = pending
            tail.append(0x80)
            while tail.count % 64 != 56 { tail.append(0) }
            for shift in stride(from: 56, through: 0, by: -8) {
                tail.append(UInt8(truncatingIfNeeded: bitLength >> UInt64(shift)))
            }
            copy.pending = []
            tail.withUnsafeBytes { copy.compress($0) }
            var digest: [UInt8] = []
            digest.reserveCapacity(32)
            let words = copy.state
            for word in [words.0, words.1, words.2, words.3, words.4, words.5, words.6, words.7] {
                digest.append(UInt8(truncatingIfNeeded: word >> 24))
                digest.append(UInt8(truncatingIfNeeded: word >> 16))
                digest.append(UInt8(truncatingIfNeeded: word >> 8))
                digest.append(UInt8(truncatingIfNeeded: word))
            }
            return digest
        }

        /// Hashes whole 64-byte blocks.
        private mutating func compress(_ blocks: UnsafeRawBufferPointer) {
            var (h0, h1, h2, h3, h4, h5, h6, h7) = state
            withUnsafeTemporaryAllocation(of: UInt32.self, capacity: 64) { w in
                SHA256.roundConstants.withUnsafeBufferPointer { k in
                    var offset = 0
                    while offset < blocks.count {
                        for i in 0..<16 {
                            w[i] = UInt32(
                                bigEndian: blocks.loadUnaligned(fromByteOffset: offset &+ i &* 4, as: UInt32.self))
                        }
                        for i in 16..<64 {
                            let w15 = w[i &- 15]
                            let w2 = w[i &- 2]
                            let s0 = rotr(w15, 7) ^ rotr(w15, 18) ^ (w15 &>> 3)
                            let s1 = rotr(w2, 17) ^ rotr(w2, 19) ^ (w2 &>> 10)
                            w[i] = w[i &- 16] &+ s0 &+ w[i &- 7] &+ s1
                        }
                        var a = h0
                        var b = h1
                        var c = h2
                        var d = h3
                        var e = h4
                        var f = h5
                        var g = h6
                        var h = h7
                        // Eight rounds per turn, the working variables renamed instead of moved.
                        var i = 0
                        while i < 64 {
                            round(a, b, c, &d, e, f, g, &h, k[i] &+ w[i])
                            round(h, a, b, &c, d, e, f, &g, k[i &+ 1] &+ w[i &+ 1])
                            round(g, h, a, &b, c, d, e, &f, k[i &+ 2] &+ w[i &+ 2])
                            round(f, g, h, &a, b, c, d, &e, k[i &+ 3] &+ w[i &+ 3])
                            round(e, f, g, &h, a, b, c, &d, k[i &+ 4] &+ w[i &+ 4])
                            round(d, e, f, &g, h, a, b, &c, k[i &+ 5] &+ w[i &+ 5])
                            round(c, d, e, &f, g, h, a, &b, k[i &+ 6] &+ w[i &+ 6])
                            round(b, c, d, &e, f, g, h, &a, k[i &+ 7] &+ w[i &+ 7])
                            i &+= 8
                        }
                        h0 &+= a
                        h1 &+= b
                        h2 &+= c
                        h3 &+= d
                        h4 &+= e
                        h5 &+= f
                        h6 &+= g
                        h7 &+= h
                        offset &+= 64
                    }
                }
            }
            state = (h0, h1, h2, h3, h4, h5, h6, h7)
        }
    }

    fileprivate static let roundConstants: [UInt32] = [
        0x428a_2f98, 0x7137_4491, 0xb5c0_fbcf, 0xe9b5_dba5, 0x3956_c25b, 0x59f1_11f1, 0x923f_82a4, 0xab1c_5ed5,
        0xd807_aa98, 0x1283_5b01, 0x2431_85be, 0x550c_7dc3, 0x72be_5d74, 0x80de_b1fe, 0x9bdc_06a7, 0xc19b_f174,
        0xe49b_69c1, 0xefbe_4786, 0x0fc1_9dc6, 0x240c_a1cc, 0x2de9_2c6f, 0x4a74_84aa, 0x5cb0_a9dc, 0x76f9_88da,
        0x983e_5152, 0xa831_c66d, 0xb003_27c8, 0xbf59_7fc7, 0xc6e0_0bf3, 0xd5a7_9147, 0x06ca_6351, 0x1429_2967,
        0x27b7_0a85, 0x2e1b_2138, 0x4d2c_6dfc, 0x5338_0d13, 0x650a_7354, 0x766a_0abb, 0x81c2_c92e, 0x9272_2c85,
        0xa2bf_e8a1, 0xa81a_664b, 0xc24b_8b70, 0xc76c_51a3, 0xd192_e819, 0xd699_0624, 0xf40e_3585, 0x106a_a070,
        0x19a4_c116, 0x1e37_6c08, 0x2748_774c, 0x34b0_bcb5, 0x391c_0cb3, 0x4ed8_aa4a, 0x5b9c_ca4f, 0x682e_6ff3,
        0x748f_82ee, 0x78a5_636f, 0x84c8_7814, 0x8cc7_0208, 0x90be_fffa, 0xa450_6ceb, 0xbef9_a3f7, 0xc671_78f2,
    ]
}

@inline(__always)
private func rotr(_ x: UInt32, _ n: UInt32) -> UInt32 { (x &>> n) | (x &<< (32 &- n)) }

/// One SHA-256 round: `d` and `h` take their new values; the caller renames the rest.
@inline(__always)
private func round(
    _ a: UInt32, _ b: UInt32, _ c: UInt32, _ d: inout UInt32, _ e: UInt32, _ f: UInt32, _ g: UInt32,
    _ h: inout UInt32, _ kw: UInt32
) {
    let t1 = h &+ (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) &+ (g ^ (e & (f ^ g))) &+ kw
    let t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) &+ ((a & b) | (c & (a | b)))
    d &+= t1
    h = t1 &+ t2
}
