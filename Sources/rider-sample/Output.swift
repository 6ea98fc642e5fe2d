import Foundation
import RiderApp
import SwitchyardPlugins

/// Writes whole lines to standard output and standard error (unbuffered, so a pipe sees each line at once).
enum Output {
    static func line(_ text: String) {
        FileHandle.standardOutput.write(Data((text + "\n").utf8))
    }

    static func error(_ text: String) {
        FileHandle.standardError.write(Data((text + "\n").utf8))
    }
}

/// Prints an assignment: which plugins serve each plugin point, and the trip.
struct AssignmentPrinter {
    /// What a reader cares about changing: where each point routes, and which snapshot decided it.
    struct Signature: Equatable {
        var routes: [PointRoute]
        var version: Int64?
        var origin: SnapshotOrigin?
        var guarded: [String]

        init(outcome: TripOutcome, client: FlagClient) {
            let status = client.status
            routes = outcome.routes
            version = status.snapshot?.version
            origin = status.snapshot?.origin
            guarded = status.disabledByCrashGuard
        }
    }

    let settings: SampleSettings

    @discardableResult
    func print(_ outcome: TripOutcome, client: FlagClient, cause: String, previous: Signature? = nil) -> Signature {
        let signature = Signature(outcome: outcome, client: client)
        let status = client.status
        switch settings.output {
        case .json: Output.line(json(outcome, status: status, cause: cause).serializedString())
        case .text: Output.line(text(outcome, status: status, cause: cause, previous: previous))
        }
        return signature
    }

    /// One attach, detach, failed attach or leak of a live plugin.
    func print(_ event: PluginHostEvent) {
        switch settings.output {
        case .json:
            var object = JSONObject()
            object["event"] = .string(event.kind.description)
            object["time"] = .string(Self.now())
            object["point"] = .string(event.pluginPoint)
            object["switch"] = .string(event.pluginSwitch.key)
            object["step"] = .int64(Int64(clamping: event.step))
            object["cause"] = .string(event.cause)
            if let message = event.message { object["message"] = .string(message) }
            Output.line(JSONValue.object(object).serializedString())
        case .text:
            let verb = event.kind == .attached ? "attach" : event.kind == .detached ? "detach" : "\(event.kind)"
            let width = RiderCatalogue.pluginPoints.map(\.name.count).max() ?? 0
            Output.line(
                "  \(verb.padding(toLength: 6, withPad: " ", startingAt: 0)) \(event.pluginPoint.padding(toLength: width, withPad: " ", startingAt: 0))  "
                    + event.pluginSwitch.key + (event.message.map { ": \($0)" } ?? ""))
        }
    }

    /// A step of the plugin host that changed something: what every point holds now, and how long since the change
    /// arrived.
    func print(_ step: PluginHostStep, live routes: [PointRoute], since arrived: ContinuousClock.Instant) {
        let elapsed = ContinuousClock.now - arrived
        let milliseconds = Double(elapsed.components.seconds) * 1000 + Double(elapsed.components.attoseconds) / 1e15
        switch settings.output {
        case .json:
            var object = JSONObject()
            object["event"] = .string("settled")
            object["time"] = .string(Self.now())
            object["step"] = .int64(Int64(clamping: step.number))
            object["cause"] = .string(step.cause)
            object["attached"] = .int(step.attached)
            object["detached"] = .int(step.detached)
            object["settled_ms"] = .double((milliseconds * 1000).rounded() / 1000)
            var live = JSONObject()
            for route in routes { live[route.point] = .array(route.servedBy.map { .string($0.key) }) }
            object["live"] = .object(live)
            Output.line(JSONValue.object(object).serializedString())
        case .text:
            let core = routes.filter(\.isCoreFlow).count
            Output.line(
                "  settled (\(step.cause)): \(step.attached) attached, \(step.detached) detached in "
                    + String(format: "%.2f ms", milliseconds)
                    + (core == routes.count
                        ? "; every point on its core flow" : core > 0 ? "; \(core) point(s) on the core flow" : ""))
        }
    }

    static func now() -> String {
        Date().formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true))
    }

    func json(_ outcome: TripOutcome, status: ClientStatus, cause: String) -> JSONValue {
        var object = JSONObject()
        object["cause"] = .string(cause)
        object["time"] = .string(Self.now())
        object["namespace"] = .string(settings.namespace)
        object["unit"] = .string(settings.context.unitId ?? "")
        object["city"] = settings.context.city.map(JSONValue.string) ?? .null
        object["cohorts"] = .array(settings.context.cohorts.map(JSONValue.string))
        if let snapshot = status.snapshot {
            object["snapshot"] = .object(
                JSONObject([
                    ("version", .int64(snapshot.version)), ("epoch", .string(snapshot.epoch)),
                    ("origin", .string(snapshot.origin.rawValue)),
                ]))
        } else {
            object["snapshot"] = .null
        }
        var points = JSONObject()
        for route in outcome.routes { points[route.point] = .array(route.servedBy.map { .string($0.key) }) }
        object["points"] = .object(points)
        object["crash_guard"] = .array(status.disabledByCrashGuard.map(JSONValue.string))
        object["trip"] = .object(
            JSONObject([
                ("completed", .bool(outcome.completed)),
                ("stages", .array(outcome.stages.map { .string($0.rawValue) })),
                ("quote", .string(outcome.quote.description)), ("discount", .string(outcome.discount.description)),
                ("charged", .string(outcome.charged.description)), ("split_ways", .int(outcome.splitWays)),
                ("button", .string(outcome.buttonCopy)), ("driver", .string(outcome.driver)),
            ]))
        return .object(object)
    }

    func text(_ outcome: TripOutcome, status: ClientStatus, cause: String, previous: Signature?) -> String {
        var lines: [String] = []
        let context = settings.context
        var who = "unit \(context.unitId ?? "")"
        if let city = context.city { who += ", city \(city)" }
        if !context.cohorts.isEmpty { who += ", cohorts \(context.cohorts.joined(separator: ", "))" }
        let snapshot =
            status.snapshot.map { "version \($0.version) from the \($0.origin)" } ?? "no snapshot: core flow everywhere"
        let heading: String
        if let previous {
            heading = previous.routes == outcome.routes ? "same routes (\(cause))" : "re-routed (\(cause))"
        } else {
            heading = "rider-sample · namespace \(settings.namespace) · \(who)"
        }
        lines.append("\(heading) · \(snapshot)")
        let width = RiderCatalogue.pluginPoints.map(\.name.count).max() ?? 0
        for route in outcome.routes {
            let changed = previous.map { !$0.routes.contains(route) } ?? false
            let name = route.point.padding(toLength: width, withPad: " ", startingAt: 0)
            lines.append("\(changed ? "*" : " ") \(name)  \(route)")
        }
        if !status.disabledByCrashGuard.isEmpty {
            lines.append("  crash-loop guard holds off: \(status.disabledByCrashGuard.joined(separator: ", "))")
        }
        let stages = outcome.stages.map(\.rawValue).joined(separator: " → ")
        lines.append(
            "  trip: \(outcome.completed ? "completed" : "stopped") (\(stages)); \"\(outcome.buttonCopy)\"; charged \(outcome.charged)"
                + (outcome.discount.cents > 0 ? " after \(outcome.discount) off" : "")
                + (outcome.splitWays > 1 ? ", split \(outcome.splitWays) ways" : ""))
        return lines.joined(separator: "\n")
    }
}
