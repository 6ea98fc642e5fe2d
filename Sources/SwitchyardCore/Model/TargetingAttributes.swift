/// What a rule's conditions can ask of an evaluation context, each described once: lists of values
/// (`ListAttribute`) and version bounds (`VersionAttribute`).
///
/// The conditions model (`Conditions`), both evaluators (`Conditions.hold` and the compiled `Evaluator`), the
/// document codec, OFREP's context, flagctl's summaries and the JSON Schema tests follow these descriptions:
/// docs/architecture.md "Where a change goes" lists what a new attribute needs beside its line here.

/// A context attribute holding a semantic version that rules bound from below and above: the app's, the OS's.
///
/// A rule's `<name>_at_least` is inclusive and `<name>_below` exclusive (`os_version_below: "15"` holds for
/// 14.8.1, not for 15.0.0); a rule with either does not hold for a context without the attribute or whose value
/// is not a semantic version. Adding one is a case here (with its line in the two switches below: the compiler asks
/// for them) and its field in `EvaluationContext`.
public enum VersionAttribute: String, CaseIterable, Sendable, Hashable {
    /// The app's version, e.g. 5.12.0.
    case app = "app_version"
    /// The operating system's version, e.g. 17.4 (riders on old OS versions are a cohort plugin switches target).
    case os = "os_version"

    /// The context's value (`EvaluationContext.appVersion`, `.osVersion`).
    public var contextValue: WritableKeyPath<EvaluationContext, String?> {
        switch self {
        case .app: \.appVersion
        case .os: \.osVersion
        }
    }

    /// The context's value, read without a key path (projecting one costs about 1,000 instructions, a tenth of
    /// preparing an evaluator).
    @inline(__always)
    public func value(in context: EvaluationContext) -> String? {
        switch self {
        case .app: context.appVersion
        case .os: context.osVersion
        }
    }

    /// Its member in an OpenFeature evaluation context: `appVersion`, `osVersion`.
    public var contextKey: String { Self.camelCase(rawValue) }

    /// The attributes by their OpenFeature context key, worked out once (OFREP reads every request's context).
    private static let byContextKey = Dictionary(uniqueKeysWithValues: allCases.map { ($0.contextKey, $0) })

    /// The rule field of its inclusive lower bound: `app_version_at_least`.
    public var atLeastField: String { rawValue + "_at_least" }
    /// The rule field of its exclusive upper bound: `app_version_below`.
    public var belowField: String { rawValue + "_below" }
    /// How summaries name it: `app >= 5.12.0`, `os < 15.0.0`.
    public var label: String { String(rawValue.prefix { $0 != "_" }) }
    /// Its command-line option: `app-version` (`flagctl explain --app-version 5.12.0`).
    public var optionName: String { rawValue.replacingUnderscores(with: "-") }

    /// The attribute with an OpenFeature context key, if one has it.
    public init?(contextKey: String) {
        guard let attribute = Self.byContextKey[contextKey] else { return nil }
        self = attribute
    }

    private static func camelCase(_ name: String) -> String {
        var result = ""
        var upper = false
        for character in name {
            if character == "_" {
                upper = true
            } else {
                result += upper ? character.uppercased() : String(character)
                upper = false
            }
        }
        return result
    }
}

/// The versions a rule admits for one version attribute: at least `atLeast` (inclusive), below `below`.
public struct VersionRange: Sendable, Hashable {
    public var atLeast: SemanticVersion?
    public var below: SemanticVersion?

    public init(atLeast: SemanticVersion? = nil, below: SemanticVersion? = nil) {
        self.atLeast = atLeast
        self.below = below
    }

    /// No bound: no condition.
    public var isEmpty: Bool { atLeast == nil && below == nil }

    public func contains(_ version: SemanticVersion) -> Bool {
        if let atLeast, version < atLeast { return false }
        if let below, !(version < below) { return false }
        return true
    }
}

/// A context attribute that rules match against lists of values: the unit's city, cohorts, id, platform.
///
/// A rule's `<field>` (`cities`) holds when one of the context's values is listed; its `not_<field>`
/// (`not_cities`), for the attributes rules can exclude by, holds when the context has values and none is listed.
/// A context without the attribute matches neither. Adding one is a case here (with its line in each switch below:
/// the compiler asks for them), its field in `EvaluationContext`, and its options in `flagctl explain` and
/// `flagctl target` (argument-parser declares options one by one).
public enum ListAttribute: Int, CaseIterable, Sendable, Hashable {
    /// The unit's city (one).
    case city
    /// The unit's cohorts (any number).
    case cohort
    /// The unit id itself: allowlists of QA and dogfood units.
    case unit
    /// The unit's platform, e.g. ios (one).
    case platform

    /// Its name for one value: `city` (`flagctl explain` shows `city lagos`).
    public var name: String {
        switch self {
        case .city: "city"
        case .cohort: "cohort"
        case .unit: "unit"
        case .platform: "platform"
        }
    }

    /// The rule field listing the values that admit a unit, and the attribute's plural in summaries: `cities`.
    public var field: String {
        switch self {
        case .city: "cities"
        case .cohort: "cohorts"
        case .unit: "units"
        case .platform: "platforms"
        }
    }

    /// Whether rules can also exclude by it (`not_cities`).
    public var canExclude: Bool {
        switch self {
        case .city, .cohort: true
        case .unit, .platform: false
        }
    }

