/// How the crash guard watches plugin switches: when clients report that sessions with a switch active crash too
/// often, flagsd disables the switch (for a city or cohort where the crashes concentrate, else everywhere).
///
/// A namespace declares defaults (`crash_guard:` at the top of its flag file) and a plugin switch may override any
/// field (`crash_guard:` under the switch). Every field is optional; what neither names comes from
/// ``CrashGuardPolicy/builtIn``. ``resolved(namespace:switch:)`` merges the three.
///
/// ```yaml
/// crash_guard:                  # namespace defaults
///   window: 10m
///   min_sessions: 200
///   max_crash_rate: 2           # percent, at most two decimals
///   baseline_ratio: 3           # and 3 × the crash rate of sessions without the switch
/// flags:
///   plugin_switch_feed_promos:
///     crash_guard: {max_crash_rate: 0.5, scope_by: [city]}
/// ```
///
/// Percentages (`max_crash_rate`, `confidence`) are written like rollouts: percent with at most two decimals in
/// flag files, basis points in the API. Durations are text: `90s`, `10m`, `2h`, `1d`.
///
/// Some fields say how the namespace's events are counted or how much the guard may do in the namespace as a
/// whole (``namespaceFields``: the caps per unit and per address, the trip budget, the declared cities and
/// cohorts); a switch cannot override them.
public struct CrashGuardPolicy: Sendable, Hashable {
    /// Whether the guard watches the switch at all.
    public var enabled: Bool?
    /// How far back the guard counts sessions: whole minutes, 1 minute to 1 day.
    public var window: Duration?
    /// The fewest sessions with the switch active (in the window and scope) before the guard may trip.
    public var minimumSessions: Int?
    /// The fewest crashed sessions before the guard may trip.
    public var minimumCrashes: Int?
    /// The crash rate (crashed sessions per session with the switch active) the switch must be shown to exceed.
    public var maximumCrashRate: Rollout?
    /// The switch must also be shown to crash this many times as often as sessions without it (in hundredths:
    /// 300 is 3×). Keeps the guard quiet when a bad release crashes everything alike, and keeps a healthy switch
    /// that shares sessions with a crashing one from taking the blame (sessions without it crash as often).
    public var baselineRatio: Int?
    /// The one-sided confidence of the lower bound compared with the threshold, in basis points (9990 = 99.9 %).
    public var confidence: Rollout?
    /// After a person re-enables a tripped switch, how long the guard leaves it alone (it also counts only
    /// sessions reported after the re-enable).
    public var cooldown: Duration?
    /// Which attributes may scope a trip: `city`, `cohort`. Empty: trips are always global.
    public var scopeBy: [GuardScopeAttribute]?
    /// The fewest distinct units among the crashed sessions of a trip's sample (a crash-looping device counts once).
    public var minimumUnits: Int?
    /// The fewest distinct source networks (an IPv4 address's /24, an IPv6 address's /48) among the crashed sessions
    /// of a trip's sample, for sessions clients reported (a reporter's sessions all come from its own servers).
    public var minimumAddresses: Int?
    /// Whose sessions may trip the switch: those clients report (client tokens, public), those reporters report
    /// (reporter tokens: server-side crash pipelines), or both. Each source is judged on its own sessions.
    public var tripSources: [GuardTripSource]?
    /// The most scoped disables (a city, a cohort) the guard keeps on one switch; past it, it proposes instead.
    public var maximumScopedDisables: Int?
    /// Namespace only: the most sessions one unit contributes to the counts per window.
    public var maximumSessionsPerUnit: Int?
    /// Namespace only: the most sessions one source address (an IPv4 address, an IPv6 /64; an IPv6 /56 4 times and a
    /// /48 16 times as many) contributes to the counts per window, for sessions clients report.
    public var maximumSessionsPerAddress: Int?
    /// Namespace only: the most switches the guard disables everywhere by itself in any hour; past it, it proposes
    /// and a person applies or dismisses. 0: it only ever proposes global disables.
    public var maximumTripsPerHour: Int?
    /// Namespace only: the most scoped disables (a switch in a city or cohort) the guard makes by itself in any
    /// hour, a budget apart from the global one, so that trips in small scopes never leave a crash loop everywhere
    /// to a proposal. 0: it only ever proposes scoped disables. Unset: `maximumTripsPerHour` when the namespace sets
    /// that, else the built-in 3.
    public var maximumScopedTripsPerHour: Int?
    /// Namespace only: the cities counted on their own; every other city is counted as `(other)`. Nil: the
    /// `maximumScopeValues` most frequent cities of each window.
    public var cities: [String]?
    /// Namespace only: the cohorts counted on their own, as `cities`.
    public var cohorts: [String]?
    /// Namespace only: when cities (or cohorts) are not declared, how many of the most frequent ones in a window
    /// are counted on their own.
    public var maximumScopeValues: Int?

