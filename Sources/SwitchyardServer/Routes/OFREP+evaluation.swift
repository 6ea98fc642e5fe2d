import HTTPTypes
import SwitchyardCore

/// One flag's evaluation in OFREP's JSON form, by the interop profile in docs/openfeature.md:
///
/// - `variant` always: `on` / `off` for plugin switches, the variant key for experiment flags.
/// - `reason` only from OFREP's list: STATIC (also for Switchyard's DEFAULT), TARGETING_MATCH, SPLIT, DISABLED;
///   UNKNOWN for anything else.
/// - `value` in its type, floats always with a decimal point (the core's JSON writer, never Foundation's);
///   left out (never `null`) when a killed experiment flag defers to the code default, per OFREP ADR 0006.
/// - An evaluation that fails (a bucket is needed and the context has no targeting key) is an error, never a
///   200 carrying an error code.
enum OFREPEvaluation {
    /// A success object (`key`, `value`?, `variant`, `reason`, `metadata`) or the error of a failed evaluation.
    enum Outcome {
        case success(JSONObject)
        case failure(OFREPError)
    }

    /// Evaluates one flag of a compiled snapshot for a prepared context.
    static func evaluate(_ handle: FlagHandle, with evaluator: Evaluator) -> Outcome {
        let details = evaluator.details(for: handle, evaluation: evaluator.evaluate(handle))
        var metadata = details.metadata
        metadata["decided_by"] = .string(details.decidedBy)
        if let errorCode = details.errorCode {
            // The handle exists and `evaluate` never reports a type mismatch: a missing targeting key is the one
            // error an evaluation can end in.
            let code = errorCode == .targetingKeyMissing ? "TARGETING_KEY_MISSING" : "GENERAL"
            let details =
                errorCode == .targetingKeyMissing
                ? "flag '\(details.flagKey)' needs a bucket to decide (\(details.decidedBy)) and the context has no targetingKey; send the unit id (user or device) as targetingKey"
                : "flag '\(details.flagKey)' could not be evaluated: \(details.errorMessage ?? errorCode.openFeatureName)"
            return .failure(OFREPError(.badRequest, code, details))
        }
        var object = JSONObject()
        object["key"] = .string(details.flagKey)
        let isExperiment = evaluator.snapshot.flag(handle)?.experiment != nil
        if isExperiment && details.reason == .disabled {
            metadata["code_default"] = .bool(true)
        } else {
            object["value"] = details.value.jsonValue
        }
        object["variant"] = .string(details.variant)
        object["reason"] = .string(reasonName(details.reason))
        object["metadata"] = .object(metadata)
        return .success(object)
    }

    /// The OFREP reason of a Switchyard reason: OFREP lists STATIC, TARGETING_MATCH, SPLIT, DISABLED and UNKNOWN.
    static func reasonName(_ reason: EvaluationReason) -> String {
        switch reason {
        case .static, .default: "STATIC"
        case .targetingMatch: "TARGETING_MATCH"
        case .split: "SPLIT"
        case .disabled: "DISABLED"
        case .cached, .stale, .error, .unknown: "UNKNOWN"
        }
    }

    /// Every flag of a snapshot, in flag-set order: successes and `{key, errorCode, errorDetails}` failures.
    static func evaluateAll(with evaluator: Evaluator) -> [JSONValue] {
        let flags = evaluator.snapshot.snapshot.flagSet.flags
        return flags.indices.map { index in
            switch evaluate(FlagHandle(index: Int32(index)), with: evaluator) {
            case .success(let object):
                return .object(object)
            case .failure(let error):
                return .object(
                    JSONObject([
                        ("key", .string(flags[index].key)), ("errorCode", .string(error.errorCode)),
                        ("errorDetails", .string(error.errorDetails)),
                    ]))
            }
        }
    }
}
