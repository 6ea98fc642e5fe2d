import SwitchyardCore
import Testing

/// SHA-256 against Python's hashlib, at every padding boundary.
struct SHA256Tests {
    @Test(arguments: try SHA256Vector.all())
    func digestMatchesHashlib(_ vector: SHA256Vector) {
        #expect(SHA256.hexDigest(vector.bytes) == vector.digest)
        #expect(SHA256.digest(vector.bytes).count == 32)
    }

    @Test func digestOfASliceEqualsDigestOfACopy() {
        let bytes = Array("xxabcxx".utf8)
        #expect(SHA256.hexDigest(bytes[2..<5]) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    }
}
