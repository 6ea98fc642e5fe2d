public import Testing

/// Waits until a condition holds, checking it every 20 ms; past `timeout` it records an issue naming what it
/// waited for (and the condition's last error, if it threw) and throws, so the test stops there.
///
/// The deadline is a liveness check, not a speed claim: it only bounds a test that would otherwise hang, so it is
/// generous (two minutes unless a test needs longer), and no test may depend on the machine being idle. An error
/// thrown by the condition counts as "not yet" (a server still starting, a connection refused).
///
/// ```swift
/// try await waitUntil("the long-poll is parked") { app.hub.waiterCount == 1 }
/// ```
///
/// - Parameters:
///   - what: what is awaited, for the failure's message.
///   - timeout: the longest wait.
///   - interval: how often to check (20 ms; less where a test waits thousands of times).
///   - condition: checked until it returns true.
/// - Throws: `WaitTimedOut` past the deadline.
public func waitUntil(
    _ what: @autoclosure () -> String = "the condition", timeout: Duration = .seconds(120),
    every interval: Duration = .milliseconds(20),
    sourceLocation: SourceLocation = #_sourceLocation, _ condition: () async throws -> Bool
) async throws {
    let deadline = ContinuousClock.now + timeout
    var lastError: (any Error)?
    while true {
        do {
            if try await condition() { return }
            lastError = nil
        } catch {
            lastError = error
        }
        guard ContinuousClock.now < deadline else {
            let failure = WaitTimedOut(what: what(), timeout: timeout, lastError: lastError.map { "\($0)" })
            Issue.record(Comment(rawValue: failure.description), sourceLocation: sourceLocation)
            throw failure
        }
        try await Task.sleep(for: interval)
    }
}

/// A condition that did not hold within its deadline.
public struct WaitTimedOut: Error, CustomStringConvertible {
    public let what: String
    public let timeout: Duration
    /// The condition's last error, when it threw.
    public let lastError: String?

    public var description: String {
        "\(what) did not hold within \(timeout)" + (lastError.map { " (last error: \($0))" } ?? "")
    }
}
