public import ArgumentParser
import SwitchyardCore
import SwitchyardFlagFiles

/// `flagctl explain KEY`: evaluates one flag for one unit, from flag files or from the flags service, and says
/// why it has its value.
public struct Explain: FlagctlCommand {
    public static let configuration = CommandConfiguration(
        abstract: "Evaluate a flag for a unit, from flag files or the live service, and show what decided its value.",
        discussion: """
            With --flags DIR it reads the flag files; without it, the namespace's current snapshot from the \
            flags service (--server/--token/--namespace, FLAGCTL_* or 'flagctl login'), evaluated by the same \
            engine client apps embed. The output is the same either way; only the namespace line says where \
            the flags came from.

            Evaluates KEY for the unit and attributes you pass, exactly as a client app would, and prints the \
            value, the variant, the OpenFeature reason, what decided (a kill switch entry, a disabled scope, a \
            rule, the default rollout or the weights) and the unit's bucket (0...9999; a plugin switch at r \
            basis points is on when the bucket is below r).

            Examples:

              $ flagctl explain plugin_switch_feed_promos --flags Flags \\
                  --unit rider-42 --city nairobi
              flag           plugin_switch_feed_promos (plugin switch)
              plugin point   home_feed, position 1 of 3
              namespace      rider (Flags/rider.yaml)
              context        unit rider-42, city nairobi
              value          false
              variant        off
              reason         SPLIT
              decided by     rule 1 'Nairobi ramp' at 12.5%
              bucket         9038 (on below 1250)
              kill switches  master, kill_home_feed (no entry matches)

              $ flagctl explain confirmation_button_copy --flags Flags \\
                  --unit rider-42 --cohort employees --app-version 5.12.0 -o json

              $ flagctl explain plugin_switch_feed_promos --unit rider-42 --city lagos

            With -o json the result is one object with stable keys: key, namespace, context, value, variant, \
            reason, decided_by, bucket (null when none was needed), metadata, and error_code / error_message \
            when an error applies.

            Exit status: 0 when the flag was evaluated, 1 when the flag file has problems or the service cannot \
            be reached, 4 when the flag or namespace does not exist, 5 when the service refuses the token, 64 for \
            a bad or missing argument.
            """
    )

    @Argument(help: ArgumentHelp("The flag key, e.g. plugin_switch_feed_promos.", valueName: "key"))
    public var key: String

    @OptionGroup public var flags: FlagsOptions
    @OptionGroup public var connection: ConnectionOptions

    @Option(help: ArgumentHelp("The unit id (user or device) buckets are computed for.", valueName: "id"))
    public var unit: String

    @Option(help: ArgumentHelp("The unit's city.", valueName: "city"))
    public var city: String?

    @Option(
        name: .customLong("cohort"),
        help: ArgumentHelp("A cohort of the unit; repeat for several.", valueName: "cohort"))
    public var cohorts: [String] = []

    @Option(help: ArgumentHelp("The app's semantic version, e.g. 5.12.0.", valueName: "version"))
    public var appVersion: String?

    @Option(help: ArgumentHelp("The unit's platform, e.g. ios.", valueName: "platform"))
    public var platform: String?

    @Option(help: ArgumentHelp("The OS's semantic version, e.g. 17.4.", valueName: "version"))
    public var osVersion: String?

    @OptionGroup public var outputOptions: OutputOptions

    public init() {}

    public func validate() throws {
        for attribute in VersionAttribute.allCases {
            if let text = context[keyPath: attribute.contextValue], SemanticVersion(text) == nil {
                throw ValidationError(
                    "'\(text)' is not a semantic version. Pass one like --\(attribute.optionName) 5.12.0.")
            }
        }
        if unit.isEmpty {
            throw ValidationError("The unit id is empty. Pass the user or device id, e.g. --unit rider-42.")
        }
    }

    var context: EvaluationContext {
        EvaluationContext(
            unitId: unit, city: city, cohorts: cohorts, appVersion: appVersion, platform: platform,
            osVersion: osVersion)
    }

    public func run(console: Console) async throws {
        guard let directory = flags.directory else {
            try await runAgainstServer(console: console)
            return
        }
        let file = try flags.flagFile(console: console)
        let flagSet = file.flagSet
        guard let flag = flagSet.flag(key) else {
            var message = "no flag '\(key)' in namespace '\(flagSet.namespace)' (\(file.path))"
            let suggestion = Suggestions.didYouMean(key, among: flagSet.flags.map(\.key))
            if !suggestion.isEmpty {
                message += suggestion
            } else {
                message += "; 'flagctl lint \(directory)' lists nothing wrong, so check the key's spelling"
            }
            throw CommandFailure.notFound(message)
        }
        let compiled = CompiledSnapshot(Snapshot(epoch: "local", version: 0, flagSet: flagSet))
        let details = compiled.evaluator(for: context).details(for: key)
        if let rendered = outputOptions.render(.object(tree(details, namespace: flagSet.namespace))) {
            console.write(rendered)
        } else {
            console.write(table(details, flag: flag, flagSet: flagSet, source: file.path))
        }
    }

