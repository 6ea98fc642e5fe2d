/// A text style for a table cell; drawn with ANSI colours only when the console allows colour.
enum Style: Sendable {
    case plain
    case bold
    case dim
    case red
    case green
    case yellow

    var code: String {
        switch self {
        case .plain: ""
        case .bold: "\u{1B}[1m"
        case .dim: "\u{1B}[2m"
        case .red: "\u{1B}[31m"
        case .green: "\u{1B}[32m"
        case .yellow: "\u{1B}[33m"
        }
    }

    /// The text in this style, or as it is when colour is off.
    func apply(_ text: String, colour: Bool) -> String {
        guard colour, self != .plain, !text.isEmpty else { return text }
        return code + text + "\u{1B}[0m"
    }
}

/// Columns aligned with two spaces between them, a header row in capitals, trailing spaces trimmed.
struct Table {
    struct Cell {
        var text: String
        var style: Style = .plain
    }

    let headers: [String]
    private(set) var rows: [[Cell]] = []

    init(_ headers: String...) {
        self.headers = headers
    }

    mutating func add(_ cells: [Cell]) {
        rows.append(cells)
    }

    mutating func add(_ texts: String...) {
        rows.append(texts.map { Cell(text: $0) })
    }

    /// The table as text; colour only when `colour` is true.
    func render(colour: Bool) -> String {
        let all = [headers.map { Cell(text: $0, style: .bold) }] + rows
        var widths = [Int](repeating: 0, count: headers.count)
        for row in all {
            for (index, cell) in row.enumerated() where index < widths.count {
                widths[index] = max(widths[index], cell.text.count)
            }
        }
        var text = ""
        for row in all {
            var line = ""
            for (index, cell) in row.enumerated() where index < widths.count {
                let isLast = index == row.count - 1
                let padding = isLast ? "" : String(repeating: " ", count: widths[index] - cell.text.count + 2)
                line += cell.style.apply(cell.text, colour: colour) + padding
            }
            text += line.trimmingTrailingSpaces + "\n"
        }
        return text
    }
}

extension Table.Cell {
    init(_ text: String, _ style: Style = .plain) {
        self.init(text: text, style: style)
    }
}
