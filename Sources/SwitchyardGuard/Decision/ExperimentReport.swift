public import Foundation
public import SwitchyardCore
public import SwitchyardStorage
public import SwitchyardWire

/// An experiment's results from its units as the store keeps them: the answer of
/// `GET /v1/namespaces/{namespace}/experiments/{key}` (without the crash counts per variant of older versions).
///
/// Each unit is one observation: its value of a metric is what it reported since it entered (a conversion: 1 when
/// that is more than 0; a count or a value: capped at the metric's cap), and its pre-exposure value is the same of
/// what it reported before it entered (CUPED's covariate). Units that reported nothing count as 0. A ratio metric's
/// numerator and denominator are its parts' values. See docs/experiment-statistics.md.
public enum ExperimentReport {
    /// The interval every comparison carries.
    public static let method = "asymptotic-confidence-sequence"
    /// At most this many points in a metric's course over time.
    public static let maximumPoints = 30

    /// What a report is computed with.
    public struct Settings: Sendable, Hashable {
        /// The two-sided error rate of each interval, over every look.
        public var alpha: Double
        /// N*: the units of both arms at which the confidence sequence is tightest.
        public var plannedUnits: Int

        public init(
            alpha: Double = ConfidenceSequence.defaultAlpha, plannedUnits: Int = ConfidenceSequence.defaultPlannedUnits
        ) {
            self.alpha = alpha
            self.plannedUnits = plannedUnits
        }
    }

    /// The results of one experiment.
    ///
    /// - Parameters:
    ///   - flag: the experiment flag or plugin switch.
    ///   - flagSet: the namespace's flag set (its metrics, and the flag's split now).
    ///   - units: the experiment's units, every phase (``EventStore/experimentUnits(in:experiment:)``).
    ///   - phase: the phase to show; nil: the flag's split now when it has units, else the newest with units.
    ///   - now: the end of the course over time.
    ///   - control: the arm to compare with (nil: the design's control: `without`, the variant `control`, else the
    ///     default variant); ignored when the phase has no such arm.
    public static func body(
        namespace: String, flag: FlagDefinition, flagSet: FlagSet, units: [ExperimentUnitRecord],
        phase requested: String?, control requestedControl: String? = nil, now: Date,
        settings: Settings = Settings()
    ) -> ExperimentResultsBody {
        let design = ExperimentDesign(flag)
        let isSwitch = flag.pluginSwitch != nil
        var byPhase: [String: [ExperimentUnitRecord]] = [:]
        for unit in units { byPhase[unit.phase, default: []].append(unit) }
        let phases = byPhase.map { phase, members in
            ExperimentResultsBody.Phase(
                phase: phase, units: members.count,
                from: (members.map(\.entered).min() ?? now).iso8601,
                until: (members.map(\.entered).max() ?? now).iso8601,
                current: phase == design?.phase)
        }.sorted { ($0.from, $0.phase) < ($1.from, $1.phase) }
        let shown = phase(of: flag, units: units, requested: requested)
        let members = shown.flatMap { byPhase[$0] } ?? []
        let current = shown != nil && shown == design?.phase

        var control: String
        var arms: [String]
        if let design, current || members.isEmpty {
            control = design.control
            arms = design.arms
        } else if isSwitch {
            control = ExperimentDesign.withoutArm
            arms = [ExperimentDesign.withoutArm, ExperimentDesign.withArm]
        } else {
            let variants = flag.experiment?.variants.map(\.key) ?? []
            control = variants.contains("control") ? "control" : flag.experiment?.defaultVariant ?? "control"
            arms = [control] + variants.filter { $0 != control }
        }
        for unit in members where !arms.contains(unit.arm) { arms.append(unit.arm) }
        if let requestedControl, arms.contains(requestedControl) {
            control = requestedControl
            arms = [control] + arms.filter { $0 != control }
        }
        var counts: [String: Int] = [:]
        for unit in members { counts[unit.arm, default: 0] += 1 }
        let total = members.count
        let shares = current ? design?.shares : nil
        let armBodies = arms.map { arm in
            ExperimentResultsBody.Arm(
                arm: arm, units: counts[arm] ?? 0, expectedShare: shares?[arm],
                observedShare: total > 0 ? Double(counts[arm] ?? 0) / Double(total) : nil)
        }
        let ratio = sampleRatio(arms: arms, counts: counts, shares: shares, current: current, shown: shown)
        let metrics = flagSet.allMetrics.map { metric in
            results(
                of: metric, in: flagSet, members: members, arms: arms, control: control, now: now, settings: settings)
        }
        return ExperimentResultsBody(
            namespace: namespace, flag: flag.key, type: isSwitch ? "plugin_switch" : "experiment", phase: shown,
            phases: phases,
            control: control, arms: armBodies, sampleRatio: ratio, trustworthy: ratio.status != "mismatch",
            alpha: settings.alpha, plannedUnits: settings.plannedUnits, method: method, metrics: metrics)
    }

