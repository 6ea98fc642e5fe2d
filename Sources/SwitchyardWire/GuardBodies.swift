public import SwitchyardCore

// The crash guard's bodies (`GET /v1/namespaces/{namespace}/guard`, `…/guard/trips`, `…/guard/proposals` and the
// answers to applying and dismissing a proposal), and the evidence kept with its changes. Rates are fractions, the
// policy's percentages basis points; docs/openapi.yaml's `Guard…` schemas describe the same shapes.

/// One crash-rate test (`GuardCheck`): sessions with a switch active, crashed ones, the rate, its Wilson lower bound,
/// the bound it is held against, and what keeps it from tripping.
public struct GuardCheckBody: Sendable, Hashable {
    public var sessions: Int64
    public var crashes: Int64
    /// Nil without sessions.
    public var crashRate: Double?
    public var lowerBound: Double?
    /// The policy's `max_crash_rate`.
    public var threshold: Double
    /// The crash rate of sessions without the switch, when held against it.
    public var baselineRate: Double?
    public var baselineDifferenceLower: Double?
    /// What the lower bound must exceed.
    public var bound: Double
    /// Whether it exceeds; nil where the answer leaves it out (a switch's own counts, a trip's evidence).
    public var exceeds: Bool?
    /// What keeps it from tripping (`35 of 200 sessions needed`); nil where the answer leaves it out (scopes,
    /// sources, a trip's evidence).
    public var shortfall: [String]?
    /// Distinct units among the crashed sessions; nil when not counted.
    public var units: Int?
    /// Distinct source addresses among them; nil when not counted (reporters' sessions).
    public var addresses: Int?
    /// Switches shown to crash whose sessions were left out.
    public var leftOut: [String]

    public init(
        sessions: Int64, crashes: Int64, crashRate: Double?, lowerBound: Double?, threshold: Double,
        baselineRate: Double?,
        baselineDifferenceLower: Double?, bound: Double, exceeds: Bool?, shortfall: [String]?, units: Int?,
        addresses: Int?,
        leftOut: [String]
    ) {
        self.sessions = sessions
        self.crashes = crashes
        self.crashRate = crashRate
        self.lowerBound = lowerBound
        self.threshold = threshold
        self.baselineRate = baselineRate
        self.baselineDifferenceLower = baselineDifferenceLower
        self.bound = bound
        self.exceeds = exceeds
        self.shortfall = shortfall
        self.units = units
        self.addresses = addresses
        self.leftOut = leftOut
    }

    /// The same test without its verdict (`exceeds`) or without its shortfall, as some answers show it.
    public func leaving(exceeds leavesExceeds: Bool = false, shortfall leavesShortfall: Bool = false) -> GuardCheckBody
    {
        var check = self
        if leavesExceeds { check.exceeds = nil }
        if leavesShortfall { check.shortfall = nil }
        return check
    }

    /// Adds the test's members to an object (the status, scope, source and evidence objects carry them flat).
    public func write(into object: inout JSONObject) {
        object["sessions"] = .int64(sessions)
        object["crashes"] = .int64(crashes)
        object["crash_rate"] = crashRate.map(JSONValue.double) ?? .null
        object["lower_bound"] = lowerBound.map(JSONValue.double) ?? .null
        object["threshold"] = .double(threshold)
        object["baseline_rate"] = baselineRate.map(JSONValue.double) ?? .null
        object["baseline_difference_lower"] = baselineDifferenceLower.map(JSONValue.double) ?? .null
        object["bound"] = .double(bound)
        if let exceeds { object["exceeds"] = .bool(exceeds) }
        if let shortfall { object["shortfall"] = .array(shortfall.map(JSONValue.string)) }
        object["units"] = units.map(JSONValue.int) ?? .null
        object["addresses"] = addresses.map(JSONValue.int) ?? .null
        object["left_out"] = .array(leftOut.map(JSONValue.string))
    }

    public var json: JSONValue {
        var object = JSONObject()
        write(into: &object)
        return .object(object)
    }

