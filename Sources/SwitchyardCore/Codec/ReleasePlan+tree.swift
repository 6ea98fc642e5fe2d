extension ReleasePlan {
    static let fieldNames = [
        "stages", "soak", "min_sessions", "margin", "confidence", "on_bad_signal", "guardrails", "state",
    ]

    /// Reads a plan (as under `release:` of a plugin switch), reporting every problem with its path.
    ///
    /// - Throws: `DefinitionError` with every problem found, paths under `at`.
    public init(tree: JSONValue, unit: RolloutUnit, at path: FieldPath = .root) throws(DefinitionError) {
        let reader = TreeReader(file: nil)
        let plan = ReleasePlan.read(tree, at: path, unit: unit, reader: reader)
        guard let plan, reader.problems.isEmpty else {
            throw DefinitionError(
                problems: reader.problems.isEmpty
                    ? [ValidationProblem(path: path, message: "is not a release plan")] : reader.problems)
        }
        self = plan
    }

    /// Reads a plan object, reporting every problem with its path.
    static func read(_ value: JSONValue, at path: FieldPath, unit: RolloutUnit, reader: TreeReader) -> ReleasePlan? {
        guard var object = reader.object(value, at: path) else { return nil }
        var plan = ReleasePlan(stages: [])
        plan.soak = readSoak(&object, reader: reader)
        plan.minimumSessions = readMinimumSessions(&object, reader: reader)
        if let value = object.value("margin"),
            let margin = Rollout.read(value, at: path / "margin", unit: unit, reader: reader)
        {
            if margin.basisPoints > 1000 {
                reader.report(
                    path / "margin",
                    "\(unit == .percent ? margin.percentText : String(margin.basisPoints)) is more than \(unit == .percent ? "10" : "1000") (crash-rate points a switch may add and still advance)"
                )
            } else {
                plan.margin = margin
            }
        }
        if let value = object.value("confidence"),
            let confidence = Rollout.read(value, at: path / "confidence", unit: unit, reader: reader)
        {
            if confidence.basisPoints < 5000 || confidence == .full {
                reader.report(
                    path / "confidence",
                    "\(unit == .percent ? confidence.percentText : String(confidence.basisPoints)) is not between \(unit == .percent ? "50 and 99.99" : "5000 and 9999")"
                )
            } else {
                plan.confidence = confidence
            }
        }
        if let text = object.string("on_bad_signal") {
            if let action = BadSignalAction(rawValue: text) {
                plan.onBadSignal = action
            } else {
                reader.report(path / "on_bad_signal", "'\(text)' is not previous or off")
            }
        }
        if let value = object.value("guardrails") {
            plan.guardrails = readGuardrails(value, at: path / "guardrails", reader: reader)
        }
        if let value = object.value("stages", required: true), let elements = reader.list(value, at: path / "stages") {
            if elements.isEmpty { reader.report(path / "stages", "must list at least one stage") }
            if elements.count > maximumStages {
                reader.report(path / "stages", "has \(elements.count) stages; at most \(maximumStages)")
            }
            for (index, element) in elements.enumerated() {
                let stagePath = path / "stages" / index
                guard var stage = reader.object(element, at: stagePath) else { continue }
                let scope = Scope(
                    cities: stage.stringList("cities", rule: .attribute),
                    cohorts: stage.stringList("cohorts", rule: .attribute))
                let rollout = stage.value("rollout", required: true).flatMap {
                    Rollout.read($0, at: stagePath / "rollout", unit: unit, reader: reader)
                }
                if rollout == .off {
                    reader.report(stagePath / "rollout", "must be above 0 (a stage rolls the switch out to some units)")
                }
                let soak = readSoak(&stage, reader: reader)
                let minimumSessions = readMinimumSessions(&stage, reader: reader)
                stage.finish()
                if let rollout, rollout != .off {
                    plan.stages.append(
                        ReleaseStage(scope: scope, rollout: rollout, soak: soak, minimumSessions: minimumSessions))
                }
            }
        }
        if let value = object.value("state") {
            plan.state = ReleaseState.read(value, at: path / "state", stages: plan.stages.count, reader: reader)
        }
        object.finish()
        return plan
    }

    /// Reads guardrails on their own (`{"trip_booked": "-0.5pp"}`, as under `release: guardrails:`), as the API's
    /// `start` takes them beside a declared plan.
    ///
    /// - Throws: `DefinitionError` with every problem found, paths under `at`.
    public static func guardrails(tree: JSONValue, at path: FieldPath) throws(DefinitionError) -> [ReleaseGuardrail] {
        let reader = TreeReader(file: nil)
        let guardrails = readGuardrails(tree, at: path, reader: reader)
        guard reader.problems.isEmpty else { throw DefinitionError(problems: reader.problems) }
        return guardrails
    }

    /// Guardrails as under `release: guardrails:` (`{"trip_booked": "-0.5pp"}`), as flag files and the API's start take them.
    public static func guardrailTree(_ guardrails: [ReleaseGuardrail]) -> JSONObject {
        JSONObject(guardrails.map { ($0.metric, .string($0.margin.description)) })
    }

    /// Reads `guardrails:`, a map of metric names to margins (`trip_booked: -0.5pp`). Whether each metric exists and
    /// its margin fits it is checked with the flag set (``FlagSet/validate()``), which knows the metrics.
    private static func readGuardrails(_ value: JSONValue, at path: FieldPath, reader: TreeReader) -> [ReleaseGuardrail]
    {
        guard let members = reader.object(value, at: path) else { return [] }
        var guardrails: [ReleaseGuardrail] = []
        for (name, element) in members.object {
            if let problem = NameRule.key.problem(with: name) {
                reader.report(path / name, problem)
                continue
            }
            guard let text = element.stringValue else {
                let text = element.serializedString()
                let number =
                    element.doubleValue == nil ? "" : " (write \(text)pp for points or \(text)% for a relative change)"
                reader.report(path / name, "is not a margin such as -0.5pp or -2%\(number)")
                continue
            }
            guard let margin = ReleaseGuardrail.Margin(text) else {
                reader.report(
                    path / name, "'\(text)' is not a margin such as -0.5pp (percentage points) or -2% (relative)")
                continue
            }
            guardrails.append(ReleaseGuardrail(metric: name, margin: margin))
        }
        // By name, as every object of a stored flag set is written: one plan, one text.
        guardrails.sort { $0.metric < $1.metric }
        if guardrails.count > ReleaseGuardrail.maximumCount {
            reader.report(path, "names \(guardrails.count) metrics; at most \(ReleaseGuardrail.maximumCount)")
        }
        return guardrails
    }

    private static func readSoak(_ object: inout ObjectReader, reader: TreeReader) -> Duration? {
        guard let text = object.string("soak") else { return nil }
        guard let soak = GuardDurationText.parse(text), soak <= .seconds(30 * 86_400) else {
            reader.report(object.path / "soak", "'\(text)' is not a duration from 0s to 30d (write e.g. 30m, 2h, 1d)")
            return nil
        }
        return soak
    }

    private static func readMinimumSessions(_ object: inout ObjectReader, reader: TreeReader) -> Int? {
        guard let integer = object.integer("min_sessions") else { return nil }
        guard (1...100_000_000).contains(integer) else {
            reader.report(object.path / "min_sessions", "\(integer) is not between 1 and 100000000")
            return nil
        }
        return Int(integer)
    }

    /// The plan as a JSON object; `includingState: false` writes it as declared (what a flag file holds).
    public func tree(unit: RolloutUnit, includingState: Bool = true) -> JSONObject {
        var object = JSONObject()
        if let soak { object["soak"] = .string(GuardDurationText.text(soak)) }
        if let minimumSessions { object["min_sessions"] = .int(minimumSessions) }
        if let margin { object["margin"] = margin.jsonValue(unit: unit) }
        if let confidence { object["confidence"] = confidence.jsonValue(unit: unit) }
        if onBadSignal != .previous { object["on_bad_signal"] = .string(onBadSignal.rawValue) }
        if !guardrails.isEmpty { object["guardrails"] = .object(Self.guardrailTree(guardrails)) }
        object["stages"] = .array(
            stages.map { stage in
                var tree = stage.scope.tree
                tree["rollout"] = stage.rollout.jsonValue(unit: unit)
                if let soak = stage.soak { tree["soak"] = .string(GuardDurationText.text(soak)) }
                if let minimum = stage.minimumSessions { tree["min_sessions"] = .int(minimum) }
                return .object(tree)
            })
        if includingState, let state { object["state"] = .object(state.tree) }
        return object
    }
}

