/// One check that failed, with the smallest combination that fails it and how to reproduce it.
///
/// The matrix reports each failing check once, per plugin point or flow, however many combinations fail it.
/// "Smallest" means the fewest gates set (plugin switches on plus kill switches killed); the matrix shrinks what
/// it found by unsetting gates one at a time while the check still fails, so unsetting any single gate of the
/// reported combination makes that check pass.
public struct MatrixFinding: Sendable, Hashable, CustomStringConvertible {
    /// What was checked.
    public enum Check: String, Sendable, Hashable, CaseIterable {
        /// The matrix could not run as asked: a bad `SWITCHYARD_MATRIX_SHARD`, an unknown gate in
        /// `SWITCHYARD_MATRIX_COMBINATION`, a bad bound or strength.
        case setup
        /// The plugin points in code and in the flag file disagree (name, switches, order).
        case declaration
        /// Every switch of the point was off (or the master kill switch killed), yet a plugin served.
        case coreFlowExpected
        /// A plugin served whose switch was off, or killed.
        case servedSwitchedOff
        /// A plugin served that is not applicable to the input.
        case servedNotApplicable
        /// A plugin served before an eligible one that comes first in the declared order: the fallback is wrong.
        case fallbackOrder
        /// An eligible plugin (switch on, applicable, built) did not serve.
        case missedEligible
        /// A plugin factory threw while building.
        case factoryThrew
        /// Routing the point threw.
        case threw
        /// After a single-gate transition (or the move into a combination), a point held live by a
        /// ``PluginHost`` holds other plugins than a fresh route gives (``Matrix/Options/transitions``).
        case transition
        /// A live plugin was attached twice, detached without being attached, or leaked after its detach.
        case lifecycle
        /// The process trapped (a crash: `fatalError`, a failed precondition, an out-of-range index...).
        case trapped
        /// A flow's own check failed (the flow threw).
        case flowFailed

        var index: Int { Self.allCases.firstIndex(of: self)! }
    }

    /// The plugin point's name, `flow '<name>'`, or `declarations`.
    public let scope: String
    public let check: Check
    /// What went wrong, in the smallest failing combination.
    public let message: String
    /// The smallest failing combination, as `SWITCHYARD_MATRIX_COMBINATION` takes it (nil for declarations).
    public let combination: String?
    /// The same, for people: `on plugin_switch_feed_promos; killed kill_home_feed`.
    public let combinationDescription: String?
    /// How many gates the smallest combination sets.
    public let gatesSet: Int
    /// How many combinations of the run failed this check (at least 1).
    public let failingCombinations: UInt64
    /// The command that runs the smallest combination alone, when the matrix knows how it was started.
    public let reproduce: String?

    public init(
        scope: String, check: Check, message: String, combination: String? = nil,
        combinationDescription: String? = nil, gatesSet: Int = 0, failingCombinations: UInt64 = 1,
        reproduce: String? = nil
    ) {
        self.scope = scope
        self.check = check
        self.message = message
        self.combination = combination
        self.combinationDescription = combinationDescription
        self.gatesSet = gatesSet
        self.failingCombinations = failingCombinations
        self.reproduce = reproduce
    }

    /// The message, the smallest combination, how many fail, and the command that reproduces it.
    public var description: String {
        var lines = [message]
        if let combinationDescription {
            lines.append(
                "  smallest failing combination: \(combinationDescription) (\(gatesSet) gate\(gatesSet == 1 ? "" : "s") set)"
            )
            lines.append(
                "  fails in \(failingCombinations) combination\(failingCombinations == 1 ? "" : "s") of this run")
        }
        if let reproduce { lines.append("  reproduce: \(reproduce)") }
        return lines.joined(separator: "\n")
    }
}