    /// Reads the test's members of an object (other members are left to the caller).
    public init(json: JSONValue, _ what: String = "crash guard check") throws(WireError) {
        var reader = try WireReader(json, what)
        sessions = try reader.int64("sessions")
        crashes = try reader.int64("crashes")
        crashRate = try reader.optionalDouble("crash_rate")
        lowerBound = try reader.optionalDouble("lower_bound")
        threshold = try reader.double("threshold")
        baselineRate = try reader.optionalDouble("baseline_rate")
        baselineDifferenceLower = try reader.optionalDouble("baseline_difference_lower")
        bound = try reader.double("bound")
        exceeds = json["exceeds"]?.boolValue
        shortfall = json["shortfall"] == nil ? nil : try reader.strings("shortfall")
        units = try reader.optionalInt64("units").map { Int($0) }
        addresses = try reader.optionalInt64("addresses").map { Int($0) }
        // Evidence kept before switches could be left out has none.
        leftOut = json["left_out"] == nil ? [] : try reader.strings("left_out")
    }
}

/// Why the crash guard tripped or proposes a switch (`GuardEvidence`): the test over the window and scope, the
/// sessions outside the scope and the policy. Kept with the change log entry and the audit entry.
public struct GuardEvidenceBody: Sendable, Hashable {
    public var rule: String
    /// The plugin switch.
    public var key: String
    /// Whose sessions tripped it: `client`, `reporter`; nil in evidence kept before sources were told apart.
    public var source: String?
    public var scope: Scope
    /// `everywhere`, `city lagos`, `cohort beta`.
    public var scopeText: String
    /// The policy's window: `10m`.
    public var window: String
    public var from: String
    public var until: String
    /// The test that tripped (kept without `exceeds` and `shortfall`).
    public var check: GuardCheckBody
    /// The policy's confidence, as a fraction.
    public var confidence: Double?
    /// `baseline`, `threshold`, `without-switches-shown-to-crash`.
    public var attribution: String?
    /// For a scoped trip, the same test over the sessions outside the scope.
    public var complement: GuardCheckBody?
    /// The resolved policy, every field set (percentages in basis points).
    public var policy: CrashGuardPolicy
    /// On a proposal: why the guard proposes instead of tripping (`budget`, `scoped_disables`).
    public var proposedBecause: String?
    /// On a person's change applying a proposal: the proposal, and the source of the change that applied it.
    public var proposal: Int64?
    public var appliedThrough: String?

    public init(
        rule: String, key: String, source: String?, scope: Scope, scopeText: String, window: String, from: String,
        until: String, check: GuardCheckBody, confidence: Double?, attribution: String?, complement: GuardCheckBody?,
        policy: CrashGuardPolicy, proposedBecause: String? = nil, proposal: Int64? = nil, appliedThrough: String? = nil
    ) {
        self.rule = rule
        self.key = key
        self.source = source
        self.scope = scope
        self.scopeText = scopeText
        self.window = window
        self.from = from
        self.until = until
        self.check = check.leaving(exceeds: true, shortfall: true)
        self.confidence = confidence
        self.attribution = attribution
        self.complement = complement
        self.policy = policy
        self.proposedBecause = proposedBecause
        self.proposal = proposal
        self.appliedThrough = appliedThrough
    }

    public var json: JSONValue {
        var object = JSONObject([("rule", .string(rule)), ("switch", .string(key))])
        if let source { object["source"] = .string(source) }
        object["scope"] = .object(scope.tree)
        object["scope_text"] = .string(scopeText)
        object["window"] = .string(window)
        object["from"] = .string(from)
        object["until"] = .string(until)
        check.write(into: &object)
        if let confidence { object["confidence"] = .double(confidence) }
        if let attribution { object["attribution"] = .string(attribution) }
        object["complement"] = complement?.json ?? .null
        object["policy"] = .object(policy.tree(unit: .basisPoints))
        if let proposedBecause { object["proposed_because"] = .string(proposedBecause) }
        if let proposal { object["proposal"] = .int64(proposal) }
        if let appliedThrough { object["applied_through"] = .string(appliedThrough) }
        return .object(object)
    }

