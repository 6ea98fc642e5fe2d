/// A snapshot compiled once into an indexed form for fast evaluation.
///
/// Cities, cohorts, platforms and allowlisted units are interned to small integers and every list becomes a
/// bitset; each flag keeps its murmur3 state after hashing its key, so bucketing a unit hashes only the unit
/// id. Immutable and safe to share between threads.
///
/// ```swift
/// let compiled = CompiledSnapshot(snapshot)
/// let promos = compiled.handle(for: "plugin_switch_feed_promos")!
/// let evaluator = compiled.evaluator(for: EvaluationContext(unitId: "rider-42", city: "lagos"))
/// if evaluator.isEnabled(promos) { ... }
/// ```
public final class CompiledSnapshot: Sendable {
    public let snapshot: Snapshot

    let keyIndex: [String: Int32]
    let cityIds: [String: Int32]
    let cohortIds: [String: Int32]
    let platformIds: [String: Int32]
    let unitIds: [String: Int32]
    let versionBounds: [SemanticVersion]
    /// Per kill switch of the flag set, its entries' scopes in `killEntryScopes`.
    let killSwitchRecords: [KillSwitchRecord]
    let killEntryScopes: [Int32]
    /// The hot tables, in memory this object owns (never moved, never written after init, freed in deinit).
    let tables: Tables

    /// Compiles a snapshot. Never traps, even on a flag set that does not validate.
    public init(_ snapshot: Snapshot) {
        var builder = Builder(flagSet: snapshot.flagSet)
        builder.build()
        self.snapshot = snapshot
        keyIndex = builder.keyIndex
        cityIds = builder.cities.ids
        cohortIds = builder.cohorts.ids
        platformIds = builder.platforms.ids
        unitIds = builder.units.ids
        versionBounds = builder.versionBounds
        killSwitchRecords = builder.killSwitchRecords
        killEntryScopes = builder.killEntryScopes
        tables = Tables(
            flags: Table(copying: builder.flagRecords),
            rules: Table(copying: builder.rules),
            scopes: Table(copying: builder.scopes),
            words: Table(copying: builder.words),
            flagKillSwitches: Table(copying: builder.flagKillSwitches),
            cumulativeWeights: Table(copying: builder.cumulativeWeights)
        )
    }

    deinit {
        tables.deallocate()
    }

    public var namespace: String { snapshot.namespace }
    public var epoch: String { snapshot.epoch }
    public var version: Int64 { snapshot.version }
    public var flagCount: Int { tables.flags.count }

    /// Resolves a flag key to a handle, once.
    public func handle(for key: String) -> FlagHandle? {
        keyIndex[key].map(FlagHandle.init(index:))
    }

    /// The definition behind a handle.
    public func flag(_ handle: FlagHandle) -> FlagDefinition? {
        guard handle.index >= 0, Int(handle.index) < tables.flags.count else { return nil }
        return snapshot.flagSet.flags[Int(handle.index)]
    }

    /// Prepares a context for evaluation against this snapshot (interning its attributes, once).
    public func evaluator(for context: EvaluationContext) -> Evaluator {
        Evaluator(snapshot: self, context: context)
    }
}

// MARK: - Compiled records (plain data)

/// An immutable array of plain records in memory allocated once, read without bounds checks or reference
/// counting on the evaluation path. Indices into it are produced by the compiler and are in range by
/// construction; only flag handles, which come from callers, are checked.
struct Table<Element: BitwiseCopyable>: @unchecked Sendable {
    let base: UnsafeMutablePointer<Element>
    let count: Int

    init(copying elements: [Element]) {
        count = elements.count
        base = UnsafeMutablePointer<Element>.allocate(capacity: max(count, 1))
        _ = UnsafeMutableBufferPointer(start: base, count: count).initialize(from: elements)
    }

    @inline(__always)
    subscript(_ index: Int32) -> Element {
        base[Int(index)]
    }

    @inline(__always)
    func pointer(_ index: Int32) -> UnsafePointer<Element> {
        UnsafePointer(base + Int(index))
    }

    func deallocate() {
        base.deallocate()
    }
}

/// The tables evaluation reads; an evaluator keeps a copy of these pointers (and its snapshot, which owns them).
struct Tables: Sendable {
    let flags: Table<FlagRecord>
    let rules: Table<RuleRecord>
    let scopes: Table<ScopeRecord>
    let words: Table<UInt64>
    /// Per flag, the kill switches (indices in the flag set) that cover it and hold entries: the master first.
    let flagKillSwitches: Table<Int32>
    let cumulativeWeights: Table<UInt64>

