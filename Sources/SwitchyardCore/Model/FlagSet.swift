/// The definitions and switch states of one namespace: plugin points, kill switches and flags.
///
/// This is what a flag file declares and what a snapshot carries (with the namespace's epoch and version).
public struct FlagSet: Sendable, Hashable {
    /// The namespace name: one app in one environment (`rider`, `rider-staging`).
    public var namespace: String
    public var description: String?
    /// Plugin points, each with its switches in the order the point tries them.
    public var pluginPoints: [PluginPointDefinition]
    /// Kill switches; the master kill switch (key `master`) always exists.
    public var killSwitches: [KillSwitch]
    /// Plugin switches and experiment flags.
    public var flags: [FlagDefinition]
    /// The crash guard's defaults for the namespace's plugin switches (each switch may override them). Kept by
    /// flagsd; left out of snapshots, as clients do not need it.
    public var crashGuard: CrashGuardPolicy?
    /// The outcome metrics the namespace declares (``MetricDefinition``; the built-in ones are not listed). Kept
    /// by flagsd; left out of snapshots, as clients do not need them.
    public var metrics: [MetricDefinition]
    /// Which plugin point lists each switch, as `indexingSwitches()` last found: a hint that `pluginPoint(listing:)`
    /// checks on every use (a stale one costs a scan, never a wrong answer). Copies share it, so the flag sets a
    /// store derives change by change from one it indexed look switches up without scanning ten thousand keys.
    private var switchPoints: SwitchPoints?

    public init(
        namespace: String, description: String? = nil, pluginPoints: [PluginPointDefinition] = [],
        killSwitches: [KillSwitch] = [], flags: [FlagDefinition] = [], crashGuard: CrashGuardPolicy? = nil,
        metrics: [MetricDefinition] = []
    ) {
        self.namespace = namespace
        self.description = description
        self.pluginPoints = pluginPoints
        self.killSwitches = killSwitches
        self.flags = flags
        self.crashGuard = crashGuard
        self.metrics = metrics
        if !self.killSwitches.contains(where: \.isMaster) {
            self.killSwitches.insert(KillSwitch(key: KillSwitch.masterKey), at: 0)
        }
    }

    /// The flag with a key.
    public func flag(_ key: String) -> FlagDefinition? {
        flagPosition(key).map { flags[$0] }
    }

    /// The position of the flag with a key in `flags` (see `Array.position(ofKey:_:)` for how it is found).
    public func flagPosition(_ key: String) -> Int? {
        flags.position(ofKey: key) { $0.key }
    }

    /// The kill switch with a key (`master` for the master kill switch).
    public func killSwitch(_ key: String) -> KillSwitch? {
        killSwitchPosition(key).map { killSwitches[$0] }
    }

    /// The position of the kill switch with a key in `killSwitches`.
    public func killSwitchPosition(_ key: String) -> Int? {
        killSwitches.position(ofKey: key) { $0.key }
    }

    /// The plugin point that lists a switch (a valid flag set has at most one).
    public func pluginPoint(listing switchKey: String) -> PluginPointDefinition? {
        if let hint = indexedPointPosition(listing: switchKey) { return pluginPoints[hint] }
        return pluginPoints.first { $0.switches.contains(switchKey) }
    }

    /// The position of the plugin point the index names for a switch, while that point still lists it.
    private func indexedPointPosition(listing switchKey: String) -> Int? {
        guard let hint = switchPoints?.positions[switchKey], hint < pluginPoints.count,
            pluginPoints[hint].switches.contains(switchKey)
        else { return nil }
        return hint
    }

    /// This flag set with its switches' plugin points indexed for `pluginPoint(listing:)`, unless the index it
    /// carries was made for these very plugin points (the usual case for a change, which copies them untouched:
    /// then this costs one comparison of array buffers). Indexing 10,000 switches takes about a millisecond.
    public func indexingSwitches() -> FlagSet {
        if let switchPoints, switchPoints.points == pluginPoints { return self }
        var result = self
        result.switchPoints = SwitchPoints(pluginPoints)
        return result
    }

