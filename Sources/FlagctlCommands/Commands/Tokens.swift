public import ArgumentParser
import Foundation
import SwitchyardCore
import SwitchyardWire

/// `flagctl tokens list|create|revoke`.
public struct Tokens: AsyncParsableCommand {
    public static let configuration = CommandConfiguration(
        abstract: "List, create and revoke API tokens (needs an admin token for every namespace).",
        discussion: """
            Roles nest: client (apps: snapshots, changes, events; ships inside apps, so public) ⊂ reporter (a \
            server-side crash pipeline: its sessions are trusted by the crash guard) ⊂ editor (change flags, read \
            the audit log) ⊂ admin (tokens, namespaces). A token may be limited to some namespaces with --allow; a \
            client token must be, as anyone can read it out of the app. A metrics token reads /metrics only (for a \
            Prometheus scraper: /metrics needs one unless flagsd runs with --open-metrics).

            Examples:

              flagctl tokens list
              flagctl tokens create amara --role editor
              flagctl tokens create rider-ios --role client --allow rider
              flagctl tokens create crash-pipeline --role reporter --allow rider
              flagctl tokens create web-checkout --role client --allow rider --rate 600
              flagctl tokens create prometheus --role metrics
              flagctl tokens revoke amara --reason "left the release team"
            """,
        subcommands: [TokensList.self, TokensCreate.self, TokensRevoke.self]
    )

    public init() {}
}

/// `flagctl tokens list`
public struct TokensList: FlagctlCommand {
    public static let configuration = CommandConfiguration(
        commandName: "list",
        abstract:
            "List tokens: id, name, role, namespaces, who created them, and whether revoked (never their secrets).",
        discussion: """
            Example: flagctl tokens list -o json

            Exit status: 0 ok, 1 failure, 5 not an admin token for every namespace, 64 usage.
            """
    )

    @OptionGroup public var connection: ConnectionOptions
    @OptionGroup public var outputOptions: OutputOptions

    public init() {}

    public func run(console: Console) async throws {
        let settings = try connection.settings(console)
        let tree = try await APIClient(settings: settings).get(APIClient.path("v1", "tokens"))
        if let rendered = outputOptions.render(tree) {
            console.write(rendered)
            return
        }
        var table = Table("ID", "NAME", "ROLE", "NAMESPACES", "CREATED", "BY", "REVOKED")
        for token in try ListBody<TokenBody>(json: tree).items {
            let revoked = token.revokedAt.map(Audit.shortTime)
            table.add([
                .init(token.id), .init(token.name, .bold), .init(token.role),
                .init(token.namespaces?.joined(separator: ", ") ?? "all"),
                .init(Audit.shortTime(token.createdAt), .dim), .init(token.createdBy),
                .init(revoked ?? "-", revoked == nil ? .plain : .red),
            ])
        }
        console.write(table)
    }
}

/// `flagctl tokens create NAME --role R [--allow NS ...] [--rate N]`
public struct TokensCreate: FlagctlCommand {
    public static let configuration = CommandConfiguration(
        commandName: "create",
        abstract: "Create a token; its secret is printed once, alone on standard output.",
        discussion: """
            The secret goes to standard output on its own line (so TOKEN=$(flagctl tokens create ...) works) \
            and the token's details to standard error. The server keeps only a hash: store the secret now.

            A client token needs --allow: it ships inside apps, where anyone can read it, so it is limited to the \
            namespaces its app uses. A metrics token (for a Prometheus scraper) reads /metrics only and takes no \
            --allow.

            Examples:

              flagctl tokens create amara --role editor
              flagctl tokens create rider-ios --role client --allow rider
              flagctl tokens create crash-pipeline --role reporter --allow rider
              flagctl tokens create web-checkout --role client --allow rider --rate 600
              flagctl tokens create prometheus --role metrics

            Exit status: 0 ok, 1 failure (a bad name), 3 a live token has that name, 5 not an admin token for \
            every namespace, 64 usage (a client token without --allow, too).
            """
    )

    @Argument(
        help: ArgumentHelp(
            "A name for the token: its holder, person or app (recorded as the actor of its changes).", valueName: "name"
        ))
    public var name: String
    @Option(
        help: ArgumentHelp(
            "client (apps: public, needs --allow), reporter (a server-side crash pipeline: secret), editor, admin, or metrics (reads /metrics only).",
            valueName: "role"))
    public var role: String
    @Option(
        help: ArgumentHelp(
            "Limit the token to this namespace; repeat for several (required for a client token; default for the others: every namespace).",
            valueName: "ns"))
    public var allow: [String] = []
    @Option(
        help: ArgumentHelp(
            "The most OFREP evaluation requests per minute the token may send; more get 429 (default: the server's --ofrep-rate-limit).",
            valueName: "n"))
    public var rate: Int?
    @OptionGroup public var change: ChangeOptions
    @OptionGroup public var connection: ConnectionOptions
    @OptionGroup public var outputOptions: OutputOptions