    public init(json: JSONValue) throws(WireError) {
        var reader = try WireReader(json, "crash guard evidence")
        rule = try reader.string("rule")
        key = try reader.string("switch")
        source = try reader.optionalString("source")
        scope = try reader.scope("scope")
        scopeText = try reader.string("scope_text")
        window = try reader.string("window")
        from = try reader.string("from")
        until = try reader.string("until")
        check = try GuardCheckBody(json: json, "crash guard evidence")
        confidence = try reader.optionalDouble("confidence")
        attribution = try reader.optionalString("attribution")
        complement = try reader.optional("complement") { tree throws(WireError) in
            try GuardCheckBody(json: tree, "crash guard evidence.complement")
        }
        policy = try reader.policy("policy")
        proposedBecause = try reader.optionalString("proposed_because")
        proposal = try reader.optionalInt64("proposal")
        appliedThrough = try reader.optionalString("applied_through")
    }
}

/// A trip of the crash guard (`GuardTrip`): when, where, why, and whether a person has turned the switch back on.
public struct GuardTripBody: Sendable, Hashable {
    /// A person turning the switch back on (or deleting it).
    public struct Reenabled: Sendable, Hashable {
        public var version: Int64
        public var time: String
        public var actor: String
        public var deleted: Bool

        public init(version: Int64, time: String, actor: String, deleted: Bool) {
            self.version = version
            self.time = time
            self.actor = actor
            self.deleted = deleted
        }
    }

    public var key: String
    public var scope: Scope
    /// The namespace version the trip took.
    public var version: Int64
    public var time: String
    /// `crash-guard`, or the person who applied a proposal.
    public var actor: String
    /// Made by the guard itself (what its trip budget counts).
    public var automatic: Bool
    /// The proposal a person applied with this change.
    public var proposal: Int64?
    public var reason: String?
    public var evidence: GuardEvidenceBody
    public var reenabled: Reenabled?
    /// Whether the switch is still off in the trip's scope (on the trips route's answer only).
    public var inForce: Bool?

    public init(
        key: String, scope: Scope, version: Int64, time: String, actor: String, automatic: Bool, proposal: Int64?,
        reason: String?, evidence: GuardEvidenceBody, reenabled: Reenabled?, inForce: Bool? = nil
    ) {
        self.key = key
        self.scope = scope
        self.version = version
        self.time = time
        self.actor = actor
        self.automatic = automatic
        self.proposal = proposal
        self.reason = reason
        self.evidence = evidence
        self.reenabled = reenabled
        self.inForce = inForce
    }

    public var json: JSONValue {
        var object = JSONObject([
            ("switch", .string(key)), ("scope", .object(scope.tree)), ("version", .int64(version)),
            ("time", .string(time)),
            ("actor", .string(actor)), ("automatic", .bool(automatic)),
            ("proposal", proposal.map(JSONValue.int64) ?? .null),
            ("reason", reason.map(JSONValue.string) ?? .null), ("evidence", evidence.json),
        ])
        object["reenabled"] =
            reenabled.map { reenabled in
                .object(
                    JSONObject([
                        ("version", .int64(reenabled.version)), ("time", .string(reenabled.time)),
                        ("actor", .string(reenabled.actor)),
                        ("deleted", .bool(reenabled.deleted)),
                    ]))
            } ?? .null
        if let inForce { object["in_force"] = .bool(inForce) }
        return .object(object)
    }

    public init(json: JSONValue) throws(WireError) {
        var reader = try WireReader(json, "crash guard trip")
        key = try reader.string("switch")
        scope = try reader.scope("scope")
        version = try reader.int64("version")
        time = try reader.string("time")
        actor = try reader.string("actor")
        automatic = try reader.bool("automatic")
        proposal = try reader.optionalInt64("proposal")
        reason = try reader.optionalString("reason")
        guard let evidence = json["evidence"] else { throw WireError("crash guard trip: evidence is missing") }
        self.evidence = try GuardEvidenceBody(json: evidence)
        reenabled = try reader.optional("reenabled") { tree throws(WireError) in
            var reader = try WireReader(tree, "crash guard trip.reenabled")
            return Reenabled(
                version: try reader.int64("version"), time: try reader.string("time"),
                actor: try reader.string("actor"),
                deleted: try reader.bool("deleted"))
        }
        inForce = json["in_force"]?.boolValue
    }
}

