import Foundation

/// Progress of a run: a bar redrawn in place on a terminal (never in CI logs), and, when
/// `SWITCHYARD_MATRIX_PROGRESS` names a file, `done total` written there for `flagctl matrix run`.
final class Progress {
    /// The variable naming a file to write progress to.
    static let fileVariable = "SWITCHYARD_MATRIX_PROGRESS"

    private let total: UInt64
    private let label: String
    private let drawsBar: Bool
    /// Where the bar goes: standard error when it is a terminal; else the controlling terminal, since
    /// `swift test` pipes the test process's output (nil: no bar).
    private let terminal: FileHandle?
    private let filePath: String?
    private let started = ContinuousClock.now
    private var lastDraw = ContinuousClock.now - .seconds(1)
    private var drewBar = false

    /// - Parameters:
    ///   - total: positions the run will check.
    ///   - label: what is running (`matrix rider`).
    ///   - environment: `CI`, `TERM`, `SWITCHYARD_MATRIX_PROGRESS`.
    ///   - terminal: whether to draw a bar; nil draws one on standard error when it is a terminal, else on the
    ///     controlling terminal when there is one (never when `CI` is set).
    init(total: UInt64, label: String, environment: [String: String], terminal: Bool? = nil) {
        self.total = total
        self.label = label
        filePath = environment[Self.fileVariable].flatMap { $0.isEmpty ? nil : $0 }
        let wanted = terminal ?? true
        if !wanted || environment["CI"] != nil || environment["TERM"] == "dumb" {
            self.terminal = nil
        } else if isatty(STDERR_FILENO) == 1 {
            self.terminal = FileHandle.standardError
        } else if terminal == nil {
            self.terminal = FileHandle(forWritingAtPath: "/dev/tty")
        } else {
            self.terminal = FileHandle.standardError
        }
        drawsBar = self.terminal != nil
    }

    /// Reports how many positions are done; draws at most ten times a second.
    func update(_ done: UInt64) {
        guard drawsBar || filePath != nil else { return }
        let now = ContinuousClock.now
        guard now - lastDraw >= .milliseconds(100) else { return }
        lastDraw = now
        write(done, at: now)
    }

    /// Writes the final count and clears the bar.
    func finish(_ done: UInt64) {
        write(done, at: .now)
        if drewBar { terminal?.write(Data("\r\u{1B}[2K".utf8)) }
    }

    private func write(_ done: UInt64, at now: ContinuousClock.Instant) {
        if let filePath {
            try? "\(done) \(total)\n".write(toFile: filePath, atomically: true, encoding: .utf8)
        }
        guard drawsBar else { return }
        drewBar = true
        terminal?.write(
            Data(
                ("\r\u{1B}[2K"
                    + Self.bar(
                        label: label, done: done, total: total,
                        elapsed: now - started)).utf8))
    }

    /// `matrix rider [#########-----------]  45%  59,000/131,072  24,310/s  ETA 3 s`.
    static func bar(label: String, done: UInt64, total: UInt64, elapsed: Duration, width: Int = 24) -> String {
        let fraction = total == 0 ? 1 : min(1, Double(done) / Double(total))
        let filled = Int(fraction * Double(width))
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        let rate = seconds > 0 ? Double(done) / seconds : 0
        var text =
            "\(label) [" + String(repeating: "#", count: filled) + String(repeating: "-", count: width - filled) + "] "
        text += String(format: "%3.0f%%  ", fraction * 100) + "\(grouped(done))/\(grouped(total))"
        if rate > 0 {
            text += "  \(grouped(UInt64(rate)))/s"
            if done < total { text += "  ETA \(Int((Double(total - done) / rate).rounded(.up))) s" }
        }
        return text
    }
}

/// `131,072`.
func grouped(_ value: UInt64) -> String {
    let digits = Array(String(value))
    var result = ""
    for (index, digit) in digits.enumerated() {
        if index > 0 && (digits.count - index) % 3 == 0 { result.append(",") }
        result.append(digit)
    }
    return result
}
