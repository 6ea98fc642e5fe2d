public import SwitchyardCore

/// The gates of one namespace, as the combination matrix numbers them: every plugin switch (on or off) and every
/// kill switch that covers one (killed or alive).
///
/// Plugin switches come first, plugin point by plugin point in the flag file's order (each point's switches in
/// the order it tries them), then plugin switches of no point; kill switches follow, group kill switches in the
/// file's order, the master last. A combination is a ``GateSet`` over these indices; combination `i` of the
/// exhaustive matrix sets gate `g` when bit `g` of `i` is 1, so combination 0 is "every switch off, nothing
/// killed".
///
/// ```swift
/// let layout = MatrixLayout(flagSet: file.flagSet)
/// layout.gateCount                       // 17 for Flags/rider.yaml
/// layout.effectiveSwitches(of: combination)   // the switches a plugin point sees on
/// ```
public struct MatrixLayout: Sendable, Hashable {
    /// One gate: a plugin switch or a kill switch.
    public struct Gate: Sendable, Hashable, CustomStringConvertible {
        /// The flag key of a plugin switch, or the key of a kill switch (`master` for the master).
        public let key: String
        /// Whether the gate is a kill switch (set means killed) rather than a plugin switch (set means on).
        public let isKillSwitch: Bool

        public var description: String { key }
    }

    /// A plugin point as the flag file declares it, with its gates.
    public struct Point: Sendable, Hashable, CustomStringConvertible {
        /// The point's name.
        public let name: String
        /// Gate indices of its plugin switches, in the order the point tries them.
        public let switches: [Int]
        /// Gate indices of the kill switches that cover any of its switches (its group, groups listing a member,
        /// the master), ascending.
        public let killSwitches: [Int]

        /// Every gate that changes what the point sees: its switches and their kill switches.
        public var gates: [Int] { switches + killSwitches }

        public var description: String { name }
    }

    /// The namespace.
    public let namespace: String
    /// Every gate: plugin switches (indices `0..<switchCount`), then kill switches.
    public let gates: [Gate]
    /// How many gates are plugin switches.
    public let switchCount: Int
    /// The plugin points, in the file's order.
    public let points: [Point]
    /// For each kill switch gate (index `gate - switchCount`), the plugin switch gates it covers.
    public let covers: [[Int]]
    /// Kill switches left out because they cover no plugin switch (a group of experiments only, say).
    public let ignoredKillSwitches: [String]
    /// For each kill switch gate, its cover as a set of switch gates.
    private let coverSets: [GateSet]
    private let indexOfKey: [String: Int]

    /// Numbers the gates of a flag set.
    public init(flagSet: FlagSet) {
        namespace = flagSet.namespace
        var switchKeys: [String] = []
        var seen = Set<String>()
        for point in flagSet.pluginPoints {
            for key in point.switches where flagSet.flag(key)?.pluginSwitch != nil && seen.insert(key).inserted {
                switchKeys.append(key)
            }
        }
        for flag in flagSet.flags where flag.pluginSwitch != nil && seen.insert(flag.key).inserted {
            switchKeys.append(flag.key)
        }
        switchCount = switchKeys.count
        let switchIndex = Dictionary(uniqueKeysWithValues: switchKeys.enumerated().map { ($1, $0) })

        var killKeys: [String] = []
        var covers: [[Int]] = []
        var ignored: [String] = []
        let groups = flagSet.killSwitches.filter { !$0.isMaster } + flagSet.killSwitches.filter(\.isMaster)
        let coverage = KillSwitchCoverage(flagSet, flags: false)
        for kill in groups {
            let covered =
                kill.isMaster
                ? Array(0..<switchKeys.count)
                : coverage.members(of: kill.key).compactMap { switchIndex[$0] }.sorted()
            if covered.isEmpty {
                ignored.append(kill.key)
            } else {
                killKeys.append(kill.key)
                covers.append(covered)
            }
        }
        self.covers = covers
        ignoredKillSwitches = ignored
        gates =
            switchKeys.map { Gate(key: $0, isKillSwitch: false) } + killKeys.map { Gate(key: $0, isKillSwitch: true) }
        let capacity = switchKeys.count
        coverSets = covers.map { GateSet(capacity: capacity, $0) }
        indexOfKey = Dictionary(gates.enumerated().map { ($1.key, $0) }, uniquingKeysWith: { first, _ in first })

        let switchCount = switchKeys.count
        points = flagSet.pluginPoints.map { point in
            let switches = point.switches.compactMap { switchIndex[$0] }
            let kills = covers.indices.filter { kill in covers[kill].contains(where: switches.contains) }
            return Point(name: point.name, switches: switches, killSwitches: kills.map { $0 + switchCount })
        }
    }

    /// How many gates: the matrix has 2^gateCount combinations.
    public var gateCount: Int { gates.count }

    /// How many gates are kill switches.
    public var killSwitchCount: Int { gates.count - switchCount }

    /// The index of the gate with a key.
    public func gate(named key: String) -> Int? {
        indexOfKey[key]
    }

    /// The index of the master kill switch's gate, when it covers any switch.
    public var masterGate: Int? {
        gate(named: KillSwitch.masterKey)
    }

    /// The plugin switches a plugin point sees on in a combination: on, and covered by no killed kill switch.
    ///
    /// - Parameter combination: switches on and kill switches killed.
    /// - Returns: the effective switches (switch gate indices only).
    public func effectiveSwitches(of combination: GateSet) -> GateSet {
        var effective = GateSet(capacity: switchCount)
        let switchWords = (switchCount + 63) / 64
        for word in 0..<switchWords {
            var bits = combination.word(word)
            if word == switchWords - 1 && switchCount % 64 != 0 { bits &= (1 << UInt64(switchCount % 64)) - 1 }
            effective.setWord(word, bits)
        }
        for kill in 0..<covers.count where combination.contains(switchCount + kill) {
            for word in 0..<switchWords { effective.setWord(word, effective.word(word) & ~coverSets[kill].word(word)) }
        }
        return effective
    }

    /// The killed kill switches that cover a switch in a combination, by key.
    public func killers(of switchGate: Int, in combination: GateSet) -> [String] {
        covers.indices.filter { combination.contains(switchCount + $0) && covers[$0].contains(switchGate) }
            .map { gates[switchCount + $0].key }
    }

    /// The point a plugin switch belongs to.
    public func point(of switchGate: Int) -> Point? {
        points.first { $0.switches.contains(switchGate) }
    }
}

extension GateSet {
    mutating func setWord(_ index: Int, _ value: UInt64) {
        while words.count <= index { words.append(0) }
        words[index] = value
    }
}