extension ReleaseState {
    /// Reads a plan's state (as under `release.state`).
    public init(tree: JSONValue) throws(DefinitionError) {
        let reader = TreeReader(file: nil)
        guard let state = ReleaseState.read(tree, at: .root, stages: Int.max, reader: reader), reader.problems.isEmpty
        else {
            throw DefinitionError(
                problems: reader.problems.isEmpty
                    ? [ValidationProblem(path: .root, message: "is not a release state")] : reader.problems)
        }
        self = state
    }

    static func read(_ value: JSONValue, at path: FieldPath, stages: Int, reader: TreeReader) -> ReleaseState? {
        guard var object = reader.object(value, at: path) else { return nil }
        let statusText = object.string("status", required: true)
        let status = statusText.flatMap(Status.init(rawValue:))
        if let statusText, status == nil {
            let known = Status.allCases.map(\.rawValue).joined(separator: ", ")
            reader.report(path / "status", "'\(statusText)' is not a release status (\(known))")
        }
        var stage: Int?
        if let index = object.integer("stage") {
            if (0..<Int64(max(stages, 1))).contains(index) {
                stage = Int(index)
            } else {
                reader.report(path / "stage", "\(index) is not a stage of the plan (0 to \(stages - 1))")
            }
        }
        var since: Int64?
        if let text = object.string("since", required: true) {
            since = UTCTime.seconds(from: text)
            if since == nil {
                reader.report(path / "since", "'\(text)' is not a UTC time such as 2026-11-26T08:30:00Z")
            }
        }
        let note = object.string("note", rule: .text)
        let limits = ReleaseLimits.read(&object, reader: reader)
        object.finish()
        guard let status, let since else { return nil }
        return ReleaseState(status: status, stage: stage, since: since, note: note, limits: limits)
    }

