public import SwitchyardCore

/// `GET /v1/namespaces/{namespace}/experiments/{key}`: an experiment's outcome metrics, judged per unit.
///
/// For an experiment flag (arms: its variants) or a plugin switch whose rollout splits units (arms `without`, the
/// control, and `with`), in one phase (the split in force; `phases` lists every one kept): the units per arm and
/// the sample ratio check first (results are marked untrustworthy when it fails), then per metric each arm's mean
/// and each treatment arm's difference and relative lift to the control with an always-valid confidence sequence
/// (docs/experiment-statistics.md), CUPED-adjusted where a pre-exposure value exists, and the course of the
/// difference over time. Experiment flags' answers also carry the crash counts per variant of older versions
/// (`window`, `variants`), which this type leaves to the route.
public struct ExperimentResultsBody: Sendable, Hashable {
    /// An estimate with its interval (bounds nil while an arm has fewer than 2 units).
    public struct Interval: Sendable, Hashable {
        public var estimate: Double?
        public var lower: Double?
        public var upper: Double?

        public init(estimate: Double?, lower: Double?, upper: Double?) {
            self.estimate = estimate
            self.lower = lower
            self.upper = upper
        }

        var json: JSONValue {
            .object(
                JSONObject([
                    ("estimate", Self.number(estimate)), ("lower", Self.number(lower)), ("upper", Self.number(upper)),
                ]))
        }

        init(json: JSONValue) {
            estimate = json["estimate"]?.doubleValue
            lower = json["lower"]?.doubleValue
            upper = json["upper"]?.doubleValue
        }

        static func number(_ value: Double?) -> JSONValue {
            guard let value, value.isFinite else { return .null }
            return .double(value)
        }
    }

    /// A phase: the split in force while its units entered.
    public struct Phase: Sendable, Hashable {
        public var phase: String
        public var units: Int
        /// When its first and last units entered (RFC 3339).
        public var from: String
        public var until: String
        /// Whether it is the flag's split now.
        public var current: Bool

        public init(phase: String, units: Int, from: String, until: String, current: Bool) {
            self.phase = phase
            self.units = units
            self.from = from
            self.until = until
            self.current = current
        }
    }

    /// An arm of the phase shown.
    public struct Arm: Sendable, Hashable {
        public var arm: String
        public var units: Int
        /// Its declared share of units (nil when rules split at different rates).
        public var expectedShare: Double?
        public var observedShare: Double?

        public init(arm: String, units: Int, expectedShare: Double?, observedShare: Double?) {
            self.arm = arm
            self.units = units
            self.expectedShare = expectedShare
            self.observedShare = observedShare
        }
    }

    /// The sample ratio check: are the units split as the flag declares?
    public struct SampleRatio: Sendable, Hashable {
        /// `ok`, `mismatch`, or `not_checked` (rules split at different rates, an older phase, or too few units).
        public var status: String
        /// Anytime-valid p-value (sequential multinomial test); nil when not checked.
        public var pValue: Double?
        /// The p-value below which the check fails.
        public var threshold: Double
        public var message: String

        public init(status: String, pValue: Double?, threshold: Double, message: String) {
            self.status = status
            self.pValue = pValue
            self.threshold = threshold
            self.message = message
        }
    }

    /// A treatment arm against the control on one metric.
    public struct Comparison: Sendable, Hashable {
        public var arm: String
        /// Treatment minus control, in the metric's unit per unit (points of a share for conversions).
        public var difference: Interval
        /// Treatment over control minus 1; nil when the control's mean is 0.
        public var relative: Interval?
        /// `better`, `worse` or `inconclusive`: whether the interval excludes 0, and which way is better.
        public var verdict: String
        /// Whether CUPED adjusted the estimate, and by how much it cut the variance (0.3: 30 %).
        public var cuped: Bool
        public var varianceReduction: Double?

        public init(
            arm: String, difference: Interval, relative: Interval?, verdict: String, cuped: Bool,
            varianceReduction: Double?
        ) {
            self.arm = arm
            self.difference = difference
            self.relative = relative
            self.verdict = verdict
            self.cuped = cuped
            self.varianceReduction = varianceReduction
        }
    }

    /// The difference of an arm at a moment: over the units that had entered by then (their values as of now).
    public struct Point: Sendable, Hashable {
        public var time: String
        public var arm: String
        public var units: Int
        public var difference: Interval

        public init(time: String, arm: String, units: Int, difference: Interval) {
            self.time = time
            self.arm = arm
            self.units = units
            self.difference = difference
        }
    }

    /// One metric's results.
    public struct Metric: Sendable, Hashable {
        /// An arm's mean (a share for conversions, a ratio of sums for ratios).
        public struct ArmMean: Sendable, Hashable {
            public var arm: String
            public var units: Int
            public var mean: Double?

