public import SwitchyardCore

/// `GET /v1/namespaces/{namespace}/flags/{key}/release` (and each item of `GET …/releases`): a switch's release
/// plan, where it is, what the runner sees in the current stage and waits for, and what it did so far.
public struct ReleaseStatusBody: Sendable, Hashable {
    /// Sessions of one side of the comparison.
    public struct Side: Sendable, Hashable {
        public var sessions: Int64
        public var crashes: Int64

        public init(sessions: Int64, crashes: Int64) {
            self.sessions = sessions
            self.crashes = crashes
        }

        /// Crashed sessions per session; nil without sessions.
        public var crashRate: Double? { sessions > 0 ? Double(crashes) / Double(sessions) : nil }

        var json: JSONValue {
            .object(
                JSONObject([
                    ("sessions", .int64(sessions)), ("crashes", .int64(crashes)),
                    ("crash_rate", crashRate.map(JSONValue.double) ?? .null),
                ]))
        }

        init(json: JSONValue, _ what: String) throws(WireError) {
            var reader = try WireReader(json, what)
            sessions = try reader.int64("sessions")
            crashes = try reader.int64("crashes")
        }
    }

    /// A guardrail metric judged in the current stage (`GuardrailCheck`): the switch's units against those without it.
    ///
    /// The wire form of the crash guard's `GuardrailCheck`: the same figures, with the margin, direction and state
    /// as text (`GuardrailCheck.body` converts, in one place), so flagctl reads it without the statistics module.
    public struct Guardrail: Sendable, Hashable {
        public var metric: String
        /// `-0.5pp`, `-2%`.
        public var margin: String
        /// `higher` or `lower`.
        public var better: String
        /// `not_worse`, `undecided`, `worse` or `not_judged`.
        public var state: String
        public var unitsWith: Int
        public var unitsWithout: Int
        public var meanWith: Double?
        public var meanWithout: Double?
        /// The difference of means (a margin in points) or the relative lift (a relative margin), as a fraction, with
        /// its interval at the plan's confidence.
        public var estimate: Double?
        public var lower: Double?
        public var upper: Double?
        /// Its interval at the roll-back confidence.
        public var rollbackLower: Double?
        public var rollbackUpper: Double?
        /// What it shows or waits for, in words.
        public var summary: String

        public init(
            metric: String, margin: String, better: String, state: String, unitsWith: Int, unitsWithout: Int,
            meanWith: Double?, meanWithout: Double?, estimate: Double?, lower: Double?, upper: Double?,
            rollbackLower: Double?, rollbackUpper: Double?, summary: String
        ) {
            self.metric = metric
            self.margin = margin
            self.better = better
            self.state = state
            self.unitsWith = unitsWith
            self.unitsWithout = unitsWithout
            self.meanWith = meanWith
            self.meanWithout = meanWithout
            self.estimate = estimate
            self.lower = lower
            self.upper = upper
            self.rollbackLower = rollbackLower
            self.rollbackUpper = rollbackUpper
            self.summary = summary
        }

        public var json: JSONValue {
            func number(_ value: Double?) -> JSONValue { value.map(JSONValue.double) ?? .null }
            return .object(
                JSONObject([
                    ("metric", .string(metric)), ("margin", .string(margin)), ("better", .string(better)),
                    ("state", .string(state)),
                    ("units_with", .int(unitsWith)), ("units_without", .int(unitsWithout)),
                    ("mean_with", number(meanWith)), ("mean_without", number(meanWithout)),
                    ("estimate", number(estimate)), ("lower", number(lower)), ("upper", number(upper)),
                    ("rollback_lower", number(rollbackLower)), ("rollback_upper", number(rollbackUpper)),
                    ("summary", .string(summary)),
                ]))
        }

        init(json: JSONValue, _ what: String) throws(WireError) {
            var reader = try WireReader(json, what)
            metric = try reader.string("metric")
            margin = try reader.string("margin")
            better = try reader.string("better")
            state = try reader.string("state")
            unitsWith = Int(try reader.int64("units_with"))
            unitsWithout = Int(try reader.int64("units_without"))
            meanWith = json["mean_with"]?.doubleValue
            meanWithout = json["mean_without"]?.doubleValue
            estimate = json["estimate"]?.doubleValue
            lower = json["lower"]?.doubleValue
            upper = json["upper"]?.doubleValue
            rollbackLower = json["rollback_lower"]?.doubleValue
            rollbackUpper = json["rollback_upper"]?.doubleValue
            summary = try reader.string("summary")
        }
    }

