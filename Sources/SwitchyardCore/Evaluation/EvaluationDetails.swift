/// An evaluation with its names resolved: what `flagctl explain`, OFREP and logs show.
public struct EvaluationDetails: Sendable, Hashable {
    public var flagKey: String
    public var value: FlagValue
    /// `on` / `off` for plugin switches, the variant key for experiments.
    public var variant: String
    public var reason: EvaluationReason
    public var errorCode: EvaluationErrorCode?
    public var errorMessage: String?
    /// What decided, for people: `kill switch 'kill_home_feed' entry 0 (cities lagos)`, `rule 1`, ...
    public var decidedBy: String
    /// What decided, for machines: `kill_switch`, `kill_entry`, `scope`, `rule`, `bucket`, `flag_type`.
    public var metadata: JSONObject
    /// The unit's bucket 0...9999 when one was computed.
    public var bucket: Int?

    public init(
        flagKey: String, value: FlagValue, variant: String, reason: EvaluationReason,
        errorCode: EvaluationErrorCode? = nil, errorMessage: String? = nil, decidedBy: String,
        metadata: JSONObject = JSONObject(), bucket: Int? = nil
    ) {
        self.flagKey = flagKey
        self.value = value
        self.variant = variant
        self.reason = reason
        self.errorCode = errorCode
        self.errorMessage = errorMessage
        self.decidedBy = decidedBy
        self.metadata = metadata
        self.bucket = bucket
    }

    /// The details as a JSON object with stable field names (`flagctl explain -o json`).
    public var tree: JSONObject {
        var object = JSONObject()
        object["key"] = .string(flagKey)
        object["value"] = value.jsonValue
        object["variant"] = .string(variant)
        object["reason"] = .string(reason.openFeatureName)
        if let errorCode { object["error_code"] = .string(errorCode.openFeatureName) }
        if let errorMessage { object["error_message"] = .string(errorMessage) }
        object["decided_by"] = .string(decidedBy)
        object["bucket"] = bucket.map { .int($0) } ?? .null
        object["metadata"] = .object(metadata)
        return object
    }
}

extension Evaluator {
    /// Evaluates a flag by key and resolves every name in the result.
    public func details(for key: String) -> EvaluationDetails {
        guard let handle = snapshot.handle(for: key) else {
            return EvaluationDetails(
                flagKey: key, value: .boolean(false), variant: "off", reason: .error,
                errorCode: .flagNotFound,
                errorMessage:
                    "flag '\(key)' is not in namespace '\(snapshot.namespace)' at version \(snapshot.version)",
                decidedBy: "no such flag")
        }
        return details(for: handle, evaluation: evaluate(handle))
    }

    /// Resolves the names of an evaluation of a flag.
    public func details(for handle: FlagHandle, evaluation: Evaluation) -> EvaluationDetails {
        guard let flag = snapshot.flag(handle) else {
            return EvaluationDetails(
                flagKey: "", value: .boolean(false), variant: "off", reason: .error,
                errorCode: .flagNotFound, decidedBy: "no such flag")
        }
        let flagSet = snapshot.snapshot.flagSet
        var metadata = JSONObject()
        metadata["flag_type"] = .string(flag.typeName)
        var decidedBy: String
        switch evaluation.decision {
        case .killed(let killIndex, let entryIndex):
            let kill = flagSet.killSwitches[Int(killIndex)]
            let entry = kill.entries[Int(entryIndex)]
            metadata["kill_switch"] = .string(kill.key)
            metadata["kill_entry"] = .int(Int(entryIndex))
            metadata["scope"] = .string(entry.description)
            decidedBy =
                "\(kill.isMaster ? "master kill switch" : "kill switch '\(kill.key)'") entry \(entryIndex) (\(entry.description))"
        case .disabled:
            metadata["scope"] = .string(Scope.everywhere.description)
            decidedBy = "disabled everywhere"
        case .disabledInScope(let scopeIndex):
            let scope = flag.pluginSwitch?.disabledScopes[Int(scopeIndex)] ?? .everywhere
            metadata["disabled_scope"] = .int(Int(scopeIndex))
            metadata["scope"] = .string(scope.description)
            decidedBy = "disabled in scope \(scopeIndex) (\(scope.description))"
        case .rule(let ruleIndex):
            metadata["rule"] = .int(Int(ruleIndex))
            let name = flag.pluginSwitch?.rules[Int(ruleIndex)].name ?? flag.experiment?.rules[Int(ruleIndex)].name
            decidedBy = "rule \(ruleIndex)" + (name.map { " '\($0)'" } ?? "")
            if let rollout = flag.pluginSwitch?.rules[Int(ruleIndex)].rollout { decidedBy += " at \(rollout)" }
        case .fallback:
            if let gate = flag.pluginSwitch {
                decidedBy =
                    (gate.rules.isEmpty ? "default rollout" : "no rule held; default rollout") + " \(gate.rollout)"
            } else {
                decidedBy =
                    (flag.experiment?.rules.isEmpty ?? true) ? "the flag's weights" : "no rule held; the flag's weights"
            }
        case .notFound:
            decidedBy = "no such flag"
        case .typeMismatch:
            decidedBy = "'\(flag.key)' is an experiment flag, not a plugin switch"
        }
        if let bucket = evaluation.bucket {
            metadata["bucket"] = .int(bucket)
        }
        var errorMessage: String?
        if evaluation.errorCode == .targetingKeyMissing {
            errorMessage = "a bucket is needed and the context has no unit id (targeting key)"
        }
        let value: FlagValue
        let variant: String
        // An experiment asked as a plugin switch answers as a switch would: off.
        if let experiment = flag.experiment, evaluation.decision != .typeMismatch {
            let chosen =
                experiment.variants.indices.contains(Int(evaluation.variantIndex))
                ? experiment.variants[Int(evaluation.variantIndex)] : nil
            value = chosen?.value ?? .boolean(false)
            variant = chosen?.key ?? experiment.defaultVariant
        } else {
            value = .boolean(evaluation.isOn)
            variant = evaluation.isOn ? "on" : "off"
        }
        return EvaluationDetails(
            flagKey: flag.key, value: value, variant: variant, reason: evaluation.reason,
            errorCode: evaluation.errorCode, errorMessage: errorMessage, decidedBy: decidedBy,
            metadata: metadata, bucket: evaluation.bucket)
    }
}
