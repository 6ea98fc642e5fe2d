/// An outcome metric a namespace declares in its flag file: what apps report with `FlagClient.track`, and what
/// experiments (experiment flags' variants, plugin switches at a partial rollout) are judged on.
///
/// Every metric is a number per **unit** (the unit of randomisation), summed over the events the unit reported
/// since it entered an experiment:
/// - `conversion`: 1 when the unit reported it at least once, else 0 (`trip_booked`).
/// - `count`: how many times the unit reported it, at most `cap` when one is declared (`trips`).
/// - `value`: the sum of the values the unit reported, at most `cap` (required: larger sums are capped, not
///   trusted), e.g. `fare`, `time_to_book`.
/// - `ratio`: one metric's per-unit sum over another's (`fare` per `trips`, crashes per session), analysed with
///   the delta method.
///
/// Built in, never declared: `sessions` (sessions per unit), `crashed_sessions` (crashed sessions per unit) and
/// `crash_rate` (`crashed_sessions` per `sessions`, lower is better).
public struct MetricDefinition: Sendable, Hashable {
    /// How a unit's events become its number.
    public enum Kind: String, Sendable, Hashable, CaseIterable {
        case conversion, count, value, ratio
    }

    /// Which way is better.
    public enum Direction: String, Sendable, Hashable, CaseIterable {
        case higher, lower
    }

    /// The metric's name: what `track` names (letters, digits, `_`, `.`, `-`; as flag keys).
    public var name: String
    public var description: String?
    public var owner: String?
    public var kind: Kind
    /// Which way is better.
    public var better: Direction
    /// The most a unit's sum counts for (`value`: required and positive; `count`: optional).
    public var cap: Double?
    /// A ratio's numerator and denominator: names of other metrics (declared or built in, not ratios).
    public var numerator: String?
    public var denominator: String?

    public init(
        name: String, description: String? = nil, owner: String? = nil, kind: Kind, better: Direction = .higher,
        cap: Double? = nil, numerator: String? = nil, denominator: String? = nil
    ) {
        self.name = name
        self.description = description
        self.owner = owner
        self.kind = kind
        self.better = better
        self.cap = cap
        self.numerator = numerator
        self.denominator = denominator
    }

    /// The built-in metrics every namespace has, from the sessions clients report.
    public static let builtIn: [MetricDefinition] = [
        MetricDefinition(
            name: sessions, description: "Sessions per unit (from session events).", owner: "switchyard",
            kind: .count, better: .higher),
        MetricDefinition(
            name: crashedSessions, description: "Crashed sessions per unit (from session events).",
            owner: "switchyard", kind: .count, better: .lower),
        MetricDefinition(
            name: crashRate, description: "Crashed sessions per session (from session events).",
            owner: "switchyard", kind: .ratio, better: .lower, numerator: crashedSessions, denominator: sessions),
    ]

    /// The longest metric name.
    public static let maximumNameLength = 64
    /// The most metrics a namespace may declare (the built-in ones apart).
    public static let maximumDeclared = 64

    public static let sessions = "sessions"
    public static let crashedSessions = "crashed_sessions"
    public static let crashRate = "crash_rate"

    /// Whether a name is a built-in metric's (a flag file may not declare it).
    public static func isBuiltIn(_ name: String) -> Bool {
        builtIn.contains { $0.name == name }
    }

    /// Whether apps report this metric themselves with `track` (built-ins come from session events; ratios from
    /// their parts).
    public var isTracked: Bool {
        kind != .ratio && !Self.isBuiltIn(name)
    }
}

extension FlagSet {
    /// Every metric of the namespace: the built-in ones, then the declared ones in their order.
    public var allMetrics: [MetricDefinition] {
        MetricDefinition.builtIn + metrics
    }

    /// A metric by name, built in or declared.
    public func metric(_ name: String) -> MetricDefinition? {
        MetricDefinition.builtIn.first { $0.name == name } ?? metrics.first { $0.name == name }
    }
}
