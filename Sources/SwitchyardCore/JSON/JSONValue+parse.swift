/// Why bytes are not a JSON document: what is wrong and where.
public struct JSONParseError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Byte offset of the problem in the input.
    public let offset: Int
    /// 1-based line and column of the problem.
    public let line: Int
    public let column: Int
    public let message: String

    public var description: String { "line \(line), column \(column): \(message)" }
}

extension JSONValue {
    /// Parses untrusted bytes strictly: RFC 8259 syntax, UTF-8, no duplicate object keys, bounded nesting.
    ///
    /// Never traps, whatever the input.
    /// - Parameters:
    ///   - bytes: the document.
    ///   - maximumDepth: deepest nesting of arrays and objects accepted.
    /// - Throws: `JSONParseError` naming the position and the problem.
    public static func parse(_ bytes: some Collection<UInt8>, maximumDepth: Int = 64) throws(JSONParseError)
        -> JSONValue
    {
        // The parser reads raw memory: no bounds check or reference count per byte.
        func parse(_ buffer: UnsafeBufferPointer<UInt8>) -> Result<JSONValue, JSONParseError> {
            var parser = JSONParser(bytes: buffer, maximumDepth: maximumDepth)
            return Result { () throws(JSONParseError) in try parser.parseDocument() }
        }
        let result = bytes.withContiguousStorageIfAvailable(parse) ?? Array(bytes).withUnsafeBufferPointer(parse)
        return try result.get()
    }

    /// Parses a string holding a JSON document.
    public static func parse(_ text: String, maximumDepth: Int = 64) throws(JSONParseError) -> JSONValue {
        try parse(Array(text.utf8), maximumDepth: maximumDepth)
    }
}

private struct JSONParser {
    let bytes: UnsafeBufferPointer<UInt8>
    let maximumDepth: Int
    var index = 0
    var depth = 0
    /// The members and elements of the objects and arrays being parsed, nested ones above their parents': each
    /// container is then allocated once, at its size, instead of growing.
    var memberStack: [JSONObject.Member] = []
    var elementStack: [JSONValue] = []

    init(bytes: UnsafeBufferPointer<UInt8>, maximumDepth: Int) {
        self.bytes = bytes
        self.maximumDepth = maximumDepth
    }

    mutating func parseDocument() throws(JSONParseError) -> JSONValue {
        // A UTF-8 byte order mark is tolerated, as RFC 8259 allows parsers to.
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { index = 3 }
        skipWhitespace()
        if index == bytes.count { throw error("the document is empty") }
        let value = try parseValue()
        skipWhitespace()
        if index != bytes.count { throw error("unexpected \(describeByte()) after the end of the document") }
        return value
    }

    func error(_ message: String, at position: Int? = nil) -> JSONParseError {
        let offset = min(position ?? index, bytes.count)
        var line = 1
        var column = 1
        for byte in bytes[0..<offset] {
            if byte == UInt8(ascii: "\n") {
                line += 1
                column = 1
            } else if byte & 0xC0 != 0x80 {
                column += 1
            }
        }
        return JSONParseError(offset: offset, line: line, column: column, message: message)
    }

    func describeByte() -> String {
        guard index < bytes.count else { return "end of input" }
        let byte = bytes[index]
        if byte >= 0x21 && byte < 0x7F { return "'\(Character(Unicode.Scalar(byte)))'" }
        return "byte 0x\(String(byte, radix: 16, uppercase: true))"
    }

    mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x09, 0x0A, 0x0D: index += 1
            default: return
            }
        }
    }

    mutating func parseValue() throws(JSONParseError) -> JSONValue {
        guard index < bytes.count else { throw error("unexpected end of input, expected a value") }
        switch bytes[index] {
        case UInt8(ascii: "{"): return try parseObject()
        case UInt8(ascii: "["): return try parseArray()
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "t"):
            try expectWord("true")
            return .bool(true)
        case UInt8(ascii: "f"):
            try expectWord("false")
            return .bool(false)
        case UInt8(ascii: "n"):
            try expectWord("null")
            return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number(try parseNumber())
        default: throw error("unexpected \(describeByte()), expected a value")
        }
    }

    mutating func expectWord(_ word: StaticString) throws(JSONParseError) {
        let start = index
        let length = word.utf8CodeUnitCount
        guard bytes.count - index >= length else { throw error("unexpected end of input", at: start) }
        var matches = true
        word.withUTF8Buffer { expected in
            for offset in 0..<length where bytes[start + offset] != expected[offset] {
                matches = false
            }
        }
        guard matches else { throw error("invalid literal, expected '\(word)'", at: start) }
        index += length
    }

    mutating func enter() throws(JSONParseError) {
        depth += 1
        if depth > maximumDepth { throw error("nesting deeper than \(maximumDepth) levels") }
    }

    mutating func parseObject() throws(JSONParseError) -> JSONValue {
        try enter()
        index += 1
        // Duplicates are found by comparing with the keys so far while the object is small, by a set beyond.
        var seen: Set<String>?
        let base = memberStack.count
        skipWhitespace()
        if index < bytes.count && bytes[index] == UInt8(ascii: "}") {
            index += 1
            depth -= 1
            return .object(JSONObject())
        }
        while true {
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else {
                throw error("unexpected \(describeByte()), expected a member name in quotes")
            }
            let keyStart = index
            let key = try parseString()
            let duplicate: Bool
            if seen != nil {
                duplicate = !seen!.insert(key).inserted
            } else if memberStack.count - base < 16 {
                duplicate = memberStack[base...].contains { JSONObject.sameKey($0.key, key) }
            } else {
                seen = Set(memberStack[base...].map(\.key))
                duplicate = !seen!.insert(key).inserted
            }
            guard !duplicate else { throw error("duplicate key '\(key)'", at: keyStart) }
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else {
                throw error("unexpected \(describeByte()), expected ':' after member name")
            }
            index += 1
            skipWhitespace()
            let value = try parseValue()
            memberStack.append((key, value))
            skipWhitespace()
            guard index < bytes.count else { throw error("unexpected end of input, expected ',' or '}'") }
            if bytes[index] == UInt8(ascii: ",") {
                index += 1
                continue
            }
            if bytes[index] == UInt8(ascii: "}") {
                index += 1
                depth -= 1
                let object = JSONObject(uncheckedMembers: Self.copy(memberStack[base...]))
                memberStack.removeSubrange(base...)
                return .object(object)
            }
            throw error("unexpected \(describeByte()), expected ',' or '}'")
        }
    }

    mutating func parseArray() throws(JSONParseError) -> JSONValue {
        try enter()
        index += 1
        let base = elementStack.count
        skipWhitespace()
        if index < bytes.count && bytes[index] == UInt8(ascii: "]") {
            index += 1
            depth -= 1
            return .array([])
        }
        while true {
            skipWhitespace()
            let element = try parseValue()
            elementStack.append(element)
            skipWhitespace()
            guard index < bytes.count else { throw error("unexpected end of input, expected ',' or ']'") }
            if bytes[index] == UInt8(ascii: ",") {
                index += 1
                continue
            }
            if bytes[index] == UInt8(ascii: "]") {
                index += 1
                depth -= 1
                let elements = Self.copy(elementStack[base...])
                elementStack.removeSubrange(base...)
                return .array(elements)
            }
            throw error("unexpected \(describeByte()), expected ',' or ']'")
        }
    }

    /// A container's members, copied off the parser's stack at their own size. `Array(slice)` of a slice that spans
    /// the whole stack (a container at the bottom of it) takes the stack's buffer instead, with its capacity: after
    /// a large array had grown the stack, every later two-element list kept the whole buffer (about 1 GiB allocated
    /// to read a 10,000-flag namespace, and ~100 MiB that glibc kept afterwards).
    static func copy<Element>(_ members: ArraySlice<Element>) -> [Element] {
        var copy: [Element] = []
        copy.reserveCapacity(members.count)
        copy.append(contentsOf: members)
        return copy
    }

    mutating func parseNumber() throws(JSONParseError) -> JSONNumber {
        let start = index
        func isDigit(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }
        if bytes[index] == UInt8(ascii: "-") { index += 1 }
        guard index < bytes.count, isDigit(bytes[index]) else { throw error("invalid number, expected a digit") }
        if bytes[index] == UInt8(ascii: "0") {
            index += 1
            if index < bytes.count && isDigit(bytes[index]) {
                throw error("invalid number, leading zeros are not allowed")
            }
        } else {
            while index < bytes.count && isDigit(bytes[index]) { index += 1 }
        }
        if index < bytes.count && bytes[index] == UInt8(ascii: ".") {
            index += 1
            guard index < bytes.count, isDigit(bytes[index]) else {
                throw error("invalid number, expected a digit after '.'")
            }
            while index < bytes.count && isDigit(bytes[index]) { index += 1 }
        }
        var hasExponent = false
        if index < bytes.count && (bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E")) {
            hasExponent = true
            index += 1
            if index < bytes.count && (bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-")) {
                index += 1
            }
            guard index < bytes.count, isDigit(bytes[index]) else {
                throw error("invalid number, expected a digit in the exponent")
            }
            while index < bytes.count && isDigit(bytes[index]) { index += 1 }
        }
        if index - start > 400 { throw error("number literal too long", at: start) }
        let literal = String(decoding: bytes[start..<index], as: UTF8.self)
        // Only an exponent or hundreds of digits can leave the range of a double.
        if hasExponent || index - start > 300, let double = Double(literal), !double.isFinite {
            throw error("number out of range", at: start)
        }
        return JSONNumber(uncheckedLiteral: literal)
    }

    mutating func parseString() throws(JSONParseError) -> String {
        index += 1  // opening quote
        let start = index
        // Fast path: no escape before the closing quote, so the string is its bytes (validated as UTF-8 once, and
        // not at all when they are ASCII, as keys and most values are).
        var bits: UInt8 = 0
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                let end = index
                index += 1
                if bits < 0x80 { return String(decoding: bytes[start..<end], as: UTF8.self) }
                guard let string = String(validating: bytes[start..<end], as: UTF8.self) else {
                    throw error("invalid UTF-8 in string", at: start)
                }
                return string
            }
            bits |= byte
            if byte == UInt8(ascii: "\\") { break }
            if byte < 0x20 { throw error("control character in string; escape it") }
            index += 1
        }
        guard index < bytes.count else { throw error("unterminated string") }
        return try parseEscapedString(from: start)
    }

    /// A string with escapes, from its first byte: its bytes, with every escape written as UTF-8, validated once.
    mutating func parseEscapedString(from start: Int) throws(JSONParseError) -> String {
        var buffer = Array(bytes[start..<index])
        var runStart = index
        func validated(_ parser: JSONParser, _ buffer: [UInt8]) throws(JSONParseError) -> String {
            guard let string = String(validating: buffer, as: UTF8.self) else {
                throw parser.error("invalid UTF-8 in string", at: start)
            }
            return string
        }
        while true {
            guard index < bytes.count else { throw error("unterminated string") }
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                buffer.append(contentsOf: bytes[runStart..<index])
                index += 1
                return try validated(self, buffer)
            }
            if byte < 0x20 { throw error("control character in string; escape it") }
            if byte != UInt8(ascii: "\\") {
                index += 1
                continue
            }
            buffer.append(contentsOf: bytes[runStart..<index])
            index += 1
            guard index < bytes.count else { throw error("unterminated escape sequence") }
            let escape = bytes[index]
            index += 1
            switch escape {
            case UInt8(ascii: "\""): buffer.append(UInt8(ascii: "\""))
            case UInt8(ascii: "\\"): buffer.append(UInt8(ascii: "\\"))
            case UInt8(ascii: "/"): buffer.append(UInt8(ascii: "/"))
            case UInt8(ascii: "b"): buffer.append(0x08)
            case UInt8(ascii: "f"): buffer.append(0x0C)
            case UInt8(ascii: "n"): buffer.append(0x0A)
            case UInt8(ascii: "r"): buffer.append(0x0D)
            case UInt8(ascii: "t"): buffer.append(0x09)
            case UInt8(ascii: "u"):
                let high = try parseHex4()
                let scalar: Unicode.Scalar
                if (0xD800...0xDBFF).contains(high) {
                    guard index + 1 < bytes.count, bytes[index] == UInt8(ascii: "\\"),
                        bytes[index + 1] == UInt8(ascii: "u")
                    else {
                        throw error("unpaired surrogate in \\u escape")
                    }
                    index += 2
                    let low = try parseHex4()
                    guard (0xDC00...0xDFFF).contains(low) else { throw error("unpaired surrogate in \\u escape") }
                    scalar = Unicode.Scalar(0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00))!
                } else if (0xDC00...0xDFFF).contains(high) {
                    throw error("unpaired surrogate in \\u escape")
                } else {
                    scalar = Unicode.Scalar(high)!
                }
                buffer.append(contentsOf: UTF8.encode(scalar)!)
            default:
                throw error("invalid escape sequence '\\\(Character(Unicode.Scalar(escape)))'", at: index - 2)
            }
            runStart = index
        }
    }

    mutating func parseHex4() throws(JSONParseError) -> UInt32 {
        guard bytes.count - index >= 4 else { throw error("incomplete \\u escape") }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = bytes[index]
            let digit: UInt32
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt32(byte - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt32(byte - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = UInt32(byte - UInt8(ascii: "A") + 10)
            default: throw error("invalid hex digit in \\u escape")
            }
            value = value << 4 | digit
            index += 1
        }
        return value
    }
}