    public init() {}

    public func validate() throws {
        if let problem = TokenCreateRequest.nameProblem(name) {
            throw ValidationError("The token's name \(problem) (it names its holder, a person or an app).")
        }
        guard let role = Role(rawValue: role) else {
            throw ValidationError(
                "--role '\(role)' is not a role; pass client (apps), reporter (crash pipelines), editor (release managers), admin or metrics (a Prometheus scraper)."
            )
        }
        if role == .client, allow.isEmpty {
            throw ValidationError(
                "A client token ships inside apps, where anyone can read it: limit it to the namespaces its app uses, e.g. 'flagctl tokens create \(name) --role client --allow rider'."
            )
        }
        if role == .metrics, !allow.isEmpty {
            throw ValidationError("A metrics token reads /metrics, which covers every namespace: leave out --allow.")
        }
        if let rate, !(1...1_000_000).contains(rate) {
            throw ValidationError(
                "--rate \(rate) is not between 1 and 1000000 requests per minute; leave it out for the server's default."
            )
        }
    }

    public func run(console: Console) async throws {
        let settings = try connection.settings(console)
        guard let role = Role(rawValue: role) else { throw ValidationError("--role '\(role)' is not a role.") }
        let body = TokenCreateRequest(
            name: name, role: role, namespaces: allow.isEmpty ? nil : allow, ratePerMinute: rate
        ).sent
        let response: JSONValue
        do {
            response = try await APIClient(settings: settings).send(
                "POST", APIClient.path("v1", "tokens"), body: body
            ).json
        } catch let failure as APIFailure where failure.status == 409 {
            throw CommandFailure.conflict(
                "a live token is named '\(name)' already; pick another name, or revoke it first ('flagctl tokens revoke \(name)')"
            )
        }
        if let rendered = outputOptions.render(response) {
            console.write(rendered)
            return
        }
        var scope =
            allow.isEmpty
            ? "every namespace" : "namespace\(allow.count == 1 ? "" : "s") \(allow.joined(separator: ", "))"
        if let rate { scope += ", \(rate) OFREP requests per minute" }
        let created = try TokenBody(json: response)
        console.writeError(
            "created token \(name) (\(role), \(scope)), id \(created.id); "
                + "the secret below is shown only this once, store it now\n")
        console.write((created.secret ?? "") + "\n")
    }
}

/// `flagctl tokens revoke ID|NAME`
public struct TokensRevoke: FlagctlCommand {
    public static let configuration = CommandConfiguration(
        commandName: "revoke",
        abstract: "Revoke a token by id or name; it stops working at once.",
        discussion: """
            The last live admin token valid in every namespace cannot be revoked (create another one first), so \
            that someone can always manage tokens.

            Example: flagctl tokens revoke amara --reason "left the release team"

            Exit status: 0 ok, 1 failure, 3 the last admin token for every namespace, 4 no such token, 5 not an admin \
            token for every namespace, 64 usage.
            """
    )

    @Argument(help: ArgumentHelp("The token's id (tok_...) or the name of a live token.", valueName: "token"))
    public var idOrName: String
    @OptionGroup public var change: ChangeOptions
    @OptionGroup public var connection: ConnectionOptions
    @OptionGroup public var outputOptions: OutputOptions

    public init() {}

    public func run(console: Console) async throws {
        let settings = try connection.settings(console)
        var query: [(String, String)] = []
        if let reason = change.trimmedReason { query.append(("reason", reason)) }
        let response: JSONValue
        do {
            response = try await APIClient(settings: settings).send(
                "DELETE", APIClient.path("v1", "tokens", idOrName), query: query
            ).json
        } catch let failure as APIFailure where failure.status == 404 {
            throw CommandFailure.notFound(
                "no live token has the id or name '\(idOrName)'; 'flagctl tokens list' shows them")
        } catch let failure as APIFailure where failure.status == 409 {
            throw CommandFailure.conflict(failure.detail)
        }
        if let rendered = outputOptions.render(response) {
            console.write(rendered)
        } else {
            let revoked = try TokenBody(json: response)
            console.write("revoked token \(revoked.name) (\(revoked.id)); it no longer works\n")
        }
    }
}
