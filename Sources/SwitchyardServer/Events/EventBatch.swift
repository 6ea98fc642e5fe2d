package import Foundation
import HTTPTypes
package import SwitchyardCore
package import SwitchyardStorage

/// The limits of `POST /v1/namespaces/{ns}/events`.
package struct EventLimits: Sendable, Hashable {
    /// The most events in one batch (more: 413, so the client halves its batches).
    package var maximumEvents: Int
    /// Events older than this are refused (and their ids may be forgotten: see ``idRetention``).
    package var maximumAge: Duration
    /// Events further in the future than this are refused (device clocks drift).
    package var maximumFutureSkew: Duration

    package init(
        maximumEvents: Int = 1000, maximumAge: Duration = .seconds(7 * 86_400),
        maximumFutureSkew: Duration = .seconds(600)
    ) {
        self.maximumEvents = maximumEvents
        self.maximumAge = maximumAge
        self.maximumFutureSkew = maximumFutureSkew
    }

    /// How long event ids are remembered: a day longer than the oldest event accepted, so an id is only ever
    /// forgotten once an event carrying it would be refused as too old; a retried batch never counts twice.
    package var idRetention: Duration { maximumAge + .seconds(86_400) }
}

/// A batch of events read from a request body: what can be counted, and what is refused with a reason.
///
/// The body as a whole must be `{"events": [...]}` (else a 400 naming the field, or 413 past the event limit);
/// each event is then checked on its own, so one bad event never costs the others. Members this server does not
/// know are ignored, so newer clients can add fields.
package struct EventBatch: Sendable {
    /// An event refused, with the reason sent back to the client.
    package struct Rejection: Sendable, Hashable {
        /// Its position in the batch.
        package var index: Int
        /// Its id, when it has a usable one.
        package var id: String?
        /// What is wrong, with the field: `time: 2026-11-25T09:00:00.000Z is 3 days in the future (…)`.
        package var reason: String
        /// For metrics: `invalid`, `unknown_type`, `in_future`, `too_old`.
        package var category: String
    }

    /// Valid events, each id once (the first occurrence), in the batch's order.
    package var events: [StoredEvent] = []
    /// Ids that occurred again later in the batch (acknowledged, counted once).
    package var repeated: [String] = []
    package var rejected: [Rejection] = []
    /// How many events the body held (valid or not): what the batch costs of its rate budgets.
    package private(set) var posted = 0

    /// Reads and checks a batch.
    ///
    /// - Parameters:
    ///   - body: the request body's JSON.
    ///   - now: the server's time, for the clock-skew checks.
    ///   - limits: batch size and time limits.
    ///   - source: who posts it (a client token's holder, or a reporter); reporters must name each session's unit.
    ///   - address: the batch's source address key, recorded with each event.
    /// - Throws: `APIError` 400 naming the field when the body is not `{"events": [...]}`, 413 when it holds
    ///   more than `limits.maximumEvents` events.
    package init(
        _ body: JSONValue, now: Date, limits: EventLimits, source: EventSource = .client, address: String? = nil
    ) throws(APIError) {
        guard case .object(let object) = body else {
            throw APIError.badRequest(
                "the body must be a JSON object {\"events\": [...]}, not \(body.typeDescription)", path: .root)
        }
        guard let value = object["events"] else {
            throw APIError.badRequest("events: is required (send {\"events\": [...]})", path: "events")
        }
        guard case .array(let elements) = value else {
            throw APIError.badRequest("events: must be a list of events, not \(value.typeDescription)", path: "events")
        }
        guard elements.count <= limits.maximumEvents else {
            throw APIError(
                .contentTooLarge, "too-many-events", "Too many events in one batch",
                "events: \(elements.count) events in one batch; this server takes at most \(limits.maximumEvents) (send smaller batches)",
                problems: [
                    ValidationProblem(
                        path: "events", message: "holds \(elements.count) events, more than \(limits.maximumEvents)")
                ])
        }
        posted = elements.count
        var seen = Set<String>()
        for (index, element) in elements.enumerated() {
            switch EventReader.read(element, now: now, limits: limits, source: source) {
            case .success(var event):
                event.address = address
                if seen.insert(event.id).inserted { events.append(event) } else { repeated.append(event.id) }
            case .failure(let rejection):
                rejected.append(
                    Rejection(index: index, id: rejection.id, reason: rejection.reason, category: rejection.category))
            }
        }
    }

    /// Takes out the events that name a plugin switch, experiment flag or variant the namespace does not have:
    /// they are acknowledged but never counted, so a made-up name cannot add a counter.
    ///
    /// - Returns: the events taken out, with the reason.
    package mutating func removeUnknown(in snapshot: PublishedSnapshot) -> [EventDrop] {
        var dropped: [EventDrop] = []
        events.removeAll { event in
            guard let reason = Self.unknownName(in: event, snapshot: snapshot) else { return false }
            dropped.append(EventDrop(id: event.id, reason: reason))
            return true
        }
        return dropped
    }

    /// Names are looked up by key (`PublishedSnapshot.flag(_:)`): a session's switches cost the same in a namespace
    /// of ten switches or of ten thousand.
    static func unknownName(in event: StoredEvent, snapshot: PublishedSnapshot) -> EventDropReason? {
        func variant(_ variant: String, of key: String) -> EventDropReason? {
            guard let experiment = snapshot.flag(key)?.experiment else { return .unknownFlag }
            return experiment.variants.contains { $0.key == variant } ? nil : .unknownVariant
        }
        switch event.payload {
        case .session(_, let switches, let variants):
            if switches.contains(where: { snapshot.flag($0)?.pluginSwitch == nil }) { return .unknownSwitch }
            for (key, served) in variants.sorted(by: { $0.key < $1.key }) {
                if let reason = variant(served, of: key) { return reason }
            }
            return nil
        case .exposure(let flag, let served):
            return variant(served, of: flag)
        case .metric(let name, _, _, _):
            // Only what apps report: a declared metric that is no ratio (built-ins come from sessions). The switches
            // and variants it names count nothing by themselves (only experiments the flag set runs take units).
            guard let metric = snapshot.flagSet.metric(name), metric.isTracked else { return .unknownMetric }
            return nil
        }
    }

    /// The key a unit is counted under: the first 128 bits of the SHA-256 of what the client sent, in hex. The
    /// client runtime sends a digest already (never the raw id); this keeps whatever another client sends from
    /// being stored as it came, and bounds its size.
    package static func unitKey(_ unit: String) -> String {
        String(SHA256.hexDigest(Array("switchyard-unit:\(unit)".utf8)).prefix(32))
    }
}