    /// Evaluates against the namespace's live snapshot: the service sends the snapshot clients download, and
    /// the core engine evaluates it here (flagsd has no evaluation route for editors), so the answer is the
    /// one a client app with that snapshot computes.
    func runAgainstServer(console: Console) async throws {
        let settings: ServerSettings
        do {
            settings = try connection.settings(console, namespace: flags.namespace)
        } catch let failure as CommandFailure where failure.exitStatus == ExitStatus.usage {
            throw CommandFailure.usage(
                "pass --flags DIR to explain from flag files, or point flagctl at the flags service (--server URL, FLAGCTL_SERVER, or 'flagctl login')"
            )
        }
        let namespace = try settings.requireNamespace()
        let client = APIClient(settings: settings)
        let response: APIResponse
        do {
            response = try await client.send("GET", APIClient.path("v1", "namespaces", namespace, "snapshot"))
        } catch let failure as APIFailure where failure.status == 404 {
            throw client.namespaceNotFound(namespace)
        }
        let snapshot: Snapshot
        do {
            snapshot = try SnapshotDocument.decode(response.body)
        } catch {
            throw CommandFailure(
                "the snapshot of '\(namespace)' from \(settings.serverText) cannot be read: \(error); retry, and upgrade flagctl if it persists"
            )
        }
        let flagSet = snapshot.flagSet
        guard let flag = flagSet.flag(key) else {
            throw CommandFailure.notFound(
                "namespace '\(namespace)' has no flag '\(key)' at version \(snapshot.version)"
                    + Suggestions.didYouMean(key, among: flagSet.flags.map(\.key)) + "; 'flagctl get' lists its flags")
        }
        let details = CompiledSnapshot(snapshot).evaluator(for: context).details(for: key)
        if let rendered = outputOptions.render(.object(tree(details, namespace: namespace))) {
            console.write(rendered)
        } else {
            console.write(
                table(
                    details, flag: flag, flagSet: flagSet,
                    source: "version \(snapshot.version) on \(settings.serverText)"))
        }
    }

    /// The machine-readable result: the evaluation details, the namespace and the context.
    func tree(_ details: EvaluationDetails, namespace: String) -> JSONObject {
        var tree = details.tree
        tree["namespace"] = .string(namespace)
        tree["context"] = .object(
            JSONObject(
                [("unit", .string(unit))]
                    + ListAttribute.allCases.filter { $0 != .unit }.map { attribute in
                        let values = attribute.values(in: context)
                        return attribute.isMultiValued
                            ? (attribute.field, .array(values.map(JSONValue.string)))
                            : (attribute.name, values.first.map(JSONValue.string) ?? .null)
                    }
                    + VersionAttribute.allCases.map { attribute in
                        (attribute.rawValue, context[keyPath: attribute.contextValue].map(JSONValue.string) ?? .null)
                    }))
        return tree
    }

    func table(_ details: EvaluationDetails, flag: FlagDefinition, flagSet: FlagSet, source: String) -> String {
        var table = KeyValueTable()
        switch flag.kind {
        case .pluginSwitch:
            table.add("flag", "\(flag.key) (plugin switch)")
            if let point = flagSet.pluginPoint(listing: flag.key),
                let position = point.switches.firstIndex(of: flag.key)
            {
                table.add("plugin point", "\(point.name), position \(position + 1) of \(point.switches.count)")
            } else {
                table.add("plugin point", "none")
            }
        case .experiment(let experiment):
            table.add("flag", "\(flag.key) (experiment, \(experiment.valueType) values)")
        }
        table.add("namespace", "\(flagSet.namespace) (\(source))")
        var attributes = ["unit \(unit)"]
        for attribute in ListAttribute.allCases where attribute != .unit {
            let values = attribute.values(in: context)
            guard !values.isEmpty else { continue }
            attributes.append(
                "\(values.count == 1 ? attribute.name : attribute.field) \(values.joined(separator: ", "))")
        }
        for attribute in VersionAttribute.allCases {
            if let version = context[keyPath: attribute.contextValue] {
                attributes.append("\(attribute.label) \(version)")
            }
        }
        table.add("context", attributes.joined(separator: ", "))
        table.add("value", details.value.jsonValue.serializedString())
        table.add("variant", details.variant)
        table.add("reason", details.reason.openFeatureName)
        if let errorCode = details.errorCode {
            table.add("error", errorCode.openFeatureName + (details.errorMessage.map { ": \($0)" } ?? ""))
        }
        table.add("decided by", details.decidedBy)
        if let bucket = details.bucket {
            if let threshold = splitRollout(details, flag: flag) {
                table.add("bucket", "\(bucket) (on below \(threshold.basisPoints))")
            } else if let weights = splitWeights(details, flag: flag) {
                table.add("bucket", "\(bucket) (of 0...9999; weights \(weights))")
            } else {
                table.add("bucket", "\(bucket) (of 0...9999)")
            }
        } else {
            table.add("bucket", "none (no bucket needed)")
        }
        // The master first, as flag files list it (the service's documents sort keys).
        let kills = flagSet.killSwitchKeys(covering: flag.key).sorted {
            $0 == KillSwitch.masterKey && $1 != KillSwitch.masterKey
        }
        let killed = details.metadata["kill_switch"] != nil
        table.add("kill switches", kills.joined(separator: ", ") + (killed ? "" : " (no entry matches)"))
        return table.text
    }

    /// The weights an experiment's variant was picked with, in variant order: `control 34, book_now 33`.
    func splitWeights(_ details: EvaluationDetails, flag: FlagDefinition) -> String? {
        guard let experiment = flag.experiment else { return nil }
        var weights = experiment.weights
        if let rule = details.metadata["rule"]?.int64Value, experiment.rules.indices.contains(Int(rule)) {
            weights = experiment.rules[Int(rule)].weights
        }
        return experiment.variants.compactMap { variant in weights[variant.key].map { "\(variant.key) \($0)" } }
            .joined(separator: ", ")
    }

    /// The rollout a plugin switch's bucket was compared with.
    func splitRollout(_ details: EvaluationDetails, flag: FlagDefinition) -> Rollout? {
        guard let gate = flag.pluginSwitch else { return nil }
        if let rule = details.metadata["rule"]?.int64Value, gate.rules.indices.contains(Int(rule)) {
            return gate.rules[Int(rule)].rollout
        }
        return gate.rollout
    }
}
