public import Foundation
public import SwitchyardCore
public import SwitchyardStorage

/// One crash-rate test: a sample of sessions with a switch active, its Wilson lower bound, and the bound it is
/// compared with.
public struct RateCheck: Sendable, Hashable {
    /// Sessions with the switch active.
    public var sessions: Int64
    /// Of those, sessions that crashed.
    public var crashes: Int64
    /// `crashes / sessions`; nil without sessions.
    public var rate: Double?
    /// The one-sided Wilson lower bound of the rate at the policy's confidence; nil without sessions.
    public var lowerBound: Double?
    /// The policy's maximum crash rate, as a fraction.
    public var threshold: Double
    /// The crash rate of sessions without the switch in the same population, when the policy compares with it.
    public var baselineRate: Double?
    /// When compared with the baseline: the lower bound of `rate − baseline_ratio × baselineRate` (Newcombe's
    /// hybrid score interval at 95 %); the switch must be shown to crash that much more often, so above 0.
    public var baselineDifferenceLower: Double?
    /// What the rate is held against: the threshold, or the baseline rate times the ratio when higher.
    public var bound: Double
    /// Whether the sample is large enough, its lower bound is above the threshold, and (when compared with the
    /// baseline) it is shown to crash `baseline_ratio` times as often as sessions without the switch.
    public var exceeds: Bool
    /// Why it does not exceed (`35 of 200 sessions needed`, `lower bound 1.2% ≤ threshold 2%`); empty when it does.
    public var shortfall: [String]

    /// A switch with fewer than one session without it for this many with it runs in nearly every session: it is
    /// held against the threshold alone, as no baseline will build up.
    public static let nearlyEverySession: Int64 = 10
    /// The normal quantile of the baseline comparison: Newcombe's interval at 95 % (as experiment results).
    public static let baselineZ = 1.959963984540054

    /// Tests a tally against a policy.
    ///
    /// - Parameters:
    ///   - tally: sessions with the switch active, and crashed ones.
    ///   - withoutSwitch: sessions of the same population without the switch (for the baseline ratio).
    ///   - policy: thresholds, sample sizes and confidence.
    public init(_ tally: EventTally, withoutSwitch: EventTally?, policy: ResolvedCrashGuardPolicy) {
        sessions = max(0, tally.sessions)
        crashes = min(max(0, tally.crashedSessions), sessions)
        rate = sessions > 0 ? Double(crashes) / Double(sessions) : nil
        lowerBound = Proportions.wilsonLowerBound(successes: crashes, trials: sessions,
                                                  confidence: Double(policy.confidence.basisPoints) / 10_000)
        threshold = Double(policy.maximumCrashRate.basisPoints) / 10_000
        bound = threshold
        var shortfall: [String] = []
        if sessions < Int64(policy.minimumSessions) { shortfall.append("\(sessions) of \(policy.minimumSessions) sessions needed") }
        if crashes < Int64(policy.minimumCrashes) { shortfall.append("\(crashes) of \(policy.minimumCrashes) crashes needed") }
        if let lowerBound {
            if lowerBound <= threshold { shortfall.append("lower bound \(Self.percent(lowerBound)) ≤ threshold \(Self.percent(threshold))") }
        } else {
            shortfall.append("no sessions")
        }
        // Compared with sessions without the switch unless it runs in nearly all of them (then there is no baseline
        // to speak of). The comparison keeps a healthy switch that shares sessions with a crashing one, or a
        // release that crashes everything alike, from tripping.
        if let ratio = policy.baselineRatio, ratio > 100, let baseline = withoutSwitch, baseline.sessions > 0,
           baseline.sessions * Self.nearlyEverySession > sessions {
            let baseCrashes = min(max(0, baseline.crashedSessions), baseline.sessions)
            let baseRate = Double(baseCrashes) / Double(baseline.sessions)
            let factor = Double(ratio) / 100
            baselineRate = baseRate
            bound = max(threshold, baseRate * factor)
            if let lower = Proportions.newcombeScaledDifferenceLowerBound(
                successes1: crashes, trials1: sessions, successes2: baseCrashes, trials2: baseline.sessions, ratio: factor, z: Self.baselineZ) {
                baselineDifferenceLower = lower
                if lower <= 0 {
                    shortfall.append("not shown to crash \(RatioText.text(ratio))× as often as sessions without it (\(Self.percent(baseRate)))")
                }
            }
        }
        self.shortfall = shortfall
        exceeds = shortfall.isEmpty
    }

    /// `4.97%`, `0.1%`, `0.012%`.
    public static func percent(_ fraction: Double) -> String {
        let value = fraction * 100
        let digits = value >= 10 ? 1 : value >= 1 ? 2 : 3
        var text = String(format: "%.\(digits)f", value)
        while text.contains("."), text.hasSuffix("0") { text.removeLast() }
        if text.hasSuffix(".") { text.removeLast() }
        return text + "%"
    }

