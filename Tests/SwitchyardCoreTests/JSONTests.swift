import SwitchyardCore
import Testing

/// The strict parser: RFC 8259, UTF-8, no duplicate keys, bounded nesting, and errors that say where.
struct JSONParserTests {
    static func parseError(_ text: String) -> JSONParseError? {
        do {
            _ = try JSONValue.parse(text)
            return nil
        } catch {
            return error
        }
    }

    static func parseError(bytes: [UInt8]) -> JSONParseError? {
        do {
            _ = try JSONValue.parse(bytes)
            return nil
        } catch {
            return error
        }
    }

    @Test(arguments: [
        (#"{"a": 1, "a": 2}"#, "duplicate key 'a'"),
        (#"{"a": {"b": 1, "c": 2, "b": 3}}"#, "duplicate key 'b'"),
        (#"{"a": 1, "\u0061": 2}"#, "duplicate key 'a'"),
    ])
    func duplicateKeysAreRefused(_ text: String, _ message: String) throws {
        let error = try #require(Self.parseError(text))
        #expect(error.message == message)
    }

    /// A list read after a large one holds its own elements, not the parser's stack grown by the large one: with
    /// 10,000 flags, each flag's short lists once kept ~49 KB each (about 1 GiB allocated for one namespace).
    @Test func aShortListAfterALongOneHoldsOnlyItsElements() throws {
        let long = (0..<5_000).map(String.init).joined(separator: ",")
        let tree = try JSONValue.parse(#"{"long": [\#(long)], "short": [1, 2], "nested": {"also": [3]}}"#)
        let short = try #require(tree["short"]?.arrayValue)
        let also = try #require(tree["nested"]?["also"]?.arrayValue)
        #expect(short.count == 2 && short.capacity < 64, "capacity \(short.capacity)")
        #expect(also.count == 1 && also.capacity < 64, "capacity \(also.capacity)")
        #expect(tree["long"]?.arrayValue?.count == 5_000)
    }

    @Test func sameKeyInDifferentObjectsIsFine() throws {
        let value = try JSONValue.parse(#"[{"a": 1}, {"a": 2}, {"b": {"a": 3}}]"#)
        #expect(value.arrayValue?.count == 3)
    }

    @Test func nestingIsLimited() throws {
        let deepest = String(repeating: "[", count: 64) + String(repeating: "]", count: 64)
        #expect(Self.parseError(deepest) == nil)
        let tooDeep = String(repeating: "[", count: 65) + String(repeating: "]", count: 65)
        #expect(Self.parseError(tooDeep)?.message == "nesting deeper than 64 levels")
        let objects = String(repeating: #"{"a":"#, count: 65) + "1" + String(repeating: "}", count: 65)
        #expect(Self.parseError(objects)?.message == "nesting deeper than 64 levels")
        #expect(throws: JSONParseError.self) { try JSONValue.parse("[[[1]]]", maximumDepth: 2) }
        // A hostile depth does not overflow the stack: the limit stops it first.
        #expect(Self.parseError(String(repeating: "[", count: 200_000)) != nil)
    }

    @Test(arguments: [
        (#""\x""#, "invalid escape sequence '\\x'"),
        (#""\'""#, "invalid escape sequence '\\''"),
        (#""\u12""#, "incomplete \\u escape"),
        (#"["\u12", 1]"#, "invalid hex digit in \\u escape"),
        (#""\u12G4""#, "invalid hex digit in \\u escape"),
        (#""\u""#, "incomplete \\u escape"),
        ("\"tab\there\"", "control character in string; escape it"),
        ("\"line\nbreak\"", "control character in string; escape it"),
        (#""unterminated"#, "unterminated string"),
        (#""ends in \"#, "unterminated escape sequence"),
    ])
    func badStringsAreRefused(_ text: String, _ message: String) throws {
        let error = try #require(Self.parseError(text), "\(text)")
        #expect(error.message == message)
    }

    @Test func surrogatePairsDecodeAndLoneSurrogatesAreRefused() throws {
        #expect(try JSONValue.parse(#""\ud83d\ude95""#) == .string("🚕"))
        #expect(try JSONValue.parse(#""\uD83D\uDE95""#) == .string("🚕"))
        #expect(try JSONValue.parse(#""\u00e9\u0000""#) == .string("é\u{0}"))
        for text in [#""\ud83d""#, #""\ud83dx""#, #""\ud83d\ud83d""#, #""\ude95""#, #""\ud83d\u0041""#, #""\ud83d\n""#]
        {
            let error = try #require(Self.parseError(text), "\(text)")
            #expect(error.message.contains("surrogate") || error.message.contains("escape"), "\(text): \(error)")
        }
    }

    @Test(
        arguments: [
            [0x22, 0xC3, 0x28, 0x22],  // a lead byte followed by ASCII
            [0x22, 0xC0, 0xAF, 0x22],  // overlong '/'
            [0x22, 0xED, 0xA0, 0x80, 0x22],  // a UTF-16 surrogate encoded in UTF-8
            [0x22, 0xF5, 0x80, 0x80, 0x80, 0x22],  // beyond U+10FFFF
            [0x22, 0xFF, 0x22],
            [0x22, 0xE6, 0x9D, 0x22],  // truncated three-byte sequence
            [0x22, 0x80, 0x22],  // a lone continuation byte
        ] as [[UInt8]])
    func invalidUTF8IsRefused(_ bytes: [UInt8]) throws {
        let error = try #require(Self.parseError(bytes: bytes))
        #expect(error.message == "invalid UTF-8 in string")
    }

    @Test func validMultibyteTextIsKept() throws {
        let text = "Zürich 東京 🚕 👩‍👩‍👧 cafe\u{301}"
        let value = try JSONValue.parse("\"\(text)\"")
        #expect(value.stringValue.map { Array($0.utf8) } == Array(text.utf8), "no normalisation")
    }

    @Test(arguments: ["01", "-01", "00", "0123", "-00.5"])
    func leadingZerosAreRefused(_ text: String) throws {
        #expect(Self.parseError(text)?.message == "invalid number, leading zeros are not allowed")
    }

    @Test(arguments: [
        "+1", ".5", "1.", "1e", "1e+", "-", "--1", "0x10", "NaN", "Infinity", "-Infinity", "1.0e", "1.e5", "- 1",
    ])
    func malformedNumbersAreRefused(_ text: String) {
        #expect(Self.parseError(text) != nil, "\(text)")
    }

    @Test(arguments: [
        "0", "-0", "0.5", "-0.0", "1e5", "1E+5", "1e-5", "123.456e-7", "9223372036854775807", "-9223372036854775808",
    ])
    func validNumbersKeepTheirLiteral(_ text: String) throws {
        #expect(try JSONValue.parse(text) == .number(JSONNumber(uncheckedLiteral: text)))
    }

    /// A whole number is an integer however it is written, as JSON Schema counts them; exactly, without rounding.
    @Test(
        arguments: [
            ("942", 942), ("942.0", 942), ("9.42e2", 942), ("9420E-1", 942), ("-3.000", -3), ("1e3", 1_000),
            ("0.5e1", 5), ("-0.0", 0), ("0e999999", 0), ("9.223372036854775807e18", Int64.max),
            ("-9223372036854775808.0", Int64.min), ("0.000000000000000000001e21", 1),
            ("0.0000000000000000000000042e25", 42),
        ] as [(String, Int64)])
    func wholeNumbersAreIntegersHoweverWritten(text: String, value: Int64) throws {
        #expect(try JSONValue.parse(text).int64Value == value)
        #expect(try JSONValue.parse(text).typeDescription == "an integer")
    }

    @Test(arguments: [
        "1.5", "942.01", "1e-1", "9.3e18", "1e-300", "12345678901234567890e0", "0.1e30", "1e25",
        // An exponent whose magnitude overflows `abs` (Int.min) once trapped.
        "1e-9223372036854775808", "1.5e-99999999999999999999",
    ])
    func fractionsAndWholeNumbersOutOfRangeAreNotIntegers(text: String) throws {
        #expect(try JSONValue.parse(text).int64Value == nil)
    }

    @Test func hugeNumbersAreRefusedOrKeptExactly() throws {
        #expect(Self.parseError("1e400")?.message == "number out of range")
        #expect(Self.parseError("-1e400")?.message == "number out of range")
        #expect(Self.parseError("[" + String(repeating: "9", count: 500) + "]")?.message == "number literal too long")
        let big = try JSONValue.parse("99999999999999999999")
        #expect(big.int64Value == nil, "does not fit Int64, so it is not read as one")
        #expect(big == .number(JSONNumber(uncheckedLiteral: "99999999999999999999")))
        #expect(try JSONValue.parse("1e-400") != nil as JSONValue?)
        #expect(try JSONValue.parse("9223372036854775808").int64Value == nil)
    }

    @Test(arguments: [
        ("{} x", "unexpected 'x' after the end of the document"),
        ("1 2", "unexpected '2' after the end of the document"),
        ("[]]", "unexpected ']' after the end of the document"),
        ("{}{}", "unexpected '{' after the end of the document"),
        (#""a" "b""#, "unexpected '\"' after the end of the document"),
        ("truex", "unexpected 'x' after the end of the document"),
        ("null\u{0}", "unexpected byte 0x0 after the end of the document"),
    ])
    func trailingGarbageIsRefused(_ text: String, _ message: String) throws {
        #expect(Self.parseError(text)?.message == message)
    }

    @Test(arguments: [
        ("", "the document is empty"), ("   \n\t ", "the document is empty"), ("tru", "unexpected end of input"),
        ("nul", "unexpected end of input"), ("fals", "unexpected end of input"),
        ("trve", "invalid literal, expected 'true'"),
        ("[1,]", "unexpected ']', expected a value"),
        ("{\"a\":1,}", "unexpected '}', expected a member name in quotes"),
        ("{'a':1}", "unexpected ''', expected a member name in quotes"),
        ("{\"a\" 1}", "unexpected '1', expected ':' after member name"),
        ("[1 2]", "unexpected '2', expected ',' or ']'"), ("{\"a\":1 \"b\":2}", "unexpected '\"', expected ',' or '}'"),
        ("[", "unexpected end of input, expected a value"), ("{\"a\":", "unexpected end of input, expected a value"),
        ("/* comment */ 1", "unexpected '/', expected a value"),
    ])
    func syntaxErrorsSayWhatWasExpected(_ text: String, _ message: String) throws {
        #expect(Self.parseError(text)?.message == message, "\(text)")
    }

    @Test func byteOrderMarkIsToleratedOnlyAtTheStart() throws {
        #expect(try JSONValue.parse([0xEF, 0xBB, 0xBF] + Array("{\"a\": 1}".utf8))["a"] == .int(1))
        #expect(Self.parseError(bytes: [0xEF, 0xBB, 0xBF])?.message == "the document is empty")
        #expect(Self.parseError(bytes: Array(" ".utf8) + [0xEF, 0xBB, 0xBF] + Array("{}".utf8)) != nil)
        #expect(Self.parseError(bytes: [0xEF, 0xBB, 0xBF, 0xEF, 0xBB, 0xBF] + Array("{}".utf8)) != nil)
    }

    @Test func errorsGiveLineAndColumn() throws {
        let error = try #require(Self.parseError("{\n  \"a\": 1,\n  \"a\": 2\n}"))
        #expect((error.line, error.column) == (3, 3))
        #expect(error.description == "line 3, column 3: duplicate key 'a'")
        let multibyte = try #require(Self.parseError("[\"東京\", x]"))
        #expect((multibyte.line, multibyte.column) == (1, 8), "columns count characters, not bytes")
        #expect(multibyte.offset == 11)
    }

    @Test func memberOrderIsKeptAndEqualityIgnoresIt() throws {
        let value = try JSONValue.parse(#"{"b": 1, "a": 2, "c": 3}"#)
        #expect(value.objectValue?.memberKeys == ["b", "a", "c"])
        #expect(value == (try JSONValue.parse(#"{"c": 3, "a": 2, "b": 1}"#)))
        #expect(
            value != (try JSONValue.parse(#"{"c": 3, "a": 2, "b": 1.0}"#)), "1 and 1.0 differ: a float stays a float")
    }
}

/// The writer: canonical bytes for checksums, floats that stay floats, escapes, round trips.
struct JSONWriterTests {
    @Test(arguments: [
        ("1.0", "1.0"), ("1", "1"), ("-0", "0"), ("-0.0", "-0.0"), ("1.50", "1.5"), ("1e2", "100.0"), ("1E2", "100.0"),
        ("0.1", "0.1"), ("1e21", "1e+21"), ("5e-324", "5e-324"), ("0.000001", "1e-06"), ("12.34", "12.34"),
        ("9223372036854775807", "9223372036854775807"), ("-9223372036854775808", "-9223372036854775808"),
    ])
    func numbersAreWrittenCanonically(_ literal: String, _ canonical: String) throws {
        let written = try JSONValue.parse(literal).serializedString()
        #expect(written == canonical, "\(literal)")
        #expect(try JSONValue.parse(written).serializedString() == written, "canonical output is a fixed point")
    }

    @Test func floatsAlwaysCarryADecimalPoint() {
        #expect(JSONValue.double(1.0).serializedString() == "1.0")
        #expect(JSONValue.double(0).serializedString() == "0.0")
        #expect(JSONValue.double(-0.0).serializedString() == "-0.0")
        #expect(JSONValue.double(100).serializedString() == "100.0")
        #expect(JSONValue.double(1e300).serializedString() == "1e+300")
        #expect(JSONValue.double(.nan).serializedString() == "0.0", "non-finite values have no JSON form")
        #expect(FlagValue.float(2).jsonValue.serializedString() == "2.0")
        #expect(FlagValue.integer(2).jsonValue.serializedString() == "2")
    }

    @Test func keysAreSortedByTheirUTF8Bytes() {
        // UTF-16 order would put the emoji (D83D) before U+FFFD; Swift's String order would put the decomposed
        // "e\u{301}" (0x65 0xCC 0x81) after "f" as it compares it like "é".
        let object = JSONObject([
            ("\u{FFFD}", .int(1)), ("😀", .int(2)), ("f", .int(3)), ("e\u{301}", .int(4)),
            ("B", .int(5)), ("a", .int(6)), ("aa", .int(7)), ("", .int(8)),
        ])
        let written = JSONValue.object(object).serializedString()
        #expect(written == "{\"\":8,\"B\":5,\"a\":6,\"aa\":7,\"e\u{301}\":4,\"f\":3,\"\u{FFFD}\":1,\"😀\":2}")
        let unsorted = JSONValue.object(object).serializedString(JSONValue.WritingOptions(sortedKeys: false))
        #expect(unsorted.hasPrefix("{\"\u{FFFD}\":1,\"😀\":2"), "member order is kept when not sorting")
    }

    @Test func onlyQuotesBackslashesAndControlCharactersAreEscaped() throws {
        let text = String((0..<0x80).map { Character(Unicode.Scalar(UInt8($0))) }) + "é東🚕\u{2028}/"
        let written = JSONValue.string(text).serializedString()
        #expect(written.hasPrefix(#""\u0000\u0001\u0002\u0003\u0004\u0005\u0006\u0007\u0008\t\n\u000b\u000c\r\u000e"#))
        #expect(written.contains(##" !\"#$%&'()*+,-./0123456789"##))
        #expect(written.contains(#"Z[\\]^_`a"#))
        #expect(written.hasSuffix("~\u{7F}é東🚕\u{2028}/\""), "DEL, non-ASCII, U+2028 and '/' are written as they are")
        #expect(try JSONValue.parse(written) == .string(text))
    }

    @Test func prettyOutputParsesBackToTheSameTree() throws {
        let tree = try JSONValue.parse(#"{"b": [1, 2.0, {"c": null}], "a": {}, "d": [], "e": "x\ny", "f": true}"#)
        let pretty = tree.serializedString(.pretty)
        #expect(pretty.contains("\n  \"a\": {},\n"))
        #expect(pretty.hasSuffix("}\n"))
        #expect(try JSONValue.parse(pretty) == tree)
        #expect(try JSONValue.parse(pretty).serializedString() == tree.serializedString())
    }

    /// Random trees: parse(write(tree)) == tree, and writing is canonical (a fixed point after one round).
    @Test(arguments: 0..<4)
    func randomTreesRoundTrip(seed: Int) throws {
        var generator = SeededGenerator(seed: UInt64(seed) &+ 1_000)
        for _ in 0..<100 {
            let tree = Self.randomValue(depth: 0, using: &generator)
            let written = tree.serialized()
            let reparsed = try JSONValue.parse(written)
            #expect(reparsed == tree, "\(tree.serializedString())")
            #expect(reparsed.serialized() == written)
            #expect(try JSONValue.parse(tree.serialized(.pretty)) == tree)
        }
    }

    static func randomString(using generator: inout SeededGenerator) -> String {
        let pool: [Character] = [
            "a", "Z", "0", " ", "\"", "\\", "/", "\n", "\t", "\u{0}", "\u{1F}", "\u{7F}", "é", "e\u{301}", "東", "🚕",
            "\u{FFFD}", "\u{2028}",
        ]
        return String(
            (0..<Int.random(in: 0...8, using: &generator)).map { _ in pool.randomElement(using: &generator)! })
    }

    static func randomValue(depth: Int, using generator: inout SeededGenerator) -> JSONValue {
        switch Int.random(in: 0..<(depth > 4 ? 5 : 7), using: &generator) {
        case 0: return .null
        case 1: return .bool(Bool.random(using: &generator))
        case 2:
            return .int64(
                Int64.random(in: .min ... .max, using: &generator) >> UInt64.random(in: 0...63, using: &generator))
        case 3:
            let value = Double(bitPattern: generator.next())
            return .double(value.isFinite ? value : Double.random(in: -1e6...1e6, using: &generator))
        case 4: return .string(randomString(using: &generator))
        case 5:
            return .array(
                (0..<Int.random(in: 0...4, using: &generator)).map { _ in
                    randomValue(depth: depth + 1, using: &generator)
                })
        default:
            var object = JSONObject()
            for _ in 0..<Int.random(in: 0...4, using: &generator) {
                object[randomString(using: &generator)] = randomValue(depth: depth + 1, using: &generator)
            }
            return .object(object)
        }
    }
}