    /// The phase results show: the one asked for; else the flag's split now when units entered it, else the newest phase
    /// with units, else the flag's split now (nil when it splits no unit).
    public static func phase(of flag: FlagDefinition, units: [ExperimentUnitRecord], requested: String?) -> String? {
        if let requested { return requested }
        let design = ExperimentDesign(flag)
        if let design, units.contains(where: { $0.phase == design.phase }) { return design.phase }
        return units.max { ($0.entered, $0.phase) < ($1.entered, $1.phase) }?.phase ?? design?.phase
    }

    /// The sample ratio check of the phase shown (only the current phase's split is known).
    static func sampleRatio(
        arms: [String], counts: [String: Int], shares: [String: Double]?, current: Bool, shown: String?
    )
        -> ExperimentResultsBody.SampleRatio
    {
        let threshold = SampleRatioCheck.defaultThreshold
        guard let shares else {
            let why =
                !current && shown != nil
                ? "phase \(shown ?? "") is not the flag's split now, so its declared shares are not known"
                : "rules split units at different rates, so no one share is declared"
            return .init(status: "not_checked", pValue: nil, threshold: threshold, message: "not checked: \(why)")
        }
        let observed = arms.map { counts[$0] ?? 0 }
        guard observed.reduce(0, +) > 0,
            let check = SampleRatioCheck(
                counts: observed, expectedShares: arms.map { shares[$0] ?? 0 }, threshold: threshold)
        else {
            return .init(
                status: "not_checked", pValue: nil, threshold: threshold, message: "not checked: no unit entered yet")
        }
        let split = observed.map(String.init).joined(separator: " / ")
        let declared = arms.map { percent(shares[$0] ?? 0) }.joined(separator: " / ")
        let p = check.pValue < 0.0001 ? "< 0.0001" : String(format: "%.4f", check.pValue)
        if check.failed {
            return .init(
                status: "mismatch", pValue: check.pValue, threshold: threshold,
                message:
                    "sample ratio mismatch: units split \(split) (\(arms.joined(separator: " / "))) against \(declared) declared, p \(p) (anytime-valid, fails below \(threshold)); the split is broken, so no difference here can be trusted: look for what enters units in one arm more than another"
            )
        }
        return .init(
            status: "ok", pValue: check.pValue, threshold: threshold,
            message: "units split \(split) (\(arms.joined(separator: " / "))) as declared (\(declared)), p \(p)")
    }

    static func percent(_ share: Double) -> String {
        let value = (share * 10_000).rounded() / 100
        return value == value.rounded() ? "\(Int(value)) %" : "\(value) %"
    }

    /// A unit's observed number for a metric from a raw sum: 0 or 1 for a conversion, capped for counts and values.
    public static func observed(_ raw: Double, _ metric: MetricDefinition) -> Double {
        switch metric.kind {
        case .conversion: raw > 0 ? 1 : 0
        case .count, .value: metric.cap.map { min(raw, $0) } ?? raw
        case .ratio: raw
        }
    }

    /// The per-unit numbers of a metric: (y, x, d) — the value, its pre-exposure value (non-ratios), and a ratio's
    /// denominator.
    public static func observation(of unit: ExperimentUnitRecord, _ metric: MetricDefinition, in flagSet: FlagSet) -> (
        y: Double, x: Double, d: Double
    ) {
        if metric.kind == .ratio, let numerator = metric.numerator.flatMap(flagSet.metric),
            let denominator = metric.denominator.flatMap(flagSet.metric)
        {
            return (
                observed(unit.value(numerator.name), numerator), 0, observed(unit.value(denominator.name), denominator)
            )
        }
        return (observed(unit.value(metric.name), metric), observed(unit.preValue(metric.name), metric), 0)
    }

