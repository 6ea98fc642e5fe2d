import Foundation
import SwitchyardCore

/// The files under `Data/`, copied into the test bundle.
enum TestData {
    struct MissingFile: Error, CustomStringConvertible {
        let path: String
        var description: String {
            "test data file '\(path)' is missing from the test bundle; it belongs under Tests/SwitchyardCoreTests/Data/"
        }
    }

    /// The `Data` folder in the test bundle.
    static var folder: URL {
        get throws {
            guard let url = Bundle.module.url(forResource: "Data", withExtension: nil) else {
                throw MissingFile(path: "Data")
            }
            return url
        }
    }

    /// The bytes of a file, by its path under `Data/`.
    static func bytes(_ path: String) throws -> [UInt8] {
        let url = try folder.appending(path: path)
        guard let data = FileManager.default.contents(atPath: url.path) else { throw MissingFile(path: path) }
        return Array(data)
    }

    /// A JSON file under `Data/`, read with the core's own strict parser (so `1.0` stays a float).
    static func json(_ path: String) throws -> JSONValue {
        do {
            return try JSONValue.parse(bytes(path))
        } catch let error as JSONParseError {
            throw DataError(path: path, message: error.description)
        }
    }

    /// The names of the `.json` files in a folder under `Data/`, sorted.
    static func jsonFiles(in folderPath: String) throws -> [String] {
        let url = try folder.appending(path: folderPath)
        return try FileManager.default.contentsOfDirectory(atPath: url.path).filter { $0.hasSuffix(".json") }.sorted()
    }
}

/// A data file that does not have the shape its tests expect.
struct DataError: Error, CustomStringConvertible {
    let path: String
    let message: String
    var description: String { "\(path): \(message) (see Tests/SwitchyardCoreTests/Data/README.md)" }
}

extension JSONValue {
    /// A member that must be there, for reading test data.
    func required(_ key: String, in path: String) throws -> JSONValue {
        guard let value = self[key] else { throw DataError(path: path, message: "missing '\(key)'") }
        return value
    }

    func string(_ key: String, in path: String) throws -> String {
        guard let value = try required(key, in: path).stringValue else {
            throw DataError(path: path, message: "'\(key)' must be a string")
        }
        return value
    }

    func integer(_ key: String, in path: String) throws -> Int64 {
        guard let value = try required(key, in: path).int64Value else {
            throw DataError(path: path, message: "'\(key)' must be an integer")
        }
        return value
    }

    func array(_ key: String, in path: String) throws -> [JSONValue] {
        guard let value = try required(key, in: path).arrayValue else {
            throw DataError(path: path, message: "'\(key)' must be a list")
        }
        return value
    }
}

/// Bytes from lowercase or uppercase hex.
func hexBytes(_ hex: String) -> [UInt8] {
    let digits = Array(hex.utf8)
    func value(_ digit: UInt8) -> UInt8 {
        switch digit {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): digit - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): digit - UInt8(ascii: "a") + 10
        default: digit - UInt8(ascii: "A") + 10
        }
    }
    return stride(from: 0, to: digits.count - 1, by: 2).map { value(digits[$0]) << 4 | value(digits[$0 + 1]) }
}

/// A small, fast, seeded generator (SplitMix64) so that every run draws the same "random" units.
struct SeededGenerator: RandomNumberGenerator {
    private var state: UInt64

    init(seed: UInt64) {
        state = seed
    }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
