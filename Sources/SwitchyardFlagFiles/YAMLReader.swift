import SwitchyardCore
import Yams

/// Turns YAML text into the core's `JSONValue` tree, reporting what YAML allows and flag files do not.
///
/// Scalars resolve by the YAML 1.2 core schema (`true`/`false`, `null`/`~`, decimal numbers; everything else is
/// a string), so `no` or `on` never silently become booleans. Because YAML 1.1 tools (PyYAML, many editors)
/// would read them as booleans, such plain words are reported and must be quoted. Numbers keep their literal
/// text, so the core reader converts `12.34` to basis points exactly. Anchors, aliases, merge keys, custom tags
/// and non-string keys are refused: a flag file says everything in place. Duplicate keys are reported with the
/// path of the mapping that repeats them, and reading goes on so that every problem of a file shows at once.
struct YAMLReader {
    /// The file name put in problems.
    let file: String?

    /// The tree, or nil when the text is not YAML at all; problems either way.
    struct Result {
        var tree: JSONValue?
        var problems: [ValidationProblem]
    }

    /// The YAML 1.2 core schema's scalar rules (Yams' default resolver follows YAML 1.1).
    static let coreSchema: Resolver = {
        // swiftlint:disable force_try
        let rules = [
            try! Resolver.Rule(.bool, "^(?:true|True|TRUE|false|False|FALSE)$"),
            try! Resolver.Rule(.null, "^(?:~|null|Null|NULL|)$"),
            try! Resolver.Rule(.int, "^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$"),
            try! Resolver.Rule(
                .float,
                "^(?:[-+]?(?:\\.[0-9]+|[0-9]+(?:\\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|[-+]?\\.(?:inf|Inf|INF)|\\.(?:nan|NaN|NAN))$"
            ),
        ]
        return rules.reduce(Resolver.basic) { $0.appending($1) }
    }()

    /// Plain words YAML 1.1 reads as booleans (PyYAML's list).
    static let yaml11Booleans: Set<String> = [
        "yes", "Yes", "YES", "no", "No", "NO", "on", "On", "ON", "off", "Off", "OFF",
    ]

    /// A prefix put before the first of two duplicate keys so Yams (which stops at duplicates) reads on.
    static let duplicateMarker = "__switchyard_duplicate_key_"

    func read(_ text: String) -> Result {
        // A byte order mark is allowed at the start; dropping it keeps columns aligned with the text.
        var text = text.hasPrefix("\u{FEFF}") ? String(text.dropFirst()) : text
        var problems: [ValidationProblem] = []
        /// Duplicates found so far, by marker number: the key as written and the line of its first occurrence.
        var duplicates: [(key: String, line: Int)] = []
        while true {
            let parser: Parser
            let root: Node?
            do {
                parser = try Parser(yaml: text, resolver: Self.coreSchema)
                root = try parser.singleRoot()
            } catch let error as YamlError {
                if case .duplicatedKeysInMapping(let keys, let context) = error, duplicates.count < 100,
                    let marked = Self.insert(Self.duplicateMarker + "\(duplicates.count)__", in: text, at: context.mark)
                {
                    duplicates.append((keys.sorted().first ?? "", context.mark.line))
                    text = marked
                    continue
                }
                problems.append(syntaxProblem(error))
                return Result(tree: nil, problems: problems)
            } catch {
                problems.append(problem(.root, "could not read YAML: \(error)"))
                return Result(tree: nil, problems: problems)
            }
            guard let root else {
                problems.append(problem(.root, "the file is empty; a flag file starts with 'namespace: <name>'"))
                return Result(tree: nil, problems: problems)
            }
            var walker = Walker(file: file, duplicates: duplicates)
            let tree = walker.value(root, at: .root)
            // Node anchors are weak references that the parser keeps alive: hold it until the walk is done.
            // (This is `Yams.compose(yaml:_:)` with the parser kept.)
            withExtendedLifetime(parser) {}
            return Result(tree: tree, problems: problems + walker.problems)
        }
    }

    func problem(_ path: FieldPath, _ message: String) -> ValidationProblem {
        ValidationProblem(file: file, path: path, message: message)
    }

