public import Foundation

/// Reads what a child process writes to a pipe, on a thread of its own with blocking reads, until the pipe ends.
/// The one helper for following a running child's output in the tests.
///
/// Not `FileHandle.readabilityHandler`: on Linux that arms a libdispatch read source on the pipe, and tearing such
/// sources down while other threads arm theirs corrupts libdispatch's epoll bookkeeping
/// (swift-corelibs-libdispatch#949): the whole test process once died of SIGSEGV in libdispatch's manager thread
/// (`_dispatch_event_loop_drain`) while flagsd children were starting and ending. A blocking read registers nothing
/// with libdispatch; the thread holds no thread of Swift's cooperative pool and ends at the pipe's end (every
/// writer, the child and any child of its, has closed it).
///
/// - Parameters:
///   - handle: the pipe's reading end.
///   - received: each read's bytes, in order (a chunk may end inside a line, or inside a character: decode whole
///     lines, see ``LineSplitter``).
///   - ended: called once, after the last chunk.
public func readPipe(
    _ handle: FileHandle, received: @escaping @Sendable (Data) -> Void, ended: @escaping @Sendable () -> Void = {}
) {
    let thread = Thread {
        while true {
            let data = handle.availableData
            if data.isEmpty { break }
            received(data)
        }
        ended()
    }
    thread.name = "readPipe"
    thread.start()
}

/// Splits bytes that arrive in chunks into whole lines of text (without their newline), so a character split
/// between two reads is decoded whole.
public struct LineSplitter: Sendable {
    private var pending: [UInt8] = []

    public init() {}

    /// The lines `chunk` completes, in order; a trailing partial line waits for the next chunk.
    public mutating func lines(completedBy chunk: Data) -> [String] {
        pending += chunk
        var found: [String] = []
        var start = pending.startIndex
        while let newline = pending[start...].firstIndex(of: UInt8(ascii: "\n")) {
            found.append(String(decoding: pending[start..<newline], as: UTF8.self))
            start = newline + 1
        }
        pending.removeSubrange(..<start)
        return found
    }
}
