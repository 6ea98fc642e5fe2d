public import Foundation
public import SwitchyardCore
public import SwitchyardStorage
public import SwitchyardWire

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
    /// The distinct units among the crashed sessions; nil when not counted.
    public var units: Int?
    /// The distinct source addresses among the crashed sessions; nil when not counted (reporters' sessions).
    public var addresses: Int?
    /// Switches whose sessions were left out because they are shown to crash (attribution, for a switch with no
    /// sessions without it to compare with); `sessions` is then an upper bound of the sessions left.
    public var leftOut: [String] = []

    /// A switch with fewer than one session without it for this many with it runs in nearly every session: it is
    /// held against the threshold alone, as no baseline will build up.
    public static let nearlyEverySession: Int64 = 10
    /// The normal quantile of the baseline comparison: Newcombe's interval at 95 % (as experiment results).
    public static let baselineZ = 1.959963984540054

    /// Whether sessions without a switch are enough to compare with: at least one for every
    /// ``nearlyEverySession`` with it.
    public static func hasBaseline(sessions: Int64, without: EventTally?) -> Bool {
        guard let without, without.sessions > 0 else { return false }
        return without.sessions * nearlyEverySession > sessions
    }

    /// Tests a tally against a policy.
    ///
    /// - Parameters:
    ///   - tally: sessions with the switch active, and crashed ones.
    ///   - withoutSwitch: sessions of the same population without the switch (for the baseline ratio).
    ///   - policy: thresholds, sample sizes and confidence.
    ///   - spread: how the crashed sessions spread over units and addresses, held against the policy's
    ///     `min_units` and `min_addresses`; nil: not checked.
    ///   - leftOut: switches whose sessions were left out of the tally (see ``leftOut``).
    public init(
        _ tally: EventTally, withoutSwitch: EventTally?, policy: ResolvedCrashGuardPolicy, spread: CrashSpread? = nil,
        leftOut: [String] = []
    ) {
        sessions = max(0, tally.sessions)
        crashes = min(max(0, tally.crashedSessions), sessions)
        rate = sessions > 0 ? Double(crashes) / Double(sessions) : nil
        lowerBound = Proportions.wilsonLowerBound(
            successes: crashes, trials: sessions,
            confidence: Double(policy.confidence.basisPoints) / 10_000)
        threshold = Double(policy.maximumCrashRate.basisPoints) / 10_000
        bound = threshold
        var shortfall: [String] = []
        if sessions < Int64(policy.minimumSessions) {
            shortfall.append("\(sessions) of \(policy.minimumSessions) sessions needed")
        }
        if crashes < Int64(policy.minimumCrashes) {
            shortfall.append("\(crashes) of \(policy.minimumCrashes) crashes needed")
        }
        if let spread {
            units = spread.units
            addresses = spread.addresses
            if spread.units < policy.minimumUnits {
                shortfall.append("crashes from \(spread.units) of \(policy.minimumUnits) units needed")
            }
            if let addresses = spread.addresses, addresses < policy.minimumAddresses {
                shortfall.append(
                    "crashes from \(addresses) of \(policy.minimumAddresses) source networks needed (an IPv4 /24 or IPv6 /48 each)"
                )
            } else if let rest = spread.crashesBeyondBusiest, policy.minimumAddresses > 1, rest < crashes {
                // The busiest addresses alone must not make the case: without their crashes (their sessions kept, so
                // the rate only falls), the rest must still be above the bound.
                var lenient = policy
                lenient.minimumSessions = 0
                lenient.minimumCrashes = 0
                let without = RateCheck(
                    EventTally(sessions: sessions, crashedSessions: rest), withoutSwitch: withoutSwitch, policy: lenient
                )
                if !without.exceeds {
                    let busiest = policy.minimumAddresses - 1
                    shortfall.append(
                        "without the \(busiest) busiest source network\(busiest == 1 ? "" : "s") (\(crashes - rest) crashes), the other \(rest) crashes are not above the bound"
                    )
                }
            }
        }
        self.leftOut = leftOut
        if let lowerBound {
            if lowerBound <= threshold {
                shortfall.append("lower bound \(Self.percent(lowerBound)) ≤ threshold \(Self.percent(threshold))")
            }
        } else {
            shortfall.append("no sessions")
        }
        // Compared with sessions without the switch unless it runs in nearly all of them (then there is no baseline
        // to speak of). The comparison keeps a healthy switch that shares sessions with a crashing one, or a
        // release that crashes everything alike, from tripping.
        if let ratio = policy.baselineRatio, ratio > 100, let baseline = withoutSwitch,
            Self.hasBaseline(sessions: sessions, without: baseline)
        {
            let baseCrashes = min(max(0, baseline.crashedSessions), baseline.sessions)
            let baseRate = Double(baseCrashes) / Double(baseline.sessions)
            let factor = Double(ratio) / 100
            baselineRate = baseRate
            bound = max(threshold, baseRate * factor)
            if let lower = Proportions.newcombeScaledDifferenceLowerBound(
                successes1: crashes, trials1: sessions, successes2: baseCrashes, trials2: baseline.sessions,
                ratio: factor, z: Self.baselineZ)
            {
                baselineDifferenceLower = lower
                if lower <= 0 {
                    shortfall.append(
                        "not shown to crash \(RatioText.text(ratio))× as often as sessions without it (\(Self.percent(baseRate)))"
                    )
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

    /// The check as the API shows it: counts, rates as fractions, bound, verdict.
    public var body: GuardCheckBody {
        GuardCheckBody(
            sessions: sessions, crashes: crashes, crashRate: rate, lowerBound: lowerBound, threshold: threshold,
            baselineRate: baselineRate, baselineDifferenceLower: baselineDifferenceLower, bound: bound,
            exceeds: exceeds,
            shortfall: shortfall, units: units, addresses: addresses, leftOut: leftOut)
    }
}

/// How the crashed sessions of a sample spread over units and source addresses: a trip needs crashes from
/// several of each, so one device in a crash loop, or one forger at one address, cannot trip a switch.
public struct CrashSpread: Sendable, Hashable {
    /// Distinct units.
    public var units: Int
    /// Distinct source networks (an IPv4 address's /24, an IPv6 address's /48: ``IPAddress/network``); nil when
    /// they do not count (reporters' sessions come from their own servers).
    public var addresses: Int?
    /// The crashed sessions left when those of the busiest networks are left out (`min_addresses − 1` of them);
    /// nil when addresses do not count.
    public var crashesBeyondBusiest: Int64?

    public init(units: Int, addresses: Int?, crashesBeyondBusiest: Int64? = nil) {
        self.units = units
        self.addresses = addresses
        self.crashesBeyondBusiest = crashesBeyondBusiest
    }

    /// The spread of some crash records (addresses counted for clients' only, by network: a host that may pick any
    /// address of a /48, or a few neighbours in one /24, count as one).
    ///
    /// - Parameter busiest: how many of the networks with the most crashes `crashesBeyondBusiest` leaves out.
    public init(_ records: some Sequence<CrashRecord>, source: EventSource, leavingOut busiest: Int = 0) {
        var units = Set<String>()
        var perAddress: [String: Int64] = [:]
        var total: Int64 = 0
        for record in records {
            units.insert(record.unit)
            // Sessions from unknown addresses count as one network between them (the safe side).
            perAddress[record.address.map(AddressBlock.network(ofKey:)) ?? "unknown", default: 0] += 1
            total += 1
        }
        guard source == .client else {
            self.init(units: units.count, addresses: nil)
            return
        }
        let busiestCrashes = perAddress.values.sorted(by: >).prefix(max(0, busiest)).reduce(0, +)
        self.init(units: units.count, addresses: perAddress.count, crashesBeyondBusiest: total - busiestCrashes)
    }
}

/// What the crash guard decides to do about one plugin switch: disable it in a scope, with the evidence.
public struct GuardTrip: Sendable, Hashable {
    /// The plugin switch.
    public var key: String
    /// Whose sessions tripped it.
    public var source: EventSource
    /// Where to disable it: everywhere, one city (`cities: [lagos]`) or one cohort.
    public var scope: Scope
    /// The test that tripped, over the scope's sessions.
    public var check: RateCheck
    /// For a scoped trip, the same test over the sessions outside the scope (healthy, which is why the trip is
    /// scoped).
    public var complement: RateCheck?
    public var policy: ResolvedCrashGuardPolicy

    /// `city lagos`, `cohort beta`, `everywhere`.
    public var scopeText: String { scope.guardText }

    /// The metric label of the scope: `global`, `city`, `cohort`.
    public var scopeKind: String {
        scope.isEverywhere ? "global" : scope.cities.isEmpty ? "cohort" : "city"
    }

    /// The reason recorded with the change: `crash rate 4.97% (61 of 1228 sessions) in city lagos over 10m; …`.
    public var reason: String {
        var text =
            "crash guard: crash rate \(RateCheck.percent(check.rate ?? 0)) (\(check.crashes) of \(check.sessions) sessions) "
        text += scope.guardWhere
        text +=
            " over \(GuardDurationText.text(policy.window)); lower bound \(RateCheck.percent(check.lowerBound ?? 0))"
        text += " at \(policy.confidence.percentText)% confidence > threshold \(RateCheck.percent(check.threshold))"
        if let baseline = check.baselineRate, let ratio = policy.baselineRatio {
            text += ", and above \(RatioText.text(ratio))× the crash rate without it (\(RateCheck.percent(baseline)))"
        }
        if !check.leftOut.isEmpty {
            text += ", in sessions without \(check.leftOut.joined(separator: ", ")) (shown to crash)"
        }
        if let complement, let rate = complement.rate {
            text += "; elsewhere \(RateCheck.percent(rate)) (\(complement.crashes) of \(complement.sessions))"
        }
        text += "; reported by \(source == .reporter ? "reporters" : "clients")"
        if let units = check.units { text += ", crashes from \(units) unit\(units == 1 ? "" : "s")" }
        if let addresses = check.addresses { text += " and \(addresses) network\(addresses == 1 ? "" : "s")" }
        return text
    }

    /// The evidence stored with the change and sent to the webhook.
    ///
    /// - Parameters:
    ///   - from: the start of the counted window (the later of window start and re-enable).
    ///   - until: when the counts were read.
    public func evidence(from: Date, until: Date) -> GuardEvidenceBody {
        GuardEvidenceBody(
            rule: "wilson-lower-bound", key: key, source: source.rawValue, scope: scope, scopeText: scopeText,
            window: GuardDurationText.text(policy.window), from: from.iso8601, until: until.iso8601, check: check.body,
            confidence: Double(policy.confidence.basisPoints) / 10_000,
            attribution: check.leftOut.isEmpty
                ? (check.baselineRate == nil ? "threshold" : "baseline") : "without-switches-shown-to-crash",
            complement: complement?.body, policy: policy.policy)
    }
}

/// The crash guard's view of one plugin switch, over a window, in the sessions of one source.
public struct SourceAssessment: Sendable {
    public var source: EventSource
    /// Whether the policy lets this source's sessions trip the switch.
    public var allowed: Bool
    /// The test over every session with the switch active, outside scopes where it is disabled already.
    public var overall: RateCheck
    /// Cities and cohorts whose own test exceeds, most crashes first.
    public var exceedingScopes: [(dimension: EventDimension, check: RateCheck)]
    /// What to do on this source's evidence; nil when nothing exceeds, the switch is off where it would trip, or
    /// the source may not trip it.
    public var trip: GuardTrip?
}

/// The crash guard's view of one plugin switch over a window: each source's tests, and the trip to make, if any.
public struct GuardAssessment: Sendable {
    public var key: String
    public var policy: ResolvedCrashGuardPolicy
    /// Each source with sessions of the switch (clients always), clients first.
    public var sources: [SourceAssessment]
    /// What to do: a trip on a source's evidence (reporters' first); nil when none trips.
    public var trip: GuardTrip?

    /// The source shown first: the one that trips, else the allowed source with the most sessions, else clients.
    public var primary: SourceAssessment {
        if let trip, let tripping = sources.first(where: { $0.source == trip.source }) { return tripping }
        let allowed = sources.filter(\.allowed)
        return allowed.max { ($0.overall.sessions, $1.source) < ($1.overall.sessions, $0.source) } ?? sources[0]
    }

    /// The primary source's overall test.
    public var overall: RateCheck { primary.overall }

    /// The primary source's cities and cohorts above the bound.
    public var exceedingScopes: [(dimension: EventDimension, check: RateCheck)] { primary.exceedingScopes }
}

/// The crash guard's rule, as a pure function of counts, policy and the switch's state.
///
/// Each source (clients, reporters) is judged on its own sessions; only sources the policy's `trip_sources`
/// names may trip. For one source:
///
/// 1. Sessions in scopes where the switch is disabled already (a city list, or a cohort list) are left out: the
///    population is every session with the switch active minus those.
/// 2. For each city and cohort (as the policy's `scope_by` allows) not disabled yet: its test must exceed, and
///    the population outside it must have `min_sessions` sessions, a test that does not exceed, and a crash rate
///    at most its bound. Such a scope is where the crashes concentrate; the one with the fewest sessions is
///    disabled (the narrowest cut). Without enough sessions elsewhere there is no evidence of concentration.
///    `(other)` (the values not counted on their own) is never a scope.
/// 3. Otherwise, when the population's test exceeds, the switch is disabled everywhere.
///
/// A test exceeds when the sample has `min_sessions` sessions and `min_crashes` crashes, from `min_units`
/// distinct units and (for clients' sessions) `min_addresses` distinct source addresses, the Wilson lower bound
/// of its crash rate (at the policy's confidence) is above `max_crash_rate`, and:
///
/// - for a switch with sessions without it to compare with (one for every ten with it), the lower bound of
///   Newcombe's 95 % interval for `rate − baseline_ratio × rate without the switch` is above 0;
/// - for a switch in nearly every session (no baseline), the sample is the sessions without any switch shown to
///   crash in that population (one whose sessions crash more often than sessions without it: Newcombe's 95 %
///   lower bound of the difference above 0). Its crashes are counted exactly from the crash records; its sessions
///   are bounded from above (sessions with the switch, minus the most sessions of any switch left out, plus the
///   sessions without the switch), so the rate is never overstated.
public enum GuardRule {
    /// Assesses a switch.
    ///
    /// - Parameters:
    ///   - key: the plugin switch.
    ///   - counts: the namespace's counts and crash records over the switch's window.
    ///   - policy: the switch's resolved policy.
    ///   - gate: the switch's current definition (its disables).
    public static func assess(
        key: String, counts: GuardCounts, policy: ResolvedCrashGuardPolicy,
        gate: PluginSwitchDefinition
    ) -> GuardAssessment {
        var sources: [SourceAssessment] = []
        for source in EventSource.all where source == .client || counts.hasSessions(of: key, source: source) {
            sources.append(assess(key: key, source: source, counts: counts, policy: policy, gate: gate))
        }
        let trip = sources.filter { $0.trip != nil }.max { $0.source < $1.source }?.trip
        return GuardAssessment(key: key, policy: policy, sources: sources, trip: trip)
    }

    /// Assesses a switch on hand-made counts of one source (tests; no crash records, so the policy's `min_units`
    /// and `min_addresses` should be 0).
    public static func assess(
        key: String, tallies: SwitchTallies, policy: ResolvedCrashGuardPolicy,
        gate: PluginSwitchDefinition
    ) -> GuardAssessment {
        var counts: [EventCount] = []
        for (dimension, tally) in tallies.withSwitch {
            counts.append(EventCount(subject: .pluginSwitch(key), dimension: dimension, tally: tally))
        }
        for (dimension, tally) in tallies.all {
            counts.append(EventCount(subject: .baseline, dimension: dimension, tally: tally))
        }
        return assess(key: key, counts: GuardCounts(counts, crashes: []), policy: policy, gate: gate)
    }

    static func assess(
        key: String, source: EventSource, counts: GuardCounts, policy: ResolvedCrashGuardPolicy,
        gate: PluginSwitchDefinition
    ) -> SourceAssessment {
        let tallies = counts.tallies(of: key, source: source)
        let everything = tallies.withSwitch[.all] ?? .zero
        let baselineAll = tallies.all[.all] ?? .zero
        // Sessions of scopes disabled already: cities and cohorts named alone (a city-and-cohort scope is kept).
        var excluded = EventTally.zero
        var excludedDimensions = Set<EventDimension>()
        for disable in gate.disabledScopes {
            let dimensions: [EventDimension] =
                disable.cohorts.isEmpty
                ? disable.cities.map(EventDimension.city)
                : disable.cities.isEmpty ? disable.cohorts.map(EventDimension.cohort) : []
            for dimension in dimensions where excludedDimensions.insert(dimension).inserted {
                excluded += tallies.withSwitch[dimension] ?? .zero
            }
        }
        let judge = Judge(key: key, source: source, counts: counts, policy: policy, excluded: excludedDimensions)
        let population = clamped(everything - excluded)
        let withoutSwitch = clamped(baselineAll - everything)
        let overall = judge.check(population, withoutSwitch: withoutSwitch, in: .all)

        var exceeding: [(dimension: EventDimension, check: RateCheck)] = []
        var concentrated: [(dimension: EventDimension, check: RateCheck, complement: RateCheck)] = []
        let allowed = Set(policy.scopeBy.map(\.rawValue))
        for (dimension, tally) in tallies.withSwitch where dimension.kind != .all {
            guard tally.sessions >= Int64(policy.minimumSessions),
                tally.crashedSessions >= Int64(policy.minimumCrashes),
                !excludedDimensions.contains(dimension)
            else { continue }
            let scope = dimension.scope
            let baseline = clamped((tallies.all[dimension] ?? .zero) - tally)
            let check = judge.check(tally, withoutSwitch: baseline, in: dimension)
            guard check.exceeds else { continue }
            exceeding.append((dimension, check))
            guard allowed.contains(dimension.kind.rawValue), dimension.value != CrashGuardPolicy.otherValue,
                !gate.isDisabled(in: scope)
            else { continue }
            // Clients choose their cities and cohorts: only where riders are (declared, named, or reported widely).
            if source == .client, counts.scopes?.shortfall(dimension) != nil { continue }
            let outside = clamped(population - tally)
            let outsideBaseline = clamped(withoutSwitch - baseline)
            let complement = RateCheck(outside, withoutSwitch: outsideBaseline, policy: policy)
            // Concentrated: enough sessions elsewhere to say so, and they are fine.
            if complement.sessions >= Int64(policy.minimumSessions), !complement.exceeds,
                (complement.rate ?? 0) <= complement.bound
            {
                concentrated.append((dimension, check, complement))
            }
        }
        exceeding.sort { ($0.check.crashes, $1.dimension) > ($1.check.crashes, $0.dimension) }
        let permitted = policy.allows(source == .reporter ? .reporters : .clients)
        var trip: GuardTrip?
        if !gate.disabled, policy.enabled, permitted {
            if let narrowest = concentrated.min(by: {
                ($0.check.sessions, $0.dimension) < ($1.check.sessions, $1.dimension)
            }) {
                trip = GuardTrip(
                    key: key, source: source, scope: narrowest.dimension.scope, check: narrowest.check,
                    complement: narrowest.complement, policy: policy)
            } else if overall.exceeds {
                trip = GuardTrip(
                    key: key, source: source, scope: .everywhere, check: overall, complement: nil, policy: policy)
            }
        }
        return SourceAssessment(
            source: source, allowed: permitted, overall: overall, exceedingScopes: exceeding, trip: trip)
    }

    /// The tests of one switch in one source's sessions.
    struct Judge {
        let key: String
        let source: EventSource
        let counts: GuardCounts
        let policy: ResolvedCrashGuardPolicy
        /// Dimensions disabled already, left out of the overall population.
        let excluded: Set<EventDimension>

        /// The crashed sessions with the switch active in a population.
        func crashes(in dimension: EventDimension) -> [CrashRecord] {
            counts.crashes.filter { record in
                record.source == source && record.switches.contains(key) && record.counts(in: dimension)
                    && (dimension.kind != .all || !excluded.contains { record.counts(in: $0) })
            }
        }

        /// The test of a population: against the sessions without the switch when there are enough of them, else
        /// on the sessions without the switches shown to crash.
        func check(_ tally: EventTally, withoutSwitch: EventTally, in dimension: EventDimension) -> RateCheck {
            let records = crashes(in: dimension)
            guard !RateCheck.hasBaseline(sessions: tally.sessions, without: withoutSwitch) else {
                return RateCheck(tally, withoutSwitch: withoutSwitch, policy: policy, spread: spread(records))
            }
            func suspects(z: Double) -> Set<String> {
                var found = GuardRule.suspects(in: dimension, source: source, counts: counts, excluding: key, z: z)
                if dimension.kind != .all {
                    found.formUnion(GuardRule.suspects(in: .all, source: source, counts: counts, excluding: key, z: z))
                }
                return found
            }
            let shown = suspects(z: RateCheck.baselineZ)
            var check =
                shown.isEmpty
                ? RateCheck(tally, withoutSwitch: withoutSwitch, policy: policy, spread: spread(records))
                : attributed(
                    tally, withoutSwitch: withoutSwitch, records: records, leavingOut: shown, in: dimension,
                    policy: policy)
            guard check.exceeds else { return check }
            // A switch whose sessions look worse than the others' but is not shown to crash yet may be what these
            // crashes are: when leaving its sessions out too would clear this switch, wait for the evidence.
            var lenient = policy
            (lenient.minimumSessions, lenient.minimumCrashes, lenient.minimumUnits, lenient.minimumAddresses) = (
                0, 0, 0, 0
            )
            for candidate in suspects(z: Self.possibleZ).subtracting(shown).sorted() {
                let without = attributed(
                    tally, withoutSwitch: withoutSwitch, records: records, leavingOut: shown.union([candidate]),
                    in: dimension, policy: lenient)
                if !without.exceeds {
                    check.exceeds = false
                    check.shortfall.append(
                        "waiting: \(candidate) may explain these crashes (its sessions crash more often than those without it, not shown yet)"
                    )
                    break
                }
            }
            return check
        }

        /// The normal quantile below which a switch whose sessions crash more often than the others' only may explain
        /// another's crashes: one-sided 75 %.
        static let possibleZ = 0.6744897501960817

        /// The test on the sessions with the switch and without the switches left out: crashes counted exactly from
        /// the crash records, sessions bounded from above (those with the switch, less those with the largest switch
        /// left out that also had it: at least its sessions less all sessions without the switch).
        func attributed(
            _ tally: EventTally, withoutSwitch: EventTally, records: [CrashRecord], leavingOut left: Set<String>,
            in dimension: EventDimension, policy: ResolvedCrashGuardPolicy
        ) -> RateCheck {
            let clean = records.filter { Set($0.switches).isDisjoint(with: left) }
            var largest: Int64 = 0
            for suspect in left {
                var sessions = counts.sessions(of: suspect, source: source, in: dimension).sessions
                if dimension.kind == .all {
                    for scope in excluded {
                        sessions -= counts.sessions(of: suspect, source: source, in: scope).sessions
                    }
                }
                largest = max(largest, sessions)
            }
            let crashed = min(Int64(clean.count), tally.crashedSessions)
            let sessions = min(tally.sessions, max(crashed, tally.sessions - largest + withoutSwitch.sessions))
            return RateCheck(
                EventTally(sessions: sessions, crashedSessions: crashed), withoutSwitch: nil, policy: policy,
                spread: spread(clean), leftOut: left.sorted())
        }

        func spread(_ records: [CrashRecord]) -> CrashSpread {
            CrashSpread(records, source: source, leavingOut: policy.minimumAddresses - 1)
        }
    }

    /// The switches shown to crash in a population: with enough sessions without them to compare with, and
    /// whose sessions crash more often than those without them (the lower bound of Newcombe's interval of the
    /// difference above 0: at 95 % by default).
    public static func suspects(
        in dimension: EventDimension, source: EventSource, counts: GuardCounts, excluding key: String,
        z: Double = RateCheck.baselineZ
    ) -> Set<String> {
        let all = counts.baseline(source: source, in: dimension)
        var suspects = Set<String>()
        for other in counts.switches(source: source) where other != key {
            let with = counts.sessions(of: other, source: source, in: dimension)
            let without = clamped(all - with)
            guard with.sessions > 0, RateCheck.hasBaseline(sessions: with.sessions, without: without),
                let lower = Proportions.newcombeScaledDifferenceLowerBound(
                    successes1: with.crashedSessions, trials1: with.sessions, successes2: without.crashedSessions,
                    trials2: without.sessions, ratio: 1, z: z), lower > 0
            else { continue }
            suspects.insert(other)
        }
        return suspects
    }
}

extension GuardRule {
    static func clamped(_ tally: EventTally) -> EventTally {
        let sessions = max(0, tally.sessions)
        return EventTally(
            sessions: sessions, crashedSessions: min(max(0, tally.crashedSessions), sessions),
            exposures: max(0, tally.exposures))
    }
}

extension EventTally {
    static func - (lhs: EventTally, rhs: EventTally) -> EventTally {
        EventTally(
            sessions: lhs.sessions - rhs.sessions, crashedSessions: lhs.crashedSessions - rhs.crashedSessions,
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

extension Scope {
    /// How the crash guard names a scope: `city lagos`, `cohort beta`, `everywhere`, else its description.
    public var guardText: String {
        if let city = cities.first, cities.count == 1, cohorts.isEmpty { return "city \(city)" }
        if let cohort = cohorts.first, cohorts.count == 1, cities.isEmpty { return "cohort \(cohort)" }
        return description
    }

    /// `everywhere`, `in city lagos`.
    public var guardWhere: String {
        isEverywhere ? "everywhere" : "in \(guardText)"
    }
}
