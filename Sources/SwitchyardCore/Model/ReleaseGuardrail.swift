import Foundation

/// A metric a release plan must not harm: each stage advances only when the switch's units are shown not worse on
/// it than units without the switch by more than `margin`, and rolls back when they are shown worse
/// (docs/release-plans.md, "Guardrails"). Crash rate is always guarded (the plan's `margin`); these are the others.
///
/// ```yaml
/// release:
///   guardrails:
///     trip_booked: -0.5pp      # may fall by half a percentage point, no more
///     fare: -2%                # may fall by 2 % of the control's mean, no more
///     time_to_book: +5%        # lower is better: may rise by 5 %, no more
/// ```
public struct ReleaseGuardrail: Sendable, Hashable, CustomStringConvertible {
    /// How far the metric may move on its worse side and the stage still advance.
    public enum Margin: Sendable, Hashable, CustomStringConvertible {
        /// An absolute difference of means, as a fraction (`-0.005` is −0.5 percentage points): for conversions and
        /// rates (ratio metrics).
        case points(Double)
        /// A relative change of the mean, as a fraction (`-0.02` is −2 %): for any metric.
        case relative(Double)

        /// The signed fraction.
        public var value: Double {
            switch self {
            case .points(let value), .relative(let value): value
            }
        }

        /// `pp` (percentage points) or `%` (relative): the suffix of its text.
        public var unit: String {
            switch self {
            case .points: "pp"
            case .relative: "%"
            }
        }

        /// `-0.5pp`, `-2%`, `+5%`: the text a flag file and `flagctl release start --guardrail` take.
        public var description: String {
            let rounded = (value * 100 * 10_000).rounded() / 10_000
            let number = rounded == rounded.rounded() ? String(Int(rounded)) : String(rounded)
            return (rounded > 0 ? "+" : "") + number + unit
        }

        /// Reads `-0.5pp`, `-2%`, `+5%`, `-0.25 pp`; nil when the text is neither.
        public init?(_ text: String) {
            var text = text.trimmingCharacters(in: .whitespaces).lowercased()
            let points: Bool
            if text.hasSuffix("pp") {
                points = true
                text.removeLast(2)
            } else if text.hasSuffix("%") {
                points = false
                text.removeLast()
            } else {
                return nil
            }
            text = text.trimmingCharacters(in: .whitespaces)
            if text.hasPrefix("+") { text.removeFirst() }
            guard !text.isEmpty, text.allSatisfy({ $0.isNumber || $0 == "." || $0 == "-" }),
                let number = Double(text), number.isFinite
            else { return nil }
            self = points ? .points(number / 100) : .relative(number / 100)
        }
    }

    /// A declared or built-in metric of the namespace (not `crash_rate`: the plan's `margin` guards it).
    public var metric: String
    public var margin: Margin

    public init(metric: String, margin: Margin) {
        self.metric = metric
        self.margin = margin
    }

    /// `trip_booked:-0.5pp`: the text `flagctl release start --guardrail` takes.
    public var description: String { "\(metric):\(margin)" }

    /// Reads `trip_booked:-0.5pp`; nil when it is not `METRIC:MARGIN`.
    public init?(_ text: String) {
        guard let colon = text.lastIndex(of: ":") else { return nil }
        let metric = text[..<colon].trimmingCharacters(in: .whitespaces)
        guard !metric.isEmpty, let margin = Margin(String(text[text.index(after: colon)...])) else { return nil }
        self.init(metric: metric, margin: margin)
    }

    /// The most guardrails a plan may name.
    public static let maximumCount = 16

    /// Why this guardrail cannot guard `metric` (its definition, or nil when the namespace has no such metric);
    /// nil when it can.
    public func problem(with metric: MetricDefinition?, declared: [String]) -> String? {
        if self.metric == MetricDefinition.crashRate {
            return
                "crash rate is always a guardrail; set its margin with the plan's margin (crash-rate points, e.g. 0.25)"
        }
        guard let metric else {
            let names =
                declared.isEmpty
                ? "none is declared (metrics: in the flag file)" : "declared: \(declared.joined(separator: ", "))"
            return "'\(self.metric)' is not a metric of this namespace (\(names))"
        }
        let value = margin.value
        if case .points = margin, metric.kind != .conversion, metric.kind != .ratio {
            return
                "'\(metric.name)' is a \(metric.kind.rawValue) metric: give its margin as a relative change (e.g. \(metric.better == .higher ? "-2%" : "+2%")); points (pp) are for conversions and rates"
        }
        guard value != 0 else {
            return
                "a margin of 0 can never be shown (a switch no better and no worse would hold for ever): give how far '\(metric.name)' may move, e.g. \(metric.better == .higher ? "-0.5" : "+0.5")\(margin.unit)"
        }
        if metric.better == .higher, value > 0 {
            return
                "'\(metric.name)' is better higher, so its margin is how far it may fall: write \(Margin.withValue(-value, like: margin))"
        }
        if metric.better == .lower, value < 0 {
            return
                "'\(metric.name)' is better lower, so its margin is how far it may rise: write \(Margin.withValue(-value, like: margin))"
        }
        if abs(value) > 1 { return "\(margin) is more than 100\(margin.unit)" }
        return nil
    }
}

extension ReleaseGuardrail.Margin {
    /// The same kind of margin with another value.
    static func withValue(_ value: Double, like margin: Self) -> Self {
        switch margin {
        case .points: .points(value)
        case .relative: .relative(value)
        }
    }
}
