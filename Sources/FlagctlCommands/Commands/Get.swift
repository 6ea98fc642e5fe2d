public import ArgumentParser
import Foundation
import SwitchyardCore
import SwitchyardWire

/// `flagctl get [KEY]`: the flags of a namespace, or one flag (or kill switch) with its state.
public struct Get: FlagctlCommand {
    public static let configuration = CommandConfiguration(
        abstract:
            "List a namespace's flags, kill switches and metrics, or show one flag with its state, rules and kill switches.",
        discussion: """
            Without KEY: every flag with its state (on, off, disabled, killed), default rollout, number of rules \
            and scoped kills or disables, then every kill switch with its entries, then every metric (built in \
            and declared) with its kind, which way is better and its cap. With KEY: that flag's description, \
            owner, plugin point, state, disabled scopes, rules (numbered from 0, as --rule takes them), default \
            rollout and the kill switches covering it with their entries. KEY may also be a kill switch or a \
            metric.

            Examples:

              flagctl get
              flagctl get plugin_switch_feed_promos
              flagctl get kill_home_feed
              flagctl get fare
              flagctl get plugin_switch_feed_promos -o json

            -o json and -o yaml give rollouts in basis points (10000 = 100%), as the API does. Fields: \
            namespace, version, etag, and flags + kill_switches + metrics (list) or flag + kill_switches, or \
            kill_switch, or metric. A metric: name, kind, better, cap, numerator, denominator, description, \
            owner (those it has) and built_in.

            Exit status: 0 ok, 1 failure, 4 no such namespace or key, 5 token refused, 64 usage.
            """
    )

    @Argument(help: ArgumentHelp("A flag or kill switch key; leave out to list everything.", valueName: "key"))
    public var key: String?

    @OptionGroup public var server: ServerOptions
    @OptionGroup public var outputOptions: OutputOptions

    public init() {}

    public func run(console: Console) async throws {
        let settings = try server.settings(console)
        let client = APIClient(settings: settings)
        let view = try await client.namespaceView(try settings.requireNamespace())
        let flagSet = view.flagSet
        guard let key else {
            if outputOptions.output == .table {
                console.write(Self.listTable(view, colour: console.usesColour))
            } else if let rendered = outputOptions.render(.object(Self.listTree(view))) {
                console.write(rendered)
            }
            return
        }
        if let flag = flagSet.flag(key) {
            var tree = Self.header(view)
            tree["flag"] = Self.flagTree(flag, in: flagSet)
            tree["kill_switches"] = .array(
                flagSet.killSwitchKeys(covering: key).compactMap(flagSet.killSwitch)
                    .map { Self.killSwitchTree($0, in: flagSet) })
            if let rendered = outputOptions.render(.object(tree)) {
                console.write(rendered)
            } else {
                console.write(Self.flagTable(flag, view: view, colour: console.usesColour))
            }
        } else if let kill = flagSet.killSwitch(key) {
            var tree = Self.header(view)
            tree["kill_switch"] = Self.killSwitchTree(kill, in: flagSet)
            if let rendered = outputOptions.render(.object(tree)) {
                console.write(rendered)
            } else {
                console.write(Self.killSwitchTable(kill, view: view, colour: console.usesColour))
            }
        } else if let metric = flagSet.metric(key) {
            var tree = Self.header(view)
            tree["metric"] = Self.metricTree(metric)
            if let rendered = outputOptions.render(.object(tree)) {
                console.write(rendered)
            } else {
                console.write(Self.metricTable(metric, view: view))
            }
        } else {
            let keys = flagSet.flags.map(\.key) + flagSet.killSwitches.map(\.key) + flagSet.allMetrics.map(\.name)
            throw CommandFailure.notFound(
                "namespace '\(view.namespace)' has no flag, kill switch or metric '\(key)'"
                    + Suggestions.didYouMean(key, among: keys) + "; 'flagctl get' lists them")
        }
    }

    static func header(_ view: NamespaceView) -> JSONObject {
        JSONObject([
            ("namespace", .string(view.namespace)), ("version", .int64(view.version)), ("etag", .string(view.etag)),
        ])
    }