    /// `line 4, column 12: YAML syntax error: could not find expected ':' (while scanning a simple key at line 3, column 1)`.
    func syntaxProblem(_ error: YamlError) -> ValidationProblem {
        func located(_ mark: (line: Int, column: Int), _ problem: String, _ context: YamlError.Context?)
            -> ValidationProblem
        {
            var message = "line \(mark.line), column \(mark.column): YAML syntax error: \(problem)"
            if let context {
                message += " (\(context.text) at line \(context.mark.line), column \(context.mark.column))"
            }
            return self.problem(.root, message)
        }
        switch error {
        case .scanner(let context, let problem, let mark, _),
            .parser(let context, let problem, let mark, _),
            .composer(let context, let problem, let mark, _):
            return located((mark.line, mark.column), problem, context)
        case .reader(let problem, let offset, _, let yaml):
            if let offset, let (line, column) = Self.lineAndColumn(ofCharacter: offset, in: yaml) {
                return located((line, column), problem, nil)
            }
            return self.problem(.root, "YAML error: \(problem)")
        default:
            return self.problem(.root, "YAML error: \(error)")
        }
    }

    /// 1-based line and column of the character at an offset.
    static func lineAndColumn(ofCharacter offset: Int, in text: String) -> (Int, Int)? {
        var line = 1
        var column = 1
        var position = 0
        for character in text {
            if position == offset { return (line, column) }
            if character == "\n" || character == "\r\n" {
                line += 1
                column = 1
            } else {
                column += 1
            }
            position += 1
        }
        return position == offset ? (line, column) : nil
    }

    /// Inserts text at a libyaml mark (1-based line, column in Unicode scalars); nil when the mark is outside.
    static func insert(_ insertion: String, in text: String, at mark: Mark) -> String? {
        var scalars = Array(text.unicodeScalars)
        var line = 1
        var index = 0
        while line < mark.line {
            guard index < scalars.count else { return nil }
            if scalars[index] == "\n" { line += 1 }
            index += 1
        }
        index += mark.column - 1
        guard index <= scalars.count else { return nil }
        scalars.insert(contentsOf: insertion.unicodeScalars, at: index)
        var result = String.UnicodeScalarView()
        result.append(contentsOf: scalars)
        return String(result)
    }
}

/// Walks composed YAML nodes into a JSON tree.
private struct Walker {
    let file: String?
    let duplicates: [(key: String, line: Int)]
    var problems: [ValidationProblem] = []
    var reportedAnchors: Set<String> = []

    init(file: String?, duplicates: [(key: String, line: Int)]) {
        self.file = file
        self.duplicates = duplicates
    }

    mutating func report(_ path: FieldPath, _ message: String) {
        problems.append(ValidationProblem(file: file, path: path, message: message))
    }

    mutating func value(_ node: Node, at path: FieldPath) -> JSONValue? {
        if let anchor = node.anchor, reportedAnchors.insert(anchor.rawValue).inserted {
            report(
                path,
                "anchors and aliases (&\(anchor.rawValue), *\(anchor.rawValue)) are not supported in flag files; write the value out in full"
            )
        }
        switch node {
        case .scalar(let scalar):
            return self.scalar(scalar, at: path)
        case .mapping(let mapping):
            if let problem = unsupportedTag(node.tag.rawValue, expected: .map) {
                report(path, problem)
                return nil
            }
            return .object(object(mapping, at: path))
        case .sequence(let sequence):
            if let problem = unsupportedTag(node.tag.rawValue, expected: .seq) {
                report(path, problem)
                return nil
            }
            var elements: [JSONValue] = []
            for (index, element) in sequence.enumerated() {
                // A null stands in for an element that could not be read, so later indices stay right.
                elements.append(value(element, at: path / index) ?? .null)
            }
            return .array(elements)
        case .alias(let alias):
            report(
                path, "aliases (*\(alias.anchor.rawValue)) are not supported in flag files; write the value out in full"
            )
            return nil
        }
    }