/// A disable the crash guard proposed instead of making (`GuardProposal`), with what became of it.
public struct GuardProposalBody: Sendable, Hashable {
    /// A person dismissing it.
    public struct Dismissed: Sendable, Hashable {
        public var time: String
        public var actor: String
        public var reason: String?

        public init(time: String, actor: String, reason: String?) {
            self.time = time
            self.actor = actor
            self.reason = reason
        }
    }

    /// The id of its audit entry (action `guard.propose`).
    public var id: Int64
    public var key: String
    public var scope: Scope
    public var scopeText: String
    public var time: String
    /// `open`, `applied`, `dismissed`, `superseded`.
    public var state: String
    /// `budget`, `scoped_disables`.
    public var proposedBecause: String
    /// Why it proposes, then the trip's reason.
    public var reason: String?
    public var evidence: GuardEvidenceBody
    /// The command that applies it: `flagctl guard apply 42 -n rider`.
    public var apply: String
    public var dismissed: Dismissed?

    public init(
        id: Int64, key: String, scope: Scope, scopeText: String, time: String, state: String, proposedBecause: String,
        reason: String?, evidence: GuardEvidenceBody, apply: String, dismissed: Dismissed?
    ) {
        self.id = id
        self.key = key
        self.scope = scope
        self.scopeText = scopeText
        self.time = time
        self.state = state
        self.proposedBecause = proposedBecause
        self.reason = reason
        self.evidence = evidence
        self.apply = apply
        self.dismissed = dismissed
    }

    public var json: JSONValue {
        var object = JSONObject([
            ("id", .int64(id)), ("switch", .string(key)), ("scope", .object(scope.tree)),
            ("scope_text", .string(scopeText)),
            ("time", .string(time)), ("state", .string(state)), ("proposed_because", .string(proposedBecause)),
            ("reason", reason.map(JSONValue.string) ?? .null), ("evidence", evidence.json), ("apply", .string(apply)),
        ])
        object["dismissed"] =
            dismissed.map { dismissed in
                .object(
                    JSONObject([
                        ("time", .string(dismissed.time)), ("actor", .string(dismissed.actor)),
                        ("reason", dismissed.reason.map(JSONValue.string) ?? .null),
                    ]))
            } ?? .null
        return .object(object)
    }

    public init(json: JSONValue) throws(WireError) {
        var reader = try WireReader(json, "crash guard proposal")
        id = try reader.int64("id")
        key = try reader.string("switch")
        scope = try reader.scope("scope")
        scopeText = try reader.string("scope_text")
        time = try reader.string("time")
        state = try reader.string("state")
        proposedBecause = try reader.string("proposed_because")
        reason = try reader.optionalString("reason")
        guard let evidence = json["evidence"] else { throw WireError("crash guard proposal: evidence is missing") }
        self.evidence = try GuardEvidenceBody(json: evidence)
        apply = try reader.string("apply")
        dismissed = try reader.optional("dismissed") { tree throws(WireError) in
            var reader = try WireReader(tree, "crash guard proposal.dismissed")
            return Dismissed(
                time: try reader.string("time"), actor: try reader.string("actor"),
                reason: try reader.optionalString("reason"))
        }
    }
}

/// One plugin switch as the crash guard sees it now (`GuardSwitchStatus`): the counts of the source shown first,
/// each source's, the cities and cohorts above the bound, the trips and proposals in force, and the state.
public struct GuardSwitchStatusBody: Sendable, Hashable {
    /// The trip the guard is making now.
    public struct WouldTrip: Sendable, Hashable {
        public var scope: Scope
        public var scopeText: String

        public init(scope: Scope, scopeText: String) {
            self.scope = scope
            self.scopeText = scopeText
        }
    }