    static func listTree(_ view: NamespaceView) -> JSONObject {
        let flagSet = view.flagSet.indexingSwitches()
        let coverage = KillSwitchCoverage(flagSet)
        var tree = header(view)
        tree["flags"] = .array(flagSet.flags.map { flagTree($0, in: flagSet, coverage: coverage) })
        tree["kill_switches"] = .array(flagSet.killSwitches.map { killSwitchTree($0, in: flagSet, coverage: coverage) })
        tree["metrics"] = .array(flagSet.allMetrics.map(metricTree))
        return tree
    }

    /// A metric with its name, every field spelled out (`better` too), and whether it is built in.
    static func metricTree(_ metric: MetricDefinition) -> JSONValue {
        let tree = metric.tree
        var object = JSONObject([("name", .string(metric.name))])
        for key in ["description", "owner", "kind"] { object[key] = tree[key] }
        object["better"] = .string(metric.better.rawValue)
        for key in ["cap", "numerator", "denominator"] { object[key] = tree[key] }
        object["built_in"] = .bool(MetricDefinition.isBuiltIn(metric.name))
        return .object(object)
    }

    /// A flag as the API shows it (`FlagBody`: rollouts in basis points, its plugin point and kill switches), with its
    /// state for people when asked; `coverage` when listing every flag.
    static func flagTree(
        _ flag: FlagDefinition, in flagSet: FlagSet, coverage: KillSwitchCoverage? = nil, withState: Bool = true
    ) -> JSONValue {
        let tree = FlagBody(flag, in: flagSet, coverage: coverage).json
        guard withState, var object = tree.objectValue else { return tree }
        object["state"] = .string(FlagState(flag, in: flagSet, coverage: coverage).word)
        return .object(object)
    }

    static func killSwitchTree(_ kill: KillSwitch, in flagSet: FlagSet, coverage: KillSwitchCoverage? = nil)
        -> JSONValue
    {
        KillSwitchBody(kill, in: flagSet, coverage: coverage).json
    }

    static func listTable(_ view: NamespaceView, colour: Bool) -> String {
        let flagSet = view.flagSet
        let coverage = KillSwitchCoverage(flagSet)
        var flags = Table("FLAG", "TYPE", "STATE", "ROLLOUT", "RULES", "SCOPED OFF")
        for flag in flagSet.flags {
            let state = FlagState(flag, in: flagSet, coverage: coverage)
            flags.add([
                .init(flag.key), .init(flag.kindName), .init(state.headline, state.style), .init(flag.rolloutText),
                .init(String(flag.ruleCount)), .init(state.scopedText, state.scopedText == "-" ? .plain : .yellow),
            ])
        }
        var kills = Table("KILL SWITCH", "ENTRIES", "COVERS")
        for kill in flagSet.killSwitches {
            let covers = coverage.members(of: kill.key).count
            kills.add([
                .init(kill.key), .init(kill.entriesText, kill.entries.isEmpty ? .plain : .red),
                .init("\(covers) flag\(covers == 1 ? "" : "s")"),
            ])
        }
        var header = "namespace \(view.namespace) at version \(view.version)\n"
        let master = flagSet.master
        if master.isKilledEverywhere {
            header +=
                Style.red.apply(
                    "the master kill switch is on: every flag is off, apps run their core flow", colour: colour) + "\n"
        } else if !master.entries.isEmpty {
            header +=
                "master kill switch entries: \(Style.red.apply(master.entriesText, colour: colour)) (every flag is off there)\n"
        }
        var metrics = Table("METRIC", "KIND", "BETTER", "CAP", "OWNER")
        for metric in flagSet.allMetrics {
            metrics.add(
                metric.name, metric.kindText, metric.better.rawValue, metric.capText,
                MetricDefinition.isBuiltIn(metric.name) ? "built in" : metric.owner ?? "-")
        }
        return header + "\n" + flags.render(colour: colour) + "\n" + kills.render(colour: colour) + "\n"
            + metrics.render(colour: colour)
    }