    public init(
        enabled: Bool? = nil, window: Duration? = nil, minimumSessions: Int? = nil, minimumCrashes: Int? = nil,
        maximumCrashRate: Rollout? = nil, baselineRatio: Int? = nil, confidence: Rollout? = nil,
        cooldown: Duration? = nil,
        scopeBy: [GuardScopeAttribute]? = nil, minimumUnits: Int? = nil, minimumAddresses: Int? = nil,
        tripSources: [GuardTripSource]? = nil, maximumScopedDisables: Int? = nil, maximumSessionsPerUnit: Int? = nil,
        maximumSessionsPerAddress: Int? = nil, maximumTripsPerHour: Int? = nil, maximumScopedTripsPerHour: Int? = nil,
        cities: [String]? = nil, cohorts: [String]? = nil, maximumScopeValues: Int? = nil
    ) {
        self.enabled = enabled
        self.window = window
        self.minimumSessions = minimumSessions
        self.minimumCrashes = minimumCrashes
        self.maximumCrashRate = maximumCrashRate
        self.baselineRatio = baselineRatio
        self.confidence = confidence
        self.cooldown = cooldown
        self.scopeBy = scopeBy
        self.minimumUnits = minimumUnits
        self.minimumAddresses = minimumAddresses
        self.tripSources = tripSources
        self.maximumScopedDisables = maximumScopedDisables
        self.maximumSessionsPerUnit = maximumSessionsPerUnit
        self.maximumSessionsPerAddress = maximumSessionsPerAddress
        self.maximumTripsPerHour = maximumTripsPerHour
        self.maximumScopedTripsPerHour = maximumScopedTripsPerHour
        self.cities = cities
        self.cohorts = cohorts
        self.maximumScopeValues = maximumScopeValues
    }

    /// Whether no field is set.
    public var isEmpty: Bool { self == CrashGuardPolicy() }

    /// The values used where neither the namespace nor the switch names one.
    public static let builtIn = ResolvedCrashGuardPolicy(
        settingEvery: CrashGuardPolicy(
            enabled: true, window: .seconds(600), minimumSessions: 200, minimumCrashes: 10,
            maximumCrashRate: Rollout(basisPoints: 200)!, baselineRatio: 200, confidence: Rollout(basisPoints: 9990)!,
            cooldown: .seconds(1800), scopeBy: [.city, .cohort], minimumUnits: 5, minimumAddresses: 3,
            tripSources: [.clients, .reporters], maximumScopedDisables: 5, maximumSessionsPerUnit: 5,
            maximumSessionsPerAddress: 100, maximumTripsPerHour: 3, maximumScopedTripsPerHour: 3, cities: nil,
            cohorts: nil,
            maximumScopeValues: 100))

