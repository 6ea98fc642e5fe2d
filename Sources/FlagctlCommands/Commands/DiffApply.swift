public import ArgumentParser
import Foundation
import SwitchyardCore
import SwitchyardFlagFiles
import SwitchyardWire

/// `DIR [--namespace NS] [--include-state] [--prune]`: what `diff` and `apply` compare.
public struct PlanOptions: ParsableArguments, Sendable {
    @Argument(help: ArgumentHelp("The directory of flag files, one <namespace>.yaml each.", valueName: "dir"))
    public var directory: String

    @Option(
        name: [.customShort("n"), .long],
        help: ArgumentHelp("Only this namespace's file (default: every file in DIR).", valueName: "ns"))
    public var namespace: String?

    @Flag(help: "Also make operational state match the files: kill entries, disabled and disabled_scopes.")
    public var includeState = false

    @Flag(help: "Remove flags, kill switches and plugin points that are on the server but not in the files.")
    public var prune = false

    public init() {}

    public func validate() throws {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw ValidationError(
                "No directory '\(directory)'. Pass the folder that holds your flag files, e.g. 'flagctl diff Flags'.")
        }
    }

    /// Reads the files and plans each namespace against the server.
    func plans(client: APIClient, console: Console) async throws -> [NamespacePlan] {
        let flags = FlagDirectory(reading: directory)
        if !flags.problems.isEmpty {
            for problem in flags.problems { console.writeError("\(problem)\n") }
            throw CommandFailure(
                "the flag files have problems (above); nothing was compared. Fix them ('flagctl lint \(directory)' checks them) and run again"
            )
        }
        var files = flags.files
        if let namespace {
            files = files.filter { $0.namespace == namespace }
            guard !files.isEmpty else {
                throw CommandFailure.notFound(
                    "\(directory) has no file for namespace '\(namespace)' (it has \(flags.namespaces.joined(separator: ", "))); it would be \(flags.filePath(namespace: namespace))"
                )
            }
        }
        var plans: [NamespacePlan] = []
        for file in files {
            let view: NamespaceView?
            do {
                view = try await client.namespaceView(file.namespace)
            } catch let failure as CommandFailure where failure.exitStatus == ExitStatus.notFound {
                view = nil
            }
            plans.append(
                try NamespacePlan.make(
                    file: file.flagSet, path: file.path, server: view,
                    includeState: includeState, prune: prune))
        }
        return plans
    }
}

extension NamespacePlan {
    /// The plan for people.
    func text(server: String, colour: Bool) -> String {
        guard exists else {
            let flagSet = desired
            var text =
                "namespace \(namespace) (\(file)) does not exist on \(server): apply creates it with "
                + "\(flagSet.pluginPoints.count) plugin point\(flagSet.pluginPoints.count == 1 ? "" : "s"), "
                + "\(flagSet.killSwitches.count) kill switch\(flagSet.killSwitches.count == 1 ? "" : "es")"
                + (flagSet.metrics.isEmpty ? " and " : ", ")
                + "\(flagSet.flags.count) flag\(flagSet.flags.count == 1 ? "" : "s")"
                + (flagSet.metrics.isEmpty
                    ? "" : " and \(flagSet.metrics.count) metric\(flagSet.metrics.count == 1 ? "" : "s")") + "\n"
            for object in objects.dropFirst() {
                text +=
                    "  "
                    + Style.green.apply(
                        "+ \(object.kind.replacingOccurrences(of: "_", with: " ")) \(object.key)", colour: colour)
                    + "\n"
            }
            return text
        }
        guard !objects.isEmpty else {
            var text =
                "namespace \(namespace) (\(file)) matches version \(baseVersion!) on \(server): nothing to apply\n"
            text += keptText
            return text
        }
        var text =
            "namespace \(namespace) (\(file)), version \(baseVersion!) on \(server): \(objects.count) change\(objects.count == 1 ? "" : "s")\n"
        for object in objects {
            let name = "\(object.kind.replacingOccurrences(of: "_", with: " ")) \(object.key)"
            switch object.action {
            case .create: text += "  " + Style.green.apply("+ \(name)", colour: colour) + "\n"
            case .remove: text += "  " + Style.red.apply("- \(name)", colour: colour) + "\n"
            case .update:
                text += "  " + Style.yellow.apply("~ \(name)", colour: colour) + "\n"
                for field in object.fields {
                    let key = ObjectDiff.lastKey(field.path)
                    text +=
                        "      \(field.path): \(ObjectDiff.text(field.before, key: key)) → \(ObjectDiff.text(field.after, key: key))\n"
                }
            }
            for impact in object.impact { text += "      " + Style.dim.apply(impact.text, colour: colour) + "\n" }
        }
        let impacts = objects.flatMap(\.impact)
        if !impacts.isEmpty {
            let cities =
                affectedCities.map { $0.isEmpty ? "no city" : "cities \($0.joined(separator: ", "))" } ?? "every city"
            let cohorts =
                affectedCohorts.map { $0.isEmpty ? "no cohort" : "cohorts \($0.joined(separator: ", "))" }
                ?? "every cohort"
            text += "  affects: \(cities); \(cohorts)\n"
        }
        text += keptText
        return text
    }