            public init(arm: String, units: Int, mean: Double?) {
                self.arm = arm
                self.units = units
                self.mean = mean
            }
        }

        public var name: String
        public var kind: String
        public var better: String
        public var description: String?
        public var builtIn: Bool
        /// A ratio's parts (nil for other kinds).
        public var numerator: String?
        public var denominator: String?
        public var arms: [ArmMean]
        public var comparisons: [Comparison]
        public var history: [Point]

        public init(
            name: String, kind: String, better: String, description: String?, builtIn: Bool, numerator: String? = nil,
            denominator: String? = nil, arms: [ArmMean], comparisons: [Comparison], history: [Point]
        ) {
            self.name = name
            self.kind = kind
            self.better = better
            self.description = description
            self.builtIn = builtIn
            self.numerator = numerator
            self.denominator = denominator
            self.arms = arms
            self.comparisons = comparisons
            self.history = history
        }
    }

    public var namespace: String
    public var flag: String
    /// `experiment` or `plugin_switch`.
    public var type: String
    /// The phase shown; nil when no unit entered the experiment yet.
    public var phase: String?
    public var phases: [Phase]
    public var control: String
    public var arms: [Arm]
    public var sampleRatio: SampleRatio
    /// False when the sample ratio check fails: the split is broken, so no difference can be trusted.
    public var trustworthy: Bool
    /// The two-sided error rate of every interval over all looks, and the confidence sequence's tuning.
    public var alpha: Double
    public var plannedUnits: Int
    /// `asymptotic-confidence-sequence` (Waudby-Smith et al. 2021; docs/experiment-statistics.md).
    public var method: String
    public var metrics: [Metric]
    /// An experiment flag's crashed sessions per variant (an answer's top-level members beside the others).
    public var crashes: CrashCounts?

    public init(
        namespace: String, flag: String, type: String, phase: String?, phases: [Phase], control: String, arms: [Arm],
        sampleRatio: SampleRatio, trustworthy: Bool, alpha: Double, plannedUnits: Int, method: String,
        metrics: [Metric],
        crashes: CrashCounts? = nil
    ) {
        self.namespace = namespace
        self.flag = flag
        self.type = type
        self.phase = phase
        self.phases = phases
        self.control = control
        self.arms = arms
        self.sampleRatio = sampleRatio
        self.trustworthy = trustworthy
        self.alpha = alpha
        self.plannedUnits = plannedUnits
        self.method = method
        self.metrics = metrics
        self.crashes = crashes
    }

    /// The members of the answer but the crash counts', in order.
    var members: JSONObject {
        let number = Interval.number
        return JSONObject([
            ("namespace", .string(namespace)), ("flag", .string(flag)), ("type", .string(type)),
            ("phase", phase.map(JSONValue.string) ?? .null),
            (
                "phases",
                .array(
                    phases.map { phase in
                        .object(
                            JSONObject([
                                ("phase", .string(phase.phase)), ("units", .int(phase.units)),
                                ("from", .string(phase.from)),
                                ("until", .string(phase.until)), ("current", .bool(phase.current)),
                            ]))
                    })
            ),
            ("control", .string(control)),
            (
                "arms",
                .array(
                    arms.map { arm in
                        .object(
                            JSONObject([
                                ("arm", .string(arm.arm)), ("units", .int(arm.units)),
                                ("expected_share", number(arm.expectedShare)),
                                ("observed_share", number(arm.observedShare)),
                            ]))
                    })
            ),
            (
                "sample_ratio",
                .object(
                    JSONObject([
                        ("status", .string(sampleRatio.status)), ("p_value", number(sampleRatio.pValue)),
                        ("threshold", .double(sampleRatio.threshold)), ("message", .string(sampleRatio.message)),
                    ]))
            ),
            ("trustworthy", .bool(trustworthy)),
            (
                "statistics",
                .object(
                    JSONObject([
                        ("method", .string(method)), ("alpha", .double(alpha)), ("planned_units", .int(plannedUnits)),
                    ]))
            ),
            ("metrics", .array(metrics.map(\.json))),
        ])
    }

    public var json: JSONValue {
        var object = members
        // The crash counts' members sit at the top level; their `control` (the variant compared with) replaces the
        // design's.
        if let crashes { for (key, value) in crashes.members { object[key] = value } }
        return .object(object)
    }