    /// The policy in force for a switch: its own fields, else the namespace's, else the built-in ones. The
    /// namespace fields come from the namespace alone.
    public static func resolved(namespace: CrashGuardPolicy?, switch own: CrashGuardPolicy?) -> ResolvedCrashGuardPolicy
    {
        let base = builtIn.policy
        var policy = CrashGuardPolicy()
        func pick<Value>(_ keyPath: WritableKeyPath<CrashGuardPolicy, Value?>) {
            policy[keyPath: keyPath] = own?[keyPath: keyPath] ?? namespace?[keyPath: keyPath] ?? base[keyPath: keyPath]
        }
        func namespaceOnly<Value>(_ keyPath: WritableKeyPath<CrashGuardPolicy, Value?>) {
            policy[keyPath: keyPath] = namespace?[keyPath: keyPath] ?? base[keyPath: keyPath]
        }
        pick(\.enabled)
        pick(\.window)
        pick(\.minimumSessions)
        pick(\.minimumCrashes)
        pick(\.maximumCrashRate)
        pick(\.baselineRatio)
        pick(\.confidence)
        pick(\.cooldown)
        pick(\.scopeBy)
        pick(\.minimumUnits)
        pick(\.minimumAddresses)
        pick(\.tripSources)
        pick(\.maximumScopedDisables)
        namespaceOnly(\.maximumSessionsPerUnit)
        namespaceOnly(\.maximumSessionsPerAddress)
        namespaceOnly(\.maximumTripsPerHour)
        namespaceOnly(\.cities)
        namespaceOnly(\.cohorts)
        namespaceOnly(\.maximumScopeValues)
        // A namespace that set only `max_trips_per_hour` (before scoped trips had a budget of their own) keeps it for
        // both: `max_trips_per_hour: 0` still means the guard only proposes.
        policy.maximumScopedTripsPerHour =
            namespace?.maximumScopedTripsPerHour ?? namespace?.maximumTripsPerHour
            ?? base.maximumScopedTripsPerHour
        return ResolvedCrashGuardPolicy(settingEvery: policy)
    }

    /// The fields only a namespace's policy may set: they decide how its events are counted and how much the guard
    /// may do in it as a whole.
    public static let namespaceFields = [
        "max_sessions_per_unit", "max_sessions_per_address", "max_trips_per_hour", "max_scoped_trips_per_hour",
        "cities", "cohorts", "max_scope_values",
    ]
}

/// Whose sessions may trip a switch.
public enum GuardTripSource: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// Sessions reported with client tokens (by the apps themselves; client tokens are public).
    case clients
    /// Sessions reported with reporter tokens (server-side crash pipelines; secret tokens).
    case reporters

    public var description: String { rawValue }
}

/// An attribute the crash guard may scope a trip to.
public enum GuardScopeAttribute: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    case city
    case cohort

    public var description: String { rawValue }
}

/// A crash guard policy with every field decided: a ``CrashGuardPolicy`` with every field set, read without
/// unwrapping (`resolved.minimumSessions` is an `Int`). `baselineRatio` (nil: no comparison with the baseline),
/// `cities` and `cohorts` (nil: the most frequent of each window are counted on their own) stay optional. The fields
/// are described once, in ``CrashGuardPolicy``; this type adds only that they are all set.
@dynamicMemberLookup
public struct ResolvedCrashGuardPolicy: Sendable, Hashable {
    /// The policy with every field set (`cities` and `cohorts` only when declared).
    public private(set) var policy: CrashGuardPolicy

    /// Takes a policy whose every field is set but `baselineRatio`, `cities` and `cohorts`.
    init(settingEvery policy: CrashGuardPolicy) {
        self.policy = policy
    }

    /// A field that a resolved policy always has.
    public subscript<Value>(dynamicMember keyPath: WritableKeyPath<CrashGuardPolicy, Value?>) -> Value {
        get { policy[keyPath: keyPath]! }
        set { policy[keyPath: keyPath] = newValue }
    }

    /// In hundredths (300 is 3×); nil: no comparison with the baseline.
    public var baselineRatio: Int? {
        get { policy.baselineRatio }
        set { policy.baselineRatio = newValue }
    }

    /// Nil: the most frequent cities of each window are counted on their own.
    public var cities: [String]? {
        get { policy.cities }
        set { policy.cities = newValue }
    }

    /// Nil: the most frequent cohorts of each window are counted on their own.
    public var cohorts: [String]? {
        get { policy.cohorts }
        set { policy.cohorts = newValue }
    }

