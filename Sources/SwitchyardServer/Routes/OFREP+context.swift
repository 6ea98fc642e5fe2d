import SwitchyardCore

/// An OFREP request body's evaluation context, mapped to Switchyard's.
///
/// | OpenFeature context | Switchyard |
/// |---|---|
/// | `targetingKey` | the unit id (bucketing hashes it); missing or empty: no unit id |
/// | `city` | the city |
/// | `cohort`, `cohorts` | the cohorts: a string or a list of strings, both keys merged |
/// | `appVersion` and every version attribute's key (`VersionAttribute.contextKey`) | that version (a semantic version string) |
/// | `platform` | the platform |
/// | anything else | passed through as an attribute (rules do not read attributes) |
///
/// A `null` member counts as absent. Extra members of the body beside `context` are ignored, and a body
/// without `context` evaluates with an empty context.
enum OFREPContext {
    /// The context of a request body.
    ///
    /// - Throws: `OFREPError` 400 `PARSE_ERROR` when the body is not a JSON object, `INVALID_CONTEXT` when
    ///   `context` or one of its known members has the wrong type (naming the member).
    static func read(_ body: JSONValue) throws(OFREPError) -> EvaluationContext {
        guard case .object(let request) = body else {
            throw .parse(
                "the body must be a JSON object like {\"context\": {\"targetingKey\": \"user-1\"}}, not \(body.typeDescription)"
            )
        }
        guard let value = request["context"], value != .null else { return EvaluationContext() }
        guard case .object(let members) = value else {
            throw .invalidContext("context must be an object, not \(value.typeDescription)")
        }
        var context = EvaluationContext()
        for (name, value) in members where value != .null {
            switch name {
            case "targetingKey":
                let unitId = try string(value, name)
                context.unitId = unitId.isEmpty ? nil : unitId
            case "city":
                context.city = try string(value, name)
            case "cohort", "cohorts":
                for cohort in try strings(value, name) where !context.cohorts.contains(cohort) {
                    context.cohorts.append(cohort)
                }
            case "platform":
                context.platform = try string(value, name)
            default:
                if let attribute = VersionAttribute(contextKey: name) {
                    context[keyPath: attribute.contextValue] = try string(value, name)
                    continue
                }
                if case .string(let text) = value {
                    context.attributes[name] = text
                } else {
                    context.attributes[name] = value.serializedString()
                }
            }
        }
        return context
    }

    private static func string(_ value: JSONValue, _ name: String) throws(OFREPError) -> String {
        guard case .string(let text) = value else {
            throw .invalidContext("context.\(name) must be a string, not \(value.typeDescription)")
        }
        return text
    }

    private static func strings(_ value: JSONValue, _ name: String) throws(OFREPError) -> [String] {
        switch value {
        case .string(let text):
            return text.isEmpty ? [] : [text]
        case .array(let elements):
            var texts: [String] = []
            for (index, element) in elements.enumerated() {
                guard case .string(let text) = element else {
                    throw .invalidContext("context.\(name)[\(index)] must be a string, not \(element.typeDescription)")
                }
                if !text.isEmpty { texts.append(text) }
            }
            return texts
        default:
            throw .invalidContext("context.\(name) must be a string or a list of strings, not \(value.typeDescription)")
        }
    }
}