/// Reads one event, collecting every problem of its fields.
private struct EventReader {
    struct Problem: Error {
        var id: String?
        var reason: String
        var category: String
    }

    static let maximumText = 128
    static let maximumCohorts = 32
    static let maximumSwitches = 256
    static let maximumVariants = 64
    static let maximumValue = 1e9

    let object: JSONObject
    var problems: [String] = []
    var category = "invalid"

    static func read(_ value: JSONValue, now: Date, limits: EventLimits, source: EventSource) -> Result<
        StoredEvent, Problem
    > {
        guard case .object(let object) = value else {
            return .failure(
                Problem(
                    id: nil, reason: "an event must be a JSON object, not \(value.typeDescription)", category: "invalid"
                ))
        }
        var reader = EventReader(object: object)
        let id = reader.text("id", required: true)
        let type = reader.text("type", required: true)
        let time = reader.time("time", required: true)
        _ = reader.text("app_version")
        _ = reader.text("platform")
        let city = reader.text("city")
        let cohorts = reader.keys("cohorts", limit: maximumCohorts) ?? []
        let unit = reader.text("unit")
        if let time {
            let ahead = time.timeIntervalSince(now)
            let age = now.timeIntervalSince(time)
            if ahead > limits.maximumFutureSkew.seconds {
                reader.fail(
                    "time: \(Self.text(time)) is \(Self.span(ahead)) in the future, more than the \(Self.span(limits.maximumFutureSkew.seconds)) of clock skew this server allows (check the device clock)",
                    category: "in_future")
            } else if age > limits.maximumAge.seconds {
                reader.fail(
                    "time: \(Self.text(time)) is \(Self.span(age)) old; this server counts events up to \(Self.span(limits.maximumAge.seconds)) old",
                    category: "too_old")
            }
        }
        var payload: StoredEvent.Payload?
        switch type {
        case "session":
            _ = reader.text("session_id", required: true)
            let start = reader.time("start", required: true)
            let end = reader.time("end", required: true)
            if let start, let end, end < start {
                reader.fail("end: \(Self.text(end)) is before start \(Self.text(start))")
            }
            let crashed = reader.bool("crashed", required: true)
            if source == .reporter, unit == nil, reader.problems.allSatisfy({ !$0.hasPrefix("unit:") }) {
                reader.fail(
                    "unit: is required in the sessions a reporter sends (the unit the session ran on, as the app reports it)"
                )
            }
            let switches = reader.keys("switches", required: true, limit: maximumSwitches, flagKeys: true)
            let variants = reader.variants("variants")
            if let crashed, let switches {
                payload = .session(crashed: crashed, switches: switches, variants: variants ?? [:])
            }
        case "metric":
            let name = reader.text("metric", required: true, flagKey: true)
            let value = reader.number("value", maximum: maximumValue)
            if unit == nil, reader.problems.allSatisfy({ !$0.hasPrefix("unit:") }) {
                reader.fail(
                    "unit: is required in a metric event (the unit's digest, as sessions send it): outcomes are counted per unit"
                )
            }
            let switches = reader.keys("switches", limit: maximumSwitches, flagKeys: true)
            let variants = reader.variants("variants")
            if let name {
                payload = .metric(name: name, value: value ?? 1, switches: switches ?? [], variants: variants ?? [:])
            }
        case "exposure":
            let flag = reader.text("flag", required: true, flagKey: true)
            let variant = reader.text("variant", required: true)
            _ = reader.text("epoch")
            reader.version("version")
            if let flag, let variant { payload = .exposure(flag: flag, variant: variant) }
        case let type?:
            reader.fail(
                "type: '\(type)' is not an event type of this server (session, exposure, metric)",
                category: "unknown_type")
        case nil:
            break
        }
        let splits = reader.splits("splits", limit: maximumSwitches)
        guard reader.problems.isEmpty, let id, let time, let payload else {
            let reason = reader.problems.isEmpty ? "the event is invalid" : reader.problems.joined(separator: "; ")
            return .failure(Problem(id: id ?? (object["id"]?.stringValue), reason: reason, category: reader.category))
        }
        return .success(
            StoredEvent(
                id: id, time: time, city: city, cohorts: cohorts, payload: payload, source: source,
                unit: unit.map(EventBatch.unitKey), splits: splits ?? [:]))
    }