    /// Whether sessions of a source may trip the switch.
    public func allows(_ source: GuardTripSource) -> Bool { self.tripSources.contains(source) }

    /// The policy as a JSON object (percentages in the given unit), every field present (`cities` and `cohorts`
    /// only when declared).
    public func tree(unit: RolloutUnit) -> JSONObject {
        policy.tree(unit: unit)
    }
}

// MARK: Text forms

/// Durations in flag files and the API: a whole number and a unit, `90s`, `10m`, `2h`, `1d`.
public enum GuardDurationText {
    /// Parses `90s`, `10m`, `2h`, `1d` (a whole number of seconds, minutes, hours or days).
    public static func parse(_ text: String) -> Duration? {
        guard let unit = text.last, let count = Int64(text.dropLast()), count >= 0, !text.dropLast().hasPrefix("+")
        else { return nil }
        let seconds: Int64
        switch unit {
        case "s": seconds = 1
        case "m": seconds = 60
        case "h": seconds = 3600
        case "d": seconds = 86_400
        default: return nil
        }
        let (total, overflow) = count.multipliedReportingOverflow(by: seconds)
        guard !overflow, total <= 366 * 86_400 else { return nil }
        return .seconds(total)
    }

    /// The shortest text for a duration of whole seconds: `10m` rather than `600s`.
    public static func text(_ duration: Duration) -> String {
        let seconds = duration.components.seconds
        for (unit, size) in [("d", Int64(86_400)), ("h", 3600), ("m", 60)] where seconds != 0 && seconds % size == 0 {
            return "\(seconds / size)\(unit)"
        }
        return "\(seconds)s"
    }
}

/// Ratios such as a baseline ratio, in hundredths: `3` is 300, `2.5` is 250.
public enum RatioText {
    /// Parses a plain decimal with at most two decimals into hundredths; nil when it is not one.
    public static func parse(_ literal: String) -> Int? {
        var whole = Substring(literal)
        var fraction: Substring = ""
        if let dot = literal.firstIndex(of: ".") {
            whole = literal[..<dot]
            fraction = literal[literal.index(after: dot)...]
        }
        guard !whole.isEmpty, whole.count <= 6, whole.allSatisfy(\.isASCIIDigit), fraction.allSatisfy(\.isASCIIDigit),
            !(literal.contains(".") && fraction.isEmpty)
        else { return nil }
        let significant = fraction.reversed().drop { $0 == "0" }.reversed()
        guard significant.count <= 2, let integer = Int(whole) else { return nil }
        var hundredths = integer * 100
        for (position, digit) in significant.enumerated() {
            hundredths += Int(String(digit))! * (position == 0 ? 10 : 1)
        }
        return hundredths
    }

    /// `3`, `2.5`, `1.25`.
    public static func text(_ hundredths: Int) -> String {
        let whole = hundredths / 100
        let rest = hundredths % 100
        if rest == 0 { return String(whole) }
        if rest % 10 == 0 { return "\(whole).\(rest / 10)" }
        return "\(whole).\(rest < 10 ? "0" : "")\(rest)"
    }
}

// MARK: Reading and writing

extension CrashGuardPolicy {
    static let fieldNames =
        [
            "enabled", "window", "min_sessions", "min_crashes", "max_crash_rate", "baseline_ratio",
            "confidence", "cooldown", "scope_by", "min_units", "min_addresses", "trip_sources",
            "max_scoped_disables",
        ] + namespaceFields

    /// Reads a policy as ``tree(unit:)`` writes it (a namespace's, or a resolved one as the API shows it).
    ///
    /// - Throws: `DefinitionError` naming each field at fault.
    public init(tree: JSONValue, unit: RolloutUnit) throws(DefinitionError) {
        let reader = TreeReader(file: nil)
        let policy = Self.read(tree, at: .root, unit: unit, reader: reader)
        guard let policy, reader.problems.isEmpty else { throw DefinitionError(problems: reader.problems) }
        self = policy
    }

