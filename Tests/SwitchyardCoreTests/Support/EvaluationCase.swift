import SwitchyardCore
import Testing

/// Which step of the evaluation table decided, in the words of the case files (`Data/evaluation/README.md`).
enum DecisionStep: Sendable, Hashable, CustomStringConvertible {
    case kill(killSwitch: String, entry: Int)
    case disabled
    case disabledScope(Int)
    case rule(Int)
    case fallback
    case notFound
    case typeMismatch

    init(_ tree: JSONValue, in path: String) throws {
        switch try tree.string("step", in: path) {
        case "kill":
            self = .kill(
                killSwitch: try tree.string("kill_switch", in: path), entry: Int(try tree.integer("entry", in: path)))
        case "disabled": self = .disabled
        case "disabled_scope": self = .disabledScope(Int(try tree.integer("index", in: path)))
        case "rule": self = .rule(Int(try tree.integer("index", in: path)))
        case "fallback": self = .fallback
        case "not_found": self = .notFound
        case "type_mismatch": self = .typeMismatch
        case let other: throw DataError(path: path, message: "'\(other)' is not a decision step")
        }
    }

    /// The step of an engine decision, naming kill switches by key.
    init(_ decision: Decision, in flagSet: FlagSet) {
        switch decision {
        case .killed(let killSwitch, let entry):
            self = .kill(killSwitch: flagSet.killSwitches[Int(killSwitch)].key, entry: Int(entry))
        case .disabled: self = .disabled
        case .disabledInScope(let index): self = .disabledScope(Int(index))
        case .rule(let index): self = .rule(Int(index))
        case .fallback: self = .fallback
        case .notFound: self = .notFound
        case .typeMismatch: self = .typeMismatch
        }
    }

    var description: String {
        switch self {
        case .kill(let key, let entry): "kill switch \(key) entry \(entry)"
        case .disabled: "disabled"
        case .disabledScope(let index): "disabled scope \(index)"
        case .rule(let index): "rule \(index)"
        case .fallback: "fallback"
        case .notFound: "not found"
        case .typeMismatch: "type mismatch"
        }
    }
}

/// Everything a case expects of one evaluation. The value is compared as canonical JSON, so `1.0` ≠ `1`.
struct Outcome: Sendable, Hashable, CustomStringConvertible {
    var value: String
    var variant: String
    var reason: String
    var errorCode: String?
    var decision: DecisionStep
    var bucket: Int?

    init(value: String, variant: String, reason: String, errorCode: String?, decision: DecisionStep, bucket: Int?) {
        self.value = value
        self.variant = variant
        self.reason = reason
        self.errorCode = errorCode
        self.decision = decision
        self.bucket = bucket
    }

    init(
        value: FlagValue, variant: String, reason: EvaluationReason, errorCode: EvaluationErrorCode?,
        decision: DecisionStep, bucket: Int?
    ) {
        self.init(
            value: value.jsonValue.serializedString(), variant: variant, reason: reason.openFeatureName,
            errorCode: errorCode?.openFeatureName, decision: decision, bucket: bucket)
    }

    var description: String {
        "value \(value), variant \(variant), \(reason)\(errorCode.map { " (\($0))" } ?? ""), \(decision)"
            + (bucket.map { ", bucket \($0)" } ?? "")
    }
}

/// One evaluation file: a flag set and the cases evaluated against it.
final class EvaluationFile: Sendable {
    let name: String
    let description: String
    let flagSet: FlagSet
    let compiled: CompiledSnapshot

    init(name: String, description: String, flagSet: FlagSet) {
        self.name = name
        self.description = description
        self.flagSet = flagSet
        compiled = CompiledSnapshot(Snapshot(epoch: "test-epoch", version: 1, flagSet: flagSet))
    }
}

/// One case of an evaluation file.
struct EvaluationCase: Sendable, CustomTestStringConvertible {
    let file: EvaluationFile
    let index: Int
    let description: String
    let flagKey: String
    /// Asked as a plugin switch (`evaluateSwitch`) rather than as a flag of any type.
    let askedAsSwitch: Bool
    let context: EvaluationContext
    let expected: Outcome

    var testDescription: String { "\(file.name) #\(index): \(description)" }

    /// Every case of every file in `Data/evaluation/`, loaded once.
    static func all() throws -> [EvaluationCase] {
        try loaded.get()
    }

    static func files() throws -> [EvaluationFile] {
        var files: [EvaluationFile] = []
        for testCase in try all() where !files.contains(where: { $0 === testCase.file }) { files.append(testCase.file) }
        return files
    }

    private static let loaded = Result<[EvaluationCase], any Error> {
        var cases: [EvaluationCase] = []
        for name in try TestData.jsonFiles(in: "evaluation") {
            cases += try load(file: name)
        }
        return cases
    }

    /// A case's context: `unit_id`, `city`, `cohorts`, `platform` and each version attribute by its document name
    /// (`app_version`, `os_version`).
    private static func context(_ tree: JSONValue) -> EvaluationContext {
        var context = EvaluationContext(
            unitId: tree["unit_id"]?.stringValue, city: tree["city"]?.stringValue,
            cohorts: tree["cohorts"]?.arrayValue?.compactMap(\.stringValue) ?? [],
            platform: tree["platform"]?.stringValue)
        for attribute in VersionAttribute.allCases {
            context[keyPath: attribute.contextValue] = tree[attribute.rawValue]?.stringValue
        }
        return context
    }

    private static func load(file name: String) throws -> [EvaluationCase] {
        let path = "evaluation/\(name)"
        let tree = try TestData.json(path)
        let flagSet: FlagSet
        do {
            flagSet = try FlagSet(tree: try tree.required("flag_set", in: path), unit: .basisPoints, file: path)
        } catch let error as DefinitionError {
            throw DataError(path: path, message: "the flag set does not validate:\n\(error)")
        }
        let file = EvaluationFile(name: name, description: try tree.string("description", in: path), flagSet: flagSet)
        return try tree.array("cases", in: path).enumerated().map { index, element in
            let casePath = "\(path) cases[\(index)]"
            let context = try element.required("context", in: casePath)
            let expected = try element.required("expected", in: casePath)
            let ask = element["ask"]?.stringValue ?? "flag"
            guard ask == "flag" || ask == "switch" else {
                throw DataError(path: casePath, message: "ask must be 'flag' or 'switch'")
            }
            return EvaluationCase(
                file: file, index: index, description: try element.string("description", in: casePath),
                flagKey: try element.string("flag", in: casePath), askedAsSwitch: ask == "switch",
                context: Self.context(context),
                expected: Outcome(
                    value: try expected.required("value", in: casePath).serializedString(),
                    variant: try expected.string("variant", in: casePath),
                    reason: try expected.string("reason", in: casePath),
                    errorCode: expected["error_code"]?.stringValue,
                    decision: try DecisionStep(try expected.required("decision", in: casePath), in: casePath),
                    bucket: expected["bucket"]?.int64Value.map(Int.init)))
        }
    }
}
