public import ArgumentParser
import Foundation
import SwitchyardCore
import SwitchyardWire

/// `flagctl namespaces list|create|delete`.
public struct Namespaces: AsyncParsableCommand {
    public static let configuration = CommandConfiguration(
        abstract: "List, create and delete namespaces (one app in one environment: rider, rider-staging).",
        discussion: """
            Examples:

              flagctl namespaces list
              flagctl namespaces create rider-staging --reason-policy never
              flagctl namespaces delete rider-old --reason "app retired" --yes

            Creating and deleting need an admin token. A new namespace is empty: fill it with \
            'flagctl apply Flags' (apply also creates namespaces that have a flag file).
            """,
        subcommands: [NamespacesList.self, NamespacesCreate.self, NamespacesDelete.self]
    )

    public init() {}
}

/// `flagctl namespaces list`
public struct NamespacesList: FlagctlCommand {
    public static let configuration = CommandConfiguration(
        commandName: "list",
        abstract: "List the namespaces your token may use, with their versions.",
        discussion: """
            Example: flagctl namespaces list -o json

            Exit status: 0 ok, 1 failure, 5 token refused, 64 usage.
            """
    )

    @OptionGroup public var connection: ConnectionOptions
    @OptionGroup public var outputOptions: OutputOptions

    public init() {}

    public func run(console: Console) async throws {
        let settings = try connection.settings(console)
        let client = APIClient(settings: settings)
        let tree = try await client.get(APIClient.path("v1", "namespaces"))
        if let rendered = outputOptions.render(tree) {
            console.write(rendered)
            return
        }
        let namespaces = try ListBody<NamespaceBody>(json: tree).items
        guard !namespaces.isEmpty else {
            console.write(
                "no namespaces on \(settings.serverText) for this token; create one with 'flagctl namespaces create NAME' or 'flagctl apply Flags'\n"
            )
            return
        }
        var table = Table("NAMESPACE", "VERSION", "REASON POLICY", "UPDATED")
        for namespace in namespaces {
            table.add(
                namespace.name, String(namespace.version), namespace.reasonPolicy.rawValue,
                Audit.shortTime(namespace.updatedAt))
        }
        console.write(table)
    }
}

/// `flagctl namespaces create NAME`
public struct NamespacesCreate: FlagctlCommand {
    public static let configuration = CommandConfiguration(
        commandName: "create",
        abstract: "Create an empty namespace.",
        discussion: """
            The reason policy says which changes need a --reason: always, kills (adding a kill entry; the \
            default) or never.

            Example: flagctl namespaces create rider-staging --description "Rider app, staging"

            Exit status: 0 ok, 1 failure (a bad name), 3 it exists already, 5 not an admin token, 64 usage.
            """
    )

    @Argument(help: ArgumentHelp("The namespace name: lowercase letters, digits, '-' and '_'.", valueName: "name"))
    public var name: String
    @Option(help: ArgumentHelp("What the namespace is for.", valueName: "text"))
    public var description: String?
    @Option(help: ArgumentHelp("always, kills or never: which changes need a --reason.", valueName: "policy"))
    public var reasonPolicy: String?
    @OptionGroup public var change: ChangeOptions
    @OptionGroup public var connection: ConnectionOptions
    @OptionGroup public var outputOptions: OutputOptions

    public init() {}

    public func validate() throws {
        if let reasonPolicy, ReasonPolicy(rawValue: reasonPolicy) == nil {
            throw ValidationError("--reason-policy '\(reasonPolicy)' is not a policy; pass always, kills or never.")
        }
    }

    public func run(console: Console) async throws {
        let settings = try connection.settings(console)
        let client = APIClient(settings: settings)
        let body = NamespaceCreateRequest(
            name: name, description: description, reasonPolicy: reasonPolicy.flatMap(ReasonPolicy.init(rawValue:)),
            reason: change.trimmedReason
        ).sent
        let response: JSONValue
        do {
            response = try await client.send("POST", APIClient.path("v1", "namespaces"), body: body).json
        } catch let failure as APIFailure where failure.status == 409 {
            throw CommandFailure.conflict(
                "namespace '\(name)' exists already on \(settings.serverText); 'flagctl namespaces list' shows it, 'flagctl apply' fills it"
            )
        }
        if let rendered = outputOptions.render(response) {
            console.write(rendered)
        } else {
            let created = try NamespaceBody(json: response)
            console.write(
                "created namespace \(name) at version \(created.version) "
                    + "(reason policy \(created.reasonPolicy)); fill it with 'flagctl apply DIR' and a \(name).yaml\n")
        }
    }
}

/// `flagctl namespaces delete NAME`
public struct NamespacesDelete: FlagctlCommand {
    public static let configuration = CommandConfiguration(
        commandName: "delete",
        abstract: "Delete a namespace (its change log and audit entries stay).",
        discussion: """
            Clients of the namespace get 404 and keep their last known good snapshot. A namespace created again \
            under the same name starts a new epoch. On a terminal flagctl asks first; elsewhere pass --yes.

            Example: flagctl namespaces delete rider-old --reason "app retired" --yes

            Exit status: 0 ok, 1 failure or not confirmed, 4 no such namespace, 5 not an admin token, 64 usage.
            """
    )

    @Argument(help: ArgumentHelp("The namespace to delete.", valueName: "name"))
    public var name: String
    @OptionGroup public var change: ChangeOptions
    @OptionGroup public var connection: ConnectionOptions
    @OptionGroup public var outputOptions: OutputOptions

    public init() {}

    public func run(console: Console) async throws {
        let settings = try connection.settings(console)
        let client = APIClient(settings: settings)
        let record: NamespaceBody
        do {
            record = try NamespaceBody(json: try await client.get(APIClient.path("v1", "namespaces", name)))
        } catch let failure as APIFailure where failure.status == 404 {
            throw client.namespaceNotFound(name)
        }
        let flagCount = record.summary?.counts.flags ?? 0
        try await Confirmation.confirm(
            "Delete namespace \(name) (version \(record.version), \(flagCount) flags)?",
            action: "delete namespace \(name)",
            preview: ["apps using namespace \(name) will get 404 and keep their last snapshot"], yes: change.yes,
            console: console)
        var query: [(String, String)] = []
        if let reason = change.trimmedReason { query.append(("reason", reason)) }
        do {
            _ = try await client.send("DELETE", APIClient.path("v1", "namespaces", name), query: query)
        } catch let failure as APIFailure where failure.status == 404 {
            throw client.namespaceNotFound(name)
        }
        let result = JSONValue.object(JSONObject([("namespace", .string(name)), ("deleted", .bool(true))]))
        if let rendered = outputOptions.render(result) {
            console.write(rendered)
        } else {
            console.write(
                "deleted namespace \(name); its change log and audit entries stay ('flagctl audit --all-namespaces')\n")
        }
    }
}
