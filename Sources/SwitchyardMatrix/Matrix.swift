import Foundation
import SwitchyardFlagFiles
// Plans, shards and gate sets come with the kit: a test target imports SwitchyardMatrix alone.
@_exported public import SwitchyardMatrixPlan
public import SwitchyardPlugins

/// The combination matrix of an app: its plugin points and flows, run under every combination of its namespace's
/// plugin switches (on/off) and kill switches (killed/alive).
///
/// In an app's test target:
///
/// ```swift
/// import SwitchyardMatrix
/// import Testing
///
/// @Test func everySwitchCombinationKeepsTheTripWorking() async throws {
///     var matrix = try Matrix(flagFile: "Flags/rider.yaml")
///     let app = RiderApp(states: SwitchAssignment.allOff)
///     matrix.add(app.homeFeed, inputs: [.regular, .newRider], serving: .everyEligible)
///     matrix.add(app.confirmationAddons, inputs: [.standard])
///     matrix.flow("trip completes") { combination in
///         _ = try RiderApp(states: combination.states).runTrip(.standard)
///     }
///     await matrix.check()
/// }
/// ```
///
/// For each combination the matrix routes every input of every point and checks that: with every switch off, or
/// the master kill switch killed, the point yields its core flow; a plugin that serves has its switch on and is
/// applicable; it is the first eligible plugin in the order the flag file declares (all of them, in that order,
/// for points serving every eligible plugin); nothing throws or traps; and every flow passes. A plugin point sees a
/// switch on only when the switch is on and no kill switch covering it (its group, any group listing it, the
/// master) is killed.
///
/// Up to ``Options/bound`` combinations (2^20 by default) the matrix runs every one; beyond, every combination of
/// each point's gates plus a pairwise (or three-wise) covering array across points. See `docs/matrix.md`.
public struct Matrix {
    /// How the matrix runs.
    public struct Options: Sendable, Hashable {
        /// At most this many combinations run exhaustively; beyond, per point plus a covering array.
        public var bound: UInt64 = MatrixPlan.defaultBound
        /// The covering array's strength beyond the bound: 2 (pairwise) or 3 (three-wise).
        public var strength: Int = 2
        /// The most steps the covering array may take to build (`MatrixPlan.defaultPlanningBudget`); past it the
        /// plan is refused, saying what it would take.
        public var planningBudget: Double = MatrixPlan.defaultPlanningBudget
        /// Where combinations run.
        public var isolation: Isolation = .childProcess
        /// Tells several matrices of one test function apart (the child process runs the one with its name).
        public var name: String?
        /// After this many crashes of child processes the run stops and reports what it has.
        public var maxCrashes: Int = 32
        /// A flow that traps in this many distinct switch states is not run any further.
        public var maxFlowTraps: Int = 8
        /// Also check transitions: from each combination, turning each single gate on (or killing it) and back,
        /// with every point held live by a ``PluginHost``, must leave every point holding exactly what a fresh
        /// route gives, with nothing attached twice and nothing leaked. Off by default (it multiplies the work
        /// by about twice the number of gates); see `docs/matrix.md`.
        public var transitions = false

        public init(
            bound: UInt64 = MatrixPlan.defaultBound, strength: Int = 2, isolation: Isolation = .childProcess,
            transitions: Bool = false
        ) {
            self.bound = bound
            self.strength = strength
            self.isolation = isolation
            self.transitions = transitions
        }
    }

    /// Where the combinations run.
    public enum Isolation: Sendable, Hashable {
        /// In a child process (the test binary again, filtered to the calling test), so a plugin that traps is
        /// reported with its combination instead of ending the test run. Falls back to in-process outside Swift
        /// Testing.
        case childProcess
        /// In the calling process: fastest, but a trap ends the process.
        case inProcess
    }

    /// A named check of the whole app, run for every combination.
    struct Flow {
        let name: String
        let body: (MatrixCombination) throws -> Void
    }

    /// The namespace's flag set.
    public let flagSet: FlagSet
    /// Where the flag set came from (a flag file's path), for messages.
    public let source: String
    public var options: Options
    /// The plugin points added, in order.
    public private(set) var points: [MatrixPoint] = []
    var flows: [Flow] = []

    /// A matrix over a namespace's flag set.
    public init(flags: FlagSet, source: String? = nil, options: Options = Options()) {
        flagSet = flags
        self.source = source ?? "namespace \(flags.namespace)"
        self.options = options
    }

