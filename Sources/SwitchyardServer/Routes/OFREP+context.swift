import SwitchyardCore

/// An OFREP request body's evaluation context, mapped to Switchyard's.
///
/// | OpenFeature context | Switchyard |
/// |---|---|
/// | `targetingKey` | the unit id (bucketing hashes it); missing or empty: no unit id |
/// | every list attribute's keys (`ListAttribute.contextKeys`): `city`, `platform` | its value, a string |
/// | `cohort`, `cohorts` (a multi-valued list attribute's keys) | its values: a string or a list of strings, both keys merged |
/// | `appVersion` and every version attribute's key (`VersionAttribute.contextKey`) | that version (a semantic version string) |
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
        var lists: [ListAttribute: [String]] = [:]
        for (name, value) in members where value != .null {
            if let attribute = ListAttribute(contextKey: name) {
                if attribute.isMultiValued {
                    for text in try strings(value, name) where !(lists[attribute]?.contains(text) ?? false) {
                        lists[attribute, default: []].append(text)
                    }
                } else {
                    let text = try string(value, name)
                    // An empty targeting key is no unit id (bucketing would put every such unit in one bucket).
                    lists[attribute] = attribute == .unit && text.isEmpty ? [] : [text]
                }
            } else if let attribute = VersionAttribute(contextKey: name) {
                context[keyPath: attribute.contextValue] = try string(value, name)
            } else if case .string(let text) = value {
                context.attributes[name] = text
            } else {
                context.attributes[name] = value.serializedString()
            }
        }
        for (attribute, values) in lists { attribute.setValues(values, in: &context) }
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
