public import ArgumentParser
import Foundation
import SwitchyardCore
import SwitchyardFlagFiles
import SwitchyardMatrixPlan

/// `flagctl matrix plan|run`: the combination matrix's counts and CI shards from flag files, and shards run
/// locally.
public struct MatrixCommands: AsyncParsableCommand {
    public static let configuration = CommandConfiguration(
        commandName: "matrix",
        abstract: "Plan the combination matrix from flag files, and run its shards locally.",
        discussion: """
            The combination matrix (SwitchyardMatrix, in an app's test target) runs the app's plugin points under \
            every combination of its plugin switches and kill switches. 'plan' counts the combinations from the \
            flag files and prints CI shards; 'run' runs the test in shards with one progress bar.

            Examples:

              flagctl matrix plan Flags
              flagctl matrix plan Flags --shards 4 --github-matrix
              flagctl matrix run --filter RiderMatrixTests --shards 4

            Guide: docs/matrix.md.
            """,
        subcommands: [MatrixPlanCommand.self, MatrixRunCommand.self]
    )

    public init() {}
}

/// `flagctl matrix plan DIR`
public struct MatrixPlanCommand: FlagctlCommand {
    public static let configuration = CommandConfiguration(
        commandName: "plan",
        abstract: "Count the combinations per plugin point and for the app, and print CI shards.",
        discussion: """
            Reads the namespace's flag file in DIR: its plugin points (each point's switches, its group kill \
            switch, other groups covering them, the master) and every kill switch covering a plugin switch. Up to \
            the bound (2^20 by default) the matrix runs every combination of every gate; beyond it, every \
            combination of each point's gates plus a pairwise (--strength 3: three-wise) covering array across \
            points. The test kit makes the same plan from the same file and options.

            Examples:

              flagctl matrix plan Flags
              flagctl matrix plan Flags --shards 4
              flagctl matrix plan Flags --per-shard 50000 --github-matrix     # JSON for strategy.matrix
              flagctl matrix plan Flags --shards 4 --shard-list               # 1/4 ... 4/4, one per line
              flagctl matrix plan Flags -o json

            In GitHub Actions, feed --github-matrix to a job's strategy.matrix with fromJSON, and give each job \
            SWITCHYARD_MATRIX_SHARD: ${{ matrix.shard }}.

            Exit status: 0 ok, 1 when the flag file has problems or its matrix is too large to plan, 4 unknown \
            namespace, 64 usage.
            """
    )

    @Argument(help: ArgumentHelp("The directory of flag files, one <namespace>.yaml each.", valueName: "dir"))
    public var directory: String

    @Option(
        name: [.customShort("n"), .long],
        help: ArgumentHelp("The namespace; needed when DIR holds several.", valueName: "ns"))
    public var namespace: String?

    @Option(help: ArgumentHelp("Run every combination up to this many (a number, or 2^N).", valueName: "n"))
    public var bound: String = "2^20"

    @Option(help: ArgumentHelp("Covering strength beyond the bound: 2 (pairwise) or 3 (three-wise).", valueName: "t"))
    public var strength: Int = 2

    @Option(
        help: ArgumentHelp(
            "The most steps a covering array may take to plan (5e9 by default: a few minutes at most); past it the plan is refused, saying what it would take.",
            valueName: "steps"))
    public var planningBudget: Double = MatrixPlan.defaultPlanningBudget

    @Option(help: ArgumentHelp("Split into this many shards.", valueName: "n"))
    public var shards: Int?

    @Option(
        name: .customLong("per-shard"),
        help: ArgumentHelp("Split into as few shards as keep each at or under this many combinations.", valueName: "n"))
    public var perShard: UInt64?

    @Flag(name: .customLong("github-matrix"), help: "Print only the JSON for a GitHub Actions strategy.matrix.")
    public var githubMatrix = false

    @Flag(name: .customLong("shard-list"), help: "Print only the shards, one i/n per line.")
    public var shardList = false

    @OptionGroup public var outputOptions: OutputOptions

    public init() {}