    /// Flag sets are equal when they declare the same things: the order of flags and kill switches (a map in
    /// every document) does not matter; the order of plugin points and of everything inside them does.
    public static func == (lhs: FlagSet, rhs: FlagSet) -> Bool {
        lhs.namespace == rhs.namespace && lhs.description == rhs.description && lhs.pluginPoints == rhs.pluginPoints
            && lhs.crashGuard == rhs.crashGuard
            && lhs.metrics.sorted { $0.name < $1.name } == rhs.metrics.sorted { $0.name < $1.name }
            && lhs.killSwitches.sorted { $0.key < $1.key } == rhs.killSwitches.sorted { $0.key < $1.key }
            && lhs.flags.sorted { $0.key < $1.key } == rhs.flags.sorted { $0.key < $1.key }
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(namespace)
        hasher.combine(crashGuard)
        hasher.combine(Set(metrics))
        hasher.combine(pluginPoints)
        hasher.combine(Set(flags))
        hasher.combine(Set(killSwitches))
    }

    /// The master kill switch.
    public var master: KillSwitch {
        killSwitch(KillSwitch.masterKey) ?? KillSwitch(key: KillSwitch.masterKey)
    }

    /// The keys of the kill switches that cover a flag: the master, every group listing it as a member, and the
    /// group kill switch of its plugin point.
    public func killSwitchKeys(covering flagKey: String) -> [String] {
        let pointGroup = pluginPoint(listing: flagKey)?.killSwitch
        return killSwitches.filter { kill in
            kill.isMaster || kill.members.contains(flagKey) || kill.key == pointGroup
        }.map(\.key)
    }

    /// The members of a group kill switch: its own list plus the switches of plugin points that name it.
    public func members(of killSwitchKey: String) -> [String] {
        guard let kill = killSwitch(killSwitchKey) else { return [] }
        if kill.isMaster { return flags.map(\.key) }
        var members = kill.members
        for point in pluginPoints where point.killSwitch == killSwitchKey {
            for key in point.switches where !members.contains(key) { members.append(key) }
        }
        return members
    }
}

extension FlagSet {
    /// For every switch the plugin points list, the group kill switch of the point `pluginPoint(listing:)` finds
    /// for it (`.some(nil)` for a point without one), in one pass: the indexed point while the index holds it, the
    /// first point listing it otherwise.
    func listedSwitchGroups() -> [String: String?] {
        var groups: [String: String?] = [:]
        for point in pluginPoints {
            for key in point.switches where groups[key] == nil {
                groups[key] = .some(
                    indexedPointPosition(listing: key).map { pluginPoints[$0].killSwitch } ?? point.killSwitch)
            }
        }
        return groups
    }
}

/// The plugin points a flag set's switches are listed by, for the plugin points it was made from (kept, so that an
/// index is known to be current when its flag set's points are these very ones).
private final class SwitchPoints: Sendable {
    let points: [PluginPointDefinition]
    /// Switch key → position of the (first) plugin point listing it.
    let positions: [String: Int]

    init(_ points: [PluginPointDefinition]) {
        self.points = points
        var positions: [String: Int] = [:]
        positions.reserveCapacity(points.reduce(0) { $0 + $1.switches.count })
        for (position, point) in points.enumerated() {
            for key in point.switches where positions[key] == nil { positions[key] = position }
        }
        self.positions = positions
    }
}

extension Array {
    /// The position of the element with a key, found by halving when the elements are in key order (as flag sets
    /// read from a store or from a snapshot document list their flags and kill switches), by a scan otherwise:
    /// whatever halving finds is checked, and when it finds nothing (elements out of order, say a flag added since
    /// the set was read) the scan decides, so the order only decides the cost. With keys unique, as a valid flag set
    /// has them, the answer is the scan's.
    func position(ofKey key: String, _ keyOf: (Element) -> String) -> Int? {
        var low = 0
        var high = count
        while low < high {
            let middle = low + (high - low) / 2
            let probe = keyOf(self[middle])
            if probe == key { return middle }
            // The order stores and documents sort keys in (`SnapshotDelta.byUTF8`).
            if SnapshotDelta.byUTF8(probe, key) { low = middle + 1 } else { high = middle }
        }
        return firstIndex { keyOf($0) == key }
    }
}