    mutating func fail(_ problem: String, category: String? = nil) {
        problems.append(problem)
        // The first specific category wins over `invalid`, so metrics tell clock problems apart.
        if let category, self.category == "invalid" { self.category = category }
    }

    mutating func text(_ key: String, required: Bool = false, flagKey: Bool = false) -> String? {
        guard let value = object[key], value != .null else {
            if required { fail("\(key): is required") }
            return nil
        }
        guard case .string(let string) = value else {
            fail("\(key): must be a string, not \(value.typeDescription)")
            return nil
        }
        return check(string, at: key, flagKey: flagKey) ? string : nil
    }

    mutating func check(_ string: String, at path: String, flagKey: Bool) -> Bool {
        guard !string.isEmpty else {
            fail("\(path): must not be empty")
            return false
        }
        guard string.unicodeScalars.count <= Self.maximumText else {
            fail("\(path): is longer than \(Self.maximumText) characters")
            return false
        }
        if flagKey, !string.utf8.allSatisfy(Self.isKeyByte) {
            fail("\(path): '\(string)' is not a flag key (letters, digits, '.', '_' and '-')")
            return false
        }
        if string.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) {
            fail("\(path): must not contain control characters")
            return false
        }
        return true
    }

    static func isKeyByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"),
            UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "-"):
            true
        default: false
        }
    }

    mutating func time(_ key: String, required: Bool) -> Date? {
        guard let text = text(key, required: required) else { return nil }
        guard let date = Date(iso8601: text) else {
            fail("\(key): '\(text)' is not an RFC 3339 time such as 2026-11-22T09:20:40.118Z")
            return nil
        }
        return date
    }

    mutating func bool(_ key: String, required: Bool) -> Bool? {
        guard let value = object[key], value != .null else {
            if required { fail("\(key): is required") }
            return nil
        }
        guard case .bool(let bool) = value else {
            fail("\(key): must be true or false, not \(value.typeDescription)")
            return nil
        }
        return bool
    }

    mutating func version(_ key: String) {
        guard let value = object[key], value != .null else { return }
        guard case .number(let number) = value, let version = number.int64Value, version >= 1 else {
            let shown = if case .number = value { value.serializedString() } else { value.typeDescription }
            fail("\(key): must be a version (a whole number from 1), not \(shown)")
            return
        }
    }

    mutating func keys(_ key: String, required: Bool = false, limit: Int, flagKeys: Bool = false) -> [String]? {
        guard let value = object[key], value != .null else {
            if required { fail("\(key): is required") }
            return nil
        }
        guard case .array(let elements) = value else {
            fail("\(key): must be a list of strings, not \(value.typeDescription)")
            return nil
        }
        guard elements.count <= limit else {
            fail("\(key): holds \(elements.count) entries, more than \(limit)")
            return nil
        }
        var strings: [String] = []
        var valid = true
        for (index, element) in elements.enumerated() {
            guard case .string(let string) = element else {
                fail("\(key)[\(index)]: must be a string, not \(element.typeDescription)")
                valid = false
                continue
            }
            if check(string, at: "\(key)[\(index)]", flagKey: flagKeys) {
                strings.append(string)
            } else {
                valid = false
            }
        }
        return valid ? strings : nil
    }

    /// A number from 0 to `maximum`, finite.
    mutating func number(_ key: String, maximum: Double) -> Double? {
        guard let value = object[key], value != .null else { return nil }
        guard case .number(let number) = value, let double = number.doubleValue, double.isFinite else {
            fail("\(key): must be a number, not \(value.typeDescription)")
            return nil
        }
        guard double >= 0, double <= maximum else {
            fail("\(key): \(number) is not between 0 and \(Int(maximum))")
            return nil
        }
        return double
    }

    /// `{"plugin_switch_x": true, …}`: switches whose state the unit's rollout split decided.
    mutating func splits(_ key: String, limit: Int) -> [String: Bool]? {
        guard let value = object[key], value != .null else { return nil }
        guard case .object(let members) = value else {
            fail(
                "\(key): must be an object of plugin switch keys to true (bucketed in) or false (out), not \(value.typeDescription)"
            )
            return nil
        }
        guard members.count <= limit else {
            fail("\(key): holds \(members.count) switches, more than \(limit)")
            return nil
        }
        var splits: [String: Bool] = [:]
        for (flag, state) in members {
            guard check(flag, at: "\(key).\(flag)", flagKey: true) else { continue }
            guard case .bool(let bool) = state else {
                fail("\(key).\(flag): must be true or false, not \(state.typeDescription)")
                continue
            }
            splits[flag] = bool
        }
        return splits
    }

    mutating func variants(_ key: String) -> [String: String]? {
        guard let value = object[key], value != .null else { return nil }
        guard case .object(let members) = value else {
            fail("\(key): must be an object of flag keys to variant keys, not \(value.typeDescription)")
            return nil
        }
        guard members.count <= Self.maximumVariants else {
            fail("\(key): holds \(members.count) flags, more than \(Self.maximumVariants)")
            return nil
        }
        var variants: [String: String] = [:]
        for (flag, variant) in members {
            guard check(flag, at: "\(key).\(flag)", flagKey: true) else { continue }
            guard case .string(let string) = variant else {
                fail("\(key).\(flag): must be a variant key (a string), not \(variant.typeDescription)")
                continue
            }
            if check(string, at: "\(key).\(flag)", flagKey: false) { variants[flag] = string }
        }
        return variants
    }

    static func text(_ date: Date) -> String {
        date.iso8601
    }

    /// `3 days`, `15 minutes`, `40 seconds`.
    static func span(_ seconds: Double) -> String {
        func unit(_ value: Int, _ name: String) -> String { "\(value) \(name)\(value == 1 ? "" : "s")" }
        let whole = Int(seconds.rounded(.down))
        if whole >= 2 * 86_400 { return unit(whole / 86_400, "day") }
        if whole >= 2 * 3600 { return unit(whole / 3600, "hour") }
        if whole >= 2 * 60 { return unit(whole / 60, "minute") }
        return unit(whole, "second")
    }
}

extension Duration {
    /// The duration in seconds, as a floating-point number.
    var seconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