    private var keptText: String {
        var text = ""
        if !kept.isEmpty {
            text +=
                "  kept (only on the server; --prune removes them): "
                + kept.map { "\($0.kind.replacingOccurrences(of: "_", with: " ")) \($0.key)" }.joined(separator: ", ")
                + "\n"
        }
        if !keptState.isEmpty {
            text += "  operational state left as it is on the server (--include-state applies the files'):\n"
            for state in keptState {
                text +=
                    "    \(state.kind.replacingOccurrences(of: "_", with: " ")) \(state.key) \(state.field): "
                    + "\(ObjectDiff.text(state.server, key: state.field)) (file: \(ObjectDiff.text(state.file, key: state.field)))\n"
            }
        }
        return text
    }

    /// The plan for scripts.
    var tree: JSONObject {
        JSONObject([
            ("namespace", .string(namespace)), ("file", .string(file)), ("exists", .bool(exists)),
            ("version", baseVersion.map(JSONValue.int64) ?? .null),
            (
                "changes",
                .array(
                    objects.map { object in
                        .object(
                            JSONObject([
                                ("kind", .string(object.kind)), ("key", .string(object.key)),
                                ("action", .string(object.action.rawValue)),
                                (
                                    "fields",
                                    .array(
                                        object.fields.map { field in
                                            .object(
                                                JSONObject([
                                                    ("path", .string(field.path)), ("before", field.before ?? .null),
                                                    ("after", field.after ?? .null),
                                                ]))
                                        })
                                ),
                                ("impact", .array(object.impact.map(\.tree))),
                            ]))
                    })
            ),
            (
                "affected_cities",
                objects.flatMap(\.impact).isEmpty
                    ? .array([]) : affectedCities.map { .array($0.map(JSONValue.string)) } ?? .null
            ),
            (
                "affected_cohorts",
                objects.flatMap(\.impact).isEmpty
                    ? .array([]) : affectedCohorts.map { .array($0.map(JSONValue.string)) } ?? .null
            ),
            ("kept", .array(kept.map { .object(JSONObject([("kind", .string($0.kind)), ("key", .string($0.key))])) })),
            (
                "kept_state",
                .array(
                    keptState.map { state in
                        .object(
                            JSONObject([
                                ("kind", .string(state.kind)), ("key", .string(state.key)),
                                ("field", .string(state.field)),
                                ("server", state.server ?? .null), ("file", state.file ?? .null),
                            ]))
                    })
            ),
        ])
    }
}