/// A place in the app where optional plugins plug in, declared in the flag file as well as in code.
public struct PluginPointDefinition: Sendable, Hashable {
    public var name: String
    public var description: String?
    /// The group kill switch that covers this point's switches.
    public var killSwitch: String?
    /// The plugin switches of this point, in the order the point tries them.
    public var switches: [String]

    public init(name: String, description: String? = nil, killSwitch: String? = nil, switches: [String]) {
        self.name = name
        self.description = description
        self.killSwitch = killSwitch
        self.switches = switches
    }
}

/// Where a kill entry or a scoped disable applies: units matching every attribute it names.
///
/// An empty scope applies everywhere. `cities` matches the unit's city; `cohorts` matches when any of the
/// unit's cohorts is listed. A scope naming an attribute that the context lacks does not match.
public struct Scope: Sendable, Hashable, CustomStringConvertible {
    public var cities: [String]
    public var cohorts: [String]

    public init(cities: [String] = [], cohorts: [String] = []) {
        self.cities = cities
        self.cohorts = cohorts
    }

    public static let everywhere = Scope()

    public var isEverywhere: Bool { cities.isEmpty && cohorts.isEmpty }

    /// `everywhere`, `cities lagos, paris`, `cities lagos and cohorts beta`.
    public var description: String {
        var parts: [String] = []
        if !cities.isEmpty { parts.append("cities \(cities.joined(separator: ", "))") }
        if !cohorts.isEmpty { parts.append("cohorts \(cohorts.joined(separator: ", "))") }
        return parts.isEmpty ? "everywhere" : parts.joined(separator: " and ")
    }

    /// Whether the scope applies to a context.
    public func matches(_ context: EvaluationContext) -> Bool {
        if !cities.isEmpty {
            guard let city = context.city, cities.contains(city) else { return false }
        }
        if !cohorts.isEmpty {
            guard context.cohorts.contains(where: cohorts.contains) else { return false }
        }
        return true
    }
}

/// The master kill switch or a group kill switch, holding kill entries.
public struct KillSwitch: Sendable, Hashable {
    /// The key of the master kill switch, which covers every flag of the namespace.
    public static let masterKey = "master"

    public var key: String
    public var description: String?
    /// Flags this group covers beyond the switches of plugin points that name it. Empty for the master.
    public var members: [String]
    /// Kill entries; any entry matching a context kills every covered flag for it.
    public var entries: [Scope]

    public init(key: String, description: String? = nil, members: [String] = [], entries: [Scope] = []) {
        self.key = key
        self.description = description
        self.members = members
        self.entries = entries
    }

    public var isMaster: Bool { key == Self.masterKey }
    /// Whether an entry kills everywhere.
    public var isKilledEverywhere: Bool { entries.contains(where: \.isEverywhere) }
}

/// Conditions of a rule; all must hold. An empty list is no condition.
///
/// What a rule can ask of a context is described once in `TargetingAttributes.swift`: its lists
/// (`TargetingList`, read and written through `self[list:]`) and its version bounds (`self[version:]`).
public struct Conditions: Sendable, Hashable {
    /// The values of each list a rule has (never an empty list: `self[list:]` sets them).
    public internal(set) var lists: [TargetingList: [String]]
    /// The range each bounded version attribute must fall in (never an empty range: `self[version:]` sets them).
    public internal(set) var versions: [VersionAttribute: VersionRange]

    public init(lists: [TargetingList: [String]] = [:], versions: [VersionAttribute: VersionRange] = [:]) {
        self.lists = lists.filter { !$0.value.isEmpty }
        self.versions = versions.filter { !$0.value.isEmpty }
    }

    /// The lists of today's attributes by name, for the call sites and tests that spell them out.
    public init(
        cities: [String] = [], notCities: [String] = [], cohorts: [String] = [], notCohorts: [String] = [],
        units: [String] = [], platforms: [String] = [], versions: [VersionAttribute: VersionRange] = [:]
    ) {
        self.init(
            lists: [
                .cities: cities, .notCities: notCities, .cohorts: cohorts, .notCohorts: notCohorts, .units: units,
                .platforms: platforms,
            ],
            versions: versions)
    }