    public func validate() throws {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw ValidationError(
                "No directory '\(directory)'. Pass the folder that holds your flag files, e.g. 'flagctl matrix plan Flags'."
            )
        }
        guard Self.parseBound(bound) != nil else {
            throw ValidationError("--bound \(bound) is not a number of combinations: write e.g. 1048576 or 2^20.")
        }
        guard planningBudget > 0, planningBudget.isFinite else {
            throw ValidationError(
                "--planning-budget must be a positive number of steps (5e9, 1e11), not \(planningBudget).")
        }
        guard strength == 2 || strength == 3 else {
            throw ValidationError("--strength must be 2 (pairwise) or 3 (three-wise), not \(strength).")
        }
        if shards != nil && perShard != nil {
            throw ValidationError("Pass --shards or --per-shard, not both.")
        }
        if let shards, shards < 1 { throw ValidationError("--shards must be at least 1, not \(shards).") }
        if let perShard, perShard < 1 { throw ValidationError("--per-shard must be at least 1.") }
        if githubMatrix && shardList { throw ValidationError("Pass --github-matrix or --shard-list, not both.") }
    }

    /// `1048576`, `2^20`.
    static func parseBound(_ text: String) -> UInt64? {
        if let value = UInt64(text), value > 0 { return value }
        let parts = text.split(separator: "^")
        guard parts.count == 2, parts[0] == "2", let exponent = Int(parts[1]), exponent >= 0, exponent < 63 else {
            return nil
        }
        return UInt64(1) << UInt64(exponent)
    }

    /// How often a long plan reports its progress.
    static let progressInterval = Duration.seconds(5)

    public func run(console: Console) async throws {
        var flagsOptions = FlagsOptions()
        flagsOptions.directory = directory
        flagsOptions.namespace = namespace
        let file = try flagsOptions.flagFile(console: console)
        let layout = MatrixLayout(flagSet: file.flagSet)
        let plan: MatrixPlan
        do {
            // A covering array across many points takes a while to build (docs/matrix.md): say how far it got,
            // every few seconds, on standard error.
            let started = ContinuousClock.now
            var reported = started
            plan = try MatrixPlan(
                layout: layout, bound: Self.parseBound(bound)!, strength: strength, planningBudget: planningBudget
            ) { done in
                let now = ContinuousClock.now
                guard now - reported >= Self.progressInterval else { return }
                reported = now
                let seconds = Int((now - started) / .seconds(1))
                console.writeError("planning the covering array: \(Int(done * 100))% after \(seconds) s\n")
            }
        } catch  where error.isTooLarge {
            throw CommandFailure("\(error)")
        } catch {
            throw ValidationError("\(error)")
        }
        let shardCount: Int
        if let shards {
            shardCount = shards
        } else if let perShard {
            shardCount = Int(max(1, (plan.total + perShard - 1) / perShard))
        } else {
            shardCount = 1
        }
        let split = try Shard.split(into: shardCount)

        if githubMatrix {
            console.write(Self.githubMatrix(split, total: plan.total).serializedString() + "\n")
            return
        }
        if shardList {
            console.write(split.map(\.description).joined(separator: "\n") + "\n")
            return
        }
        if let rendered = outputOptions.render(.object(Self.tree(file: file, plan: plan, shards: split))) {
            console.write(rendered)
            return
        }
        console.write(
            Self.text(
                file: file, plan: plan, shards: split, colour: console.usesColour,
                chosen: shards != nil || perShard != nil))
    }

    /// `{"include":[{"shard":"1/4","combinations":32768},...]}`.
    static func githubMatrix(_ shards: [Shard], total: UInt64) -> JSONValue {
        .object(
            JSONObject([
                (
                    "include",
                    .array(
                        shards.map { shard in
                            .object(
                                JSONObject([
                                    ("shard", .string(shard.description)),
                                    ("combinations", .int64(Int64(shard.range(of: total).count))),
                                ]))
                        })
                )
            ]))
    }

    static func text(file: FlagFile, plan: MatrixPlan, shards: [Shard], colour: Bool, chosen: Bool) -> String {
        let layout = plan.layout
        var summary = KeyValueTable()
        summary.add("namespace", "\(layout.namespace) (\(file.path))")
        let groups = layout.killSwitchCount - (layout.masterGate == nil ? 0 : 1)
        var gates =
            "\(layout.gateCount): \(layout.switchCount) plugin switch\(layout.switchCount == 1 ? "" : "es"), "
            + "\(groups) group kill switch\(groups == 1 ? "" : "es")"
        if layout.masterGate != nil { gates += ", the master kill switch" }
        summary.add("gates", gates)
        if !layout.ignoredKillSwitches.isEmpty {
            summary.add("not gates", layout.ignoredKillSwitches.joined(separator: ", ") + " (cover no plugin switch)")
        }
        summary.add("plan", plan.coverageDescription)
        let sizes = shards.map { $0.range(of: plan.total).count }
        let sizeText = Set(sizes).count == 1 ? "\(sizes[0])" : "\(sizes.min()!) to \(sizes.max()!)"
        if shards.count == 1 {
            summary.add(
                "shards", "1 (\(plan.total) combinations\(chosen ? "" : "; --shards N or --per-shard N to split"))")
        } else {
            summary.add(
                "shards",
                "\(shards.count) of \(sizeText) combinations: " + shards.map(\.description).joined(separator: " "))
        }

        var table = Table("PLUGIN POINT", "SWITCHES", "KILL SWITCHES", "COMBINATIONS")
        for point in layout.points {
            table.add(
                point.name, "\(point.switches.count)",
                point.killSwitches.map { layout.gates[$0].key }.joined(separator: ", "),
                "\(UInt64(1) << UInt64(point.gates.count))")
        }
        let full = layout.gateCount < 64 ? "\(plan.fullSize) (2^\(layout.gateCount))" : "2^\(layout.gateCount)"
        table.add([
            .init(text: "app", style: .bold), .init(text: "\(layout.switchCount)"),
            .init(text: "\(layout.killSwitchCount)"), .init(text: full),
        ])
        var text = summary.text + "\n" + table.render(colour: colour)
        if !plan.isExhaustive {
            text +=
                "\nbeyond the bound the app runs \(plan.total) combinations: each point's (above) plus "
                + "\(plan.segments.last?.count ?? 0) rows of a \(MatrixPlan.strengthName(plan.strength)) covering array "
                + "across \(plan.factors.map(\.name).joined(separator: ", "))\n"
        }
        return text
    }

    static func tree(file: FlagFile, plan: MatrixPlan, shards: [Shard]) -> JSONObject {
        let layout = plan.layout
        var tree = JSONObject()
        tree["namespace"] = .string(layout.namespace)
        tree["file"] = .string(file.path)
        tree["gates"] = .object(
            JSONObject([
                ("plugin_switches", .array(layout.gates.prefix(layout.switchCount).map { .string($0.key) })),
                ("kill_switches", .array(layout.gates.dropFirst(layout.switchCount).map { .string($0.key) })),
                ("ignored_kill_switches", .array(layout.ignoredKillSwitches.map(JSONValue.string))),
                ("count", .int64(Int64(layout.gateCount))),
            ]))
        tree["mode"] = .string(plan.isExhaustive ? "exhaustive" : "covering")
        tree["bound"] = .int64(Int64(clamping: plan.bound))
        tree["strength"] = .int64(Int64(plan.strength))
        tree["combinations"] = .int64(Int64(clamping: plan.total))
        tree["coverage"] = .string(plan.coverageDescription)
        tree["plugin_points"] = .array(
            layout.points.map { point in
                .object(
                    JSONObject([
                        ("name", .string(point.name)),
                        ("switches", .array(point.switches.map { .string(layout.gates[$0].key) })),
                        ("kill_switches", .array(point.killSwitches.map { .string(layout.gates[$0].key) })),
                        ("combinations", .int64(Int64(1) << Int64(point.gates.count))),
                    ]))
            })
        if !plan.isExhaustive {
            tree["covering_rows"] = .int64(Int64(plan.segments.last?.count ?? 0))
            tree["factors"] = .array(
                plan.factors.map { factor in
                    .object(JSONObject([("name", .string(factor.name)), ("levels", .int64(Int64(factor.levels)))]))
                })
        }
        tree["shards"] = .array(
            shards.map { shard in
                let range = shard.range(of: plan.total)
                return .object(
                    JSONObject([
                        ("shard", .string(shard.description)),
                        ("first", .int64(Int64(clamping: range.lowerBound))),
                        ("combinations", .int64(Int64(clamping: UInt64(range.count)))),
                    ]))
            })
        return tree
    }
}