    /// Reads a policy object, reporting every problem with its path.
    ///
    /// - Parameter namespaceLevel: whether it is the namespace's policy (else a switch's, which may not set the
    ///   ``namespaceFields``).
    static func read(
        _ value: JSONValue, at path: FieldPath, unit: RolloutUnit, reader: TreeReader,
        namespaceLevel: Bool = true
    ) -> CrashGuardPolicy? {
        guard var object = reader.object(value, at: path) else { return nil }
        if !namespaceLevel {
            for field in namespaceFields where object.object[field] != nil {
                reader.report(
                    path / field,
                    "is a namespace setting (it applies to every switch of the namespace); set it in the namespace's crash_guard"
                )
            }
        }
        var policy = CrashGuardPolicy()
        policy.enabled = object.bool("enabled")
        if let text = object.string("window") {
            if let window = GuardDurationText.parse(text) {
                let seconds = window.components.seconds
                if seconds % 60 != 0 || seconds < 60 || seconds > 86_400 {
                    reader.report(
                        path / "window", "'\(text)' must be whole minutes from 1m to 1d (counts are kept per minute)")
                } else {
                    policy.window = window
                }
            } else {
                reader.report(path / "window", "'\(text)' is not a duration (write e.g. 10m, 1h)")
            }
        }
        if let text = object.string("cooldown") {
            if let cooldown = GuardDurationText.parse(text), cooldown <= .seconds(7 * 86_400) {
                policy.cooldown = cooldown
            } else {
                reader.report(path / "cooldown", "'\(text)' is not a duration from 0s to 7d (write e.g. 30m, 2h)")
            }
        }
        for (field, keyPath, lowest, limit) in [
            ("min_sessions", \CrashGuardPolicy.minimumSessions, 1, 100_000_000),
            ("min_crashes", \CrashGuardPolicy.minimumCrashes, 1, 100_000_000),
            ("min_units", \CrashGuardPolicy.minimumUnits, 1, 1_000_000),
            ("min_addresses", \CrashGuardPolicy.minimumAddresses, 1, 1_000_000),
            ("max_scoped_disables", \CrashGuardPolicy.maximumScopedDisables, 0, 1000),
            ("max_sessions_per_unit", \CrashGuardPolicy.maximumSessionsPerUnit, 1, 1_000_000),
            ("max_sessions_per_address", \CrashGuardPolicy.maximumSessionsPerAddress, 1, 100_000_000),
            ("max_trips_per_hour", \CrashGuardPolicy.maximumTripsPerHour, 0, 1000),
            ("max_scoped_trips_per_hour", \CrashGuardPolicy.maximumScopedTripsPerHour, 0, 1000),
            ("max_scope_values", \CrashGuardPolicy.maximumScopeValues, 1, 10_000),
        ] {
            guard let integer = object.integer(field) else { continue }
            guard (Int64(lowest)...Int64(limit)).contains(integer) else {
                reader.report(path / field, "\(integer) is not between \(lowest) and \(limit)")
                continue
            }
            policy[keyPath: keyPath] = Int(integer)
        }
        if object.value("trip_sources") != nil {
            var sources: [GuardTripSource] = []
            for (index, name) in object.stringList("trip_sources", rule: .key).enumerated() {
                guard let source = GuardTripSource(rawValue: name) else {
                    reader.report(path / "trip_sources" / index, "'\(name)' is not clients or reporters")
                    continue
                }
                sources.append(source)
            }
            policy.tripSources = sources
        }
        for (field, keyPath) in [("cities", \CrashGuardPolicy.cities), ("cohorts", \CrashGuardPolicy.cohorts)] {
            guard object.value(field) != nil else { continue }
            let values = object.stringList(field, rule: .attribute)
            for (index, value) in values.enumerated() where value == Self.otherValue {
                reader.report(
                    path / field / index,
                    "'\(value)' stands for every value not counted on its own; it cannot be declared")
            }
            policy[keyPath: keyPath] = values
        }
        if let value = object.value("max_crash_rate") {
            policy.maximumCrashRate = Rollout.read(value, at: path / "max_crash_rate", unit: unit, reader: reader)
            if policy.maximumCrashRate == .off {
                reader.report(
                    path / "max_crash_rate",
                    "must be above 0 (any crash would trip the guard); use enabled: false to turn the guard off")
                policy.maximumCrashRate = nil
            }
        }
        if let value = object.value("confidence") {
            if let confidence = Rollout.read(value, at: path / "confidence", unit: unit, reader: reader) {
                if confidence.basisPoints < 5000 || confidence == .full {
                    let shown = unit == .percent ? confidence.percentText : String(confidence.basisPoints)
                    let range = unit == .percent ? "50 and 99.99" : "5000 and 9999"
                    reader.report(path / "confidence", "\(shown) is not between \(range)")
                } else {
                    policy.confidence = confidence
                }
            }
        }
        if let value = object.value("baseline_ratio") {
            if case .number(let number) = value, let hundredths = RatioText.parse(number.literal) {
                if (100...100_000).contains(hundredths) {
                    policy.baselineRatio = hundredths
                } else {
                    reader.report(path / "baseline_ratio", "\(number.literal) is not between 1 and 1000")
                }
            } else {
                reader.report(
                    path / "baseline_ratio",
                    "\(value.serializedString()) is not a ratio (a number such as 3 or 2.5, at most two decimals)")
            }
        }
        if object.value("scope_by") != nil {
            var attributes: [GuardScopeAttribute] = []
            let names = object.stringList("scope_by", rule: .key, allowEmpty: true)
            for (index, name) in names.enumerated() {
                guard let attribute = GuardScopeAttribute(rawValue: name) else {
                    reader.report(path / "scope_by" / index, "'\(name)' is not city or cohort")
                    continue
                }
                attributes.append(attribute)
            }
            policy.scopeBy = attributes
        }
        object.finish()
        return policy
    }

