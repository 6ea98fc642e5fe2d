public import Foundation
public import SwitchyardCore

/// An experiment as flagsd counts and judges it: an experiment flag (its variants are the arms) or a plugin switch
/// whose rollout splits units (arms `with` and `without`), in the **phase** its split is in.
///
/// A unit enters an arm the first time a session or metric event names it there (a variant served; a switch's
/// state decided by its rollout split), and stays in it for the phase. A phase is the split in force: the variant
/// weights, or the switch's partial rollouts (default and rules); changing them starts a new phase, so each phase's
/// units were split by one rule and its sample ratio can be checked against it.
public struct ExperimentDesign: Sendable, Hashable {
    /// The flag key.
    public var key: String
    /// The arms, control first.
    public var arms: [String]
    public var control: String
    /// The share of units each arm should get, when one split decides every unit of the phase (nil when rules split
    /// at different rates: the sample ratio cannot be checked then).
    public var shares: [String: Double]?
    /// The phase: the split in force, as text (`25%`, `50/50`, `10%|50%`).
    public var phase: String
    /// Whether the experiment is a plugin switch's (arms `with`/`without`).
    public var isPluginSwitch: Bool

    public static let withArm = "with"
    public static let withoutArm = "without"

    public init(
        key: String, arms: [String], control: String, shares: [String: Double]?, phase: String, isPluginSwitch: Bool
    ) {
        self.key = key
        self.arms = arms
        self.control = control
        self.shares = shares
        self.phase = phase
        self.isPluginSwitch = isPluginSwitch
    }

    /// The experiment a flag runs: an experiment flag with more than one variant, or a plugin switch with a partial
    /// rollout (in its default or a rule); nil otherwise.
    public init?(_ flag: FlagDefinition) {
        switch flag.kind {
        case .pluginSwitch(let definition):
            let rollouts = ([definition.rollout] + definition.rules.map(\.rollout)).map(\.basisPoints)
            let partial = rollouts.filter { $0 > 0 && $0 < Rollout.maximum }
            guard !partial.isEmpty else { return nil }
            let distinct = Array(Set(partial)).sorted()
            let share = distinct.count == 1 ? Double(distinct[0]) / Double(Rollout.maximum) : nil
            self.init(
                key: flag.key, arms: [Self.withoutArm, Self.withArm], control: Self.withoutArm,
                shares: share.map { [Self.withArm: $0, Self.withoutArm: 1 - $0] },
                phase: Self.limited(
                    distinct.map { (Rollout(basisPoints: Int($0)) ?? .off).description }.joined(separator: "|")),
                isPluginSwitch: true)
        case .experiment(let experiment):
            let variants = experiment.variants.map(\.key)
            guard variants.count > 1 else { return nil }
            let control = variants.contains("control") ? "control" : experiment.defaultVariant
            let splits = ([experiment.weights] + experiment.rules.map(\.weights)).filter { weights in
                weights.values.filter { $0 > 0 }.count > 1
            }
            guard !splits.isEmpty else { return nil }
            func text(_ weights: VariantWeights) -> String {
                variants.map { String(weights[$0] ?? 0) }.joined(separator: "/")
            }
            let distinct = splits.map(text).reduce(into: [String]()) { if !$0.contains($1) { $0.append($1) } }
            var shares: [String: Double]?
            if distinct.count == 1, let weights = splits.first {
                let total = Double(weights.values.reduce(0, +))
                shares = Dictionary(uniqueKeysWithValues: variants.map { ($0, Double(weights[$0] ?? 0) / total) })
            }
            self.init(
                key: flag.key, arms: [control] + variants.filter { $0 != control }, control: control, shares: shares,
                phase: Self.limited(distinct.joined(separator: "|")), isPluginSwitch: false)
        }
    }

    /// Every experiment a flag set runs, by flag key.
    public static func designs(of flagSet: FlagSet) -> [String: ExperimentDesign] {
        var designs: [String: ExperimentDesign] = [:]
        for flag in flagSet.flags {
            if let design = ExperimentDesign(flag) { designs[flag.key] = design }
        }
        return designs
    }

    /// Phases are stored with every unit: long ones (many rules) are cut to 64 characters and a digest.
    static func limited(_ text: String) -> String {
        guard text.utf8.count > 64 else { return text }
        return String(text.prefix(48)) + "…" + SHA256.hexDigest(Array(text.utf8)).prefix(12)
    }

    /// The arm an event names the unit in, if any.
    public func arm(of event: StoredEvent) -> String? {
        if isPluginSwitch {
            return event.splits[key].map { $0 ? Self.withArm : Self.withoutArm }
        }
        guard let variant = event.variants[key], arms.contains(variant) else { return nil }
        return variant
    }
}