    func deallocate() {
        flags.deallocate()
        rules.deallocate()
        scopes.deallocate()
        words.deallocate()
        flagKillSwitches.deallocate()
        cumulativeWeights.deallocate()
    }
}

/// A bitset in `Tables.words`; `count == 0` means "no condition".
struct BitsetRef: Sendable, Hashable {
    var start: Int32 = 0
    var count: Int32 = 0
}

struct ScopeRecord: Sendable {
    var cities = BitsetRef()
    var cohorts = BitsetRef()
}

struct RuleRecord: Sendable {
    var cityIn = BitsetRef()
    var cityNotIn = BitsetRef()
    var cohortIn = BitsetRef()
    var cohortNotIn = BitsetRef()
    var unitIn = BitsetRef()
    var platformIn = BitsetRef()
    var atLeast: Int32 = -1
    var below: Int32 = -1
    var rollout: UInt16 = 0
    var weights = WeightsRecord()
}

/// Cumulative weights in `Tables.cumulativeWeights`.
struct WeightsRecord: Sendable {
    var start: Int32 = 0
    var total: UInt64 = 0
    /// The variant holding all the weight, or -1 when several share it.
    var single: Int32 = -1
}

/// The entries of one kill switch: scope indices `killEntryScopes[start..<start + count]`.
struct KillSwitchRecord: Sendable {
    var start: Int32
    var count: Int32
}

struct FlagRecord: Sendable {
    var isExperiment = false
    /// A plugin switch without rules or disables, at 0 % or 100 %: only a kill entry can change its value.
    var isFixed = false
    var disabled = false
    var rollout: UInt16 = 0
    var killStart: Int32 = 0
    var killCount: Int32 = 0
    var disableStart: Int32 = 0
    var disableCount: Int32 = 0
    var ruleStart: Int32 = 0
    var ruleCount: Int32 = 0
    var hasher = Murmur3Hasher()
    var weights = WeightsRecord()
    var variantCount: Int32 = 0
    var defaultVariant: Int32 = 0
}

// MARK: - Compilation

private struct Interner {
    var ids: [String: Int32] = [:]

    mutating func id(_ value: String) -> Int32 {
        if let id = ids[value] { return id }
        let id = Int32(ids.count)
        ids[value] = id
        return id
    }
}

private struct Builder {
    let flagSet: FlagSet
    var flagRecords: [FlagRecord] = []
    var keyIndex: [String: Int32] = [:]
    var cities = Interner()
    var cohorts = Interner()
    var platforms = Interner()
    var units = Interner()
    var versionBounds: [SemanticVersion] = []
    var words: [UInt64] = []
    var scopes: [ScopeRecord] = []
    var rules: [RuleRecord] = []
    var killSwitchRecords: [KillSwitchRecord] = []
    var killEntryScopes: [Int32] = []
    var flagKillSwitches: [Int32] = []
    var cumulativeWeights: [UInt64] = []

    init(flagSet: FlagSet) {
        self.flagSet = flagSet
    }

    mutating func bitset(_ values: [String], _ table: WritableKeyPath<Builder, Interner>) -> BitsetRef {
        guard !values.isEmpty else { return BitsetRef() }
        let ids = values.map { self[keyPath: table].id($0) }
        let wordCount = Int(ids.max()!) / 64 + 1
        let start = words.count
        words.append(contentsOf: repeatElement(0, count: wordCount))
        for id in ids { words[start + Int(id) / 64] |= 1 << UInt64(id % 64) }
        return BitsetRef(start: Int32(start), count: Int32(wordCount))
    }

    mutating func scope(_ scope: Scope) -> Int32 {
        let record = ScopeRecord(cities: bitset(scope.cities, \.cities), cohorts: bitset(scope.cohorts, \.cohorts))
        scopes.append(record)
        return Int32(scopes.count - 1)
    }

    mutating func versionBound(_ version: SemanticVersion?) -> Int32 {
        guard let version else { return -1 }
        if let index = versionBounds.firstIndex(of: version) { return Int32(index) }
        versionBounds.append(version)
        return Int32(versionBounds.count - 1)
    }