    mutating func object(_ mapping: Node.Mapping, at path: FieldPath) -> JSONObject {
        // Collected, then made an object at once: setting members one by one looks each key up in the members
        // before it, which for a `flags` map of 10,000 flags was most of reading the file.
        var members: [(String, JSONValue)] = []
        var keys = Set<String>()
        var markedKeys: [(index: Int, key: String, line: Int)] = []
        for (keyNode, valueNode) in mapping {
            guard case .scalar(let keyScalar) = keyNode else {
                report(path, "a key must be a string, not a \(keyNode.isMapping ? "mapping" : "list")")
                continue
            }
            let key = keyScalar.string
            if key.hasPrefix(YAMLReader.duplicateMarker),
                let end = key.dropFirst(YAMLReader.duplicateMarker.count).firstIndex(of: "_"),
                let index = Int(key[key.index(key.startIndex, offsetBy: YAMLReader.duplicateMarker.count)..<end]),
                duplicates.indices.contains(index)
            {
                // The first occurrence of a duplicate key: reported below, once the later one is known. The later
                // occurrence is the one kept; this one is still walked for the YAML problems inside it.
                markedKeys.append((index, duplicates[index].key, duplicates[index].line))
                _ = value(valueNode, at: path / duplicates[index].key)
                continue
            }
            let tag = keyNode.tag.rawValue
            if key == "<<" && keyScalar.style == .plain {
                report(path, "merge keys (<<) are not supported in flag files; write the fields out in full")
                continue
            }
            guard tag == Tag.Name.str.rawValue else {
                if tag == Tag.Name.null.rawValue && keyScalar.style == .plain && key.isEmpty {
                    report(path, "a key is missing before ':'")
                } else {
                    report(path, "key \(key) must be a string; quote it: '\(key)'")
                }
                continue
            }
            if keyScalar.style == .plain, YAMLReader.yaml11Booleans.contains(key) {
                report(path / key, "the key \(key) reads as a boolean in YAML 1.1 tools; quote it: '\(key)'")
            }
            guard keys.insert(key).inserted else {
                // Equal keys written differently (`a` and `"a"`) that Yams did not catch.
                report(path, "duplicate key '\(key)'; keep one")
                continue
            }
            members.append((key, value(valueNode, at: path / key) ?? .null))
        }
        for marked in markedKeys {
            let later = mapping.keys.first { $0.scalar?.string == marked.key }?.mark?.line
            let lines =
                later.map { $0 == marked.line ? " (line \($0))" : " (lines \(marked.line) and \($0))" }
                ?? " (line \(marked.line))"
            report(path, "duplicate key '\(marked.key)'\(lines); keep one")
        }
        return JSONObject(members)
    }

    mutating func scalar(_ scalar: Node.Scalar, at path: FieldPath) -> JSONValue? {
        let text = scalar.string
        let tag = Node.scalar(scalar).tag.rawValue
        switch tag {
        case Tag.Name.str.rawValue:
            if scalar.style == .plain, YAMLReader.yaml11Booleans.contains(text) {
                // Reported, then read as YAML 1.2 does (text), so the reader adds no second problem.
                report(
                    path,
                    "\(text) reads as a boolean in YAML 1.1 tools and as text in YAML 1.2; quote it ('\(text)') or write true or false"
                )
            }
            return .string(text)
        case Tag.Name.null.rawValue:
            return .null
        case Tag.Name.bool.rawValue:
            switch text.lowercased() {
            case "true": return .bool(true)
            case "false": return .bool(false)
            default:
                report(path, "'\(text)' is not a boolean (write true or false)")
                return nil
            }
        case Tag.Name.int.rawValue, Tag.Name.float.rawValue:
            if case .number(let number)? = try? JSONValue.parse(text) {
                return .number(number)
            }
            if text.lowercased().hasSuffix("inf") || text.lowercased().hasSuffix("nan") {
                report(path, "\(text) is not a finite number")
            } else {
                report(
                    path,
                    "\(text) is not written as a plain decimal number; write it as JSON would (e.g. 12, 0.5, 12.34)")
            }
            return nil
        default:
            report(path, Self.unsupportedTagMessage(tag))
            return nil
        }
    }

    func unsupportedTag(_ tag: String, expected: Tag.Name) -> String? {
        tag == expected.rawValue ? nil : Self.unsupportedTagMessage(tag)
    }

    /// `the tag !!binary is not supported ...`: YAML's own tags in their short form.
    static func unsupportedTagMessage(_ tag: String) -> String {
        let prefix = "tag:yaml.org,2002:"
        let shown = tag.hasPrefix(prefix) ? "!!" + tag.dropFirst(prefix.count) : tag
        return "the tag \(shown) is not supported in flag files; write a plain string, number, boolean, list or mapping"
    }
}

extension Node {
    fileprivate var isMapping: Bool {
        if case .mapping = self { return true }
        return false
    }
}