    /// The policy as a JSON object, fields that are not set left out.
    public func tree(unit: RolloutUnit) -> JSONObject {
        var object = JSONObject()
        if let enabled { object["enabled"] = .bool(enabled) }
        if let window { object["window"] = .string(GuardDurationText.text(window)) }
        if let minimumSessions { object["min_sessions"] = .int(minimumSessions) }
        if let minimumCrashes { object["min_crashes"] = .int(minimumCrashes) }
        if let maximumCrashRate { object["max_crash_rate"] = maximumCrashRate.jsonValue(unit: unit) }
        if let baselineRatio {
            object["baseline_ratio"] = .number(JSONNumber(uncheckedLiteral: RatioText.text(baselineRatio)))
        }
        if let confidence { object["confidence"] = confidence.jsonValue(unit: unit) }
        if let cooldown { object["cooldown"] = .string(GuardDurationText.text(cooldown)) }
        if let scopeBy { object["scope_by"] = .array(scopeBy.map { .string($0.rawValue) }) }
        if let minimumUnits { object["min_units"] = .int(minimumUnits) }
        if let minimumAddresses { object["min_addresses"] = .int(minimumAddresses) }
        if let tripSources { object["trip_sources"] = .array(tripSources.map { .string($0.rawValue) }) }
        if let maximumScopedDisables { object["max_scoped_disables"] = .int(maximumScopedDisables) }
        if let maximumSessionsPerUnit { object["max_sessions_per_unit"] = .int(maximumSessionsPerUnit) }
        if let maximumSessionsPerAddress { object["max_sessions_per_address"] = .int(maximumSessionsPerAddress) }
        if let maximumTripsPerHour { object["max_trips_per_hour"] = .int(maximumTripsPerHour) }
        if let maximumScopedTripsPerHour { object["max_scoped_trips_per_hour"] = .int(maximumScopedTripsPerHour) }
        if let cities { object["cities"] = .array(cities.map(JSONValue.string)) }
        if let cohorts { object["cohorts"] = .array(cohorts.map(JSONValue.string)) }
        if let maximumScopeValues { object["max_scope_values"] = .int(maximumScopeValues) }
        return object
    }

    /// The city or cohort value that stands for every value not counted on its own (not declared, or not among
    /// the most frequent of its window): no client value can be counted under it alone.
    public static let otherValue = "(other)"
}
