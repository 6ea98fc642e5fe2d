package import Foundation
package import SwitchyardCore

/// Events waiting to be sent, in memory and mirrored to `events.jsonl` (one canonical JSON event per line).
///
/// Enqueueing takes a lock and appends: it never waits for disk or network. The sender persists the queue
/// (atomic replacement) before each batch and after each acknowledgement, so events survive a relaunch. A full
/// queue drops its oldest events. On load, lines that are not JSON events (a torn or edited file) are skipped.
package final class EventQueue: Sendable {
    package static let fileName = "events.jsonl"

    /// One queued event: its id and its canonical JSON line.
    package struct Entry: Sendable, Hashable {
        package var id: String
        package var line: [UInt8]
    }

    private struct State {
        var entries: [Entry] = []
        var dirty = false
        var dropped = 0
    }

    package let fileURL: URL?
    package let capacity: Int
    private let state = LockedBox(State())
    /// Serialises writers, so an older view of the queue never lands after a newer one.
    private let writeLock = LockedBox(())

    /// Opens the queue, reading back what an earlier launch left.
    /// - Returns: the queue and, when the file held unreadable lines or could not be read, what was wrong.
    package static func open(fileURL: URL?, capacity: Int) -> (EventQueue, ClientError?) {
        let queue = EventQueue(fileURL: fileURL, capacity: capacity)
        guard let fileURL else { return (queue, nil) }
        let bytes: [UInt8]
        do {
            guard let read = try FileIO.read(fileURL, limit: max(capacity, 1) * 64 * 1024) else { return (queue, nil) }
            bytes = read
        } catch {
            return (queue, error)
        }
        var skipped = 0
        var entries: [Entry] = []
        for line in bytes.split(separator: UInt8(ascii: "\n")) {
            guard let event = try? JSONValue.parse(line), let id = event["id"]?.stringValue,
                event["type"]?.stringValue != nil
            else {
                skipped += 1
                continue
            }
            entries.append(Entry(id: id, line: Array(line)))
        }
        queue.state.withLock { state in
            state.entries = Array(entries.suffix(capacity))
            state.dropped = max(0, entries.count - capacity)
            state.dirty = skipped > 0 || entries.count > capacity
        }
        let problem =
            skipped > 0
            ? ClientError(.corruptFile, "\(fileURL.path): skipped \(skipped) unreadable line(s) of the event queue")
            : nil
        return (queue, problem)
    }

    private init(fileURL: URL?, capacity: Int) {
        self.fileURL = fileURL
        self.capacity = max(1, capacity)
    }

    /// Appends an event, dropping the oldest when the queue is full.
    /// - Returns: how many events were dropped to make room.
    @discardableResult
    package func enqueue(_ event: JSONObject) -> Int {
        let entry = Entry(
            id: event["id"]?.stringValue ?? ClientEvent.newID(at: Date()),
            line: JSONValue.object(event).serialized(.canonical))
        return state.withLock { state in
            state.entries.append(entry)
            state.dirty = true
            let excess = state.entries.count - capacity
            guard excess > 0 else { return 0 }
            state.entries.removeFirst(excess)
            state.dropped += excess
            return excess
        }
    }

    /// The oldest events, up to `limit`.
    package func batch(limit: Int) -> [Entry] {
        state.withLock { Array($0.entries.prefix(limit)) }
    }

    /// Removes events by id.
    package func remove(_ ids: Set<String>) {
        guard !ids.isEmpty else { return }
        state.withLock { state in
            let before = state.entries.count
            state.entries.removeAll { ids.contains($0.id) }
            if state.entries.count != before { state.dirty = true }
        }
    }

    package var count: Int { state.withLock { $0.entries.count } }
    package var isEmpty: Bool { count == 0 }

    /// Events dropped because the queue was full, since the queue was opened.
    package var droppedCount: Int { state.withLock { $0.dropped } }

    /// Every queued event, oldest first.
    package var entries: [Entry] { state.withLock { $0.entries } }

    /// Writes the queue to its file when it changed since the last write.
    /// - Throws: `ClientError` when the file cannot be written (the queue stays in memory).
    package func persist() throws(ClientError) {
        guard let fileURL else { return }
        try writeLock.withLock { (_: inout Void) throws(ClientError) in try write(to: fileURL) }
    }

    private func write(to fileURL: URL) throws(ClientError) {
        let lines: [UInt8]? = state.withLock { state in
            guard state.dirty else { return nil }
            state.dirty = false
            var bytes: [UInt8] = []
            for entry in state.entries {
                bytes += entry.line
                bytes.append(UInt8(ascii: "\n"))
            }
            return bytes
        }
        guard let lines else { return }
        do {
            try FileIO.createDirectory(fileURL.deletingLastPathComponent())
            try FileIO.writeAtomically(lines, to: fileURL, sync: false)
        } catch {
            state.withLock { $0.dirty = true }
            throw error
        }
    }
}