/// One step of an ingestion's experiment bookkeeping: for one admitted event with a unit, the arms it enters the unit
/// in (if not in them yet) and what it adds to the unit's metric totals, in that order (the totals at entry are the
/// unit's pre-exposure values).
public struct ExperimentStep: Sendable, Hashable {
    public struct Entry: Sendable, Hashable {
        public var experiment: String
        public var phase: String
        public var arm: String
    }

    /// What one event adds to one of its unit's metric totals.
    public struct Total: Sendable, Hashable {
        public var metric: String
        public var value: Double
    }

    public var unit: String
    public var time: Date
    /// The source address of the event's batch (as ``StoredEvent/address``); nil when unknown.
    public var address: String? = nil
    public var entries: [Entry]
    /// What the event adds to the unit's totals.
    public var totals: [Total]

    /// The steps of some admitted events, in their order: sessions add to `sessions` and `crashed_sessions`,
    /// metric events to their metric (its value, at most ``maximumValue``); events without a unit are no observation.
    public static func steps(of events: some Sequence<StoredEvent>, experiments: [String: ExperimentDesign])
        -> [ExperimentStep]
    {
        var steps: [ExperimentStep] = []
        let ordered = experiments.values.sorted { $0.key < $1.key }
        for event in events {
            guard let unit = event.unit else { continue }
            var totals: [Total] = []
            switch event.payload {
            case .session(let crashed, _, _):
                totals.append(Total(metric: MetricDefinition.sessions, value: 1))
                if crashed { totals.append(Total(metric: MetricDefinition.crashedSessions, value: 1)) }
            case .metric(let name, let value, _, _):
                totals.append(Total(metric: name, value: min(max(0, value), maximumValue)))
            case .exposure:
                continue
            }
            var entries: [Entry] = []
            for design in ordered {
                if let arm = design.arm(of: event) {
                    entries.append(Entry(experiment: design.key, phase: design.phase, arm: arm))
                }
            }
            steps.append(
                ExperimentStep(unit: unit, time: event.time, address: event.address, entries: entries, totals: totals))
        }
        return steps
    }

    /// The largest value one metric event adds.
    public static let maximumValue = 1e9
}

/// A unit of an experiment as stored: its arm and phase, when it entered, and its metric totals now and at entry.
public struct ExperimentUnitRecord: Sendable, Hashable {
    /// The unit key (a digest).
    public var unit: String
    public var arm: String
    public var phase: String
    public var entered: Date
    /// The source address (as ``StoredEvent/address``) of the event that entered it; nil when unknown or stored before
    /// flagsd kept it. A release plan's guardrails count networks by it.
    public var address: String?
    /// The unit's total of each metric now.
    public var totals: [String: Double]
    /// The unit's total of each metric when it entered the experiment (its pre-exposure value).
    public var pre: [String: Double]

    public init(
        unit: String, arm: String, phase: String, entered: Date, address: String? = nil, totals: [String: Double] = [:],
        pre: [String: Double] = [:]
    ) {
        self.unit = unit
        self.arm = arm
        self.phase = phase
        self.entered = entered
        self.address = address
        self.totals = totals
        self.pre = pre
    }

    /// What the unit reported of a metric since it entered (never below 0).
    public func value(_ metric: String) -> Double {
        max(0, (totals[metric] ?? 0) - (pre[metric] ?? 0))
    }

    /// The unit's total of a metric before it entered.
    public func preValue(_ metric: String) -> Double {
        pre[metric] ?? 0
    }
}

/// A batch's experiment bookkeeping worked out in memory from what the store holds, so every backend writes the same
/// rows: which units enter which arms (in step order, while the phase has room), their pre-exposure values (their
/// totals before the step, this batch's earlier steps included), and what the batch adds to each unit's totals.
public struct ExperimentWrites: Sendable {
    /// How far behind a unit's metric totals may record their last addition: a total moves its time (`updated_ms`,
    /// which the pruning of quiet units reads through an index) only once the time is this old, so a unit reporting
    /// often rewrites its row and not the index's entries on every batch. Pruning allows for it (a total goes only
    /// once its time is this much older than the date), so a total is never forgotten early, at most this late.
    package static let totalsTimeSlackMilliseconds: Int64 = EventAggregation.hourMilliseconds

    /// A unit entering an arm.
    public struct Entry: Sendable, Hashable {
        public var experiment: String
        public var phase: String
        public var unit: String
        public var arm: String
        public var entered: Int64
        /// The source address of the event that entered it.
        public var address: String?
        /// Its totals before the step that entered it (metrics not 0 only).
        public var pre: [String: Double]
    }