    /// Each arm's moments of a metric over some units (their values since they entered, and before).
    public static func moments(
        of metric: MetricDefinition, in flagSet: FlagSet, members: some Sequence<ExperimentUnitRecord>
    ) -> [String: ArmMoments] {
        var moments: [String: ArmMoments] = [:]
        for unit in members {
            let (y, x, d) = observation(of: unit, metric, in: flagSet)
            moments[unit.arm, default: ArmMoments()].add(y: y, x: x, d: d)
        }
        return moments
    }

    static func results(
        of metric: MetricDefinition, in flagSet: FlagSet, members: [ExperimentUnitRecord], arms: [String],
        control: String, now: Date, settings: Settings
    ) -> ExperimentResultsBody.Metric {
        let sequence = ConfidenceSequence(alpha: settings.alpha, plannedUnits: settings.plannedUnits)
        let all = moments(of: metric, in: flagSet, members: members)
        func compare(_ arm: String, _ moments: [String: ArmMoments]) -> MetricComparison {
            ExperimentAnalysis.compare(
                control: moments[control] ?? ArmMoments(), treatment: moments[arm] ?? ArmMoments(),
                kind: metric.kind, better: metric.better, sequence: sequence)
        }
        // One comparison per treatment arm: its means are the arms' means too.
        let compared = Dictionary(uniqueKeysWithValues: arms.map { ($0, compare($0, all)) })
        let means = arms.map { arm in
            ExperimentResultsBody.Metric.ArmMean(
                arm: arm, units: all[arm]?.units ?? 0,
                mean: arm == control ? compared[arm]?.controlMean : compared[arm]?.treatmentMean)
        }
        let comparisons = arms.filter { $0 != control }.compactMap { arm -> ExperimentResultsBody.Comparison? in
            guard let comparison = compared[arm] else { return nil }
            return ExperimentResultsBody.Comparison(
                arm: arm,
                difference: .init(estimate: comparison.difference, lower: comparison.lower, upper: comparison.upper),
                relative: comparison.relativeLift.map {
                    .init(estimate: $0, lower: comparison.relativeLower, upper: comparison.relativeUpper)
                },
                verdict: comparison.verdict.rawValue, cuped: comparison.cuped != nil,
                varianceReduction: comparison.cuped?.varianceReduction)
        }
        return ExperimentResultsBody.Metric(
            name: metric.name, kind: metric.kind.rawValue, better: metric.better.rawValue,
            description: metric.description,
            builtIn: MetricDefinition.isBuiltIn(metric.name), numerator: metric.numerator,
            denominator: metric.denominator, arms: means, comparisons: comparisons,
            history: history(
                of: metric, in: flagSet, members: members, arms: arms, control: control, now: now, compare: compare))
    }

    /// The difference at moments from the phase's first entry to now (hourly over two days or less, else daily, at
    /// most ``maximumPoints``), each over the units that had entered by then.
    static func history(
        of metric: MetricDefinition, in flagSet: FlagSet, members: [ExperimentUnitRecord], arms: [String],
        control: String,
        now: Date, compare: (String, [String: ArmMoments]) -> MetricComparison
    ) -> [ExperimentResultsBody.Point] {
        guard let first = members.map(\.entered).min(), now > first else { return [] }
        let span = now.timeIntervalSince(first)
        let unit: TimeInterval = span <= 2 * 86_400 ? 3600 : 86_400
        let step = max(unit, (span / Double(maximumPoints) / unit).rounded(.up) * unit)
        var times: [Date] = []
        var time = Date(timeIntervalSince1970: (first.timeIntervalSince1970 / unit).rounded(.up) * unit)
        while time < now {
            times.append(time)
            time += step
        }
        times.append(now)
        let sorted = members.sorted { $0.entered < $1.entered }
        var moments: [String: ArmMoments] = [:]
        var next = 0
        var points: [ExperimentResultsBody.Point] = []
        for time in times {
            while next < sorted.count, sorted[next].entered <= time {
                let unit = sorted[next]
                let (y, x, d) = observation(of: unit, metric, in: flagSet)
                moments[unit.arm, default: ArmMoments()].add(y: y, x: x, d: d)
                next += 1
            }
            for arm in arms where arm != control {
                let comparison = compare(arm, moments)
                guard comparison.lower != nil else { continue }
                points.append(
                    .init(
                        time: time.iso8601, arm: arm, units: comparison.controlUnits + comparison.treatmentUnits,
                        difference: .init(
                            estimate: comparison.difference, lower: comparison.lower, upper: comparison.upper)))
            }
        }
        return points
    }
}
