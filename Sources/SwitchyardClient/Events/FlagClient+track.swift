import Foundation
import SwitchyardCore

extension FlagClient {
    /// Reports an outcome of the unit (a trip booked, a fare), attributed to the experiments it is in at this
    /// moment, for flagsd to compare arms on.
    ///
    /// ```swift
    /// client.track("trip_booked")                  // a conversion
    /// client.track("trips")                        // a count: one more
    /// client.track("fare", value: 16.10)           // a value, summed per unit
    /// client.track("time_to_book", value: 38.2)
    /// ```
    ///
    /// Queues a `metric` event with the other events (same ids, offline queue persisted in `directory`, batches,
    /// back-off): it never waits for disk or network and never throws. The event names the unit (a digest of the
    /// context's unit id, as session events do), the plugin switches active in the session, the experiment
    /// variants served in it, and the plugin switches whose current state a rollout split decided for this unit
    /// (`splits`: on or off). See `docs/client.md`, "Outcome metrics".
    ///
    /// Nothing is queued, and a ``ClientReport/Kind/metricRefused`` report says why, when the metric name is empty,
    /// longer than 128 characters or has characters other than letters, digits, `.`, `_` and `-`; when the value is
    /// negative, NaN, infinite or above 1e9; or when the context has no unit id (outcomes are counted per unit).
    /// flagsd drops (and counts) metrics the namespace does not declare.
    ///
    /// - Parameters:
    ///   - metric: the metric's name, as the flag file declares it under `metrics`.
    ///   - value: the amount for a `value` metric (a fare, seconds); nil means one occurrence. `conversion` and
    ///     `count` metrics ignore it.
    public func track(_ metric: String, value: Double? = nil) {
        if let problem = Self.metricProblem(metric, value: value) {
            report(ClientReport(kind: .metricRefused, message: "track: \(problem); the outcome is not sent"))
            return
        }
        let (state, context) = shared.withLock { ($0.state, $0.context) }
        guard let unit = unitDigest(of: context) else {
            report(
                ClientReport(
                    kind: .metricRefused,
                    message:
                        "track: metric '\(metric)' needs a unit id in the context (outcomes are counted per unit); set EvaluationContext.unitId, e.g. after login; the outcome is not sent"
                ))
            return
        }
        let now = wallClock()
        let (switches, variants) = session.withLock { ($0.record.switches.map(\.key), $0.record.variants) }
        let splits = state.splitSwitches(now: now, limit: Self.maximumSplits)
        enqueue(
            ClientEvent.metric(
                metric, value: value, unit: unit, switches: switches, splits: splits, variants: variants,
                context: context, id: ClientEvent.newID(at: now), time: now))
        recordSplits()
    }

    /// The most `splits` entries a metric event carries (flagsd's limit).
    static let maximumSplits = 256
    /// The longest metric name `track` sends.
    static let maximumMetricNameLength = 128
    /// The largest value `track` sends.
    static let maximumMetricValue = 1e9

    /// What is wrong with an outcome, or nil when it can be sent.
    static func metricProblem(_ metric: String, value: Double?) -> String? {
        if metric.isEmpty { return "the metric name is empty" }
        if metric.utf8.count > maximumMetricNameLength {
            return "the metric name '\(metric.prefix(40))…' is longer than \(maximumMetricNameLength) characters"
        }
        if !metric.utf8.allSatisfy(isKeyByte) {
            return "the metric name '\(metric)' may only contain letters, digits, '.', '_' and '-'"
        }
        if let value, !(value.isFinite && value >= 0 && value <= maximumMetricValue) {
            return "the value \(value) of metric '\(metric)' is not a finite number between 0 and 1e9"
        }
        return nil
    }

    private static func isKeyByte(_ byte: UInt8) -> Bool {
        (byte >= 0x61 && byte <= 0x7A) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x30 && byte <= 0x39)
            || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-")
    }

    /// The unit as events name it (``SessionRecord/unitDigest(_:namespace:)``); nil when the context has no unit
    /// id (an empty one is none: evaluation buckets it nowhere).
    func unitDigest(of context: EvaluationContext) -> String? {
        guard let unitID = context.unitId, !unitID.isEmpty else { return nil }
        return SessionRecord.unitDigest(unitID, namespace: namespace)
    }
}