    /// The current stage judged on the counts since it began.
    public struct Assessment: Sendable, Hashable {
        /// The span counted (RFC 3339).
        public var from: String
        public var until: String
        /// The counters summed: `all`, `city:lagos`, `cohort:beta`.
        public var dimensions: [String]
        public var with: Side
        public var without: Side
        /// Whose sessions `without` are: `scope` (the stage's own cities, cohorts or everyone), `namespace` (every
        /// city: the stage's scope has too few sessions without the switch), `none` (every session has it).
        public var control: String
        /// `advance`, `hold` or `roll_back`.
        public var verdict: String
        /// For a hold, what it waits for; else why it advances or rolls back.
        public var reasons: [String]
        /// The metrics that decide the verdict: shown worse (roll back), judged (advance) or awaited (hold);
        /// `crash_rate` for crash rate.
        public var decidedBy: [String]
        /// The plan's guardrail metrics, judged in the stage.
        public var guardrails: [Guardrail]
        /// The rule's numbers (bounds, margin, confidence, soak), as the audit entry of a step records them.
        public var evidence: JSONValue

        public init(
            from: String, until: String, dimensions: [String], with: Side, without: Side, control: String,
            verdict: String, reasons: [String], decidedBy: [String] = [], guardrails: [Guardrail] = [],
            evidence: JSONValue
        ) {
            self.from = from
            self.until = until
            self.dimensions = dimensions
            self.with = with
            self.without = without
            self.control = control
            self.verdict = verdict
            self.reasons = reasons
            self.decidedBy = decidedBy
            self.guardrails = guardrails
            self.evidence = evidence
        }
    }

    /// One step of the plan's history: a change that moved its state (the runner's, or a person's).
    public struct Event: Sendable, Hashable {
        public var time: String
        public var actor: String
        public var source: String
        public var version: Int64?
        public var summary: String
        public var reason: String?
        /// The plan's state after it (nil: the plan was removed).
        public var state: ReleaseState?
        /// The evidence the runner's step carried (the stage's counts and bounds when it advanced or rolled back), kept
        /// so a plan that rolled back still shows why; nil for a person's step.
        public var evidence: JSONValue?

        public init(
            time: String, actor: String, source: String, version: Int64?, summary: String, reason: String?,
            state: ReleaseState?,
            evidence: JSONValue? = nil
        ) {
            self.time = time
            self.actor = actor
            self.source = source
            self.version = version
            self.summary = summary
            self.reason = reason
            self.state = state
            self.evidence = evidence
        }
    }

    /// A roll-back to off the runner proposes instead of making (clients' evidence alone), for a person to confirm
    /// or dismiss.
    public struct Proposal: Sendable, Hashable {
        /// Its id (an audit entry's).
        public var id: Int64
        public var time: String
        /// `open`, `confirmed`, `dismissed` or `superseded` (the plan moved on).
        public var state: String
        /// The stage (from 0) it proposes rolling back from.
        public var stage: Int
        /// Why, in words: the check's summary.
        public var reason: String?

        public init(id: Int64, time: String, state: String, stage: Int, reason: String?) {
            self.id = id
            self.time = time
            self.state = state
            self.stage = stage
            self.reason = reason
        }
    }

    public var namespace: String
    public var key: String
    /// The namespace version the answer describes.
    public var version: Int64
    public var plan: ReleasePlan
    /// Seconds since the stage was entered (or the status last changed).
    public var secondsInState: Int64?
    /// The current stage's judgement; nil unless the plan runs.
    public var assessment: Assessment?
    /// What happens next, in words: `advances to stage 3 (cities nairobi at 100%) once …`.
    public var next: String
    /// The plan's steps, newest first.
    public var timeline: [Event]
    /// The runner's roll-back proposals of the current stage (open, or dismissed), newest first.
    public var proposals: [Proposal] = []

    public init(
        namespace: String, key: String, version: Int64, plan: ReleasePlan, secondsInState: Int64?,
        assessment: Assessment?, next: String, timeline: [Event]
    ) {
        self.namespace = namespace
        self.key = key
        self.version = version
        self.plan = plan
        self.secondsInState = secondsInState
        self.assessment = assessment
        self.next = next
        self.timeline = timeline
    }

    public var json: JSONValue {
        var object = JSONObject([
            ("namespace", .string(namespace)), ("switch", .string(key)), ("version", .int64(version)),
            ("plan", .object(plan.tree(unit: .basisPoints))),
        ])
        object["seconds_in_state"] = secondsInState.map(JSONValue.int64) ?? .null
        if let assessment {
            object["assessment"] = .object(
                JSONObject([
                    ("from", .string(assessment.from)), ("until", .string(assessment.until)),
                    ("dimensions", .array(assessment.dimensions.map(JSONValue.string))),
                    ("with", assessment.with.json), ("without", assessment.without.json),
                    ("control", .string(assessment.control)),
                    ("verdict", .string(assessment.verdict)),
                    ("reasons", .array(assessment.reasons.map(JSONValue.string))),
                    ("decided_by", .array(assessment.decidedBy.map(JSONValue.string))),
                    ("guardrails", .array(assessment.guardrails.map(\.json))),
                    ("evidence", assessment.evidence),
                ]))
        } else {
            object["assessment"] = .null
        }
        object["next"] = .string(next)
        object["proposals"] = .array(
            proposals.map { proposal in
                .object(
                    JSONObject([
                        ("id", .int64(proposal.id)), ("time", .string(proposal.time)),
                        ("state", .string(proposal.state)),
                        ("proposes", .string("roll_back_to_off")), ("stage", .int(proposal.stage)),
                        ("reason", proposal.reason.map(JSONValue.string) ?? .null),
                    ]))
            })
        object["timeline"] = .array(
            timeline.map { event in
                var entry = JSONObject([
                    ("time", .string(event.time)), ("actor", .string(event.actor)), ("source", .string(event.source)),
                    ("summary", .string(event.summary)),
                ])
                entry["version"] = event.version.map(JSONValue.int64) ?? .null
                entry["reason"] = event.reason.map(JSONValue.string) ?? .null
                entry["state"] = event.state.map { .object($0.tree) } ?? .null
                entry["evidence"] = event.evidence ?? .null
                return .object(entry)
            })
        return .object(object)
    }