    /// A matrix over a flag file.
    ///
    /// - Parameters:
    ///   - path: the flag file. A relative path is tried from the current directory, then from the package root
    ///     of the calling file (the nearest folder above it with a `Package.swift`).
    ///   - options: bound, strength, isolation.
    /// - Throws: the file's problems (every one, with its field path), or that it is missing.
    public init(flagFile path: String, options: Options = Options(), filePath: StaticString = #filePath) throws {
        let resolved = Self.resolve(path, from: "\(filePath)")
        let file = try FlagFile(contentsOf: resolved)
        self.init(flags: file.flagSet, source: path, options: options)
    }

    /// Adds a plugin point with the inputs to route in every combination.
    ///
    /// - Parameters:
    ///   - point: the point as the app builds it; its switch states are replaced per combination.
    ///   - inputs: what the point routes; give one input per kind of applicability.
    ///   - serving: `.firstEligible` (the app calls `route(for:)`) or `.everyEligible` (`createPlugins(for:)`).
    public mutating func add<Input, Plugin>(
        _ point: PluginPoint<Input, Plugin>, inputs: [Input],
        serving: MatrixPoint.Serving = .firstEligible
    ) {
        add(MatrixPoint(point, inputs: inputs, serving: serving))
    }

    /// Adds a plugin point the matrix routes through closures.
    public mutating func add(_ point: MatrixPoint) {
        points.append(point)
    }

    /// Adds a check of the whole app, run for every combination: build the app over `combination.states`, run a
    /// flow, throw (a ``FlowFailure``, or any error) when it goes wrong.
    ///
    /// Throw rather than `#expect` inside: the matrix reports each failing flow once, with its smallest failing
    /// combination, instead of once per combination.
    public mutating func flow(_ name: String, _ check: @escaping (MatrixCombination) throws -> Void) {
        flows.append(Flow(name: name, body: check))
    }

    /// The combinations the matrix runs.
    /// - Throws: ``MatrixPlanError`` for a bad bound or strength, or a covering array past the planning budget.
    public func plan() throws(MatrixPlanError) -> MatrixPlan {
        try MatrixPlan(
            layout: MatrixLayout(flagSet: flagSet), bound: options.bound, strength: options.strength,
            planningBudget: options.planningBudget)
    }

    /// Where the code and the flag file disagree: a point missing on either side, switches in another order,
    /// a switch the flag file does not declare.
    public var declarationProblems: [String] {
        var problems: [String] = []
        var seen = Set<String>()
        for point in points {
            if !seen.insert(point.name).inserted {
                problems.append("plugin point '\(point.name)' is added to the matrix twice")
                continue
            }
            guard let declared = flagSet.pluginPoints.first(where: { $0.name == point.name }) else {
                problems.append("plugin point '\(point.name)' is not declared in \(source): add it to plugin_points")
                continue
            }
            let inCode = point.switches.map(\.key)
            if inCode != declared.switches {
                problems.append(
                    "plugin point '\(point.name)': code tries \(inCode.joined(separator: ", ")); "
                        + "\(source) declares \(declared.switches.joined(separator: ", "))")
            }
            for key in inCode where flagSet.flag(key)?.pluginSwitch == nil {
                problems.append("plugin point '\(point.name)': \(key) is not a plugin switch in \(source)")
            }
        }
        for declared in flagSet.pluginPoints where !seen.contains(declared.name) {
            problems.append(
                "plugin point '\(declared.name)' is declared in \(source) but not added to the matrix: "
                    + "add it with matrix.add(...) so its combinations are checked")
        }
        return problems
    }

    static func resolve(_ path: String, from callerFile: String) -> String {
        guard !path.hasPrefix("/"), !FileManager.default.fileExists(atPath: path) else { return path }
        var directory = URL(fileURLWithPath: callerFile).deletingLastPathComponent()
        while directory.path != "/" {
            if FileManager.default.fileExists(atPath: directory.appendingPathComponent("Package.swift").path) {
                let candidate = directory.appendingPathComponent(path).path
                return FileManager.default.fileExists(atPath: candidate) ? candidate : path
            }
            directory.deleteLastPathComponent()
        }
        return path
    }
}

@available(*, unavailable, message: "a matrix holds plugin points and flows that need not be Sendable")
extension Matrix: Sendable {}