    /// The check as JSON: counts, rates as fractions, bound, verdict.
    public var tree: JSONObject {
        JSONObject([
            ("sessions", .int64(sessions)), ("crashes", .int64(crashes)),
            ("crash_rate", rate.map(JSONValue.double) ?? .null), ("lower_bound", lowerBound.map(JSONValue.double) ?? .null),
            ("threshold", .double(threshold)), ("baseline_rate", baselineRate.map(JSONValue.double) ?? .null),
            ("baseline_difference_lower", baselineDifferenceLower.map(JSONValue.double) ?? .null),
            ("bound", .double(bound)), ("exceeds", .bool(exceeds)),
            ("shortfall", .array(shortfall.map(JSONValue.string))),
        ])
    }
}

/// What the crash guard decides to do about one plugin switch: disable it in a scope, with the evidence.
public struct GuardTrip: Sendable, Hashable {
    /// The plugin switch.
    public var key: String
    /// Where to disable it: everywhere, one city (`cities: [lagos]`) or one cohort.
    public var scope: Scope
    /// The test that tripped, over the scope's sessions.
    public var check: RateCheck
    /// For a scoped trip, the same test over the sessions outside the scope (healthy, which is why the trip is
    /// scoped).
    public var complement: RateCheck?
    public var policy: ResolvedCrashGuardPolicy

    /// `city lagos`, `cohort beta`, `everywhere`.
    public var scopeText: String {
        if let city = scope.cities.first, scope.cities.count == 1, scope.cohorts.isEmpty { return "city \(city)" }
        if let cohort = scope.cohorts.first, scope.cohorts.count == 1, scope.cities.isEmpty { return "cohort \(cohort)" }
        return scope.description
    }

    /// The metric label of the scope: `global`, `city`, `cohort`.
    public var scopeKind: String {
        scope.isEverywhere ? "global" : scope.cities.isEmpty ? "cohort" : "city"
    }

    /// The reason recorded with the change: `crash rate 4.97% (61 of 1228 sessions) in city lagos over 10m; …`.
    public var reason: String {
        var text = "crash guard: crash rate \(RateCheck.percent(check.rate ?? 0)) (\(check.crashes) of \(check.sessions) sessions) "
        text += scope.isEverywhere ? "everywhere" : "in \(scopeText)"
        text += " over \(GuardDurationText.text(policy.window)); lower bound \(RateCheck.percent(check.lowerBound ?? 0))"
        text += " at \(policy.confidence.percentText)% confidence > threshold \(RateCheck.percent(check.threshold))"
        if let baseline = check.baselineRate, let ratio = policy.baselineRatio {
            text += ", and above \(RatioText.text(ratio))× the crash rate without it (\(RateCheck.percent(baseline)))"
        }
        if let complement, let rate = complement.rate {
            text += "; elsewhere \(RateCheck.percent(rate)) (\(complement.crashes) of \(complement.sessions))"
        }
        return text
    }

    /// The evidence stored with the change and sent to the webhook.
    ///
    /// - Parameters:
    ///   - from: the start of the counted window (the later of window start and re-enable).
    ///   - until: when the counts were read.
    public func evidence(from: Date, until: Date) -> JSONValue {
        var object = JSONObject([
            ("rule", .string("wilson-lower-bound")), ("switch", .string(key)), ("scope", .object(scope.tree)),
            ("scope_text", .string(scopeText)), ("window", .string(GuardDurationText.text(policy.window))),
            ("from", .string(from.iso8601)), ("until", .string(until.iso8601)),
        ])
        for (name, value) in check.tree where name != "shortfall" && name != "exceeds" { object[name] = value }
        object["confidence"] = .double(Double(policy.confidence.basisPoints) / 10_000)
        object["complement"] = complement.map { .object($0.tree) } ?? .null
        object["policy"] = .object(policy.tree(unit: .basisPoints))
        return .object(object)
    }
}

/// The crash guard's view of one plugin switch over a window: the overall test, the scopes where it exceeds,
/// and the trip to make, if any.
public struct GuardAssessment: Sendable, Hashable {
    public var key: String
    public var policy: ResolvedCrashGuardPolicy
    /// The test over every session with the switch active, outside scopes where it is disabled already.
    public var overall: RateCheck
    /// Cities and cohorts whose own test exceeds, most crashes first.
    public var exceedingScopes: [(dimension: EventDimension, check: RateCheck)]
    /// What to do; nil when nothing exceeds or the switch is off where it would trip.
    public var trip: GuardTrip?

    public static func == (lhs: GuardAssessment, rhs: GuardAssessment) -> Bool {
        lhs.key == rhs.key && lhs.policy == rhs.policy && lhs.overall == rhs.overall && lhs.trip == rhs.trip
            && lhs.exceedingScopes.map(\.dimension) == rhs.exceedingScopes.map(\.dimension)
            && lhs.exceedingScopes.map(\.check) == rhs.exceedingScopes.map(\.check)
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(key)
        hasher.combine(overall)
        hasher.combine(trip)
    }
}