    public var cities: [String] {
        get { self[list: .cities] }
        set { self[list: .cities] = newValue }
    }
    public var notCities: [String] {
        get { self[list: .notCities] }
        set { self[list: .notCities] = newValue }
    }
    /// Holds when any of the unit's cohorts is listed.
    public var cohorts: [String] {
        get { self[list: .cohorts] }
        set { self[list: .cohorts] = newValue }
    }
    /// Holds when none of the unit's cohorts is listed (and the unit has cohorts).
    public var notCohorts: [String] {
        get { self[list: .notCohorts] }
        set { self[list: .notCohorts] = newValue }
    }
    /// Unit ids (QA and dogfood allowlists).
    public var units: [String] {
        get { self[list: .units] }
        set { self[list: .units] = newValue }
    }
    public var platforms: [String] {
        get { self[list: .platforms] }
        set { self[list: .platforms] = newValue }
    }

    public var isEmpty: Bool { lists.isEmpty && versions.isEmpty }

    /// Whether every condition holds for a context (the reference semantics the compiled form follows).
    public func hold(for context: EvaluationContext) -> Bool {
        for (list, values) in lists where !list.holds(values, for: context) { return false }
        for (attribute, range) in versions {
            guard let text = attribute.value(in: context), let version = SemanticVersion(text),
                range.contains(version)
            else { return false }
        }
        return true
    }
}

/// A plugin switch or an experiment flag.
///
/// A value like any other; its fields live in one immutable box, so a copy (a flag set of thousands of flags copied
/// to change one of them) costs one reference count, and changing a field makes a new box.
public struct FlagDefinition: Sendable, Hashable {
    /// The kind of flag, with what only that kind has.
    public enum Kind: Sendable, Hashable {
        case pluginSwitch(PluginSwitchDefinition)
        case experiment(Experiment)
    }

    /// The prefix of every plugin switch key, the convention of the original plugin design.
    public static let pluginSwitchPrefix = "plugin_switch_"

    private final class Storage: Sendable {
        let key: String
        let description: String?
        let owner: String?
        let kind: Kind
        /// Whether it is a plugin switch whose release plan runs: known once, so that a pass over every flag looking
        /// for running plans (each change does one) copies no switch.
        let hasRunningRelease: Bool

        init(key: String, description: String?, owner: String?, kind: Kind) {
            self.key = key
            self.description = description
            self.owner = owner
            self.kind = kind
            hasRunningRelease =
                if case .pluginSwitch(let gate) = kind { gate.release?.isRunning == true } else { false }
        }
    }

    private var storage: Storage

    public init(key: String, description: String? = nil, owner: String? = nil, kind: Kind) {
        storage = Storage(key: key, description: description, owner: owner, kind: kind)
    }

    public var key: String {
        get { storage.key }
        set {
            storage = Storage(key: newValue, description: storage.description, owner: storage.owner, kind: storage.kind)
        }
    }

    public var description: String? {
        get { storage.description }
        set { storage = Storage(key: storage.key, description: newValue, owner: storage.owner, kind: storage.kind) }
    }

    /// The team or person to ask about it.
    public var owner: String? {
        get { storage.owner }
        set {
            storage = Storage(key: storage.key, description: storage.description, owner: newValue, kind: storage.kind)
        }
    }

    public var kind: Kind {
        get { storage.kind }
        set {
            storage = Storage(key: storage.key, description: storage.description, owner: storage.owner, kind: newValue)
        }
    }

    public static func == (lhs: FlagDefinition, rhs: FlagDefinition) -> Bool {
        lhs.storage === rhs.storage
            || (lhs.key == rhs.key && lhs.description == rhs.description && lhs.owner == rhs.owner
                && lhs.kind == rhs.kind)
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(key)
        hasher.combine(description)
        hasher.combine(owner)
        hasher.combine(kind)
    }

    /// Whether it is a plugin switch whose release plan runs (`pluginSwitch?.release?.isRunning`), without copying
    /// the switch.
    public var hasRunningRelease: Bool { storage.hasRunningRelease }

    public var pluginSwitch: PluginSwitchDefinition? {
        get {
            if case .pluginSwitch(let value) = kind { return value }
            return nil
        }
        set { if let newValue { kind = .pluginSwitch(newValue) } }
    }