    /// Reads an answer (members a newer flagsd adds are ignored).
    public init(json: JSONValue) throws(WireError) {
        var reader = try WireReader(json, "experiment")
        namespace = try reader.string("namespace")
        flag = try reader.string("flag")
        type = try reader.string("type")
        phase = json["phase"]?.stringValue
        control = try reader.string("control")
        phases = try (json["phases"]?.arrayValue ?? []).map { tree throws(WireError) in
            var phaseReader = try WireReader(tree, "experiment.phases")
            return Phase(
                phase: try phaseReader.string("phase"), units: Int(try phaseReader.int64("units")),
                from: try phaseReader.string("from"), until: try phaseReader.string("until"),
                current: tree["current"]?.boolValue ?? false)
        }
        arms = try (json["arms"]?.arrayValue ?? []).map { tree throws(WireError) in
            var armReader = try WireReader(tree, "experiment.arms")
            return Arm(
                arm: try armReader.string("arm"), units: Int(try armReader.int64("units")),
                expectedShare: tree["expected_share"]?.doubleValue, observedShare: tree["observed_share"]?.doubleValue)
        }
        guard let ratio = json["sample_ratio"] else { throw WireError("experiment: sample_ratio is missing") }
        var ratioReader = try WireReader(ratio, "experiment.sample_ratio")
        sampleRatio = SampleRatio(
            status: try ratioReader.string("status"), pValue: ratio["p_value"]?.doubleValue,
            threshold: ratio["threshold"]?.doubleValue ?? 0, message: try ratioReader.string("message"))
        guard let trustworthy = json["trustworthy"]?.boolValue else {
            throw WireError("experiment: trustworthy is missing or not a boolean")
        }
        self.trustworthy = trustworthy
        let statistics = json["statistics"]
        alpha = statistics?["alpha"]?.doubleValue ?? 0.05
        plannedUnits = Int(statistics?["planned_units"]?.int64Value ?? 0)
        method = statistics?["method"]?.stringValue ?? ""
        metrics = try (json["metrics"]?.arrayValue ?? []).map { tree throws(WireError) in try Metric(json: tree) }
        crashes = json["variants"] == nil ? nil : try CrashCounts(json: json)
    }
}

extension ExperimentResultsBody {
    /// An experiment flag's crashed sessions per variant over a window, each variant's crash rate compared with the
    /// control's by a Newcombe hybrid score interval.
    public struct CrashCounts: Sendable, Hashable {
        /// The difference of a variant's crash rate from the control's, with its interval.
        public struct Difference: Sendable, Hashable {
            public var estimate: Double
            public var lower: Double
            public var upper: Double
            /// Whether the interval excludes 0.
            public var significant: Bool

            public init(estimate: Double, lower: Double, upper: Double, significant: Bool) {
                self.estimate = estimate
                self.lower = lower
                self.upper = upper
                self.significant = significant
            }
        }

        /// One variant's counts.
        public struct Variant: Sendable, Hashable {
            public var variant: String
            /// False for a variant the flag does not declare (seen in events only).
            public var declared: Bool
            public var isControl: Bool
            public var exposures: Int64
            public var sessions: Int64
            public var crashes: Int64
            public var crashRate: Double?
            /// Nil for the control, and for a variant without the sessions to compare.
            public var difference: Difference?

            public init(
                variant: String, declared: Bool, isControl: Bool, exposures: Int64, sessions: Int64, crashes: Int64,
                crashRate: Double?, difference: Difference?
            ) {
                self.variant = variant
                self.declared = declared
                self.isControl = isControl
                self.exposures = exposures
                self.sessions = sessions
                self.crashes = crashes
                self.crashRate = crashRate
                self.difference = difference
            }
        }

        /// The variant compared with.
        public var control: String
        /// `24h`, `7d`.
        public var window: String
        public var from: String
        public var until: String
        /// `newcombe-hybrid-score`.
        public var interval: String
        public var confidence: Double
        public var variants: [Variant]

        public init(
            control: String, window: String, from: String, until: String, interval: String, confidence: Double,
            variants: [Variant]
        ) {
            self.control = control
            self.window = window
            self.from = from
            self.until = until
            self.interval = interval
            self.confidence = confidence
            self.variants = variants
        }

        var members: JSONObject {
            let rows: [JSONValue] = variants.map { row in
                .object(
                    JSONObject([
                        ("variant", .string(row.variant)), ("declared", .bool(row.declared)),
                        ("control", .bool(row.isControl)), ("exposures", .int64(row.exposures)),
                        ("sessions", .int64(row.sessions)), ("crashes", .int64(row.crashes)),
                        ("crash_rate", row.crashRate.map(JSONValue.double) ?? .null),
                        (
                            "difference",
                            row.difference.map { difference in
                                .object(
                                    JSONObject([
                                        ("estimate", .double(difference.estimate)),
                                        ("lower", .double(difference.lower)), ("upper", .double(difference.upper)),
                                        ("significant", .bool(difference.significant)),
                                    ]))
                            } ?? .null
                        ),
                    ]))
            }
            return JSONObject([
                ("control", .string(control)), ("window", .string(window)), ("from", .string(from)),
                ("until", .string(until)), ("interval", .string(interval)), ("confidence", .double(confidence)),
                ("variants", .array(rows)),
            ])
        }

