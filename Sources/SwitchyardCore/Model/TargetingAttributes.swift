/// What a rule's conditions can ask of an evaluation context, each described once.
///
/// The conditions model (`Conditions`), both evaluators (`Conditions.hold` and the compiled `Evaluator`), the
/// document codec, OFREP's context, `flagctl explain` and the JSON Schema tests follow these descriptions:
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

extension Conditions {
    /// The condition lists, by their names in documents: what an edit of targeting adds to and removes from.
    public static var targetingLists: [(String, WritableKeyPath<Conditions, [String]>)] {
        [
            ("cities", \.cities), ("not_cities", \.notCities), ("cohorts", \.cohorts), ("not_cohorts", \.notCohorts),
            ("units", \.units), ("platforms", \.platforms),
        ]
    }

    /// Every condition field of a rule in documents (the lists, then each version attribute's two bounds).
    public static var fieldNames: [String] {
        targetingLists.map(\.0) + VersionAttribute.allCases.flatMap { [$0.atLeastField, $0.belowField] }
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
