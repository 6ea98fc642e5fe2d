import SwitchyardCore
import Testing

/// murmur3_x86_32 against vectors made independently with Python's mmh3 (`Data/generate_vectors.py`).
struct Murmur3Tests {
    @Test(arguments: try Murmur3Vector.all())
    func oneShotHashMatchesPythonMmh3(_ vector: Murmur3Vector) {
        #expect(Murmur3Hasher.hash(vector.bytes, seed: vector.seed) == vector.hash)
    }

    @Test(arguments: try Murmur3Vector.all())
    func hashingTheUTF8OfTextMatchesPythonMmh3(_ vector: Murmur3Vector) {
        guard let text = vector.text, vector.seed == 0 else { return }
        #expect(Array(text.utf8) == vector.bytes, "the text must round-trip to the same bytes: no normalisation")
        var hasher = Murmur3Hasher()
        hasher.combine(text)
        #expect(hasher.finalize() == vector.hash)
    }

    /// Feeding the input in two pieces, split at every point, by every feeding method, gives the one-shot hash.
    @Test(arguments: try Murmur3Vector.all())
    func streamingSplitAtEveryPointEqualsOneShot(_ vector: Murmur3Vector) {
        let input = vector.bytes
        for split in 0...input.count {
            var contiguous = Murmur3Hasher(seed: vector.seed)
            input[..<split].withUnsafeBufferPointer { contiguous.combine(contiguous: $0) }
            input[split...].withUnsafeBufferPointer { contiguous.combine(contiguous: $0) }
            #expect(contiguous.finalize() == vector.hash, "split at \(split) of \(input.count), contiguous")

            var raw = Murmur3Hasher(seed: vector.seed)
            input[..<split].withUnsafeBytes { raw.combine($0) }
            input[split...].withUnsafeBytes { raw.combine($0) }
            #expect(raw.finalize() == vector.hash, "split at \(split) of \(input.count), raw bytes")

            var mixed = Murmur3Hasher(seed: vector.seed)
            input[..<split].withUnsafeBytes { mixed.combine($0) }
            input[split...].withUnsafeBufferPointer { mixed.combine(contiguous: $0) }
            #expect(mixed.finalize() == vector.hash, "split at \(split) of \(input.count), raw then contiguous")
        }
    }

    @Test(arguments: try Murmur3Vector.all())
    func streamingInManySmallPiecesEqualsOneShot(_ vector: Murmur3Vector) {
        var generator = SeededGenerator(seed: UInt64(vector.bytes.count) &* 31 &+ UInt64(vector.seed))
        var hasher = Murmur3Hasher(seed: vector.seed)
        var index = 0
        while index < vector.bytes.count {
            let length = min(Int.random(in: 0...6, using: &generator), vector.bytes.count - index)
            vector.bytes[index..<(index + length)].withUnsafeBufferPointer { hasher.combine(contiguous: $0) }
            index += length
        }
        #expect(hasher.finalize() == vector.hash)
    }

    @Test func finalizingDoesNotConsumeTheState() {
        var hasher = Murmur3Hasher()
        hasher.combine("plugin_switch_feed_promos")
        let first = hasher.finalize()
        #expect(hasher.finalize() == first)
        hasher.combine("rider-42")
        #expect(hasher.finalize() == Murmur3Hasher.hash(Array("plugin_switch_feed_promosrider-42".utf8)))
    }

    @Test func vectorsCoverEveryTailLengthAndNonASCIIText() throws {
        let vectors = try Murmur3Vector.all()
        let lengths = Set(vectors.map(\.bytes.count))
        #expect(lengths.isSuperset(of: 0...16))
        #expect(
            vectors.contains { $0.text != nil && $0.text!.unicodeScalars.contains { $0.value > 0xFFFF } }, "an emoji")
        #expect(vectors.contains { $0.text?.unicodeScalars.contains("\u{301}") == true }, "a combining accent")
        #expect(vectors.contains { $0.text == nil }, "bytes that are not UTF-8")
    }
}