/// `flagctl diff DIR`: what `apply` would change, without changing anything.
public struct Diff: FlagctlCommand {
    public static let configuration = CommandConfiguration(
        abstract:
            "Show what 'flagctl apply' would change on the server to match flag files: the plan, with who is affected.",
        discussion: """
            Compares each <namespace>.yaml in DIR with that namespace on the server and prints the plan: each \
            flag, kill switch, plugin point and metric created (+), changed (~, field by field) or removed (-) \
            (and the namespace's description and crash_guard), the units each change affects (the units of a \
            rule or of the default rollout, and about what share of them turn on or off), and the cities and \
            cohorts affected. Nothing is changed.

            Operational state (kill entries, disabled and disabled_scopes, set by release managers and the \
            crash guard) is compared only with --include-state; otherwise the plan lists where it differs and \
            leaves it. Objects only on the server are kept unless --prune.

            Examples:

              flagctl diff Flags
              flagctl diff Flags --namespace rider --prune
              flagctl diff Flags --exit-code    # in CI: 1 when the server drifted

            Exit status: 0 (with --exit-code: 0 no differences, 1 differences), 1 failure (invalid files), \
            4 no file for --namespace, 5 token refused, 64 usage.
            """
    )

    @OptionGroup public var plan: PlanOptions
    @Flag(help: "Exit with status 1 when the server differs from the files (as 'git diff --exit-code').")
    public var exitCode = false
    @OptionGroup public var connection: ConnectionOptions
    @OptionGroup public var outputOptions: OutputOptions

    public init() {}

    public func run(console: Console) async throws {
        let settings = try connection.settings(console, namespace: plan.namespace)
        let client = APIClient(settings: settings)
        let plans = try await plan.plans(client: client, console: console)
        let tree = JSONObject([
            ("namespaces", .array(plans.map { .object($0.tree) })),
            ("changes", .int(plans.map { $0.exists ? $0.objects.count : 1 }.reduce(0, +))),
        ])
        if let rendered = outputOptions.render(.object(tree)) {
            console.write(rendered)
        } else {
            console.write(
                plans.map { $0.text(server: settings.serverText, colour: console.usesColour) }.joined(separator: "\n"))
        }
        if exitCode, plans.contains(where: { !$0.isEmpty }) {
            throw CommandFailure("", exitStatus: ExitStatus.failure)
        }
    }
}

/// `flagctl apply DIR`: makes the server's definitions match flag files.
public struct Apply: FlagctlCommand {
    public static let configuration = CommandConfiguration(
        abstract: "Make the server's flag definitions match flag files: plan, confirm, apply (idempotent).",
        discussion: """
            Prints the plan ('flagctl diff' explains it), asks on a terminal (elsewhere pass --yes), then sends \
            each namespace's flag set in one change, based on the version the plan was made against: if \
            someone changed the namespace meanwhile, nothing is applied and flagctl says who and when (exit \
            status 3); run it again to see the new plan. A namespace that does not exist is created (that \
            needs an admin token). Running apply again changes nothing.

            Operational state (kill entries, disabled, disabled_scopes) is left as it is on the server unless \
            --include-state. Flags, kill switches, plugin points and metrics missing from the files are removed \
            only with --prune. The audit log records these changes with source 'apply'.

            Examples:

              flagctl apply Flags --dry-run
              flagctl apply Flags --reason "release 5.14 flags" --yes
              flagctl apply Flags --namespace rider --prune

            Exit status: 0 ok (also when nothing was to apply), 1 failure (invalid files, not confirmed), \
            3 the namespace changed since the plan, 4 no file for --namespace, 5 token refused, 64 usage (no \
            --yes off a terminal, no --reason where required).
            """
    )

    @OptionGroup public var plan: PlanOptions
    @Flag(help: "Print the plan and change nothing.")
    public var dryRun = false
    @OptionGroup public var change: ChangeOptions
    @OptionGroup public var connection: ConnectionOptions
    @OptionGroup public var outputOptions: OutputOptions

    public init() {}