    public init(json: JSONValue) throws(WireError) {
        var reader = try WireReader(json, "release")
        namespace = try reader.string("namespace")
        key = try reader.string("switch")
        version = try reader.int64("version")
        guard let planTree = json["plan"] else { throw WireError("release: plan is missing") }
        do {
            plan = try ReleasePlan(tree: planTree, unit: .basisPoints, at: "plan")
        } catch {
            throw WireError("release: \(error.problems.first?.description ?? "plan is not a release plan")")
        }
        secondsInState = json["seconds_in_state"]?.int64Value
        if let tree = json["assessment"], tree != .null {
            var assessmentReader = try WireReader(tree, "release.assessment")
            guard let with = tree["with"], let without = tree["without"] else {
                throw WireError("release.assessment: with and without are required")
            }
            var guardrails: [Guardrail] = []
            for (index, element) in (tree["guardrails"]?.arrayValue ?? []).enumerated() {
                guardrails.append(try Guardrail(json: element, "release.assessment.guardrails[\(index)]"))
            }
            assessment = Assessment(
                from: try assessmentReader.string("from"), until: try assessmentReader.string("until"),
                dimensions: tree["dimensions"]?.arrayValue?.compactMap(\.stringValue) ?? [],
                with: try Side(json: with, "release.assessment.with"),
                without: try Side(json: without, "release.assessment.without"),
                control: try assessmentReader.string("control"), verdict: try assessmentReader.string("verdict"),
                reasons: tree["reasons"]?.arrayValue?.compactMap(\.stringValue) ?? [],
                decidedBy: tree["decided_by"]?.arrayValue?.compactMap(\.stringValue) ?? [], guardrails: guardrails,
                evidence: tree["evidence"] ?? .null)
        } else {
            assessment = nil
        }
        next = try reader.string("next")
        proposals = (json["proposals"]?.arrayValue ?? []).compactMap { tree in
            guard let id = tree["id"]?.int64Value, let state = tree["state"]?.stringValue else { return nil }
            return Proposal(
                id: id, time: tree["time"]?.stringValue ?? "", state: state, stage: Int(tree["stage"]?.int64Value ?? 0),
                reason: tree["reason"]?.stringValue)
        }
        var timeline: [Event] = []
        for (index, entry) in (json["timeline"]?.arrayValue ?? []).enumerated() {
            var entryReader = try WireReader(entry, "release.timeline[\(index)]")
            var state: ReleaseState?
            if let stateTree = entry["state"], stateTree != .null {
                do { state = try ReleaseState(tree: stateTree) } catch {
                    throw WireError(
                        "release.timeline[\(index)].state: \(error.problems.first?.description ?? "not a release state")"
                    )
                }
            }
            timeline.append(
                Event(
                    time: try entryReader.string("time"), actor: try entryReader.string("actor"),
                    source: try entryReader.string("source"), version: entry["version"]?.int64Value,
                    summary: try entryReader.string("summary"), reason: entry["reason"]?.stringValue, state: state,
                    evidence: entry["evidence"].flatMap { $0 == .null ? nil : $0 }))
        }
        self.timeline = timeline
    }
}

/// The answer to dismissing a release plan's proposal (`POST …/release/proposals/{id}/dismiss`): the proposal's id,
/// the audit entry recording the decision, and the plan after it.
public struct ReleaseDismissalBody: Sendable, Hashable {
    public var namespace: String
    public var proposal: Int64
    public var auditID: Int64
    public var release: ReleaseStatusBody

    public init(namespace: String, proposal: Int64, auditID: Int64, release: ReleaseStatusBody) {
        self.namespace = namespace
        self.proposal = proposal
        self.auditID = auditID
        self.release = release
    }

    public var json: JSONValue {
        .object(
            JSONObject([
                ("namespace", .string(namespace)), ("dismissed", .bool(true)), ("proposal", .int64(proposal)),
                ("audit_id", .int64(auditID)), ("release", release.json),
            ]))
    }

    public init(json: JSONValue) throws(WireError) {
        var reader = try WireReader(json, "release dismissal")
        namespace = try reader.string("namespace")
        proposal = try reader.int64("proposal")
        auditID = try reader.int64("audit_id")
        guard let release = json["release"] else { throw WireError("release dismissal: release is missing") }
        self.release = try ReleaseStatusBody(json: release)
    }
}