    public var tree: JSONObject {
        var object = JSONObject()
        object["status"] = .string(status.rawValue)
        if let stage { object["stage"] = .int(stage) }
        object["since"] = .string(UTCTime.text(seconds: since))
        if let note { object["note"] = .string(note) }
        limits.write(into: &object)
        return object
    }
}

extension ReleaseLimits {
    /// Reads `limits` (conditions without cities and cohorts) and `exclusions` (a name and conditions: rules at 0 %)
    /// of a plan's state; a state without them (stored before flagsd kept limits) has none.
    static func read(_ object: inout ObjectReader, reader: TreeReader) -> ReleaseLimits {
        var limits = ReleaseLimits()
        if let value = object.value("limits"), let elements = reader.list(value, at: object.path / "limits") {
            for (index, element) in elements.enumerated() {
                let path = object.path / "limits" / index
                guard var clause = reader.object(element, at: path) else { continue }
                let conditions = Conditions.read(&clause, reader: reader)
                clause.finish()
                // Stages choose cities and cohorts; a limit may name every other list and version bound.
                let staged: [TargetingList] = [.cities, .cohorts]
                for list in staged where !conditions[list: list].isEmpty {
                    let others = TargetingList.allCases.filter { !staged.contains($0) }.map(\.field)
                    reader.report(
                        path / list.field,
                        "a limit may not name \(list.field): the stages choose them (a limit names \(others.joined(separator: ", ")) or versions)"
                    )
                }
                if conditions.isEmpty {
                    reader.report(path, "names no condition (leave it out: a plan without limits has no limits list)")
                } else if limits.clauses.contains(conditions) {
                    reader.report(path, "is listed twice")
                } else if conditions == ReleaseLimits.clause(of: conditions) {
                    limits.clauses.append(conditions)
                }
            }
        }
        if let value = object.value("exclusions"), let elements = reader.list(value, at: object.path / "exclusions") {
            for (index, element) in elements.enumerated() {
                guard var rule = reader.object(element, at: object.path / "exclusions" / index) else { continue }
                let name = rule.string("name", rule: .text)
                let conditions = Conditions.read(&rule, reader: reader)
                rule.finish()
                limits.exclusions.append(SwitchRule(name: name, conditions: conditions, rollout: .off))
            }
        }
        return limits
    }