    static func metricTable(_ metric: MetricDefinition, view: NamespaceView) -> String {
        var table = KeyValueTable()
        table.add("metric", metric.name + (MetricDefinition.isBuiltIn(metric.name) ? " (built in)" : ""))
        if let description = metric.description { table.add("description", description) }
        if let owner = metric.owner { table.add("owner", owner) }
        table.add("namespace", "\(view.namespace) at version \(view.version)")
        table.add("kind", metric.kindText)
        table.add("better", metric.better.rawValue)
        if metric.kind == .count || metric.kind == .value { table.add("cap", metric.capText) }
        return table.text
    }

    static func flagTable(_ flag: FlagDefinition, view: NamespaceView, colour: Bool) -> String {
        let flagSet = view.flagSet
        let state = FlagState(flag, in: flagSet)
        var table = KeyValueTable()
        switch flag.kind {
        case .pluginSwitch: table.add("flag", "\(flag.key) (plugin switch)")
        case .experiment(let experiment): table.add("flag", "\(flag.key) (experiment, \(experiment.valueType) values)")
        }
        if let description = flag.description { table.add("description", description) }
        if let owner = flag.owner { table.add("owner", owner) }
        if let point = flagSet.pluginPoint(listing: flag.key),
            let position = point.switches.firstIndex(of: flag.key)
        {
            table.add("plugin point", "\(point.name), position \(position + 1) of \(point.switches.count)")
        } else if flag.pluginSwitch != nil {
            table.add("plugin point", "none")
        }
        table.add("namespace", "\(view.namespace) at version \(view.version)")
        table.add("state", state.style.apply(state.headline, colour: colour))
        switch flag.kind {
        case .pluginSwitch(let gate):
            table.add("disabled", gate.disabled ? Style.red.apply("yes, everywhere", colour: colour) : "no")
            table.add(
                "disabled in",
                gate.disabledScopes.isEmpty ? "none" : gate.disabledScopes.map(\.description).joined(separator: "; "))
            if gate.rules.isEmpty { table.add("rules", "none") }
            for (index, rule) in gate.rules.enumerated() {
                table.add(
                    "rule \(index)",
                    "\(rule.conditions.summary) → \(rule.rollout)" + (rule.name.map { "  ('\($0)')" } ?? ""))
            }
            table.add("default rollout", gate.rollout.description)
            if let plan = gate.release {
                let where_ =
                    plan.state?.stage.map { "stage \($0 + 1) of \(plan.stages.count) (\(plan.stages[$0]))" }
                    ?? "no stage"
                let text =
                    plan.state.map { "\($0.status.rawValue.replacingOccurrences(of: "_", with: " ")), \(where_)" }
                    ?? "declared, not started (\(plan.stages.count) stages)"
                table.add("release plan", text + "; flagctl release status \(flag.key)")
            }
        case .experiment(let experiment):
            let variants = experiment.variants.map { "\($0.key) \($0.value.jsonValue.serializedString())" }.joined(
                separator: ", ")
            table.add("variants", "\(variants) (default \(experiment.defaultVariant))")
            if experiment.rules.isEmpty { table.add("rules", "none") }
            for (index, rule) in experiment.rules.enumerated() {
                table.add(
                    "rule \(index)",
                    "\(rule.conditions.summary) → \(experiment.weightsText(rule.weights))"
                        + (rule.name.map { "  ('\($0)')" } ?? ""))
            }
            table.add("weights", experiment.weightsText(experiment.weights))
        }
        let kills = flagSet.killSwitchKeys(covering: flag.key).compactMap(flagSet.killSwitch).map { kill in
            let entries = kill.entries.isEmpty ? "no entries" : "entries: \(kill.entriesText)"
            return "\(kill.key) (\(kill.entries.isEmpty ? entries : Style.red.apply(entries, colour: colour)))"
        }
        table.add("kill switches", kills.joined(separator: ", "))
        return table.text
    }

    static func killSwitchTable(_ kill: KillSwitch, view: NamespaceView, colour: Bool) -> String {
        var table = KeyValueTable()
        table.add("kill switch", kill.isMaster ? "master (covers every flag)" : kill.key)
        if let description = kill.description { table.add("description", description) }
        table.add("namespace", "\(view.namespace) at version \(view.version)")
        table.add("entries", kill.entries.isEmpty ? "none" : Style.red.apply(kill.entriesText, colour: colour))
        table.add("covers", view.flagSet.members(of: kill.key).joined(separator: ", "))
        return table.text
    }
}