    public var experiment: Experiment? {
        get {
            if case .experiment(let value) = kind { return value }
            return nil
        }
        set { if let newValue { kind = .experiment(newValue) } }
    }

    /// `plugin_switch` or `experiment`.
    public var typeName: String {
        switch kind {
        case .pluginSwitch: "plugin_switch"
        case .experiment: "experiment"
        }
    }
}

/// The gate of one optional plugin. Off unless enabled.
public struct PluginSwitchDefinition: Sendable, Hashable {
    /// Off everywhere (a release manager's or the crash guard's disable).
    public var disabled: Bool
    /// Scopes where the switch is off.
    public var disabledScopes: [Scope]
    /// Ordered rules; the first whose conditions hold decides.
    public var rules: [SwitchRule]
    /// The rollout when no rule holds.
    public var rollout: Rollout
    /// The crash guard's policy for this switch, over the namespace's (fields left out come from there).
    public var crashGuard: CrashGuardPolicy?
    /// How flagsd rolls the switch out, stage by stage, with its progress (``ReleasePlan``); while it runs, it sets
    /// `rules` and `rollout`.
    public var release: ReleasePlan?

    public init(
        disabled: Bool = false, disabledScopes: [Scope] = [], rules: [SwitchRule] = [], rollout: Rollout = .off,
        crashGuard: CrashGuardPolicy? = nil, release: ReleasePlan? = nil
    ) {
        self.disabled = disabled
        self.disabledScopes = disabledScopes
        self.rules = rules
        self.rollout = rollout
        self.crashGuard = crashGuard
        self.release = release
    }

    /// Whether the switch is off for every unit of a scope: disabled everywhere, or by a scoped disable that
    /// names no more attributes than the scope does and covers its values (`cities [lagos]` covers the scope
    /// `cities [lagos]`; it does not cover `cohorts [beta]`).
    public func isDisabled(in scope: Scope) -> Bool {
        if disabled { return true }
        return disabledScopes.contains { disable in
            (disable.cities.isEmpty || (!scope.cities.isEmpty && Set(scope.cities).isSubset(of: disable.cities)))
                && (disable.cohorts.isEmpty
                    || (!scope.cohorts.isEmpty && Set(scope.cohorts).isSubset(of: disable.cohorts)))
        }
    }
}

/// A targeting rule of a plugin switch.
public struct SwitchRule: Sendable, Hashable {
    /// An optional label shown by `flagctl` and the console.
    public var name: String?
    public var conditions: Conditions
    public var rollout: Rollout

    public init(name: String? = nil, conditions: Conditions, rollout: Rollout) {
        self.name = name
        self.conditions = conditions
        self.rollout = rollout
    }
}

/// A named value of an experiment flag.
public struct Variant: Sendable, Hashable {
    public var key: String
    public var value: FlagValue

    public init(key: String, value: FlagValue) {
        self.key = key
        self.value = value
    }
}

/// Integer weights per variant key; variants not listed weigh 0. Cumulated in the flag's variant order.
public typealias VariantWeights = [String: UInt32]

/// An experiment flag: typed variants picked by weight.
public struct Experiment: Sendable, Hashable {
    public var valueType: FlagValueType
    /// Variants, in the order weights are cumulated.
    public var variants: [Variant]
    /// Served when the flag is killed or no bucket can be computed.
    public var defaultVariant: String
    public var weights: VariantWeights
    public var rules: [ExperimentRule]

    public init(
        valueType: FlagValueType, variants: [Variant], defaultVariant: String, weights: VariantWeights,
        rules: [ExperimentRule] = []
    ) {
        self.valueType = valueType
        self.variants = variants
        self.defaultVariant = defaultVariant
        self.weights = weights
        self.rules = rules
    }

    public func variant(_ key: String) -> Variant? {
        variants.first { $0.key == key }
    }
}

/// A targeting rule of an experiment flag, with its own weights.
public struct ExperimentRule: Sendable, Hashable {
    public var name: String?
    public var conditions: Conditions
    public var weights: VariantWeights

    public init(name: String? = nil, conditions: Conditions, weights: VariantWeights) {
        self.name = name
        self.conditions = conditions
        self.weights = weights
    }
}
