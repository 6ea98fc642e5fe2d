extension JSONValue {
    /// How a tree is written.
    public struct WritingOptions: Sendable, Hashable {
        /// Indent with two spaces and put members on their own lines.
        public var prettyPrinted: Bool
        /// Sort object members by the UTF-8 bytes of their keys (the canonical form).
        public var sortedKeys: Bool

        public init(prettyPrinted: Bool = false, sortedKeys: Bool = true) {
            self.prettyPrinted = prettyPrinted
            self.sortedKeys = sortedKeys
        }

        /// The canonical form hashed for snapshot checksums: compact, keys sorted, numbers normalised.
        public static let canonical = WritingOptions()
        public static let pretty = WritingOptions(prettyPrinted: true)
    }

    /// Writes the tree as UTF-8 JSON.
    ///
    /// Strings escape only `"`, `\` and control characters; integers are written in decimal; floats always
    /// carry a decimal point or an exponent. In the canonical form the same tree always gives the same bytes.
    public func serialized(_ options: WritingOptions = .canonical) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(256)
        write(into: &out, options: options, indent: 0)
        if options.prettyPrinted { out.append(UInt8(ascii: "\n")) }
        return out
    }

    /// The serialized tree as a `String`.
    public func serializedString(_ options: WritingOptions = .canonical) -> String {
        String(decoding: serialized(options), as: UTF8.self)
    }

    private func write(into out: inout [UInt8], options: WritingOptions, indent: Int) {
        switch self {
        case .null: out.append(contentsOf: "null".utf8)
        case .bool(let value): out.append(contentsOf: (value ? "true" : "false").utf8)
        case .number(let number): out.append(contentsOf: Self.canonicalNumber(number).utf8)
        case .string(let string): Self.writeString(string, into: &out)
        case .array(let elements):
            out.append(UInt8(ascii: "["))
            if elements.isEmpty {
                out.append(UInt8(ascii: "]"))
                return
            }
            for (position, element) in elements.enumerated() {
                if position > 0 { out.append(UInt8(ascii: ",")) }
                Self.newline(&out, options, indent + 1)
                element.write(into: &out, options: options, indent: indent + 1)
            }
            Self.newline(&out, options, indent)
            out.append(UInt8(ascii: "]"))
        case .object(let object):
            out.append(UInt8(ascii: "{"))
            if object.isEmpty {
                out.append(UInt8(ascii: "}"))
                return
            }
            // Members are taken in one pass: looking each key up again would make large objects quadratic.
            var members = Array(object)
            if options.sortedKeys { members.sort { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) } }
            for (position, member) in members.enumerated() {
                if position > 0 { out.append(UInt8(ascii: ",")) }
                Self.newline(&out, options, indent + 1)
                Self.writeString(member.key, into: &out)
                out.append(UInt8(ascii: ":"))
                if options.prettyPrinted { out.append(UInt8(ascii: " ")) }
                member.value.write(into: &out, options: options, indent: indent + 1)
            }
            Self.newline(&out, options, indent)
            out.append(UInt8(ascii: "}"))
        }
    }

    private static func newline(_ out: inout [UInt8], _ options: WritingOptions, _ indent: Int) {
        guard options.prettyPrinted else { return }
        out.append(UInt8(ascii: "\n"))
        out.append(contentsOf: repeatElement(UInt8(ascii: " "), count: indent * 2))
    }

    /// Integers in plain decimal, floats in their shortest round-trip form with a decimal point.
    static func canonicalNumber(_ number: JSONNumber) -> String {
        if number.isIntegerLiteral, let integer = Int64(number.literal) {
            return String(integer)
        }
        return JSONNumber.floatLiteral(Double(number.literal) ?? 0)
    }

    private static let hexDigits = Array("0123456789abcdef".utf8)

    static func writeString(_ string: String, into out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        // Most strings need no escape: their bytes are copied in one go.
        let copied = string.utf8.withContiguousStorageIfAvailable { bytes in
            guard !bytes.contains(where: { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }) else {
                return false
            }
            out.append(contentsOf: bytes)
            return true
        }
        if copied == true {
            out.append(UInt8(ascii: "\""))
            return
        }
        for byte in string.utf8 {
            switch byte {
            case UInt8(ascii: "\""): out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\"")])
            case UInt8(ascii: "\\"): out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\\")])
            case 0x0A: out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "n")])
            case 0x0D: out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "r")])
            case 0x09: out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "t")])
            case 0x00..<0x20:
                out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0")])
                out.append(hexDigits[Int(byte >> 4)])
                out.append(hexDigits[Int(byte & 0x0F)])
            default: out.append(byte)
            }
        }
        out.append(UInt8(ascii: "\""))
    }
}