    /// A city or cohort whose own test exceeds the bound.
    public struct ScopeCheck: Sendable, Hashable {
        /// `city`, `cohort`.
        public var kind: String
        public var value: String
        public var check: GuardCheckBody

        public init(kind: String, value: String, check: GuardCheckBody) {
            self.kind = kind
            self.value = value
            self.check = check.leaving(shortfall: true)
        }
    }

    /// One source's counts, and whether the policy lets it trip the switch.
    public struct SourceCheck: Sendable, Hashable {
        public var source: String
        public var mayTrip: Bool
        public var check: GuardCheckBody

        public init(source: String, mayTrip: Bool, check: GuardCheckBody) {
            self.source = source
            self.mayTrip = mayTrip
            self.check = check.leaving(shortfall: true)
        }
    }

    public var key: String
    /// `watching`, `tripping`, `tripped`, `proposed`, `disabled`, `cooling_down`, `off`.
    public var state: String
    /// Whose counts these are: `client`, `reporter`.
    public var source: String
    /// The source's overall test (kept without `exceeds`).
    public var check: GuardCheckBody
    public var window: String
    /// The first minute counted.
    public var from: String
    public var until: String
    public var disabled: Bool
    public var disabledScopes: [Scope]
    public var coolingDownUntil: String?
    public var wouldTrip: WouldTrip?
    /// Cities and cohorts above the bound (their tests without `shortfall`).
    public var scopes: [ScopeCheck]
    /// Each source (its tests without `shortfall`).
    public var sources: [SourceCheck]
    public var openTrips: [GuardTripBody]
    public var openProposals: [Int64]
    public var lastTrip: GuardTripBody?
    /// The resolved policy, every field set (percentages in basis points).
    public var policy: CrashGuardPolicy

    public init(
        key: String, state: String, source: String, check: GuardCheckBody, window: String, from: String, until: String,
        disabled: Bool, disabledScopes: [Scope], coolingDownUntil: String?, wouldTrip: WouldTrip?, scopes: [ScopeCheck],
        sources: [SourceCheck], openTrips: [GuardTripBody], openProposals: [Int64], lastTrip: GuardTripBody?,
        policy: CrashGuardPolicy
    ) {
        self.key = key
        self.state = state
        self.source = source
        self.check = check.leaving(exceeds: true)
        self.window = window
        self.from = from
        self.until = until
        self.disabled = disabled
        self.disabledScopes = disabledScopes
        self.coolingDownUntil = coolingDownUntil
        self.wouldTrip = wouldTrip
        self.scopes = scopes
        self.sources = sources
        self.openTrips = openTrips
        self.openProposals = openProposals
        self.lastTrip = lastTrip
        self.policy = policy
    }

    public var json: JSONValue {
        var object = JSONObject([("key", .string(key)), ("state", .string(state)), ("source", .string(source))])
        check.write(into: &object)
        object["window"] = .string(window)
        object["from"] = .string(from)
        object["until"] = .string(until)
        object["disabled"] = .bool(disabled)
        object["disabled_scopes"] = .array(disabledScopes.map { .object($0.tree) })
        object["cooling_down_until"] = coolingDownUntil.map(JSONValue.string) ?? .null
        object["would_trip"] =
            wouldTrip.map { trip in
                .object(JSONObject([("scope", .object(trip.scope.tree)), ("scope_text", .string(trip.scopeText))]))
            } ?? .null
        object["scopes"] = .array(
            scopes.map { scope in
                var entry = JSONObject([("kind", .string(scope.kind)), ("value", .string(scope.value))])
                scope.check.write(into: &entry)
                return .object(entry)
            })
        object["sources"] = .array(
            sources.map { source in
                var entry = JSONObject([("source", .string(source.source)), ("may_trip", .bool(source.mayTrip))])
                source.check.write(into: &entry)
                return .object(entry)
            })
        object["open_trips"] = .array(openTrips.map(\.json))
        object["open_proposals"] = .array(openProposals.map(JSONValue.int64))
        object["last_trip"] = lastTrip?.json ?? .null
        object["policy"] = .object(policy.tree(unit: .basisPoints))
        return .object(object)
    }