    public func run(console: Console) async throws {
        let settings = try connection.settings(console, namespace: plan.namespace)
        let client = APIClient(settings: settings, source: "apply")
        let plans = try await plan.plans(client: client, console: console)
        let pending = plans.filter { !$0.isEmpty }
        var results: [String: JSONValue] = [:]
        let machine = outputOptions.output != .table
        if !machine {
            console.write(
                plans.map { $0.text(server: settings.serverText, colour: console.usesColour) }.joined(separator: "\n"))
        }
        defer {
            if machine {
                var trees: [JSONValue] = []
                for plan in plans {
                    var tree = plan.tree
                    tree["result"] = results[plan.namespace] ?? .null
                    trees.append(.object(tree))
                }
                console.write(
                    outputOptions.render(
                        .object(JSONObject([("namespaces", .array(trees)), ("dry_run", .bool(dryRun))])))!)
            }
        }
        guard !pending.isEmpty else {
            if !machine { console.write("nothing to apply\n") }
            return
        }
        if dryRun {
            if !machine { console.write("dry run: nothing was applied\n") }
            return
        }
        for plan in pending where change.trimmedReason == nil {
            if let policy = plan.reasonPolicy, policy.requiresReason(addsKillEntry: plan.addsKillEntry) {
                throw CommandFailure.usage(
                    "namespace '\(plan.namespace)' requires a reason for this change (reason policy '\(policy)'); add --reason \"why\""
                )
            }
        }
        if let pinned = change.ifVersion,
            let plan = pending.first(where: { $0.baseVersion != nil && $0.baseVersion != pinned })
        {
            throw try await ChangeFlow(client: client, console: console, namespace: plan.namespace, options: change)
                .staleView(since: pinned, current: nil, objects: nil)
        }
        let count = pending.map { $0.exists ? $0.objects.count : 1 }.reduce(0, +)
        let names = pending.map { $0.exists ? "\($0.namespace) (version \($0.baseVersion!))" : "\($0.namespace) (new)" }
            .joined(separator: ", ")
        try await Confirmation.confirm(
            "Apply \(count) change\(count == 1 ? "" : "s") to namespace\(pending.count == 1 ? "" : "s") \(names)?",
            action: "apply these changes", yes: change.yes, console: console)
        for plan in pending {
            let reason = change.trimmedReason
            do {
                if let etag = plan.etag {
                    let response = try await client.send(
                        "PUT", APIClient.path("v1", "namespaces", plan.namespace, "flag-set"),
                        body: FlagSetRequest(flagSet: plan.desired, reason: reason).sent, ifMatch: etag)
                    results[plan.namespace] = response.json
                    let version = try CommittedBody(json: response.json).version.version
                    if !machine {
                        console.write(
                            "applied \(plan.file) to namespace \(plan.namespace): version \(plan.baseVersion!) → \(version)\n"
                        )
                    }
                } else {
                    let request = NamespaceCreateRequest(name: plan.namespace, flagSet: plan.desired, reason: reason)
                    let response = try await client.send(
                        "POST", APIClient.path("v1", "namespaces"), body: request.sent)
                    results[plan.namespace] = response.json
                    if !machine {
                        console.write(
                            "created namespace \(plan.namespace) from \(plan.file) at version \(try NamespaceBody(json: response.json).version)\n"
                        )
                    }
                }
            } catch let failure as APIFailure where failure.status == 409 {
                if failure.slug == "already-exists" {
                    throw CommandFailure.conflict(
                        "namespace '\(plan.namespace)' was created by someone else after the plan; nothing was applied to it. Run 'flagctl diff \(self.plan.directory)' to see the new plan"
                    )
                }
                var error = try await ChangeFlow(
                    client: client, console: console, namespace: plan.namespace, options: change
                )
                .staleView(since: plan.baseVersion ?? 0, current: nil, objects: nil)
                error.message = error.message.replacingOccurrences(
                    of:
                        "Look at the current state with 'flagctl get', then run the command again if it still makes sense",
                    with:
                        "Nothing was applied to \(plan.namespace); run 'flagctl diff \(self.plan.directory)' to see the new plan, then apply again"
                )
                throw error
            }
        }
    }
}
