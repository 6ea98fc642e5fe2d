import Foundation

/// Where a command's output and errors go: the terminal, or buffers a test reads.
public final class Console: @unchecked Sendable {
    private enum Sink {
        case standard
        case capture
    }

    private let sink: Sink
    private let lock = NSLock()
    private var capturedOutput = ""
    private var capturedError = ""

    private init(sink: Sink) {
        self.sink = sink
    }

    /// Standard output and standard error.
    public static let standard = Console(sink: .standard)

    /// A console that keeps everything written, for tests.
    public static func capturing() -> Console {
        Console(sink: .capture)
    }

    /// Writes to standard output.
    public func write(_ text: String) {
        switch sink {
        case .standard: FileHandle.standardOutput.write(Data(text.utf8))
        case .capture: lock.withLock { capturedOutput += text }
        }
    }

    /// Writes to standard error.
    public func writeError(_ text: String) {
        switch sink {
        case .standard: FileHandle.standardError.write(Data(text.utf8))
        case .capture: lock.withLock { capturedError += text }
        }
    }

    /// What was written to standard output (capturing consoles only).
    public var output: String { lock.withLock { capturedOutput } }
    /// What was written to standard error (capturing consoles only).
    public var errorOutput: String { lock.withLock { capturedError } }
}