    /// One unit's and metric's addition.
    public struct Addition: Sendable, Hashable {
        public var unit: String
        public var metric: String
        public var value: Double
    }

    /// A phase of an experiment.
    public struct Phase: Sendable, Hashable, Comparable {
        public var experiment: String
        public var phase: String

        public init(experiment: String, phase: String) {
            self.experiment = experiment
            self.phase = phase
        }

        public static func < (lhs: Phase, rhs: Phase) -> Bool {
            (lhs.experiment, lhs.phase) < (rhs.experiment, rhs.phase)
        }
    }

    /// Units entering arms, in step order.
    public var entries: [Entry] = []
    /// Additions to metric totals, summed per unit and metric, sorted by unit then metric (the order to write them).
    public var additions: [Addition] = []

    /// What the store must tell the plan: which `(phase, unit)` pairs are recorded already, the units of each arm of
    /// the phases, and the totals of the units now.
    public static func candidates(of steps: [ExperimentStep]) -> (
        pairs: [(phase: Phase, unit: String)], phases: [Phase], units: [String]
    ) {
        var pairs: [(phase: Phase, unit: String)] = []
        var seen = Set<String>()
        var phases = Set<Phase>()
        var units = Set<String>()
        for step in steps {
            units.insert(step.unit)
            for entry in step.entries {
                let phase = Phase(experiment: entry.experiment, phase: entry.phase)
                phases.insert(phase)
                if seen.insert(entry.experiment + "\u{0}" + entry.phase + "\u{0}" + step.unit).inserted {
                    pairs.append((phase, step.unit))
                }
            }
        }
        return (pairs, phases.sorted(), units.sorted())
    }

    /// Works out the writes.
    ///
    /// - Parameters:
    ///   - recorded: the `(phase, unit)` pairs already in the store, as ``key(_:_:_:)`` (the unit stays in its arm).
    ///   - arms: the units each arm of the phases holds now, by ``key(_:_:_:)`` of experiment, phase and arm.
    ///   - totals: per unit, its metric totals now.
    ///   - maximumUnitsPerArm: once an arm of a phase holds this many, no unit enters the phase.
    public init(
        _ steps: [ExperimentStep], recorded: Set<String>, arms: [String: Int], totals: [String: [String: Double]],
        maximumUnitsPerArm: Int?
    ) {
        var totals = totals
        var arms = arms
        var fullest: [Phase: Int] = [:]
        for step in steps {
            for entry in step.entries {
                let phase = Phase(experiment: entry.experiment, phase: entry.phase)
                fullest[phase] = max(fullest[phase] ?? 0, arms[Self.key(entry.experiment, entry.phase, entry.arm)] ?? 0)
            }
        }
        for (key, units) in arms {
            let parts = key.split(separator: "\u{0}", omittingEmptySubsequences: false)
            guard parts.count == 3 else { continue }
            let phase = Phase(experiment: String(parts[0]), phase: String(parts[1]))
            fullest[phase] = max(fullest[phase] ?? 0, units)
        }
        var entered = recorded
        var sums: [String: [String: Double]] = [:]
        for step in steps {
            for entry in step.entries {
                let key = Self.key(entry.experiment, entry.phase, step.unit)
                guard !entered.contains(key) else { continue }
                let phase = Phase(experiment: entry.experiment, phase: entry.phase)
                if let cap = maximumUnitsPerArm, fullest[phase, default: 0] >= cap { continue }
                entered.insert(key)
                entries.append(
                    Entry(
                        experiment: entry.experiment, phase: entry.phase, unit: step.unit, arm: entry.arm,
                        entered: step.time.milliseconds, address: step.address,
                        pre: (totals[step.unit] ?? [:]).filter { $0.value != 0 }))
                let armKey = Self.key(entry.experiment, entry.phase, entry.arm)
                arms[armKey, default: 0] += 1
                fullest[phase] = max(fullest[phase, default: 0], arms[armKey, default: 0])
            }
            for total in step.totals {
                totals[step.unit, default: [:]][total.metric, default: 0] += total.value
                sums[step.unit, default: [:]][total.metric, default: 0] += total.value
            }
        }
        additions = sums.sorted { $0.key < $1.key }.flatMap { unit, metrics in
            metrics.sorted { $0.key < $1.key }.map { Addition(unit: unit, metric: $0.key, value: $0.value) }
        }
    }

    /// The key of a recorded `(phase, unit)` pair (`recorded`), or of an arm (`arms`).
    public static func key(_ experiment: String, _ phase: String, _ unit: String) -> String {
        experiment + "\u{0}" + phase + "\u{0}" + unit
    }
}