    public init(json: JSONValue) throws(WireError) {
        let what = "crash guard status"
        var reader = try WireReader(json, what)
        key = try reader.string("key")
        state = try reader.string("state")
        source = try reader.string("source")
        check = try GuardCheckBody(json: json, what)
        window = try reader.string("window")
        from = try reader.string("from")
        until = try reader.string("until")
        disabled = try reader.bool("disabled")
        disabledScopes = try reader.array("disabled_scopes") { tree throws(WireError) in
            try WireReader.scope(tree, "\(what).disabled_scopes")
        }
        coolingDownUntil = try reader.optionalString("cooling_down_until")
        wouldTrip = try reader.optional("would_trip") { tree throws(WireError) in
            var reader = try WireReader(tree, "\(what).would_trip")
            return WouldTrip(scope: try reader.scope("scope"), scopeText: try reader.string("scope_text"))
        }
        scopes = try reader.array("scopes") { tree throws(WireError) in
            var reader = try WireReader(tree, "\(what).scopes")
            return ScopeCheck(
                kind: try reader.string("kind"), value: try reader.string("value"),
                check: try GuardCheckBody(json: tree, "\(what).scopes"))
        }
        sources = try reader.array("sources") { tree throws(WireError) in
            var reader = try WireReader(tree, "\(what).sources")
            return SourceCheck(
                source: try reader.string("source"), mayTrip: try reader.bool("may_trip"),
                check: try GuardCheckBody(json: tree, "\(what).sources"))
        }
        openTrips = try reader.array("open_trips") { tree throws(WireError) in try GuardTripBody(json: tree) }
        openProposals = try reader.array("open_proposals") { tree throws(WireError) in
            guard let id = tree.int64Value else {
                throw WireError("\(what): open_proposals holds a member that is not an integer")
            }
            return id
        }
        lastTrip = try reader.optional("last_trip") { tree throws(WireError) in try GuardTripBody(json: tree) }
        policy = try reader.policy("policy")
    }
}

/// `GET /v1/namespaces/{namespace}/guard`: every plugin switch as the crash guard sees it, its trip budget and the
/// open proposals.
public struct GuardOverviewBody: Sendable, Hashable {
    public var namespace: String
    public var version: Int64
    public var time: String
    public var rule: String
    /// The global disables (a switch everywhere) the guard makes by itself in any hour.
    public var maximumTripsPerHour: Int
    /// The guard's own global disables in the last hour.
    public var tripsLastHour: Int
    /// The scoped disables (a switch in a city or cohort) the guard makes by itself in any hour: a budget apart.
    public var maximumScopedTripsPerHour: Int
    /// The guard's own scoped disables in the last hour.
    public var scopedTripsLastHour: Int
    public var proposals: [GuardProposalBody]
    public var switches: [GuardSwitchStatusBody]

    public init(
        namespace: String, version: Int64, time: String, rule: String, maximumTripsPerHour: Int, tripsLastHour: Int,
        maximumScopedTripsPerHour: Int, scopedTripsLastHour: Int, proposals: [GuardProposalBody],
        switches: [GuardSwitchStatusBody]
    ) {
        self.namespace = namespace
        self.version = version
        self.time = time
        self.rule = rule
        self.maximumTripsPerHour = maximumTripsPerHour
        self.tripsLastHour = tripsLastHour
        self.maximumScopedTripsPerHour = maximumScopedTripsPerHour
        self.scopedTripsLastHour = scopedTripsLastHour
        self.proposals = proposals
        self.switches = switches
    }

    /// The global disables the guard may still make this hour.
    public var remaining: Int { max(0, maximumTripsPerHour - tripsLastHour) }
    /// The scoped disables the guard may still make this hour.
    public var scopedRemaining: Int { max(0, maximumScopedTripsPerHour - scopedTripsLastHour) }

