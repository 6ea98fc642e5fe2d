public import SwitchyardCore
public import SwitchyardStorage

/// The cities and cohorts a trip on clients' evidence may be scoped to: where riders are, not where a forger says.
///
/// A client chooses the city and cohorts it reports, so a few forging addresses could make up a cohort nobody is in
/// and trip a switch there, spending the guard's budget on nobody. A value may be a trip's scope when:
///
/// - the namespace declares it (`crash_guard.cities`, `crash_guard.cohorts`), or a person names it in the flag set (a
///   rule's condition, a scoped disable, a kill entry, a release plan's stage); or
/// - its sessions in the window came from at least ``minimumUnits`` units and ``minimumNetworks`` networks (IPv4
///   /24s, IPv6 /48s), counted by the admission windows' ``EventAdmission/Reach`` (a lower bound: a forger from few
///   networks never reaches it).
///
/// Reporters' sessions come from trusted servers: their trips may be scoped to any value counted on its own.
public struct ScopeEligibility: Sendable {
    /// The fewest distinct units an undeclared value's sessions must come from.
    public static let minimumUnits = 20
    /// The fewest distinct networks (IPv4 /24s, IPv6 /48s) an undeclared value's sessions must come from.
    public static let minimumNetworks = 10

    /// Values declared or named by a person.
    public var named: Set<EventDimension>
    /// Whether every city (cohort) counted on its own is declared (the namespace lists them).
    public var citiesDeclared: Bool
    public var cohortsDeclared: Bool
    /// Which units and networks reported each undeclared value over the window.
    public var reach: [EventDimension: EventAdmission.Reach]
    /// Whether a value without a reach is taken as a scope: for a view read a while ago (the guard's in memory, which
    /// the store's decides on), so that a value new since then is confirmed rather than passed over.
    public var newValuesAllowed = false

    public init(
        named: Set<EventDimension>, citiesDeclared: Bool, cohortsDeclared: Bool,
        reach: [EventDimension: EventAdmission.Reach]
    ) {
        self.named = named
        self.citiesDeclared = citiesDeclared
        self.cohortsDeclared = cohortsDeclared
        self.reach = reach
    }

    /// A namespace's eligibility: its declared and named values, and the reach the store counted.
    public init(flagSet: FlagSet, reach: [EventDimension: EventAdmission.Reach]) {
        let policy = CrashGuardPolicy.resolved(namespace: flagSet.crashGuard, switch: nil)
        var named = Set<EventDimension>()
        for city in policy.cities ?? [] { named.insert(EventDimension(kind: .city, value: city)) }
        for cohort in policy.cohorts ?? [] { named.insert(EventDimension(kind: .cohort, value: cohort)) }
        let scopes = flagSet.namedScopes
        for city in scopes.cities { named.insert(EventDimension(kind: .city, value: city)) }
        for cohort in scopes.cohorts { named.insert(EventDimension(kind: .cohort, value: cohort)) }
        self.init(
            named: named, citiesDeclared: policy.cities != nil, cohortsDeclared: policy.cohorts != nil, reach: reach)
    }

    /// Why a value may not be a scope of clients' trips; nil when it may.
    public func shortfall(_ dimension: EventDimension) -> String? {
        switch dimension.kind {
        case .city where citiesDeclared, .cohort where cohortsDeclared: return nil
        default: break
        }
        if named.contains(dimension) { return nil }
        if newValuesAllowed, reach[dimension] == nil { return nil }
        let reach = reach[dimension] ?? EventAdmission.Reach()
        guard reach.unitCount < Self.minimumUnits || reach.networkCount < Self.minimumNetworks else { return nil }
        return
            "\(dimension.kind) \(dimension.value) is neither declared nor named in the flag set, and its sessions came from \(reach.unitCount) of \(Self.minimumUnits) units and \(reach.networkCount) of \(Self.minimumNetworks) networks needed"
    }
}
