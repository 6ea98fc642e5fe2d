/// Which kill switches cover each flag, and which flags each kill switch covers, worked out once for a whole flag
/// set: the answers of `FlagSet.killSwitchKeys(covering:)` and `FlagSet.members(of:)`, the same lists in the same
/// order, for listings that ask them of every flag and every kill switch. Asked one by one, those scan the kill
/// switches and plugin points on each call; a namespace of 10,000 switches in 1,250 plugin points, each point with
/// its group kill switch, made `flagctl get` take seconds scanning them.
public struct KillSwitchCoverage: Sendable {
    private let flagSet: FlagSet
    /// The position of the master kill switch in `flagSet.killSwitches` (a valid flag set has one).
    private let masters: [Int]
    /// Key → positions, in ascending order, of the kill switches other than the master that cover it (as a member,
    /// or as the group kill switch of the plugin point `FlagSet.pluginPoint(listing:)` finds for it); nil when not
    /// worked out (then the flag set answers).
    private let covering: [String: [Int]]?
    /// Kill switch key → positions of the plugin points that name it as their group kill switch, in order.
    private let pointsNaming: [String: [Int]]

    /// - Parameter flags: whether to work out the kill switches covering each flag too. A listing of kill switches
    ///   alone asks only `members(of:)`; without it, `killSwitchKeys(covering:)` asks the flag set, a scan a call.
    public init(_ flagSet: FlagSet, flags: Bool = true) {
        self.flagSet = flagSet
        var pointsNaming: [String: [Int]] = [:]
        for (position, point) in flagSet.pluginPoints.enumerated() {
            if let group = point.killSwitch { pointsNaming[group, default: []].append(position) }
        }
        self.pointsNaming = pointsNaming
        guard flags else {
            (masters, covering) = ([], nil)
            return
        }
        // Each group's switches, by the point `pluginPoint(listing:)` finds for each.
        var grouped: [String: [String]] = [:]
        for (key, group) in flagSet.listedSwitchGroups() {
            if let group { grouped[group, default: []].append(key) }
        }
        var masters: [Int] = []
        var covering: [String: [Int]] = [:]
        for (position, kill) in flagSet.killSwitches.enumerated() {
            if kill.isMaster {
                masters.append(position)
                continue
            }
            // Positions only grow, so each list stays in order; a key both member and grouped is added once.
            for key in kill.members + (grouped[kill.key] ?? []) where covering[key]?.last != position {
                covering[key, default: []].append(position)
            }
        }
        self.masters = masters
        self.covering = covering
    }

    /// The keys of the kill switches that cover a flag (see `FlagSet.killSwitchKeys(covering:)`).
    public func killSwitchKeys(covering flagKey: String) -> [String] {
        guard let covering else { return flagSet.killSwitchKeys(covering: flagKey) }
        let positions = covering[flagKey] ?? []
        return (masters.isEmpty ? positions : (positions + masters).sorted()).map { flagSet.killSwitches[$0].key }
    }

    /// The flags a kill switch covers (see `FlagSet.members(of:)`).
    public func members(of killSwitchKey: String) -> [String] {
        guard let kill = flagSet.killSwitch(killSwitchKey) else { return [] }
        if kill.isMaster { return flagSet.flags.map(\.key) }
        var members = kill.members
        var seen = Set(members)
        for position in pointsNaming[killSwitchKey] ?? [] {
            for key in flagSet.pluginPoints[position].switches where seen.insert(key).inserted { members.append(key) }
        }
        return members
    }
}
