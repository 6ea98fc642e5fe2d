import Dispatch
import Foundation
import RiderApp
import SwitchyardPlugins

/// What `rider-sample` was asked to do.
struct SampleSettings: Sendable {
    var server: URL
    var token: String
    var namespace: String
    var context: EvaluationContext
    var directory: URL
    var faults: Faults
    var output: OutputFormat
    var once: Bool
    var timeout: Duration
}

/// Runs the sample: a client following flagsd, the rider app routed over it, an assignment printed per change.
struct SampleRunner {
    /// What wakes the main loop.
    enum Event: Sendable {
        case change(FlagsChange)
        case syncFailed
        case timeout
        case stop
    }

    let settings: SampleSettings

    init(_ settings: SampleSettings) {
        self.settings = settings
    }

    /// Runs on the main actor, as an app's UI does: the plugin host attaches and detaches the live plugins there.
    /// - Returns: the exit status.
    @MainActor
    func run() async -> Int32 {
        // The rider opens the app: `time_to_book` counts from here.
        let opened = ContinuousClock.now
        let (events, sink) = AsyncStream.makeStream(of: Event.self)
        var configuration = FlagClient.Configuration(
            serverURL: settings.server, namespace: settings.namespace, token: settings.token,
            context: settings.context, directory: settings.directory)
        configuration.events.flushDelay = .milliseconds(200)
        // --timeout bounds each request too: a --once that waits 300 s must not give up on a snapshot request
        // (or an event batch) after the client runtime's default 15 s.
        configuration.requestTimeout = settings.timeout
        configuration.report = { report in
            if report.kind == .syncFailed { sink.yield(.syncFailed) }
            guard report.kind != .snapshotInstalled else { return }
            Output.error("rider-sample: \(report.message)")
        }
        let client = FlagClient(configuration: configuration)
        // The launch trip books: the core flow reports trip_booked, trips, fare and time_to_book through the client.
        var app = RiderApp(
            states: client, experiments: client, faults: settings.faults, outcomes: client, openedAt: opened)
        let printer = AssignmentPrinter(settings: settings)

        let changes = client.changes
        let forwarder = Task {
            for await change in changes { sink.yield(.change(change)) }
        }
        let signals = SignalWatcher { sink.yield(.stop) }
        let sync = Task { await client.run() }
        defer {
            signals.cancel()
            forwarder.cancel()
        }

        if settings.once {
            let timer = Task {
                try? await Task.sleep(for: settings.timeout)
                sink.yield(.timeout)
            }
            defer { timer.cancel() }
            var stopped = false
            if client.status.snapshot?.origin != .server {
                loop: for await event in events {
                    switch event {
                    case .change: if client.status.snapshot?.origin == .server { break loop }
                    case .syncFailed, .timeout: break loop
                    case .stop:
                        stopped = true
                        break loop
                    }
                }
            }
            let status = client.status
            if status.snapshot?.origin != .server {
                let why = status.lastError?.message ?? "no answer within --timeout"
                Output.error(
                    "rider-sample: no snapshot from \(settings.server.absoluteString) (\(why)); printing what the app runs without it (\(status.snapshot.map { "the \($0.origin) snapshot, version \($0.version)" } ?? "no snapshot: the core flow everywhere"))"
                )
            }
            printer.print(run(app), client: client, cause: "once")
            if status.snapshot?.origin == .server, !stopped {
                // Send what is queued (the previous session, this session's exposures and outcomes) before leaving.
                let deadline = ContinuousClock.now + settings.timeout
                while client.status.queuedEvents > 0, ContinuousClock.now < deadline {
                    try? await Task.sleep(for: .milliseconds(50))
                }
            }
            client.endSession()
            sync.cancel()
            await sync.value
            return stopped ? 130 : 0
        }

        // The four points held live: each change detaches what stopped serving and attaches what started, in one
        // step, before the trip is routed again.
        let host = PluginHost(states: client)
        let live = RiderLivePoints(app: app, scenario: scenario, host: host)
        var changeArrived = ContinuousClock.now
        host.onEvent = { printer.print($0) }
        host.onStep = { step in
            if step.changedAnything { printer.print(step, live: live.routes, since: changeArrived) }
        }
        host.update(cause: "launch")
        var last = printer.print(run(app), client: client, cause: "launch")
        // Later runs show the same trip re-routed by a change: the rider booked once.
        app.outcomes = NoOutcomes()
        for await event in events {
            guard case .change(let change) = event else {
                if case .stop = event { break }
                continue
            }
            changeArrived = ContinuousClock.now
            host.update(cause: change.cause.description)
            let outcome = run(app)
            let signature = AssignmentPrinter.Signature(outcome: outcome, client: client)
            guard signature != last else { continue }
            last = printer.print(outcome, client: client, cause: change.cause.description, previous: last)
        }
        changeArrived = ContinuousClock.now
        host.close()
        client.endSession()
        sync.cancel()
        await sync.value
        return 0
    }

    /// The sample's trip: a regular rider's, in the settings' city.
    private var scenario: TripScenario {
        .standard(unitID: settings.context.unitId ?? "rider", city: settings.context.city)
    }

    /// Runs a trip; a simulated crash ends the process at once, as a real crash would, leaving the session open.
    private func run(_ app: RiderApp) -> TripOutcome {
        do {
            return try app.runTrip(scenario)
        } catch {
            Output.error("rider-sample: \(error); exiting as a crash would, without ending the session (status 134)")
            _exit(134)
        }
    }
}

/// Calls back on SIGINT and SIGTERM (and stops the default handling, so the sample ends its session cleanly).
final class SignalWatcher {
    private let sources: [any DispatchSourceSignal]

    init(_ handler: @escaping @Sendable () -> Void) {
        let queue = DispatchQueue(label: "rider-sample.signals")
        sources = [SIGINT, SIGTERM].map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
            source.setEventHandler(handler: handler)
            source.resume()
            return source
        }
    }

    func cancel() {
        for source in sources { source.cancel() }
    }
}
