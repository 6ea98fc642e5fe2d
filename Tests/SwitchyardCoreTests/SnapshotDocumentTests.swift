import SwitchyardCore
import TestSupport
import Testing

/// The snapshot document: canonical JSON with a checksum, decoded from untrusted bytes.
struct SnapshotDocumentTests {
    static func decodingError(_ bytes: [UInt8]) -> SnapshotDecodingError? {
        do {
            _ = try SnapshotDocument.decode(bytes)
            return nil
        } catch {
            return error
        }
    }

    @Test func encodeThenDecodeGivesTheSameSnapshot() throws {
        let snapshot = try Samples.riderSnapshot()
        let bytes = SnapshotDocument.encode(snapshot)
        let decoded = try SnapshotDocument.decode(bytes)
        #expect(decoded == snapshot)
        #expect(
            decoded.flagSet.flags.map(\.key) == snapshot.flagSet.flags.map(\.key).sorted(),
            "a document lists flags by key")
        #expect(SnapshotDocument.encode(decoded) == bytes, "encoding is canonical: same snapshot, same bytes")
        #expect(decoded.entityTag == "\"3f1c9a5e-epoch.42\"")
    }

    @Test(arguments: 0..<8)
    func randomFlagSetsRoundTrip(seed: Int) throws {
        var random = RandomFlagSets(seed: UInt64(seed) + 500)
        let flagSet = random.flagSet()
        #expect(flagSet.validate().isEmpty, "\(flagSet.validate())")
        let snapshot = Snapshot(epoch: "e\(seed)", version: Int64(seed) * 1_000_003, flagSet: flagSet)
        let bytes = SnapshotDocument.encode(snapshot)
        let decoded = try SnapshotDocument.decode(bytes)
        #expect(decoded == snapshot)
        #expect(SnapshotDocument.encode(decoded) == bytes)
    }

    @Test func documentIsCanonicalWithFloatsKeptAndAVerifiableChecksum() throws {
        let bytes = SnapshotDocument.encode(try Samples.riderSnapshot())
        let text = String(decoding: bytes, as: UTF8.self)
        #expect(!text.contains(" \"") && !text.contains("\n"), "compact")
        #expect(text.hasPrefix("{\"checksum\":\"sha256:"))
        #expect(text.contains("{\"key\":\"one\",\"value\":1.0}"), "a float variant stays 1.0")
        #expect(text.contains("\"rollout\":2500"), "rollouts are basis points")
        #expect(text.contains("\"format\":1") && text.contains("\"version\":42"))
        // The checksum is the documented one, recomputed here from the tree.
        #expect(Samples.signed(try JSONValue.parse(bytes)) == bytes)
    }

    /// A single-byte change inside any value (a string or a number, other than `format`) is caught by the
    /// checksum, or, when it breaks the UTF-8 of a string, refused as malformed; a change of `format` is refused
    /// as an unsupported format. Every value is changed at its first and last byte and every third byte between.
    @Test func anySingleByteChangeInAValueIsDetected() async throws {
        try await onOwnThread {
            let bytes = SnapshotDocument.encode(try Samples.riderSnapshot())
            var checked = 0
            for (range, isNumber) in Self.valueRanges(in: bytes) {
                let isFormat =
                    String(decoding: bytes[max(0, range.lowerBound - 9)..<range.lowerBound], as: UTF8.self)
                    == "\"format\":"
                for position in range where position == range.upperBound - 1 || (position - range.lowerBound) % 3 == 0 {
                    var mutated = bytes
                    mutated[position] = Self.replacement(for: bytes[position], isNumber: isNumber)
                    let error = Self.decodingError(mutated)
                    if isFormat {
                        #expect(error?.kind == .unsupportedFormat, "format changed at \(position)")
                    } else if (try? JSONValue.parse(mutated)) == nil {
                        #expect(
                            bytes[position] >= 0x80 && error?.kind == .malformed,
                            "byte \(position) changed: \(String(describing: error))")
                    } else {
                        #expect(
                            error?.kind == .checksumMismatch,
                            "byte \(position) changed: \(error.map(String.init(describing:)) ?? "accepted")")
                        checked += 1
                    }
                }
            }
            #expect(checked > 300)
        }
    }

    /// Byte ranges of the values of a canonical document: string contents that are not member names, and
    /// number literals.
    static func valueRanges(in bytes: [UInt8]) -> [(Range<Int>, isNumber: Bool)] {
        var ranges: [(Range<Int>, isNumber: Bool)] = []
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                var end = index + 1
                while bytes[end] != UInt8(ascii: "\"") { end += bytes[end] == UInt8(ascii: "\\") ? 2 : 1 }
                let isName = end + 1 < bytes.count && bytes[end + 1] == UInt8(ascii: ":")
                if !isName && end > index + 1 { ranges.append((index + 1..<end, false)) }
                index = end + 1
            } else if (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) {
                var end = index
                while end < bytes.count,
                    (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[end]) || bytes[end] == UInt8(ascii: ".")
                { end += 1 }
                ranges.append((index..<end, true))
                index = end
            } else {
                index += 1
            }
        }
        return ranges
    }

    /// A different byte that keeps the document well-formed where it can: another digit (never a leading zero),
    /// another ASCII letter, or a neighbouring byte inside a multi-byte character.
    static func replacement(for byte: UInt8, isNumber: Bool) -> UInt8 {
        if isNumber {
            guard byte != UInt8(ascii: ".") else { return UInt8(ascii: "5") }
            return byte == UInt8(ascii: "7") ? UInt8(ascii: "3") : UInt8(ascii: "7")
        }
        if byte >= 0x80 { return byte ^ 0x01 }
        return byte == UInt8(ascii: "q") ? UInt8(ascii: "z") : UInt8(ascii: "q")
    }

    @Test func unsupportedFormatsAreRefused() throws {
        var tree = try JSONValue.parse(SnapshotDocument.encode(try Samples.riderSnapshot())).objectValue!
        tree["format"] = .int(2)
        let newer = try #require(Self.decodingError(Samples.signed(.object(tree))))
        #expect(newer.kind == .unsupportedFormat)
        #expect(newer.description == "invalid snapshot: format 2 is not supported (this reader knows format 1)")
        tree["format"] = .int(0)
        #expect(Self.decodingError(Samples.signed(.object(tree)))?.kind == .unsupportedFormat)
        tree["format"] = .string("1")
        let text = try #require(Self.decodingError(Samples.signed(.object(tree))))
        #expect(text.kind == .malformed && text.message.hasPrefix("format:"))
    }

    @Test(arguments: [
        ("epoch", JSONValue?.none, "epoch: is required and must be a non-empty string"),
        ("epoch", .string(""), "epoch: is required and must be a non-empty string"),
        ("version", nil, "version: is required and must be a non-negative integer"),
        ("version", .int(-1), "version: is required and must be a non-negative integer"),
        ("version", .double(42.5), "version: is required and must be a non-negative integer"),
        ("format", nil, "format: is required and must be an integer"),
        ("namespace", nil, "namespace: is required"),
        (
            "namespace", .string("has space"),
            "namespace: 'has space' may only contain letters, digits, '.', '_' and '-'"
        ),
        ("flagz", .object(JSONObject()), "flagz: unknown field; did you mean 'flags'?"),
    ])
    func decodingErrorsNameTheField(_ field: String, _ value: JSONValue?, _ message: String) throws {
        var tree = try JSONValue.parse(SnapshotDocument.encode(try Samples.riderSnapshot())).objectValue!
        tree[field] = value
        let error = try #require(Self.decodingError(Samples.signed(.object(tree))))
        #expect(error.description.contains(message), "\(error)")
    }

    @Test func invalidFlagSetsNameThePathOfEveryProblem() throws {
        var tree = try JSONValue.parse(SnapshotDocument.encode(try Samples.riderSnapshot())).objectValue!
        var flags = tree["flags"]!.objectValue!
        var promos = flags["plugin_switch_feed_promos"]!.objectValue!
        var rules = promos["rules"]!.arrayValue!
        var rule = rules[1].objectValue!
        rule["rollout"] = .int(10_001)
        rules[1] = .object(rule)
        promos["rules"] = .array(rules)
        promos["rollot"] = .int(5)
        flags["plugin_switch_feed_promos"] = .object(promos)
        tree["flags"] = .object(flags)
        let error = try #require(Self.decodingError(Samples.signed(.object(tree))))
        #expect(error.kind == .invalid)
        #expect(
            error.message.contains(
                "flags.plugin_switch_feed_promos.rules[1].rollout: 10001 is not between 0 and 10000 basis points"))
        #expect(
            error.message.contains("flags.plugin_switch_feed_promos.rollot: unknown field; did you mean 'rollout'?"))
    }

    @Test func malformedDocumentsSayWhatIsWrong() throws {
        #expect(
            Self.decodingError(Array("{\"format\": 1,}".utf8))?.description
                == "invalid snapshot: not valid JSON: line 1, column 14: unexpected '}', expected a member name in quotes"
        )
        #expect(
            Self.decodingError(Array("[]".utf8))?.description
                == "invalid snapshot: the document must be a JSON object, not a list")
        #expect(Self.decodingError([])?.kind == .malformed)
        var tree = try JSONValue.parse(SnapshotDocument.encode(try Samples.riderSnapshot())).objectValue!
        tree["checksum"] = nil
        #expect(
            Self.decodingError(JSONValue.object(tree).serialized())?.description
                == "invalid snapshot: checksum: is required and must be a string")
        tree["checksum"] = .string("sha256:00")
        let mismatch = try #require(Self.decodingError(JSONValue.object(tree).serialized()))
        #expect(
            mismatch.kind == .checksumMismatch
                && mismatch.message.hasPrefix("checksum sha256:00 does not match the content (sha256:"))
    }

    @Test func oversizedDocumentsAreRefusedBeforeParsing() {
        let error = Self.decodingError([UInt8](repeating: UInt8(ascii: " "), count: SnapshotDocument.maximumSize + 1))
        #expect(error?.kind == .tooLarge)
        #expect(error?.message.contains("the limit is \(SnapshotDocument.maximumSize)") == true)
    }

    /// Whitespace and member order are not part of the checksummed content: a pretty-printed document with the
    /// same tree decodes to the same snapshot.
    @Test func reformattedDocumentsWithTheSameContentDecode() throws {
        let bytes = SnapshotDocument.encode(try Samples.riderSnapshot())
        let pretty = try JSONValue.parse(bytes).serialized(
            JSONValue.WritingOptions(prettyPrinted: true, sortedKeys: false))
        #expect(try SnapshotDocument.decode(pretty) == SnapshotDocument.decode(bytes))
    }
}

@Suite struct EmptyPluginPointTests {
    @Test func aPluginPointWithoutSwitchesRoundTripsThroughTheSnapshot() throws {
        let flagSet = FlagSet(
            namespace: "rider", pluginPoints: [PluginPointDefinition(name: "empty_point", switches: [])])
        let snapshot = Snapshot(epoch: "e", version: 1, flagSet: flagSet)
        let decoded = try SnapshotDocument.decode(SnapshotDocument.encode(snapshot))
        #expect(decoded == snapshot)
        #expect(decoded.flagSet.pluginPoints.first?.switches == [])
    }
}
