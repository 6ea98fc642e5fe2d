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

    public init(
        enabled: Bool? = nil, window: Duration? = nil, minimumSessions: Int? = nil, minimumCrashes: Int? = nil,
        maximumCrashRate: Rollout? = nil, baselineRatio: Int? = nil, confidence: Rollout? = nil, cooldown: Duration? = nil,
        scopeBy: [GuardScopeAttribute]? = nil
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
    }

    /// Whether no field is set.
    public var isEmpty: Bool { self == CrashGuardPolicy() }

    /// The values used where neither the namespace nor the switch names one.
    public static let builtIn = ResolvedCrashGuardPolicy(
        enabled: true, window: .seconds(600), minimumSessions: 200, minimumCrashes: 10,
        maximumCrashRate: Rollout(basisPoints: 200)!, baselineRatio: 200, confidence: Rollout(basisPoints: 9990)!,
        cooldown: .seconds(1800), scopeBy: [.city, .cohort])

    /// The policy in force for a switch: its own fields, else the namespace's, else the built-in ones.
    public static func resolved(namespace: CrashGuardPolicy?, switch own: CrashGuardPolicy?) -> ResolvedCrashGuardPolicy {
        let base = builtIn
        func pick<Value>(_ keyPath: KeyPath<CrashGuardPolicy, Value?>) -> Value? {
            own?[keyPath: keyPath] ?? namespace?[keyPath: keyPath]
        }
        return ResolvedCrashGuardPolicy(
            enabled: pick(\.enabled) ?? base.enabled, window: pick(\.window) ?? base.window,
            minimumSessions: pick(\.minimumSessions) ?? base.minimumSessions,
            minimumCrashes: pick(\.minimumCrashes) ?? base.minimumCrashes,
            maximumCrashRate: pick(\.maximumCrashRate) ?? base.maximumCrashRate,
            baselineRatio: pick(\.baselineRatio) ?? base.baselineRatio,
            confidence: pick(\.confidence) ?? base.confidence, cooldown: pick(\.cooldown) ?? base.cooldown,
            scopeBy: pick(\.scopeBy) ?? base.scopeBy)
    }
}

/// An attribute the crash guard may scope a trip to.
public enum GuardScopeAttribute: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    case city
    case cohort

    public var description: String { rawValue }
}

/// A crash guard policy with every field decided.
public struct ResolvedCrashGuardPolicy: Sendable, Hashable {
    public var enabled: Bool
    public var window: Duration
    public var minimumSessions: Int
    public var minimumCrashes: Int
    public var maximumCrashRate: Rollout
    /// In hundredths (300 is 3×); nil: no comparison with the baseline.
    public var baselineRatio: Int?
    public var confidence: Rollout
    public var cooldown: Duration
    public var scopeBy: [GuardScopeAttribute]

    public init(
        enabled: Bool, window: Duration, minimumSessions: Int, minimumCrashes: Int, maximumCrashRate: Rollout,
        baselineRatio: Int?, confidence: Rollout, cooldown: Duration, scopeBy: [GuardScopeAttribute]
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
    }

    /// The policy as a JSON object (percentages in the given unit), every field present.
    public func tree(unit: RolloutUnit) -> JSONObject {
        CrashGuardPolicy(enabled: enabled, window: window, minimumSessions: minimumSessions, minimumCrashes: minimumCrashes,
                         maximumCrashRate: maximumCrashRate, baselineRatio: baselineRatio, confidence: confidence,
                         cooldown: cooldown, scopeBy: scopeBy).tree(unit: unit)
    }
}

// MARK: Text forms

/// Durations in flag files and the API: a whole number and a unit, `90s`, `10m`, `2h`, `1d`.
public enum GuardDurationText {
    /// Parses `90s`, `10m`, `2h`, `1d` (a whole number of seconds, minutes, hours or days).
    public static func parse(_ text: String) -> Duration? {
        guard let unit = text.last, let count = Int64(text.dropLast()), count >= 0, !text.dropLast().hasPrefix("+") else { return nil }
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
              !(literal.contains(".") && fraction.isEmpty) else { return nil }
        let significant = fraction.reversed().drop { $0 == "0" }.reversed()
        guard significant.count <= 2, let integer = Int(whole) else { return nil }
        var hundredths = integer * 100
        for (position, digit) in significant.enumerated() { hundredths += Int(String(digit))! * (position == 0 ? 10 : 1) }
        return hundredths
    }

    /// `3`, `2.5`, `1.25`.
    public static func text(_ hundredths: Int) -> String {
        let whole = hundredths / 100, rest = hundredths % 100
        if rest == 0 { return String(whole) }
        if rest % 10 == 0 { return "\(whole).\(rest / 10)" }
        return "\(whole).\(rest < 10 ? "0" : "")\(rest)"
    }
}

// MARK: Reading and writing

extension CrashGuardPolicy {
    static let fieldNames = ["enabled", "window", "min_sessions", "min_crashes", "max_crash_rate", "baseline_ratio",
                             "confidence", "cooldown", "scope_by"]

    /// Reads a policy object, reporting every problem with its path.
    static func read(_ value: JSONValue, at path: FieldPath, unit: RolloutUnit, reader: TreeReader) -> CrashGuardPolicy? {
        guard var object = reader.object(value, at: path) else { return nil }
        var policy = CrashGuardPolicy()
        policy.enabled = object.bool("enabled")
        if let text = object.string("window") {
            if let window = GuardDurationText.parse(text) {
                let seconds = window.components.seconds
                if seconds % 60 != 0 || seconds < 60 || seconds > 86_400 {
                    reader.report(path / "window", "'\(text)' must be whole minutes from 1m to 1d (counts are kept per minute)")
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
        for (field, keyPath, limit) in [("min_sessions", \CrashGuardPolicy.minimumSessions, 100_000_000),
                                        ("min_crashes", \CrashGuardPolicy.minimumCrashes, 100_000_000)] {
            guard let integer = object.integer(field) else { continue }
            guard (1...Int64(limit)).contains(integer) else {
                reader.report(path / field, "\(integer) is not between 1 and \(limit)")
                continue
            }
            policy[keyPath: keyPath] = Int(integer)
        }
        if let value = object.value("max_crash_rate") {
            policy.maximumCrashRate = Rollout.read(value, at: path / "max_crash_rate", unit: unit, reader: reader)
            if policy.maximumCrashRate == .off {
                reader.report(path / "max_crash_rate", "must be above 0 (any crash would trip the guard); use enabled: false to turn the guard off")
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
                reader.report(path / "baseline_ratio", "\(value.serializedString()) is not a ratio (a number such as 3 or 2.5, at most two decimals)")
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
        if let baselineRatio { object["baseline_ratio"] = .number(JSONNumber(uncheckedLiteral: RatioText.text(baselineRatio))) }
        if let confidence { object["confidence"] = confidence.jsonValue(unit: unit) }
        if let cooldown { object["cooldown"] = .string(GuardDurationText.text(cooldown)) }
        if let scopeBy { object["scope_by"] = .array(scopeBy.map { .string($0.rawValue) }) }
        return object
    }
}
