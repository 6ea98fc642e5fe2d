import SwitchyardCore
import Testing

/// A murmur3 vector from `Data/vectors/murmur3.json` (Python's mmh3).
struct Murmur3Vector: Sendable, CustomTestStringConvertible {
    let note: String
    let bytes: [UInt8]
    let text: String?
    let seed: UInt32
    let hash: UInt32

    var testDescription: String { note }

    static func all() throws -> [Murmur3Vector] {
        let path = "vectors/murmur3.json"
        return try TestData.json(path).array("vectors", in: path).map { vector in
            Murmur3Vector(
                note: try vector.string("note", in: path), bytes: hexBytes(try vector.string("hex", in: path)),
                text: vector["text"]?.stringValue, seed: UInt32(try vector.integer("seed", in: path)),
                hash: UInt32(try vector.integer("hash", in: path)))
        }
    }
}

/// A bucket vector from `Data/vectors/buckets.json`.
struct BucketVector: Sendable, CustomTestStringConvertible {
    let flagKey: String
    let unitId: String
    let hash: UInt32
    let bucket: Int

    var testDescription: String { "\(flagKey.debugDescription) + \(unitId.debugDescription)" }

    static func all() throws -> [BucketVector] {
        let path = "vectors/buckets.json"
        return try TestData.json(path).array("vectors", in: path).map { vector in
            BucketVector(
                flagKey: try vector.string("flag_key", in: path), unitId: try vector.string("unit_id", in: path),
                hash: UInt32(try vector.integer("hash", in: path)), bucket: Int(try vector.integer("bucket", in: path)))
        }
    }

    /// `formula`: hashes at the edges of the bucket arithmetic and their buckets.
    static func formula() throws -> [(hash: UInt32, bucket: Int)] {
        let path = "vectors/buckets.json"
        return try TestData.json(path).array("formula", in: path).map { entry in
            (UInt32(try entry.integer("hash", in: path)), Int(try entry.integer("bucket", in: path)))
        }
    }
}

/// A weighted variant pick from `Data/vectors/variants.json`.
struct VariantVector: Sendable {
    let flagKey: String
    let unitId: String
    let weights: [(key: String, weight: UInt32)]
    let hash: UInt32
    let point: UInt64
    let variant: String

    static func all() throws -> [VariantVector] {
        let path = "vectors/variants.json"
        return try TestData.json(path).array("vectors", in: path).map { vector in
            let weights = try vector.array("weights", in: path).map { pair in
                guard let pair = pair.arrayValue, pair.count == 2, let key = pair[0].stringValue,
                    let weight = pair[1].int64Value
                else {
                    throw DataError(path: path, message: "each weight must be [key, integer]")
                }
                return (key: key, weight: UInt32(weight))
            }
            return VariantVector(
                flagKey: try vector.string("flag_key", in: path), unitId: try vector.string("unit_id", in: path),
                weights: weights, hash: UInt32(try vector.integer("hash", in: path)),
                point: UInt64(try vector.integer("point", in: path)), variant: try vector.string("variant", in: path))
        }
    }
}

/// A SHA-256 vector from `Data/vectors/sha256.json` (Python's hashlib).
struct SHA256Vector: Sendable, CustomTestStringConvertible {
    let note: String
    let bytes: [UInt8]
    let digest: String

    var testDescription: String { note }

    static func all() throws -> [SHA256Vector] {
        let path = "vectors/sha256.json"
        return try TestData.json(path).array("vectors", in: path).map { vector in
            var input: [UInt8]
            if let repeated = vector["repeat"] {
                input = [UInt8](
                    repeating: hexBytes(try repeated.string("byte_hex", in: path))[0],
                    count: Int(try repeated.integer("count", in: path)))
            } else {
                input = hexBytes(try vector.string("hex", in: path))
            }
            return SHA256Vector(
                note: try vector.string("note", in: path), bytes: input, digest: try vector.string("sha256", in: path))
        }
    }
}
