import Foundation

/// What a PromQL expression reads: the metrics it selects with their label matchers, and the labels it groups or
/// matches by. A small reader, enough for the expressions of Dashboards/ (it does not evaluate anything).
struct PromQLUsage: Equatable {
    struct Selector: Equatable {
        var metric: String
        var labels: [String]
    }

    var selectors: [Selector] = []
    /// Labels named in `by (...)`, `without (...)`, `on (...)`, `ignoring (...)`, `group_left (...)`, `group_right (...)`.
    var groupingLabels: [String] = []

    /// Reads an expression; Grafana's variables (`$__rate_interval`, `$instance`, `${x}`) may appear where a
    /// dashboard puts them.
    init(_ expression: String) {
        let tokens = PromQLUsage.tokens(PromQLUsage.replacingVariables(expression))
        var index = 0
        func peek(_ offset: Int = 0) -> Token? { index + offset < tokens.count ? tokens[index + offset] : nil }
        while let token = peek() {
            switch token {
            case .identifier(let name):
                let lowered = name.lowercased()
                if Self.groupingKeywords.contains(lowered) {
                    index += 1
                    if peek() == .punctuation("(") {
                        index += 1
                        while let inner = peek(), inner != .punctuation(")") {
                            if case .identifier(let label) = inner { groupingLabels.append(label) }
                            index += 1
                        }
                    }
                    index += 1
                    continue
                }
                if peek(1) == .punctuation("(") || Self.keywords.contains(lowered)
                    || Self.aggregations.contains(lowered)
                {
                    index += 1  // a function, an aggregation or a keyword, not a metric
                    continue
                }
                var selector = Selector(metric: name, labels: [])
                index += 1
                if peek() == .punctuation("{") {
                    index += 1
                    selector.labels = readMatchers(&index, tokens)
                }
                selectors.append(selector)
            case .punctuation("{"):
                // A selector without a name: {__name__="x", ...}.
                index += 1
                let labels = readMatchers(&index, tokens)
                selectors.append(Selector(metric: "", labels: labels))
            case .punctuation("["):
                while let inner = peek(), inner != .punctuation("]") { index += 1 }
                index += 1
            default:
                index += 1
            }
        }
    }

    /// The label names of `{a="x", b=~"y"}`, the opening brace already read; leaves `index` after the closing one.
    private func readMatchers(_ index: inout Int, _ tokens: [Token]) -> [String] {
        var labels: [String] = []
        var expectingName = true
        while index < tokens.count, tokens[index] != .punctuation("}") {
            switch tokens[index] {
            case .identifier(let label) where expectingName:
                labels.append(label)
                expectingName = false
            case .punctuation(","):
                expectingName = true
            default:
                break
            }
            index += 1
        }
        index += 1
        return labels
    }

    static let groupingKeywords: Set<String> = ["by", "without", "on", "ignoring", "group_left", "group_right"]
    static let keywords: Set<String> = ["and", "or", "unless", "bool", "offset", "atan2", "inf", "nan"]
    static let aggregations: Set<String> = [
        "sum", "min", "max", "avg", "group", "stddev", "stdvar", "count",
        "count_values", "bottomk", "topk", "quantile", "limitk", "limit_ratio",
    ]

    enum Token: Equatable {
        case identifier(String)
        case string(String)
        case number(String)
        case punctuation(String)
        case other(String)
    }

    static func replacingVariables(_ expression: String) -> String {
        var text = expression
        for (variable, value) in [("$__rate_interval", "5m"), ("$__interval", "1m"), ("$__range", "1h")] {
            text = text.replacingOccurrences(of: variable, with: value)
        }
        return text
    }

    static func tokens(_ text: String) -> [Token] {
        var tokens: [Token] = []
        let characters = Array(text)
        var index = 0
        func isIdentifierStart(_ c: Character) -> Bool { c.isLetter || c == "_" || c == ":" }
        func isIdentifierPart(_ c: Character) -> Bool { c.isLetter || c.isNumber || c == "_" || c == ":" }
        while index < characters.count {
            let c = characters[index]
            if c.isWhitespace {
                index += 1
            } else if c == "\"" || c == "'" || c == "`" {
                var value = ""
                index += 1
                while index < characters.count, characters[index] != c {
                    if characters[index] == "\\", c != "`", index + 1 < characters.count { index += 1 }
                    value.append(characters[index])
                    index += 1
                }
                index += 1
                tokens.append(.string(value))
            } else if c == "#" {
                while index < characters.count, characters[index] != "\n" { index += 1 }  // a comment
            } else if c.isNumber || (c == "." && index + 1 < characters.count && characters[index + 1].isNumber) {
                var value = ""
                while index < characters.count,
                    characters[index].isLetter || characters[index].isNumber || characters[index] == "."
                {
                    value.append(characters[index])
                    index += 1
                }
                tokens.append(.number(value))
            } else if c == "$" {
                // A Grafana variable outside a string ($x or ${x}): a value, not a metric.
                index += 1
                if index < characters.count, characters[index] == "{" {
                    while index < characters.count, characters[index] != "}" { index += 1 }
                    index += 1
                } else {
                    while index < characters.count, isIdentifierPart(characters[index]) { index += 1 }
                }
                tokens.append(.other("$"))
            } else if isIdentifierStart(c) {
                var value = ""
                while index < characters.count, isIdentifierPart(characters[index]) {
                    value.append(characters[index])
                    index += 1
                }
                tokens.append(.identifier(value))
            } else if "{}()[],".contains(c) {
                tokens.append(.punctuation(String(c)))
                index += 1
            } else {
                tokens.append(.other(String(c)))
                index += 1
            }
        }
        return tokens
    }
}

/// The metrics of a Prometheus text exposition and the label names each carries.
func exposedMetrics(_ exposition: String) -> [String: Set<String>] {
    var metrics: [String: Set<String>] = [:]
    for line in exposition.split(separator: "\n") where !line.hasPrefix("#") && !line.isEmpty {
        let name = String(line.prefix { $0 != "{" && $0 != " " })
        var labels = metrics[name] ?? []
        if let open = line.firstIndex(of: "{"), let close = line.lastIndex(of: "}") {
            // key="value" pairs; values may hold escaped quotes and commas.
            let body = line[line.index(after: open)..<close]
            var key = ""
            var inValue = false
            var escaped = false
            for character in body {
                if inValue {
                    if escaped {
                        escaped = false
                    } else if character == "\\" {
                        escaped = true
                    } else if character == "\"" {
                        inValue = false
                    }
                } else if character == "\"" {
                    inValue = true
                } else if character == "=" {
                    labels.insert(key.trimmingCharacters(in: .whitespaces))
                    key = ""
                } else if character != "," {
                    key.append(character)
                }
            }
        }
        metrics[name] = labels
    }
    return metrics
}