    mutating func conditions(_ conditions: Conditions) -> RuleRecord {
        var record = RuleRecord()
        record.cityIn = bitset(conditions.cities, \.cities)
        record.cityNotIn = bitset(conditions.notCities, \.cities)
        record.cohortIn = bitset(conditions.cohorts, \.cohorts)
        record.cohortNotIn = bitset(conditions.notCohorts, \.cohorts)
        record.unitIn = bitset(conditions.units, \.units)
        record.platformIn = bitset(conditions.platforms, \.platforms)
        record.atLeast = versionBound(conditions.appVersionAtLeast)
        record.below = versionBound(conditions.appVersionBelow)
        return record
    }

    mutating func weights(_ weights: VariantWeights, variants: [Variant], defaultVariant: Int32) -> WeightsRecord {
        var record = WeightsRecord(start: Int32(cumulativeWeights.count))
        var total: UInt64 = 0
        var holders: [Int32] = []
        for (index, variant) in variants.enumerated() {
            let weight = UInt64(weights[variant.key] ?? 0)
            total += weight
            if weight > 0 { holders.append(Int32(index)) }
            cumulativeWeights.append(total)
        }
        record.total = total
        // No weight at all (an invalid flag set) serves the default variant rather than trapping.
        record.single = holders.count == 1 ? holders[0] : (holders.isEmpty ? defaultVariant : -1)
        return record
    }

    mutating func build() {
        // Which kill switches cover which flags.
        var coveringKills: [String: [Int32]] = [:]
        let pointGroups = Dictionary(flagSet.pluginPoints.compactMap { point in point.killSwitch.map { ($0, point.switches) } },
                                     uniquingKeysWith: +)
        for (killIndex, kill) in flagSet.killSwitches.enumerated() where !kill.isMaster {
            for member in Set(kill.members + (pointGroups[kill.key] ?? [])) {
                coveringKills[member, default: []].append(Int32(killIndex))
            }
        }
        let masterIndex = flagSet.killSwitches.firstIndex(where: \.isMaster).map(Int32.init)
        // Kill entries compile to scopes once, shared by every flag they cover; an evaluator matches them
        // against its context once, when it is prepared.
        for kill in flagSet.killSwitches {
            let start = Int32(killEntryScopes.count)
            for entry in kill.entries { killEntryScopes.append(scope(entry)) }
            killSwitchRecords.append(KillSwitchRecord(start: start, count: Int32(kill.entries.count)))
        }

        for (flagIndex, flag) in flagSet.flags.enumerated() {
            if keyIndex[flag.key] == nil { keyIndex[flag.key] = Int32(flagIndex) }
            var record = FlagRecord()
            record.hasher.combine(flag.key)
            record.killStart = Int32(flagKillSwitches.count)
            let kills = (masterIndex.map { [$0] } ?? []) + (coveringKills[flag.key] ?? []).sorted()
            // A kill switch without entries can never kill: leave it out of the flag's list.
            for killIndex in kills where killSwitchRecords[Int(killIndex)].count > 0 {
                flagKillSwitches.append(killIndex)
            }
            record.killCount = Int32(flagKillSwitches.count) - record.killStart

            switch flag.kind {
            case .pluginSwitch(let gate):
                record.disabled = gate.disabled
                record.disableStart = Int32(scopes.count)
                for disabledScope in gate.disabledScopes { _ = scope(disabledScope) }
                record.disableCount = Int32(scopes.count) - record.disableStart
                record.ruleStart = Int32(rules.count)
                for rule in gate.rules {
                    var compiled = conditions(rule.conditions)
                    compiled.rollout = rule.rollout.basisPoints
                    rules.append(compiled)
                }
                record.ruleCount = Int32(rules.count) - record.ruleStart
                record.rollout = gate.rollout.basisPoints
                record.isFixed = !gate.disabled && gate.disabledScopes.isEmpty && gate.rules.isEmpty
                    && (record.rollout == 0 || record.rollout == Rollout.maximum)
            case .experiment(let experiment):
                record.isExperiment = true
                record.variantCount = Int32(experiment.variants.count)
                record.defaultVariant = Int32(experiment.variants.firstIndex { $0.key == experiment.defaultVariant } ?? 0)
                record.weights = weights(experiment.weights, variants: experiment.variants, defaultVariant: record.defaultVariant)
                record.ruleStart = Int32(rules.count)
                for rule in experiment.rules {
                    var compiled = conditions(rule.conditions)
                    compiled.weights = weights(rule.weights, variants: experiment.variants, defaultVariant: record.defaultVariant)
                    rules.append(compiled)
                }
                record.ruleCount = Int32(rules.count) - record.ruleStart
            }
            flagRecords.append(record)
        }
    }
}
