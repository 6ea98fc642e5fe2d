public import ArgumentParser
public import SwitchyardCore
import SwitchyardFlagFiles

/// How a command prints its result.
public enum OutputFormat: String, CaseIterable, Sendable, ExpressibleByArgument {
    /// Aligned text for people.
    case table
    /// One JSON document with stable field names, keys sorted, for scripts.
    case json
    /// The same tree as `json`, in YAML.
    case yaml
}

/// `-o, --output table|json|yaml`, shared by every command that prints a result.
public struct OutputOptions: ParsableArguments, Sendable {
    @Option(
        name: [.customShort("o"), .long], help: ArgumentHelp("Output format: table, json or yaml.", valueName: "format")
    )
    public var output: OutputFormat = .table

    public init() {}

    /// Renders a tree in the chosen machine format; nil for `table`, which each command lays out itself.
    public func render(_ tree: JSONValue) -> String? {
        switch output {
        case .table: nil
        case .json: tree.serializedString(.pretty)
        case .yaml: YAMLWriter.text(for: tree)
        }
    }
}

/// Aligned `label  value` lines.
struct KeyValueTable {
    private var rows: [(String, String)] = []

    mutating func add(_ label: String, _ value: String) {
        rows.append((label, value))
    }

    var text: String {
        let width = rows.map(\.0.count).max() ?? 0
        return rows.map { label, value in
            let padding = String(repeating: " ", count: width - label.count + 2)
            return (label + padding + value).trimmingTrailingSpaces
        }.joined(separator: "\n") + "\n"
    }
}

extension String {
    var trimmingTrailingSpaces: String {
        String(self.reversed().drop { $0 == " " }.reversed())
    }
}
