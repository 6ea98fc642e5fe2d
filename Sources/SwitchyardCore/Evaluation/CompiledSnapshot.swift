/// A snapshot compiled once into an indexed form for fast evaluation.
///
/// The values of every list attribute (cities, cohorts, allowlisted units, platforms: `ListAttribute`) are
/// interned to small integers, per attribute, and every list of a rule or a kill entry becomes a bitset; each
/// flag keeps its murmur3 state after hashing its key, so bucketing a unit hashes only the unit id. Immutable and
/// safe to share between threads.
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
    /// Per list attribute (`ListAttribute.rawValue`), the ids of the values the snapshot's lists name.
    let listIds: [[String: Int32]]
    let versionBounds: [VersionBound]
    /// The ids of `versionBounds` by attribute, for the attributes some bound reads.
    let versionBoundsByAttribute: [(attribute: VersionAttribute, ids: [Int])]
    /// Per kill switch slot, its entries' scopes in `killEntryScopes` (none for the slot of a removed kill switch).
    let killSwitchRecords: [KillSwitchRecord]
    let killEntryScopes: [Int32]
    /// Kill switch key → slot. A compile gives slot i to `flagSet.killSwitches[i]`; a delta adds slots for new keys,
    /// so the slots in compiled records stay valid whatever moves in the flag set.
    let killSlots: [String: Int32]
    /// The hot tables, in memory this object owns (never moved, never written after init, freed in deinit).
    let tables: Tables
    /// Table elements that deltas appended since the last full compile (what they replaced stays behind, unused):
    /// past `compiledSize`, the next delta compiles afresh.
    let appendedByDeltas: Int
    let compiledSize: Int

    /// Compiles a snapshot. Never traps, even on a flag set that does not validate.
    public convenience init(_ snapshot: Snapshot) {
        var builder = Builder(flagSet: snapshot.flagSet, base: nil)
        builder.buildKillSwitches(changed: nil)
        var records: [FlagRecord] = []
        records.reserveCapacity(snapshot.flagSet.flags.count)
        var keyIndex: [String: Int32] = [:]
        keyIndex.reserveCapacity(snapshot.flagSet.flags.count)
        for (position, flag) in snapshot.flagSet.flags.enumerated() {
            if keyIndex[flag.key] == nil { keyIndex[flag.key] = Int32(position) }
            records.append(builder.record(for: flag, killList: nil))
        }
        let tables = Tables(
            flags: Table(copying: records),
            rules: Table(copying: builder.rules),
            scopes: Table(copying: builder.scopes),
            lists: Table(copying: builder.lists),
            words: Table(copying: builder.words),
            flagKillSwitches: Table(copying: builder.flagKillSwitches),
            cumulativeWeights: Table(copying: builder.cumulativeWeights),
            killSwitchIndices: Table(copying: builder.killSwitchIndices)
        )
        self.init(
            snapshot: snapshot, keyIndex: keyIndex, builder: builder, tables: tables, appendedByDeltas: 0,
            compiledSize: tables.elementCount)
    }

    /// A snapshot compiled in full (`appendedByDeltas` 0, `compiledSize` its tables' size) or from a base and a
    /// delta.
    private init(
        snapshot: Snapshot, keyIndex: [String: Int32], builder: Builder, tables: Tables,
        appendedByDeltas: Int, compiledSize: Int
    ) {
        self.snapshot = snapshot
        self.keyIndex = keyIndex
        listIds = builder.interners.map(\.ids)
        versionBounds = builder.versionBounds
        versionBoundsByAttribute = builder.versionBoundsByAttribute
        killSwitchRecords = builder.killSwitchRecords
        killEntryScopes = builder.killEntryScopes
        killSlots = builder.killSlots
        self.tables = tables
        self.appendedByDeltas = appendedByDeltas
        self.compiledSize = compiledSize
    }

    deinit {
        tables.deallocate()
    }

    public var namespace: String { snapshot.namespace }
    public var epoch: String { snapshot.epoch }
    public var version: Int64 { snapshot.version }
    public var flagCount: Int { tables.flags.count }

    /// Resolves a flag key to a handle, once.
    ///
    /// A handle stays valid in the snapshots that deltas make from this one for as long as its flag is neither
    /// removed nor moved: a delta keeps every other flag in place, and puts the last flag where it removes one.
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

    /// The snapshot a delta leads to, compiled by recompiling only what the delta changed, and checked as a full
    /// download is: the delta must apply to this snapshot (same namespace, epoch and base version), the result must
    /// be a valid flag set, and its digest must be the one the delta names. Nothing is shared with this snapshot
    /// that either could change: both stay usable.
    ///
    /// Cost: the objects the delta names, plus copying the compiled tables (a few hundred bytes per flag); a delta
    /// that adds or removes flags or changes kill switches or plugin points also checks the whole flag set's
    /// references. After deltas have appended as much as a compile holds, the next one compiles afresh.
    ///
    /// - Parameter digest: this snapshot's digest sums (`SnapshotDigest(snapshot.flagSet)`, kept from the
    ///   previous delta).
    /// - Returns: the new compiled snapshot and its digest sums, for the next delta.
    /// - Throws: `SnapshotDeltaError`; nothing is changed then.
    public func applying(_ delta: SnapshotDelta, digest: SnapshotDigest) throws(SnapshotDeltaError)
        -> (snapshot: CompiledSnapshot, digest: SnapshotDigest)
    {
        let application = try DeltaApplication(base: snapshot, keyIndex: keyIndex, delta: delta)
        let problems = application.problems(upserted: delta.upsertedFlags)
        guard problems.isEmpty else { throw SnapshotDeltaError.invalid(problems, delta) }
        let (newDigest, value) = application.digest(from: digest, delta: delta)
        guard value == delta.digest else { throw SnapshotDeltaError.digestMismatch(value, delta) }
        return (compile(application, delta), newDigest)
    }

    /// The compiled form of a delta's result: this snapshot's tables copied, with records for what changed.
    private func compile(_ application: DeltaApplication, _ delta: SnapshotDelta) -> CompiledSnapshot {
        let old = snapshot.flagSet
        let new = application.snapshot.flagSet
        // Kill lists follow the order of the flag set's kill switches; if a delta re-sorts an unsorted base, every
        // list may change order.
        let killOrderKept =
            !application.touchesKillSwitches
            || zip(old.killSwitches, old.killSwitches.dropFirst()).allSatisfy { SnapshotDelta.byUTF8($0.key, $1.key) }
        guard killOrderKept, appendedByDeltas <= max(compiledSize, 4096) else {
            return CompiledSnapshot(application.snapshot)
        }
        var builder = Builder(flagSet: new, base: self)
        var membershipChanged: Set<String> = []
        if application.touchesKillSwitches || application.touchesPluginPoints {
            // Flags whose covering group kill switches may have changed: members of a group whose membership
            // changed (its own list, or the plugin points naming it), before and after. The master covers every
            // flag whatever happens.
            let touchedKills = Set(delta.upsertedKillSwitches.map(\.key) + delta.removedKillSwitches)
                .subtracting([KillSwitch.masterKey])
            for key in touchedKills {
                let before = old.members(of: key)
                let after = new.members(of: key)
                if before != after {
                    membershipChanged.formUnion(before)
                    membershipChanged.formUnion(after)
                }
            }
            let oldPoints = Dictionary(old.pluginPoints.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
            let newPoints = Dictionary(new.pluginPoints.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
            for name in Set(oldPoints.keys).union(newPoints.keys) {
                let before = oldPoints[name]
                let after = newPoints[name]
                guard before?.killSwitch != after?.killSwitch || before?.switches != after?.switches else { continue }
                if let before, before.killSwitch != nil { membershipChanged.formUnion(before.switches) }
                if let after, after.killSwitch != nil { membershipChanged.formUnion(after.switches) }
            }
            if application.touchesKillSwitches {
                builder.buildKillSwitches(changed: Set(delta.upsertedKillSwitches.map(\.key)))
            }
        }
        var positions = Set(application.changedPositions)
        for key in membershipChanged { if let position = application.keyIndex[key] { positions.insert(position) } }
        var changedRecords: [(Int32, FlagRecord)] = []
        changedRecords.reserveCapacity(positions.count)
        for position in positions.sorted() {
            let flag = new.flags[Int(position)]
            // A flag that was there keeps its kill list unless memberships changed around it.
            var killList: [Int32]?
            if let oldPosition = keyIndex[flag.key], !membershipChanged.contains(flag.key) {
                let record = tables.flags[oldPosition]
                killList = (0..<record.killCount).map { tables.flagKillSwitches[record.killStart + $0] }
            }
            changedRecords.append((position, builder.record(for: flag, killList: killList)))
        }
        let newTables = Tables(
            flags: Table(copying: tables.flags, count: new.flags.count, replacing: changedRecords),
            rules: Table(copying: tables.rules, appending: builder.rules),
            scopes: Table(copying: tables.scopes, appending: builder.scopes),
            lists: Table(copying: tables.lists, appending: builder.lists),
            words: Table(copying: tables.words, appending: builder.words),
            flagKillSwitches: Table(copying: tables.flagKillSwitches, appending: builder.flagKillSwitches),
            cumulativeWeights: Table(copying: tables.cumulativeWeights, appending: builder.cumulativeWeights),
            killSwitchIndices: application.touchesKillSwitches
                ? Table(copying: builder.killSwitchIndices) : Table(copying: tables.killSwitchIndices, appending: [])
        )
        let appended =
            builder.rules.count + builder.scopes.count + builder.lists.count + builder.words.count
            + builder.flagKillSwitches.count
            + builder.cumulativeWeights.count
        return CompiledSnapshot(
            snapshot: application.snapshot, keyIndex: application.keyIndex, builder: builder,
            tables: newTables, appendedByDeltas: appendedByDeltas + appended, compiledSize: compiledSize)
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

    /// Another table's elements followed by more.
    init(copying other: Table, appending elements: [Element]) {
        count = other.count + elements.count
        base = UnsafeMutablePointer<Element>.allocate(capacity: max(count, 1))
        base.initialize(from: other.base, count: other.count)
        _ = UnsafeMutableBufferPointer(start: base + other.count, count: elements.count).initialize(from: elements)
    }

    /// Another table's first `count` elements (all of them, and uninitialised ones never read past it: `count` is
    /// at most `other.count` plus the replaced positions beyond it), with some replaced.
    init(copying other: Table, count: Int, replacing replacements: [(Int32, Element)]) {
        self.count = count
        base = UnsafeMutablePointer<Element>.allocate(capacity: max(count, 1))
        base.initialize(from: other.base, count: min(count, other.count))
        for (index, element) in replacements { (base + Int(index)).initialize(to: element) }
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
    let lists: Table<ListRecord>
    let words: Table<UInt64>
    /// Per flag, the slots of the kill switches that cover it: the master first, then the groups in the flag set's
    /// order (whether or not they hold entries, so a kill entry added or removed changes no flag's record).
    let flagKillSwitches: Table<Int32>
    let cumulativeWeights: Table<UInt64>
    /// Kill switch slot → its index in the flag set's `killSwitches` (what evaluations report), -1 for none.
    let killSwitchIndices: Table<Int32>

    /// Elements of the tables other than the flags (what deltas append to).
    var elementCount: Int {
        rules.count + scopes.count + lists.count + words.count + flagKillSwitches.count + cumulativeWeights.count
    }

    func deallocate() {
        flags.deallocate()
        rules.deallocate()
        scopes.deallocate()
        lists.deallocate()
        words.deallocate()
        flagKillSwitches.deallocate()
        cumulativeWeights.deallocate()
        killSwitchIndices.deallocate()
    }
}

/// A bitset in `Tables.words`: words `start..<start + count` hold bits `64 * first ..< 64 * (first + count)` (ids
/// below and above are not in the set: an allowlist of a few of many units takes a word, not all the words up to
/// its ids). `count == 0` means "no condition".
struct BitsetRef: Sendable, Hashable {
    var start: Int32 = 0
    var count: Int32 = 0
    /// The index of the first word's bits among all the words of the id space.
    var first: Int32 = 0
}

/// Lists in `Tables.lists`: `start..<start + count`; all must hold.
struct ListsRef: Sendable {
    var start: Int32 = 0
    var count: Int32 = 0
}

/// One list of a rule or a kill entry: the context's values of an attribute must be among the bitset's ids
/// (admitting), or the context must have values and none among them (`excludes`). `TargetingList.holds` is the
/// reference.
struct ListRecord: Sendable {
    var values: BitsetRef
    /// `ListAttribute.rawValue`.
    var attribute: Int32
    var excludes: Bool
}

/// A kill entry's or a scoped disable's scope: its cities and cohorts as admitting lists.
struct ScopeRecord: Sendable {
    var lists = ListsRef()
}

/// One bound of a rule on a version attribute: a range with its lower or its upper bound only.
struct VersionBound: Sendable, Hashable {
    var attribute: VersionAttribute
    var range: VersionRange

    /// Whether a context's version of the attribute (nil: none, or not a semantic version) passes the bound.
    func passes(_ value: SemanticVersion?) -> Bool {
        value.map(range.contains) ?? false
    }
}

struct RuleRecord: Sendable {
    var lists = ListsRef()
    /// The ids of the version bounds the context must pass (`CompiledSnapshot.versionBounds`).
    var versions = BitsetRef()
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

/// Compiles flags and kill switches into records, appending to tables that hold `base`'s elements (none for a
/// full compile): every index it writes counts those in.
private struct Builder {
    let flagSet: FlagSet
    /// Per list attribute (`ListAttribute.rawValue`).
    var interners = [Interner](repeating: Interner(), count: ListAttribute.allCases.count)
    var versionBounds: [VersionBound] = []
    // New elements, after the base's.
    var words: [UInt64] = []
    var scopes: [ScopeRecord] = []
    var lists: [ListRecord] = []
    var rules: [RuleRecord] = []
    var flagKillSwitches: [Int32] = []
    var cumulativeWeights: [UInt64] = []
    // The base's element counts.
    let wordBase: Int32
    let scopeBase: Int32
    let listBase: Int32
    let ruleBase: Int32
    let killListBase: Int32
    let weightBase: Int32
    // Kill switches: every slot's record and its position in the flag set.
    var killSlots: [String: Int32] = [:]
    var killSwitchRecords: [KillSwitchRecord] = []
    var killEntryScopes: [Int32] = []
    var killSwitchIndices: [Int32] = []
    /// Group kill switch slots covering each flag key, built on first need.
    private var coveringGroups: [String: [Int32]]?
    private var masterSlot: Int32?
    /// Ids of the values of one list, reused from list to list.
    private var scratch: [Int32] = []

    init(flagSet: FlagSet, base: CompiledSnapshot?) {
        self.flagSet = flagSet
        if let base {
            for (attribute, ids) in base.listIds.enumerated() { interners[attribute].ids = ids }
            versionBounds = base.versionBounds
            killSlots = base.killSlots
            killSwitchRecords = base.killSwitchRecords
            killEntryScopes = base.killEntryScopes
            let indices = base.tables.killSwitchIndices
            killSwitchIndices = (0..<indices.count).map { indices[Int32($0)] }
        }
        wordBase = Int32(base?.tables.words.count ?? 0)
        scopeBase = Int32(base?.tables.scopes.count ?? 0)
        listBase = Int32(base?.tables.lists.count ?? 0)
        ruleBase = Int32(base?.tables.rules.count ?? 0)
        killListBase = Int32(base?.tables.flagKillSwitches.count ?? 0)
        weightBase = Int32(base?.tables.cumulativeWeights.count ?? 0)
    }

    mutating func bitset(_ values: [String], _ attribute: ListAttribute) -> BitsetRef {
        guard !values.isEmpty else { return BitsetRef() }
        var ids = scratch
        scratch = []
        ids.removeAll(keepingCapacity: true)
        for value in values { ids.append(interners[attribute.rawValue].id(value)) }
        defer { scratch = ids }
        return bitset(ids: ids)
    }

    /// The index the next list appended to `lists` gets.
    var nextList: Int32 { listBase + Int32(lists.count) }

    /// The lists appended since `start` (a `nextList` read before appending them).
    func lists(since start: Int32) -> ListsRef {
        ListsRef(start: start, count: nextList - start)
    }

    /// Appends a list to `lists` unless it is empty (no condition).
    mutating func appendList(_ attribute: ListAttribute, excludes: Bool, _ values: [String]) {
        guard !values.isEmpty else { return }
        lists.append(
            ListRecord(values: bitset(values, attribute), attribute: Int32(attribute.rawValue), excludes: excludes))
    }

    /// The bitset of ids (not empty).
    mutating func bitset(ids: [Int32]) -> BitsetRef {
        guard let lowest = ids.min(), let highest = ids.max() else { return BitsetRef() }
        let first = lowest / 64
        let wordCount = Int(highest / 64 - first) + 1
        let start = words.count
        words.append(contentsOf: repeatElement(0, count: wordCount))
        for id in ids { words[start + Int(id / 64 - first)] |= 1 << UInt64(id % 64) }
        return BitsetRef(start: wordBase + Int32(start), count: Int32(wordCount), first: first)
    }

    mutating func scope(_ scope: Scope) -> Int32 {
        let start = nextList
        appendList(.city, excludes: false, scope.cities)
        appendList(.cohort, excludes: false, scope.cohorts)
        let record = ScopeRecord(lists: lists(since: start))
        scopes.append(record)
        return scopeBase + Int32(scopes.count - 1)
    }

    var versionBoundsByAttribute: [(attribute: VersionAttribute, ids: [Int])] {
        VersionAttribute.allCases.compactMap { attribute in
            let ids = versionBounds.indices.filter { versionBounds[$0].attribute == attribute }
            return ids.isEmpty ? nil : (attribute, ids)
        }
    }

    /// The ids of a rule's version bounds (interned on first sight) as a bitset.
    mutating func versionBounds(_ conditions: Conditions) -> BitsetRef {
        guard !conditions.versions.isEmpty else { return BitsetRef() }
        var ids: [Int32] = []
        for attribute in VersionAttribute.allCases {
            let range = conditions[version: attribute]
            for one in [VersionRange(atLeast: range.atLeast), VersionRange(below: range.below)] where !one.isEmpty {
                let bound = VersionBound(attribute: attribute, range: one)
                if let index = versionBounds.firstIndex(of: bound) {
                    ids.append(Int32(index))
                } else {
                    versionBounds.append(bound)
                    ids.append(Int32(versionBounds.count - 1))
                }
            }
        }
        return bitset(ids: ids)
    }

    mutating func conditions(_ conditions: Conditions) -> RuleRecord {
        var record = RuleRecord()
        // In the order of `TargetingList.allCases`, whatever the dictionary's.
        let start = nextList
        for list in TargetingList.allCases {
            appendList(list.attribute, excludes: list.excludes, conditions[list: list])
        }
        record.lists = lists(since: start)
        record.versions = versionBounds(conditions)
        return record
    }

    mutating func weights(_ weights: VariantWeights, variants: [Variant], defaultVariant: Int32) -> WeightsRecord {
        var record = WeightsRecord(start: weightBase + Int32(cumulativeWeights.count))
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

    /// Compiles the entries of kill switches into scopes and gives every kill switch a slot.
    ///
    /// - Parameter changed: the keys of the kill switches whose entries to compile again (the others keep their
    ///   records); nil compiles every one (a full compile, where slot i is `flagSet.killSwitches[i]`).
    mutating func buildKillSwitches(changed: Set<String>?) {
        for kill in flagSet.killSwitches where killSlots[kill.key] == nil {
            killSlots[kill.key] = Int32(killSwitchRecords.count)
            killSwitchRecords.append(KillSwitchRecord(start: 0, count: 0))
        }
        killSwitchIndices = [Int32](repeating: -1, count: killSwitchRecords.count)
        var live = Set<Int32>()
        for (index, kill) in flagSet.killSwitches.enumerated() {
            // A key declared twice (an invalid flag set) is the first of them, as in the slot's record.
            guard let slot = killSlots[kill.key], killSwitchIndices[Int(slot)] == -1 else { continue }
            killSwitchIndices[Int(slot)] = Int32(index)
            live.insert(slot)
            guard changed?.contains(kill.key) ?? true else { continue }
            // Kill entries compile to scopes once, shared by every flag they cover; an evaluator matches them
            // against its context once, when it is prepared.
            let start = Int32(killEntryScopes.count)
            for entry in kill.entries { killEntryScopes.append(scope(entry)) }
            killSwitchRecords[Int(slot)] = KillSwitchRecord(start: start, count: Int32(kill.entries.count))
        }
        // The slot of a removed kill switch kills nothing.
        for slot in killSwitchRecords.indices where !live.contains(Int32(slot)) {
            killSwitchRecords[slot] = KillSwitchRecord(start: 0, count: 0)
        }
    }

    /// Appends to `flagKillSwitches` the slots of the kill switches covering a flag: the master first, then every
    /// group covering it (as a member or through its plugin point) in the order of the flag set.
    mutating func appendCoveringKillList(of key: String) {
        if coveringGroups == nil {
            var groups: [String: [Int32]] = [:]
            let pointGroups = Dictionary(
                flagSet.pluginPoints.compactMap { point in point.killSwitch.map { ($0, point.switches) } },
                uniquingKeysWith: +)
            for kill in flagSet.killSwitches where !kill.isMaster {
                guard let slot = killSlots[kill.key] else { continue }
                for member in Set(kill.members + (pointGroups[kill.key] ?? [])) {
                    groups[member, default: []].append(slot)
                }
            }
            coveringGroups = groups
            masterSlot = killSlots[KillSwitch.masterKey]
        }
        if let master = masterSlot { flagKillSwitches.append(master) }
        guard let groups = coveringGroups?[key] else { return }
        if groups.count == 1 {
            flagKillSwitches.append(groups[0])
        } else {
            flagKillSwitches += groups.sorted { killSwitchIndices[Int($0)] < killSwitchIndices[Int($1)] }
        }
    }

    /// The record of one flag, appending its rules, scopes, bitsets, kill list and weights.
    ///
    /// - Parameter killList: the slots of its covering kill switches, or nil to work them out.
    mutating func record(for flag: FlagDefinition, killList: [Int32]?) -> FlagRecord {
        var record = FlagRecord()
        record.hasher.combine(flag.key)
        let killStart = flagKillSwitches.count
        record.killStart = killListBase + Int32(killStart)
        if let killList { flagKillSwitches += killList } else { appendCoveringKillList(of: flag.key) }
        record.killCount = Int32(flagKillSwitches.count - killStart)

        switch flag.kind {
        case .pluginSwitch(let gate):
            record.disabled = gate.disabled
            record.disableStart = scopeBase + Int32(scopes.count)
            for disabledScope in gate.disabledScopes { _ = scope(disabledScope) }
            record.disableCount = Int32(gate.disabledScopes.count)
            record.ruleStart = ruleBase + Int32(rules.count)
            for rule in gate.rules {
                var compiled = conditions(rule.conditions)
                compiled.rollout = rule.rollout.basisPoints
                rules.append(compiled)
            }
            record.ruleCount = Int32(gate.rules.count)
            record.rollout = gate.rollout.basisPoints
            record.isFixed =
                !gate.disabled && gate.disabledScopes.isEmpty && gate.rules.isEmpty
                && (record.rollout == 0 || record.rollout == Rollout.maximum)
        case .experiment(let experiment):
            record.isExperiment = true
            record.variantCount = Int32(experiment.variants.count)
            record.defaultVariant = Int32(experiment.variants.firstIndex { $0.key == experiment.defaultVariant } ?? 0)
            record.weights = weights(
                experiment.weights, variants: experiment.variants, defaultVariant: record.defaultVariant)
            record.ruleStart = ruleBase + Int32(rules.count)
            for rule in experiment.rules {
                var compiled = conditions(rule.conditions)
                compiled.weights = weights(
                    rule.weights, variants: experiment.variants, defaultVariant: record.defaultVariant)
                rules.append(compiled)
            }
            record.ruleCount = Int32(experiment.rules.count)
        }
        return record
    }
}