    public var json: JSONValue {
        .object(
            JSONObject([
                ("namespace", .string(namespace)), ("version", .int64(version)), ("time", .string(time)),
                ("rule", .string(rule)),
                (
                    "budget",
                    .object(
                        JSONObject([
                            ("max_trips_per_hour", .int(maximumTripsPerHour)), ("trips_last_hour", .int(tripsLastHour)),
                            ("remaining", .int(remaining)),
                            ("max_scoped_trips_per_hour", .int(maximumScopedTripsPerHour)),
                            ("scoped_trips_last_hour", .int(scopedTripsLastHour)),
                            ("scoped_remaining", .int(scopedRemaining)),
                        ]))
                ),
                ("proposals", .array(proposals.map(\.json))),
                ("switches", .array(switches.map(\.json))),
            ]))
    }

    public init(json: JSONValue) throws(WireError) {
        var reader = try WireReader(json, "crash guard overview")
        namespace = try reader.string("namespace")
        version = try reader.int64("version")
        time = try reader.string("time")
        rule = try reader.string("rule")
        guard let budget = json["budget"] else { throw WireError("crash guard overview: budget is missing") }
        var budgetReader = try WireReader(budget, "crash guard overview.budget")
        maximumTripsPerHour = Int(try budgetReader.int64("max_trips_per_hour"))
        tripsLastHour = Int(try budgetReader.int64("trips_last_hour"))
        // A flagsd from before scoped trips had a budget of their own counted them in the one budget.
        maximumScopedTripsPerHour = budget["max_scoped_trips_per_hour"]?.int64Value.map(Int.init) ?? maximumTripsPerHour
        scopedTripsLastHour = budget["scoped_trips_last_hour"]?.int64Value.map(Int.init) ?? tripsLastHour
        proposals = try reader.array("proposals") { tree throws(WireError) in try GuardProposalBody(json: tree) }
        switches = try reader.array("switches") { tree throws(WireError) in try GuardSwitchStatusBody(json: tree) }
    }
}

/// `GET /v1/namespaces/{namespace}/guard/trips`: the guard's trips, newest first.
public struct GuardTripsBody: Sendable, Hashable {
    public var namespace: String
    public var version: Int64
    public var trips: [GuardTripBody]

    public init(namespace: String, version: Int64, trips: [GuardTripBody]) {
        self.namespace = namespace
        self.version = version
        self.trips = trips
    }

    public var json: JSONValue {
        .object(
            JSONObject([
                ("namespace", .string(namespace)), ("version", .int64(version)), ("trips", .array(trips.map(\.json))),
            ]))
    }

    public init(json: JSONValue) throws(WireError) {
        var reader = try WireReader(json, "crash guard trips")
        namespace = try reader.string("namespace")
        version = try reader.int64("version")
        trips = try reader.array("trips") { tree throws(WireError) in try GuardTripBody(json: tree) }
    }
}

/// `GET /v1/namespaces/{namespace}/guard/proposals`: the guard's proposals, newest first.
public struct GuardProposalsBody: Sendable, Hashable {
    public var namespace: String
    public var version: Int64
    public var proposals: [GuardProposalBody]

    public init(namespace: String, version: Int64, proposals: [GuardProposalBody]) {
        self.namespace = namespace
        self.version = version
        self.proposals = proposals
    }

    public var json: JSONValue {
        .object(
            JSONObject([
                ("namespace", .string(namespace)), ("version", .int64(version)),
                ("proposals", .array(proposals.map(\.json))),
            ]))
    }

    public init(json: JSONValue) throws(WireError) {
        var reader = try WireReader(json, "crash guard proposals")
        namespace = try reader.string("namespace")
        version = try reader.int64("version")
        proposals = try reader.array("proposals") { tree throws(WireError) in try GuardProposalBody(json: tree) }
    }
}

/// The answer to dismissing a proposal: whether this call dismissed it, and its audit entry.
public struct GuardDismissalBody: Sendable, Hashable {
    public var namespace: String
    /// False when it was dismissed already.
    public var dismissed: Bool
    public var proposal: GuardProposalBody
    public var auditID: Int64?