/// The crash guard's rule, as a pure function of counts, policy and the switch's state.
///
/// 1. Sessions in scopes where the switch is disabled already (a city list, or a cohort list) are left out: the
///    population is every session with the switch active minus those.
/// 2. For each city and cohort (as the policy's `scope_by` allows) not disabled yet: its test must exceed, and
///    the population outside it must have `min_sessions` sessions, a test that does not exceed, and a crash rate
///    at most its bound. Such a scope is where the crashes concentrate; the one with the fewest sessions is
///    disabled (the narrowest cut). Without enough sessions elsewhere there is no evidence of concentration.
/// 3. Otherwise, when the population's test exceeds, the switch is disabled everywhere.
///
/// A test exceeds when the sample has `min_sessions` sessions and `min_crashes` crashes, the Wilson lower bound of
/// its crash rate (at the policy's confidence) is above `max_crash_rate`, and, unless the switch runs in nearly
/// every session, the lower bound of Newcombe's 95 % interval for `rate − baseline_ratio × rate without the
/// switch` is above 0.
public enum GuardRule {
    /// Assesses a switch.
    ///
    /// - Parameters:
    ///   - key: the plugin switch.
    ///   - tallies: its counts and the baseline's over the window.
    ///   - policy: the switch's resolved policy.
    ///   - gate: the switch's current definition (its disables).
    public static func assess(key: String, tallies: SwitchTallies, policy: ResolvedCrashGuardPolicy,
                              gate: PluginSwitchDefinition) -> GuardAssessment {
        let everything = tallies.withSwitch[.all] ?? .zero
        let baselineAll = tallies.all[.all] ?? .zero
        // Sessions of scopes disabled already: cities and cohorts named alone (a city-and-cohort scope is kept).
        var excluded = EventTally.zero
        var excludedDimensions = Set<EventDimension>()
        for disable in gate.disabledScopes {
            let dimensions: [EventDimension] = disable.cohorts.isEmpty ? disable.cities.map(EventDimension.city)
                : disable.cities.isEmpty ? disable.cohorts.map(EventDimension.cohort) : []
            for dimension in dimensions where excludedDimensions.insert(dimension).inserted {
                excluded += tallies.withSwitch[dimension] ?? .zero
            }
        }
        let population = clamped(everything - excluded)
        let withoutSwitch = clamped(baselineAll - everything)
        let overall = RateCheck(population, withoutSwitch: withoutSwitch, policy: policy)

        var exceeding: [(dimension: EventDimension, check: RateCheck)] = []
        var concentrated: [(dimension: EventDimension, check: RateCheck, complement: RateCheck)] = []
        let allowed = Set(policy.scopeBy.map(\.rawValue))
        for (dimension, tally) in tallies.withSwitch where dimension.kind != .all {
            guard tally.sessions >= Int64(policy.minimumSessions), tally.crashedSessions >= Int64(policy.minimumCrashes),
                  !excludedDimensions.contains(dimension) else { continue }
            let scope = dimension.scope
            let baseline = clamped((tallies.all[dimension] ?? .zero) - tally)
            let check = RateCheck(tally, withoutSwitch: baseline, policy: policy)
            guard check.exceeds else { continue }
            exceeding.append((dimension, check))
            guard allowed.contains(dimension.kind.rawValue), !gate.isDisabled(in: scope) else { continue }
            let outside = clamped(population - tally)
            let outsideBaseline = clamped(withoutSwitch - baseline)
            let complement = RateCheck(outside, withoutSwitch: outsideBaseline, policy: policy)
            // Concentrated: enough sessions elsewhere to say so, and they are fine.
            if complement.sessions >= Int64(policy.minimumSessions), !complement.exceeds, (complement.rate ?? 0) <= complement.bound {
                concentrated.append((dimension, check, complement))
            }
        }
        exceeding.sort { ($0.check.crashes, $1.dimension) > ($1.check.crashes, $0.dimension) }
        var trip: GuardTrip?
        if !gate.disabled, policy.enabled {
            if let narrowest = concentrated.min(by: { ($0.check.sessions, $0.dimension) < ($1.check.sessions, $1.dimension) }) {
                trip = GuardTrip(key: key, scope: narrowest.dimension.scope, check: narrowest.check,
                                 complement: narrowest.complement, policy: policy)
            } else if overall.exceeds {
                trip = GuardTrip(key: key, scope: .everywhere, check: overall, complement: nil, policy: policy)
            }
        }
        return GuardAssessment(key: key, policy: policy, overall: overall, exceedingScopes: exceeding, trip: trip)
    }

    static func clamped(_ tally: EventTally) -> EventTally {
        let sessions = max(0, tally.sessions)
        return EventTally(sessions: sessions, crashedSessions: min(max(0, tally.crashedSessions), sessions),
                          exposures: max(0, tally.exposures))
    }
}

extension EventTally {
    static func - (lhs: EventTally, rhs: EventTally) -> EventTally {
        EventTally(sessions: lhs.sessions - rhs.sessions, crashedSessions: lhs.crashedSessions - rhs.crashedSessions,
                   exposures: lhs.exposures - rhs.exposures)
    }
}

extension EventDimension {
    /// The scope of units this dimension counts: one city or one cohort (everywhere for `all`).
    public var scope: Scope {
        switch kind {
        case .city: Scope(cities: [value])
        case .cohort: Scope(cohorts: [value])
        default: .everywhere
        }
    }
}
