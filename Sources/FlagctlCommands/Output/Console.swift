import Dispatch
import Foundation

/// Where a command's output and errors go, what it reads from, and what it knows of its terminal: the real
/// process, or buffers and scripted answers a test controls.
///
/// Commands never read the process environment, standard input or signals directly; they go through the
/// console, so tests drive the same code a terminal does.
public final class Console: @unchecked Sendable {
    private enum Sink {
        case standard
        case capture
    }

    private let sink: Sink
    private let lock = NSLock()
    private var capturedOutput = ""
    private var capturedError = ""
    private var capturedTranscript = ""
    private var interruptHandlers: [Int: @Sendable () -> Void] = [:]
    private var nextHandlerID = 0

    /// The environment variables the command sees (`FLAGCTL_*`, `NO_COLOR`, `HOME`, ...).
    public let environment: [String: String]
    /// Whether standard input is a terminal a person can answer prompts on.
    public let isInputTerminal: Bool
    /// Whether standard output is a terminal (colour is used only then).
    public let isOutputTerminal: Bool
    /// For capturing consoles: answers prompts. Gets the prompt; nil means end of input.
    private let answer: (@Sendable (String) async -> String?)?

    private init(
        sink: Sink, environment: [String: String], isInputTerminal: Bool, isOutputTerminal: Bool,
        answer: (@Sendable (String) async -> String?)?
    ) {
        self.sink = sink
        self.environment = environment
        self.isInputTerminal = isInputTerminal
        self.isOutputTerminal = isOutputTerminal
        self.answer = answer
    }

    /// Standard output and standard error, the process environment, and the process's terminal.
    public static let standard = Console(
        sink: .standard, environment: ProcessInfo.processInfo.environment,
        isInputTerminal: isatty(STDIN_FILENO) == 1, isOutputTerminal: isatty(STDOUT_FILENO) == 1, answer: nil)

    /// A console that keeps everything written, for tests.
    ///
    /// - Parameters:
    ///   - environment: the variables commands see; nothing of the test process leaks in.
    ///   - terminal: whether it behaves as a terminal (prompts are asked; colour unless `NO_COLOR`).
    ///   - answer: answers each prompt (it gets the prompt text); nil, or a nil answer, is end of input.
    public static func capturing(
        environment: [String: String] = [:], terminal: Bool = false,
        answer: (@Sendable (String) async -> String?)? = nil
    ) -> Console {
        Console(
            sink: .capture, environment: environment, isInputTerminal: terminal, isOutputTerminal: terminal,
            answer: answer)
    }

    /// Writes to standard output.
    public func write(_ text: String) {
        switch sink {
        case .standard: FileHandle.standardOutput.write(Data(text.utf8))
        case .capture:
            lock.withLock {
                capturedOutput += text
                capturedTranscript += text
            }
        }
    }

    /// Writes a table to standard output, coloured when the console uses colour.
    func write(_ table: Table) {
        write(table.render(colour: usesColour))
    }

    /// Writes to standard error.
    public func writeError(_ text: String) {
        switch sink {
        case .standard: FileHandle.standardError.write(Data(text.utf8))
        case .capture:
            lock.withLock {
                capturedError += text
                capturedTranscript += text
            }
        }
    }

    /// What was written to standard output (capturing consoles only).
    public var output: String { lock.withLock { capturedOutput } }
    /// What was written to standard error (capturing consoles only).
    public var errorOutput: String { lock.withLock { capturedError } }
    /// Everything a terminal would show, in order: output, errors, and the answers typed at prompts
    /// (capturing consoles only).
    public var transcript: String { lock.withLock { capturedTranscript } }

    /// Whether output may be coloured: on a terminal, unless `NO_COLOR` is set (no-color.org) or `TERM=dumb`.
    public var usesColour: Bool {
        isOutputTerminal && (environment["NO_COLOR"] ?? "").isEmpty && environment["TERM"] != "dumb"
    }

    /// Asks a question on standard error and reads one line of answer.
    ///
    /// - Parameter prompt: the question, ending with where the answer goes (`... [y/N] `).
    /// - Returns: the line without its newline; nil at end of input.
    public func ask(_ prompt: String) async -> String? {
        writeError(prompt)
        switch sink {
        case .standard:
            return Swift.readLine(strippingNewline: true)
        case .capture:
            let line = await answer?(prompt)
            lock.withLock { capturedTranscript += (line ?? "") + "\n" }
            return line
        }
    }

    /// Asks for a secret on the terminal without echoing what is typed.
    ///
    /// - Returns: the line; nil at end of input.
    public func askSecret(_ prompt: String) async -> String? {
        switch sink {
        case .standard:
            writeError(prompt)
            var saved = termios()
            let isTerminal = tcgetattr(STDIN_FILENO, &saved) == 0
            if isTerminal {
                var silent = saved
                silent.c_lflag &= ~tcflag_t(ECHO)
                tcsetattr(STDIN_FILENO, TCSAFLUSH, &silent)
            }
            let line = Swift.readLine(strippingNewline: true)
            if isTerminal {
                tcsetattr(STDIN_FILENO, TCSAFLUSH, &saved)
                writeError("\n")
            }
            return line
        case .capture:
            writeError(prompt)
            let line = await answer?(prompt)
            lock.withLock { capturedTranscript += "\n" }
            return line
        }
    }

    /// Reads all of standard input (`--token-stdin`).
    public func readAllInput() async -> String {
        switch sink {
        case .standard:
            return String(decoding: FileHandle.standardInput.readDataToEndOfFile(), as: UTF8.self)
        case .capture:
            return await answer?("") ?? ""
        }
    }

    /// Calls `handler` when the user presses Ctrl-C (SIGINT), until the returned value is released with
    /// `cancel()`. While a handler is installed, Ctrl-C does not end the process.
    public func onInterrupt(_ handler: @escaping @Sendable () -> Void) -> InterruptSubscription {
        switch sink {
        case .standard:
            signal(SIGINT, SIG_IGN)
            let source = SignalSource(DispatchSource.makeSignalSource(signal: SIGINT, queue: .global()))
            source.source.setEventHandler(handler: handler)
            source.source.resume()
            return InterruptSubscription {
                source.source.cancel()
                signal(SIGINT, SIG_DFL)
            }
        case .capture:
            let id = lock.withLock {
                nextHandlerID += 1
                interruptHandlers[nextHandlerID] = handler
                return nextHandlerID
            }
            return InterruptSubscription { [weak self] in
                _ = self?.lock.withLock { self?.interruptHandlers.removeValue(forKey: id) }
            }
        }
    }

    /// Delivers a Ctrl-C to the handlers installed with `onInterrupt` (capturing consoles only).
    public func interrupt() {
        let handlers = lock.withLock { Array(interruptHandlers.values) }
        for handler in handlers { handler() }
    }
}

/// A dispatch signal source, which is thread-safe but not marked `Sendable`.
private final class SignalSource: @unchecked Sendable {
    let source: any DispatchSourceSignal

    init(_ source: any DispatchSourceSignal) {
        self.source = source
    }
}

/// An installed Ctrl-C handler; `cancel()` removes it.
public final class InterruptSubscription: Sendable {
    private let onCancel: @Sendable () -> Void

    init(_ onCancel: @escaping @Sendable () -> Void) {
        self.onCancel = onCancel
    }

    public func cancel() {
        onCancel()
    }
}
