/// Why a flag has its value, in OpenFeature's vocabulary (`shared/specs/openfeature/types.md`).
public enum EvaluationReason: UInt8, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// The value is fixed: a switch without rules at 0 % or 100 %.
    case `static`
    /// No rule held; the flag's default rollout decided.
    case `default`
    /// A rule held and decided without a bucket.
    case targetingMatch
    /// A bucket decided (partial rollout or weighted variants).
    case split
    /// From a snapshot read from disk before the first live one.
    case cached
    /// Killed or disabled.
    case disabled
    /// From a snapshot older than the staleness policy allows.
    case stale
    case error
    case unknown

    /// `STATIC`, `TARGETING_MATCH`, ...
    public var openFeatureName: String {
        switch self {
        case .static: "STATIC"
        case .default: "DEFAULT"
        case .targetingMatch: "TARGETING_MATCH"
        case .split: "SPLIT"
        case .cached: "CACHED"
        case .disabled: "DISABLED"
        case .stale: "STALE"
        case .error: "ERROR"
        case .unknown: "UNKNOWN"
        }
    }

    public var description: String { openFeatureName }

    /// Parses an OpenFeature reason name.
    public init?(openFeatureName: String) {
        guard let reason = Self.allCases.first(where: { $0.openFeatureName == openFeatureName }) else { return nil }
        self = reason
    }
}

/// What went wrong in an evaluation, in OpenFeature's vocabulary.
public enum EvaluationErrorCode: UInt8, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    case providerNotReady
    case flagNotFound
    case parseError
    case typeMismatch
    case targetingKeyMissing
    case invalidContext
    case providerFatal
    case general

    /// `FLAG_NOT_FOUND`, `TARGETING_KEY_MISSING`, ...
    public var openFeatureName: String {
        switch self {
        case .providerNotReady: "PROVIDER_NOT_READY"
        case .flagNotFound: "FLAG_NOT_FOUND"
        case .parseError: "PARSE_ERROR"
        case .typeMismatch: "TYPE_MISMATCH"
        case .targetingKeyMissing: "TARGETING_KEY_MISSING"
        case .invalidContext: "INVALID_CONTEXT"
        case .providerFatal: "PROVIDER_FATAL"
        case .general: "GENERAL"
        }
    }

    public var description: String { openFeatureName }

    public init?(openFeatureName: String) {
        guard let code = Self.allCases.first(where: { $0.openFeatureName == openFeatureName }) else { return nil }
        self = code
    }
}

/// Which step of the evaluation table decided.
public enum Decision: Sendable, Hashable {
    /// A kill entry matched: the index of the kill switch in the flag set and of the entry in it.
    case killed(killSwitch: Int32, entry: Int32)
    /// The switch is disabled everywhere.
    case disabled
    /// A scoped disable matched: its index in the switch's `disabledScopes`.
    case disabledInScope(Int32)
    /// The rule at this index held.
    case rule(Int32)
    /// No rule held; the default rollout or weights decided.
    case fallback
    /// The flag does not exist in the snapshot.
    case notFound
    /// The flag exists but has another type (an experiment asked as a plugin switch).
    case typeMismatch
}

/// The result of evaluating one flag: plain data, no allocation.
public struct Evaluation: Sendable, Hashable {
    /// For plugin switches, whether the switch is on. False for experiment flags.
    public var isOn: Bool
    /// For plugin switches 0 (`off`) or 1 (`on`); for experiments the index of the variant served.
    public var variantIndex: Int32
    public var reason: EvaluationReason
    public var errorCode: EvaluationErrorCode?
    public var decision: Decision
    /// The unit's bucket 0...9999 when a bucket was computed, else -1.
    public var rawBucket: Int32

    @inline(__always)
    init(
        isOn: Bool, variantIndex: Int32, reason: EvaluationReason, errorCode: EvaluationErrorCode? = nil,
        decision: Decision, bucket: Int32 = -1
    ) {
        self.isOn = isOn
        self.variantIndex = variantIndex
        self.reason = reason
        self.errorCode = errorCode
        self.decision = decision
        self.rawBucket = bucket
    }

    /// The unit's bucket 0...9999, when a step needed one.
    public var bucket: Int? { rawBucket >= 0 ? Int(rawBucket) : nil }

    static let notFound = Evaluation(
        isOn: false, variantIndex: 0, reason: .error, errorCode: .flagNotFound, decision: .notFound)
    static let typeMismatch = Evaluation(
        isOn: false, variantIndex: 0, reason: .error, errorCode: .typeMismatch, decision: .typeMismatch)
}

/// A flag of one compiled snapshot, resolved once so evaluation needs no string lookup.
///
/// A handle is only meaningful for the snapshot that issued it.
public struct FlagHandle: Sendable, Hashable {
    public let index: Int32

    public init(index: Int32) {
        self.index = index
    }
}
