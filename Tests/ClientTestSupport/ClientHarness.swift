public import Foundation
public import SwitchyardClient
public import SwitchyardClientTesting
public import SwitchyardCore

/// Fresh state for one client test: a temporary directory, a test clock, a report log.
public final class ClientHarness: Sendable {
    public let directory: TemporaryDirectory
    public let clock: TestClock
    public let reports = ReportLog()

    /// - Parameter manualClock: sleeps wait for ``TestClock/advance(by:)`` instead of passing at once.
    public init(manualClock: Bool = false) throws {
        directory = try TemporaryDirectory()
        clock = TestClock(advancesAutomatically: !manualClock)
    }

    /// A configuration with fast test policies: the test clock, no poll spacing, a short long-poll and a short
    /// request deadline, the directory, and the report log.
    public func configuration(
        server: URL, namespace: String = "rider", context: EvaluationContext = Fixtures.context,
        persistent: Bool = true
    ) -> FlagClient.Configuration {
        var configuration = FlagClient.Configuration(
            serverURL: server, namespace: namespace, token: "client-token-1",
            context: context, directory: persistent ? directory.url : nil)
        configuration.clock = clock
        configuration.wallClock = clock.wallClock
        configuration.random = { 0.5 }
        configuration.longPollWait = .seconds(1)
        configuration.requestTimeout = .seconds(10)
        configuration.minimumPollInterval = .zero
        configuration.events.flushDelay = .zero
        configuration.report = reports.callback
        return configuration
    }

    /// A URL where nothing listens (a port just released).
    public static func deadServerURL() throws -> URL {
        let server = try TestHTTPServer { _ in .close }
        let url = server.baseURL
        server.stop()
        return url
    }

    deinit {
        directory.remove()
    }
}

/// Runs the client's loops while `body` runs, then cancels them and waits for them to end.
public func whileRunning<Result>(_ client: FlagClient, _ body: () async throws -> Result) async rethrows -> Result {
    let task = Task { await client.run() }
    defer { task.cancel() }
    let result = try await body()
    task.cancel()
    await task.value
    return result
}