    /// Writes `limits` and `exclusions` (nothing when there are none).
    func write(into object: inout JSONObject) {
        if !clauses.isEmpty {
            object["limits"] = .array(
                clauses.map { clause in
                    var tree = JSONObject()
                    clause.write(into: &tree)
                    return .object(tree)
                })
        }
        if !exclusions.isEmpty {
            object["exclusions"] = .array(
                exclusions.map { rule in
                    var tree = JSONObject()
                    if let name = rule.name { tree["name"] = .string(name) }
                    rule.conditions.write(into: &tree)
                    return .object(tree)
                })
        }
    }
}

/// UTC times as text (`2026-11-26T08:30:00Z`) without Foundation: the proleptic Gregorian calendar, whole seconds.
public enum UTCTime {
    /// `2026-11-26T08:30:00Z` for seconds since 1970.
    public static func text(seconds: Int64) -> String {
        let days = days(since1970: seconds)
        let rest = seconds - days * 86_400
        let (year, month, day) = civil(days: days)
        func two(_ value: Int64) -> String { value < 10 ? "0\(value)" : String(value) }
        let yearText = String(year)
        return
            "\(String(repeating: "0", count: max(0, 4 - yearText.count)))\(yearText)-\(two(month))-\(two(day))T\(two(rest / 3600)):\(two(rest % 3600 / 60)):\(two(rest % 60))Z"
    }

    /// Seconds since 1970 of `YYYY-MM-DDTHH:MM:SSZ` (fractions of a second are dropped); nil when not such a time.
    public static func seconds(from text: String) -> Int64? {
        let bytes = Array(text.utf8)
        guard bytes.count >= 20, bytes.last == UInt8(ascii: "Z") else { return nil }
        func number(_ range: Range<Int>) -> Int64? {
            var value: Int64 = 0
            for index in range {
                guard bytes[index] >= 48, bytes[index] <= 57 else { return nil }
                value = value * 10 + Int64(bytes[index] - 48)
            }
            return value
        }
        let separators: [(Int, Character)] = [(4, "-"), (7, "-"), (10, "T"), (13, ":"), (16, ":")]
        guard separators.allSatisfy({ bytes[$0.0] == $0.1.asciiValue }) else { return nil }
        if bytes.count > 20 {
            guard bytes[19] == UInt8(ascii: "."), number(20..<(bytes.count - 1)) != nil, bytes.count > 21 else {
                return nil
            }
        }
        guard let year = number(0..<4), let month = number(5..<7), let day = number(8..<10),
            let hour = number(11..<13), let minute = number(14..<16), let second = number(17..<19),
            (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second < 60
        else { return nil }
        let days = daysFromCivil(year: year, month: month, day: day)
        guard civil(days: days) == (year, month, day) else { return nil }
        return days * 86_400 + hour * 3600 + minute * 60 + second
    }

    /// Howard Hinnant's days-from-civil.
    static func daysFromCivil(year: Int64, month: Int64, day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let doy = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    /// The day (since 1970-01-01) holding a time in seconds since 1970, rounded toward the past.
    public static func days(since1970 seconds: Int64) -> Int64 {
        seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
    }

    /// The year, month (1...12) and day (1...31) of a day since 1970-01-01: Howard Hinnant's civil-from-days, the
    /// one calendar every date text of the package is written with.
    public static func civil(days: Int64) -> (year: Int64, month: Int64, day: Int64) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let day = doy - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (yoe + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }
}
