/// When a namespace requires a reason on a change. flagsd enforces it (`ChangePlan`); flagctl checks it before
/// sending, to ask for `--reason` up front.
public enum ReasonPolicy: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// Every change needs a reason.
    case always
    /// Changes that add a kill entry need a reason (the default).
    case kills
    /// No change needs one.
    case never

    public var description: String { rawValue }

    /// Whether a change needs a reason under this policy.
    /// - Parameter addsKillEntry: whether the change adds a kill entry (``FlagSet/addsKillEntry(comparedTo:)``).
    public func requiresReason(addsKillEntry: Bool) -> Bool {
        switch self {
        case .always: true
        case .kills: addsKillEntry
        case .never: false
        }
    }
}

extension Scope {
    /// The same cities and cohorts, in any order.
    public func sameScope(as other: Scope) -> Bool {
        Set(cities) == Set(other.cities) && Set(cohorts) == Set(other.cohorts)
    }
}

extension FlagSet {
    /// Whether this flag set has a kill entry that `before` does not have (a scope newly killed).
    public func addsKillEntry(comparedTo before: FlagSet) -> Bool {
        // Kill switches usually stay where they were: look each up at its own position first (a namespace holds
        // thousands), and only those with entries.
        let aligned = killSwitches.count == before.killSwitches.count
        return killSwitches.indices.contains { index in
            let kill = killSwitches[index]
            guard !kill.entries.isEmpty else { return false }
            let old =
                aligned && before.killSwitches[index].key == kill.key
                ? before.killSwitches[index] : before.killSwitch(kill.key)
            guard old != kill else { return false }
            let entries = old?.entries ?? []
            return kill.entries.contains { entry in !entries.contains { $0.sameScope(as: entry) } }
        }
    }
}
