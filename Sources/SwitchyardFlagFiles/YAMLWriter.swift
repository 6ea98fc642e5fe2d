public import SwitchyardCore

/// Writes a JSON tree as block-style YAML that reads back (through the flag file reader) to the same tree.
///
/// Members keep their order; lists of scalars are written inline (`[lagos, paris]`) when short; strings are
/// plain when no YAML 1.1 or 1.2 reader could take them for anything else, otherwise double-quoted; numbers
/// keep their literal text (`12.34`, `1.0`).
public enum YAMLWriter {
    /// The YAML text of a tree, ending with a newline.
    ///
    /// - Parameter value: the tree; a top-level scalar or list is written on its own.
    /// - Returns: the YAML text.
    public static func text(for value: JSONValue) -> String {
        var out = ""
        switch value {
        case .object(let object) where !object.isEmpty:
            writeMembers(object, indent: 0, depth: 0, into: &out)
        case .array(let elements) where !elements.isEmpty && inline(value) == nil:
            writeElements(elements, indent: 0, depth: 0, into: &out)
        default:
            out += inline(value) ?? flow(value)
            out += "\n"
        }
        return out
    }

    /// Longest line an inline list may make before it is written one element per line.
    static let inlineWidth = 100

    private static func writeMembers(
        _ object: JSONObject, indent: Int, depth: Int, into out: inout String,
        firstLinePrefix: String? = nil
    ) {
        let padding = String(repeating: " ", count: indent)
        // Top-level sections (`plugin_points:`, `flags:`), and the entries of `flags` and `kill_switches`, are
        // set apart by a blank line.
        let spacedEntries = depth == 1 && object.allSatisfy { $0.value.objectValue != nil }
        var previousIsBlock = false
        for (position, member) in object.enumerated() {
            let isBlock = isBlock(member.value)
            if position > 0 && (spacedEntries || (depth == 0 && (isBlock || previousIsBlock))) { out += "\n" }
            previousIsBlock = isBlock
            out += position == 0 ? (firstLinePrefix ?? padding) : padding
            out += key(member.key) + ":"
            write(member.value, indent: indent, depth: depth, into: &out, column: indent + member.key.count + 2)
        }
    }

    private static func writeElements(_ elements: [JSONValue], indent: Int, depth: Int, into out: inout String) {
        let padding = String(repeating: " ", count: indent)
        for element in elements {
            switch element {
            case .object(let object) where !object.isEmpty:
                writeMembers(object, indent: indent + 2, depth: depth + 1, into: &out, firstLinePrefix: padding + "- ")
            case .array(let nested) where !nested.isEmpty && inline(element) == nil:
                out += padding + "-\n"
                writeElements(nested, indent: indent + 2, depth: depth + 1, into: &out)
            default:
                out += padding + "- " + (inline(element) ?? flow(element)) + "\n"
            }
        }
    }

    /// Writes a member's value after `key:`.
    private static func write(_ value: JSONValue, indent: Int, depth: Int, into out: inout String, column: Int) {
        switch value {
        case .object(let object) where !object.isEmpty:
            out += "\n"
            writeMembers(object, indent: indent + 2, depth: depth + 1, into: &out)
        case .array(let elements) where !elements.isEmpty:
            if let text = inline(value), column + 1 + text.count <= inlineWidth {
                out += " " + text + "\n"
            } else {
                out += "\n"
                writeElements(elements, indent: indent + 2, depth: depth + 1, into: &out)
            }
        default:
            out += " " + (inline(value) ?? flow(value)) + "\n"
        }
    }

    /// Whether a value is written on lines of its own (a non-empty object, or a list that is not inline).
    private static func isBlock(_ value: JSONValue) -> Bool {
        switch value {
        case .object(let object): !object.isEmpty
        case .array(let elements): !elements.isEmpty
        default: false
        }
    }

    /// A scalar, or a list of scalars in flow style; nil for anything else.
    static func inline(_ value: JSONValue) -> String? {
        switch value {
        case .null: return "null"
        case .bool(let bool): return bool ? "true" : "false"
        case .number(let number): return number.literal
        case .string(let string): return scalar(string, inFlow: false)
        case .array(let elements):
            var parts: [String] = []
            for element in elements {
                switch element {
                case .string(let string): parts.append(scalar(string, inFlow: true))
                case .number, .bool, .null: parts.append(inline(element)!)
                case .array, .object: return nil
                }
            }
            return "[" + parts.joined(separator: ", ") + "]"
        case .object(let object): return object.isEmpty ? "{}" : nil
        }
    }

    /// JSON is YAML: anything else (empty containers) in flow style.
    private static func flow(_ value: JSONValue) -> String {
        value.serializedString(.init(prettyPrinted: false, sortedKeys: false))
    }

    static func key(_ key: String) -> String {
        scalar(key, inFlow: false)
    }

    /// A string as a plain scalar when that is unambiguous, else double-quoted.
    static func scalar(_ string: String, inFlow: Bool) -> String {
        isPlainSafe(string, inFlow: inFlow) ? string : quoted(string)
    }

    /// Words some YAML reader (1.1 or 1.2) takes for a boolean or null.
    private static let reservedWords: Set<String> = [
        "true", "false", "yes", "no", "on", "off", "y", "n", "null", "~", "=", "<<",
    ]

    static func isPlainSafe(_ string: String, inFlow: Bool) -> Bool {
        guard let first = string.unicodeScalars.first, let last = string.unicodeScalars.last else { return false }
        if reservedWords.contains(string.lowercased()) { return false }
        // Anything starting like a number (`12`, `-1`, `.5`, `2024-01-01`, `1_000`) could read as one.
        if first.properties.numericType != nil || "+-.".unicodeScalars.contains(first) { return false }
        if "?:,[]{}#&*!|>'\"%@`".unicodeScalars.contains(first) { return false }
        if first == " " || last == " " || last == ":" { return false }
        if string.contains(": ") || string.contains(" #") { return false }
        for scalar in string.unicodeScalars {
            if needsEscape(scalar) || scalar == "\t" { return false }
            if inFlow && ",[]{}".unicodeScalars.contains(scalar) { return false }
        }
        return true
    }

    /// A double-quoted YAML scalar; non-printable characters are escaped.
    static func quoted(_ string: String) -> String {
        var out = "\""
        for scalar in string.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\t": out += "\\t"
            case "\r": out += "\\r"
            default:
                if needsEscape(scalar) {
                    let hex = String(scalar.value, radix: 16, uppercase: true)
                    if scalar.value <= 0xFFFF {
                        out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                    } else {
                        out += "\\U" + String(repeating: "0", count: 8 - hex.count) + hex
                    }
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        return out + "\""
    }

    /// Characters outside YAML's printable set, and line separators.
    private static func needsEscape(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x09: false
        case 0x00..<0x20, 0x7F, 0x80...0x9F, 0x2028, 0x2029, 0xFEFF, 0xFFFE, 0xFFFF: true
        default: false
        }
    }
}

extension FlagSet {
    /// The flag set as flag file text: YAML with rollouts as percentages, fields in a stable order.
    ///
    /// Reading the text back with `FlagFile(yaml:path:)` gives an equal flag set.
    /// - Parameter schema: when given, a first line pointing editors at the JSON Schema
    ///   (`# yaml-language-server: $schema=<schema>`).
    /// - Returns: the YAML text.
    public func yamlText(schema: String? = nil) -> String {
        var text = ""
        if let schema { text += "# yaml-language-server: $schema=\(schema)\n\n" }
        return text + YAMLWriter.text(for: .object(tree(unit: .percent)))
    }
}