    public init(namespace: String, dismissed: Bool, proposal: GuardProposalBody, auditID: Int64?) {
        self.namespace = namespace
        self.dismissed = dismissed
        self.proposal = proposal
        self.auditID = auditID
    }

    public var json: JSONValue {
        .object(
            JSONObject([
                ("namespace", .string(namespace)), ("dismissed", .bool(dismissed)), ("proposal", proposal.json),
                ("audit_id", auditID.map(JSONValue.int64) ?? .null),
            ]))
    }

    public init(json: JSONValue) throws(WireError) {
        var reader = try WireReader(json, "crash guard dismissal")
        namespace = try reader.string("namespace")
        dismissed = try reader.bool("dismissed")
        guard let proposal = json["proposal"] else { throw WireError("crash guard dismissal: proposal is missing") }
        self.proposal = try GuardProposalBody(json: proposal)
        auditID = try reader.optionalInt64("audit_id")
    }
}

extension WireReader {
    func double(_ key: String) throws(WireError) -> Double {
        guard case .number(let number)? = object[key], let value = number.doubleValue else {
            throw WireError("\(what): \(key) is missing or not a number")
        }
        return value
    }

    func bool(_ key: String) throws(WireError) -> Bool {
        guard let value = object[key]?.boolValue else { throw WireError("\(what): \(key) is missing or not a boolean") }
        return value
    }

    /// A member that may be missing or null, read by `read` otherwise.
    func optional<Value>(_ key: String, _ read: (JSONValue) throws(WireError) -> Value) throws(WireError) -> Value? {
        guard let value = object[key], value != .null else { return nil }
        return try read(value)
    }

    func optionalString(_ key: String) throws(WireError) -> String? {
        try optional(key) { value throws(WireError) in
            guard let string = value.stringValue else { throw WireError("\(what): \(key) is not a string") }
            return string
        }
    }

    func optionalInt64(_ key: String) throws(WireError) -> Int64? {
        try optional(key) { value throws(WireError) in
            guard let integer = value.int64Value else { throw WireError("\(what): \(key) is not an integer") }
            return integer
        }
    }

    func optionalDouble(_ key: String) throws(WireError) -> Double? {
        try optional(key) { value throws(WireError) in
            guard case .number(let number) = value, let double = number.doubleValue else {
                throw WireError("\(what): \(key) is not a number")
            }
            return double
        }
    }

    /// A required list, each element read by `read`.
    func array<Element>(_ key: String, _ read: (JSONValue) throws(WireError) -> Element) throws(WireError) -> [Element]
    {
        guard let elements = object[key]?.arrayValue else {
            throw WireError("\(what): \(key) is missing or not a list")
        }
        var result: [Element] = []
        result.reserveCapacity(elements.count)
        for element in elements { result.append(try read(element)) }
        return result
    }

    func strings(_ key: String) throws(WireError) -> [String] {
        try array(key) { value throws(WireError) in
            guard let string = value.stringValue else {
                throw WireError("\(what): \(key) holds a member that is not a string")
            }
            return string
        }
    }

    func scope(_ key: String) throws(WireError) -> Scope {
        guard let value = object[key] else { throw WireError("\(what): \(key) is missing") }
        return try Self.scope(value, "\(what).\(key)")
    }

    /// A scope: `{"cities": [...], "cohorts": [...]}`, empty lists left out.
    static func scope(_ tree: JSONValue, _ what: String) throws(WireError) -> Scope {
        let reader = try WireReader(tree, what)
        return Scope(
            cities: tree["cities"] == nil ? [] : try reader.strings("cities"),
            cohorts: tree["cohorts"] == nil ? [] : try reader.strings("cohorts"))
    }

    /// A crash guard policy as `CrashGuardPolicy.tree(unit: .basisPoints)` writes it.
    func policy(_ key: String) throws(WireError) -> CrashGuardPolicy {
        guard let value = object[key] else { throw WireError("\(what): \(key) is missing") }
        do {
            return try CrashGuardPolicy(tree: value, unit: .basisPoints)
        } catch {
            throw WireError("\(what): \(key): \(error.problems.first?.description ?? "not a crash guard policy")")
        }
    }
}
