import Hummingbird
import SwitchyardCore
import SwitchyardStorage

extension Request {
    /// Reads the body as a JSON tree, refusing more than `limit` bytes; an empty body reads as `{}`.
    ///
    /// - Throws: `APIError` 413 past the limit, 400 naming the line and column of malformed JSON.
    func jsonBody(limit: Int) async throws -> JSONValue {
        if let length = headers[.contentLength].flatMap(Int.init), length > limit {
            throw APIError.tooLarge(limit: limit)
        }
        var bytes: [UInt8] = []
        for try await chunk in body {
            guard bytes.count + chunk.readableBytes <= limit else { throw APIError.tooLarge(limit: limit) }
            bytes.append(contentsOf: chunk.readableBytesView)
        }
        if bytes.allSatisfy({ $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }) { return .object(JSONObject()) }
        do {
            return try JSONValue.parse(bytes)
        } catch {
            throw APIError.badRequest("the body is not valid JSON: \(error)", path: .root)
        }
    }
}

extension APIError {
    static func tooLarge(limit: Int) -> APIError {
        APIError(
            .contentTooLarge, "body-too-large", "The body is too large",
            "the request body is larger than \(limit) bytes, the limit of this server (--max-body-size)")
    }
}

/// Collects every problem in a request body, with field paths, so a 400 names them all at once.
final class BodyProblems {
    private(set) var problems: [ValidationProblem] = []

    func report(_ path: FieldPath, _ message: String) {
        problems.append(ValidationProblem(path: path, message: message))
    }

    func add(_ more: [ValidationProblem]) {
        problems += more
    }

    /// Throws a 400 naming every problem, when there is any.
    func check() throws(APIError) {
        guard !problems.isEmpty else { return }
        let first = problems[0].description
        let detail = problems.count == 1 ? first : "\(first) (and \(problems.count - 1) more problems)"
        throw APIError.invalid(detail, problems: problems)
    }
}

/// Reads the members of a JSON object in a request body, reporting wrong types and unknown fields.
struct BodyObject {
    let object: JSONObject
    let path: FieldPath
    let problems: BodyProblems
    private var consumed: Set<String> = []

    /// The object at a path, or nil (reported) when the value is not an object.
    init?(_ value: JSONValue, at path: FieldPath = .root, problems: BodyProblems) {
        guard case .object(let object) = value else {
            problems.report(path, "must be an object, not \(value.typeDescription)")
            return nil
        }
        self.object = object
        self.path = path
        self.problems = problems
    }

    mutating func value(_ key: String, required: Bool = false) -> JSONValue? {
        consumed.insert(key)
        guard let value = object[key], value != .null else {
            if required { problems.report(path / key, "is required") }
            return nil
        }
        return value
    }

    mutating func string(_ key: String, required: Bool = false) -> String? {
        guard let value = value(key, required: required) else { return nil }
        guard case .string(let string) = value else {
            problems.report(path / key, "must be a string, not \(value.typeDescription)")
            return nil
        }
        return string
    }

    mutating func integer(_ key: String, required: Bool = false, in range: ClosedRange<Int64>) -> Int64? {
        guard let value = value(key, required: required) else { return nil }
        guard case .number(let number) = value, let integer = number.int64Value else {
            problems.report(path / key, "must be an integer, not \(value.typeDescription)")
            return nil
        }
        guard range.contains(integer) else {
            problems.report(path / key, "\(integer) is not between \(range.lowerBound) and \(range.upperBound)")
            return nil
        }
        return integer
    }

    mutating func bool(_ key: String) -> Bool? {
        guard let value = value(key) else { return nil }
        guard case .bool(let bool) = value else {
            problems.report(path / key, "must be true or false, not \(value.typeDescription)")
            return nil
        }
        return bool
    }

    mutating func stringList(_ key: String) -> [String]? {
        guard let value = value(key) else { return nil }
        guard case .array(let elements) = value else {
            problems.report(path / key, "must be a list of strings, not \(value.typeDescription)")
            return nil
        }
        var strings: [String] = []
        for (index, element) in elements.enumerated() {
            guard case .string(let string) = element, !string.isEmpty else {
                problems.report(path / key / index, "must be a non-empty string, not \(element.typeDescription)")
                continue
            }
            if !strings.contains(string) { strings.append(string) }
        }
        return strings
    }

    mutating func object(_ key: String, required: Bool = false) -> BodyObject? {
        guard let value = value(key, required: required) else { return nil }
        return BodyObject(value, at: path / key, problems: problems)
    }

    /// A scope object: `{"cities": [...], "cohorts": [...]}`.
    mutating func scope(_ key: String) -> Scope? {
        guard var object = object(key) else { return nil }
        let scope = Scope(cities: object.stringList("cities") ?? [], cohorts: object.stringList("cohorts") ?? [])
        object.finish()
        return scope
    }

    /// Reports every member that was not read.
    func finish() {
        for (key, _) in object where !consumed.contains(key) {
            var message = "unknown field"
            let known = consumed.sorted()
            if !known.isEmpty { message += " (known fields: \(known.joined(separator: ", ")))" }
            problems.report(path / key, message)
        }
    }
}