    /// Its members in an OpenFeature evaluation context; an attribute with several values takes a string or a
    /// list under either key, merged.
    public var contextKeys: [String] {
        switch self {
        case .city: ["city"]
        case .cohort: ["cohort", "cohorts"]
        case .unit: ["targetingKey"]
        case .platform: ["platform"]
        }
    }

    /// Whether a context holds several values of it (cohorts) rather than at most one.
    public var isMultiValued: Bool {
        switch self {
        case .cohort: true
        case .city, .unit, .platform: false
        }
    }

    /// Calls `body` with each of the context's values, in order, without building a list.
    @inline(__always)
    public func forEachValue(in context: EvaluationContext, _ body: (String) -> Void) {
        switch self {
        case .city: if let city = context.city { body(city) }
        case .cohort: for cohort in context.cohorts { body(cohort) }
        case .unit: if let unit = context.unitId { body(unit) }
        case .platform: if let platform = context.platform { body(platform) }
        }
    }

    /// The context's values (none, one, or several for a multi-valued attribute).
    public func values(in context: EvaluationContext) -> [String] {
        var values: [String] = []
        forEachValue(in: context) { values.append($0) }
        return values
    }

    /// Sets the context's values; a single-valued attribute takes the first (none: absent).
    public func setValues(_ values: [String], in context: inout EvaluationContext) {
        switch self {
        case .city: context.city = values.first
        case .cohort: context.cohorts = values
        case .unit: context.unitId = values.first
        case .platform: context.platform = values.first
        }
    }

    /// The attributes by their OpenFeature context keys, worked out once.
    private static let byContextKey = Dictionary(
        uniqueKeysWithValues: allCases.flatMap { attribute in attribute.contextKeys.map { ($0, attribute) } })

    /// The attribute with an OpenFeature context key, if one has it.
    public init?(contextKey: String) {
        guard let attribute = Self.byContextKey[contextKey] else { return nil }
        self = attribute
    }
}

/// One list of a rule's conditions: the values of an attribute that admit a unit (`cities`) or exclude it
/// (`not_cities`).
public struct TargetingList: Sendable, Hashable, CaseIterable {
    public let attribute: ListAttribute
    /// Whether the list names values that exclude a unit rather than admit it.
    public let excludes: Bool

    /// The list of values that admit a unit (`cities`).
    public init(_ attribute: ListAttribute) {
        self.init(attribute: attribute, excludes: false)
    }

    /// The list of values that exclude a unit (`not_cities`), for an attribute rules can exclude by; nil for another.
    public static func excluding(_ attribute: ListAttribute) -> TargetingList? {
        attribute.canExclude ? TargetingList(attribute: attribute, excludes: true) : nil
    }

    private init(attribute: ListAttribute, excludes: Bool) {
        self.attribute = attribute
        self.excludes = excludes
    }

    /// Every list a rule can have, in the order documents and summaries write them: each attribute's admitting
    /// list, then its excluding one where rules have one.
    public static let allCases: [TargetingList] = ListAttribute.allCases.flatMap { attribute in
        [TargetingList(attribute)] + (excluding(attribute).map { [$0] } ?? [])
    }

    /// Its field in documents and request bodies: `cities`, `not_cities`.
    public var field: String { excludes ? "not_" + attribute.field : attribute.field }
    /// How summaries name it: `cities`, `not cities`.
    public var label: String { excludes ? "not " + attribute.field : attribute.field }

    /// Whether the list holds for a context: one of its values is listed (admitting), or the context has values
    /// and none is listed (excluding). The reference semantics the compiled evaluator follows.
    public func holds(_ values: [String], for context: EvaluationContext) -> Bool {
        var hasValue = false
        var listed = false
        attribute.forEachValue(in: context) { value in
            hasValue = true
            if !listed && values.contains(value) { listed = true }
        }
        return excludes ? hasValue && !listed : listed
    }
}

extension TargetingList {
    // Today's lists by name, for the call sites and tests that spell them out (`Conditions.cities` and the rest).
    public static let cities = TargetingList(.city)
    public static let notCities = TargetingList(attribute: .city, excludes: true)
    public static let cohorts = TargetingList(.cohort)
    public static let notCohorts = TargetingList(attribute: .cohort, excludes: true)
    public static let units = TargetingList(.unit)
    public static let platforms = TargetingList(.platform)
}

extension Conditions {
    /// Every condition field of a rule in documents (the lists, then each version attribute's two bounds).
    public static var fieldNames: [String] {
        TargetingList.allCases.map(\.field) + VersionAttribute.allCases.flatMap { [$0.atLeastField, $0.belowField] }
    }

    /// The values of one of a rule's lists (empty: no condition). Setting an empty list removes it.
    public subscript(list list: TargetingList) -> [String] {
        get { lists[list] ?? [] }
        set { lists[list] = newValue.isEmpty ? nil : newValue }
    }

    /// The range a rule admits for a version attribute (empty: no condition). Setting an empty range removes it.
    public subscript(version attribute: VersionAttribute) -> VersionRange {
        get { versions[attribute] ?? VersionRange() }
        set { versions[attribute] = newValue.isEmpty ? nil : newValue }
    }
}

extension String {
    fileprivate func replacingUnderscores(with separator: Character) -> String {
        String(map { $0 == "_" ? separator : $0 })
    }
}