        init(json: JSONValue) throws(WireError) {
            var reader = try WireReader(json, "experiment")
            control = try reader.string("control")
            window = try reader.string("window")
            from = try reader.string("from")
            until = try reader.string("until")
            interval = try reader.string("interval")
            confidence = try reader.double("confidence")
            guard let rows = json["variants"]?.arrayValue else {
                throw WireError("experiment: variants is not a list")
            }
            variants = try rows.map { row throws(WireError) in
                var rowReader = try WireReader(row, "experiment.variants")
                var difference: Difference?
                if let tree = row["difference"], tree != .null {
                    let intervalReader = try WireReader(tree, "experiment.variants.difference")
                    difference = Difference(
                        estimate: try intervalReader.double("estimate"), lower: try intervalReader.double("lower"),
                        upper: try intervalReader.double("upper"), significant: try intervalReader.bool("significant"))
                }
                return Variant(
                    variant: try rowReader.string("variant"), declared: row["declared"]?.boolValue ?? true,
                    isControl: row["control"]?.boolValue ?? false, exposures: try rowReader.int64("exposures"),
                    sessions: try rowReader.int64("sessions"), crashes: try rowReader.int64("crashes"),
                    crashRate: row["crash_rate"]?.doubleValue, difference: difference)
            }
        }
    }
}

extension ExperimentResultsBody.Metric {
    var json: JSONValue {
        let number = ExperimentResultsBody.Interval.number
        var object = JSONObject([
            ("name", .string(name)), ("kind", .string(kind)), ("better", .string(better)),
            ("description", description.map(JSONValue.string) ?? .null), ("built_in", .bool(builtIn)),
        ])
        if let numerator, let denominator {
            object["numerator"] = .string(numerator)
            object["denominator"] = .string(denominator)
        }
        for (key, value) in JSONObject([
            (
                "arms",
                .array(
                    arms.map { arm in
                        .object(
                            JSONObject([
                                ("arm", .string(arm.arm)), ("units", .int(arm.units)), ("mean", number(arm.mean)),
                            ]))
                    })
            ),
            (
                "comparisons",
                .array(
                    comparisons.map { comparison in
                        .object(
                            JSONObject([
                                ("arm", .string(comparison.arm)), ("difference", comparison.difference.json),
                                ("relative", comparison.relative?.json ?? .null),
                                ("verdict", .string(comparison.verdict)),
                                ("cuped", .bool(comparison.cuped)),
                                ("variance_reduction", number(comparison.varianceReduction)),
                            ]))
                    })
            ),
            (
                "history",
                .array(
                    history.map { point in
                        .object(
                            JSONObject([
                                ("time", .string(point.time)), ("arm", .string(point.arm)),
                                ("units", .int(point.units)),
                                ("difference", point.difference.json),
                            ]))
                    })
            ),
        ]) { object[key] = value }
        return .object(object)
    }

    init(json: JSONValue) throws(WireError) {
        var reader = try WireReader(json, "experiment.metrics")
        name = try reader.string("name")
        kind = try reader.string("kind")
        better = try reader.string("better")
        description = json["description"]?.stringValue
        builtIn = json["built_in"]?.boolValue ?? false
        numerator = json["numerator"]?.stringValue
        denominator = json["denominator"]?.stringValue
        arms = try (json["arms"]?.arrayValue ?? []).map { tree throws(WireError) in
            var armReader = try WireReader(tree, "experiment.metrics.arms")
            return ArmMean(
                arm: try armReader.string("arm"), units: Int(try armReader.int64("units")),
                mean: tree["mean"]?.doubleValue)
        }
        comparisons = try (json["comparisons"]?.arrayValue ?? []).map { tree throws(WireError) in
            var comparisonReader = try WireReader(tree, "experiment.metrics.comparisons")
            guard let difference = tree["difference"] else {
                throw WireError("experiment.metrics.comparisons: difference is missing")
            }
            let relative = tree["relative"].flatMap { $0 == .null ? nil : ExperimentResultsBody.Interval(json: $0) }
            return ExperimentResultsBody.Comparison(
                arm: try comparisonReader.string("arm"), difference: ExperimentResultsBody.Interval(json: difference),
                relative: relative,
                verdict: try comparisonReader.string("verdict"), cuped: tree["cuped"]?.boolValue ?? false,
                varianceReduction: tree["variance_reduction"]?.doubleValue)
        }
        history = try (json["history"]?.arrayValue ?? []).map { tree throws(WireError) in
            var pointReader = try WireReader(tree, "experiment.metrics.history")
            return ExperimentResultsBody.Point(
                time: try pointReader.string("time"), arm: try pointReader.string("arm"),
                units: Int(try pointReader.int64("units")),
                difference: ExperimentResultsBody.Interval(json: tree["difference"] ?? .null))
        }
    }
}
