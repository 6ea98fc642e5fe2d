extension MetricDefinition {
    /// The fields of a metric's object (its name is the member name under `metrics`).
    static let fieldNames = ["description", "owner", "kind", "better", "cap", "numerator", "denominator"]

    /// Reads the `metrics` map of a flag set document, reporting every problem with its path.
    static func readAll(_ value: JSONValue, reader: TreeReader) -> [MetricDefinition] {
        let path = FieldPath("metrics")
        guard let members = reader.object(value, at: path) else { return [] }
        var metrics: [MetricDefinition] = []
        for (name, element) in members.object {
            let metricPath = path / name
            if let problem = NameRule.metric.problem(with: name) {
                reader.report(metricPath, problem)
                continue
            }
            if let metric = read(element, name: name, at: metricPath, reader: reader) { metrics.append(metric) }
        }
        return metrics
    }

    /// Reads one metric's object: what its fields say; ``FlagSet/validate()`` checks how they fit together.
    static func read(_ value: JSONValue, name: String, at path: FieldPath, reader: TreeReader) -> MetricDefinition? {
        guard var object = reader.object(value, at: path) else { return nil }
        let description = object.string("description", rule: .text)
        let owner = object.string("owner", rule: .text)
        let kindName = object.string("kind", required: true)
        let kind = kindName.flatMap(Kind.init(rawValue:))
        if let kindName, kind == nil {
            reader.report(path / "kind", "'\(kindName)' is not a metric kind (conversion, count, value or ratio)")
        }
        var better = Direction.higher
        if let text = object.string("better") {
            if let direction = Direction(rawValue: text) {
                better = direction
            } else {
                reader.report(path / "better", "'\(text)' is not higher or lower")
            }
        }
        var cap: Double?
        if let value = object.value("cap") {
            if case .number(let number) = value, let double = number.doubleValue, double.isFinite {
                cap = double
            } else if case .number(let number) = value {
                reader.report(path / "cap", "\(number.literal) is not a finite number")
            } else {
                reader.report(path / "cap", "must be a number, not \(value.typeDescription)")
            }
        }
        let numerator = object.string("numerator", rule: .metric)
        let denominator = object.string("denominator", rule: .metric)
        object.finish()
        guard let kind else { return nil }
        return MetricDefinition(
            name: name, description: description, owner: owner, kind: kind, better: better, cap: cap,
            numerator: numerator, denominator: denominator)
    }

    /// The metric as a JSON object (without its name, which is the member name), leaving out defaults
    /// (`better: higher`) and fields not set. A whole-number cap is written as an integer (`cap: 200`).
    public var tree: JSONObject {
        var object = JSONObject()
        if let description { object["description"] = .string(description) }
        if let owner { object["owner"] = .string(owner) }
        object["kind"] = .string(kind.rawValue)
        if better != .higher { object["better"] = .string(better.rawValue) }
        if let cap { object["cap"] = Self.jsonNumber(cap) }
        if let numerator { object["numerator"] = .string(numerator) }
        if let denominator { object["denominator"] = .string(denominator) }
        return object
    }

    /// A cap as JSON: an integer when it is a whole number a double holds exactly, else a decimal.
    public static func jsonNumber(_ value: Double) -> JSONValue {
        if value.rounded() == value, abs(value) <= 9_007_199_254_740_992 { return .int64(Int64(value)) }
        return .number(JSONNumber(value))
    }
}

extension FieldPath {
    /// The metric a path is under (`metrics.fare.cap` → `fare`).
    var metricName: String? {
        guard components.count >= 2, components[0] == .key("metrics"), case .key(let name) = components[1] else {
            return nil
        }
        return name
    }
}
