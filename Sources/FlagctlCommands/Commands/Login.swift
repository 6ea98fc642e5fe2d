public import ArgumentParser
import Foundation
import SwitchyardCore
import SwitchyardWire

/// `flagctl login`: checks a token against the service and saves server, token and namespace (mode 0600).
public struct Login: FlagctlCommand {
    public static let configuration = CommandConfiguration(
        abstract: "Save the flags service, your token and a default namespace, so other commands need no options.",
        discussion: """
            Checks the token against the service first, then writes the config file with mode 0600 (only you \
            can read it): FLAGCTL_CONFIG, else $XDG_CONFIG_HOME/flagctl/config.json, else \
            ~/.config/flagctl/config.json. The token is read from a prompt that does not echo, from standard \
            input with --token-stdin, or from --token / FLAGCTL_TOKEN; flagctl never prints it. Options and \
            FLAGCTL_* variables still win over the file.

            Examples:

              flagctl login --server https://flags.internal --namespace rider
              vault read -field=token secret/flagctl \\
                  | flagctl login --server https://flags.internal --token-stdin

            Exit status: 0 saved, 1 failure (service unreachable, file not writable), 5 token refused, 64 usage.
            """
    )

    @Option(help: ArgumentHelp("The flags service, e.g. https://flags.internal (or FLAGCTL_SERVER).", valueName: "url"))
    public var server: String?
    @Option(
        name: [.customShort("n"), .long], help: ArgumentHelp("The namespace commands use by default.", valueName: "ns"))
    public var namespace: String?
    @Option(
        help: ArgumentHelp(
            "The token (prefer the prompt or --token-stdin: options show in the process list).", valueName: "token"))
    public var token: String?
    @Flag(help: "Read the token from standard input.")
    public var tokenStdin = false

    public init() {}

    public func validate() throws {
        if tokenStdin, token != nil { throw ValidationError("Pass either --token or --token-stdin, not both.") }
    }

    public func run(console: Console) async throws {
        let path = ConfigFile.path(environment: console.environment)
        let existing = try ConfigFile.read(path: path, console: console)
        guard
            let serverText = server ?? console.environment["FLAGCTL_SERVER"].flatMap({ $0.isEmpty ? nil : $0 })
                ?? existing?.server
        else {
            throw CommandFailure.usage("pass the flags service: flagctl login --server https://flags.internal")
        }
        let url = try ServerSettings.url(serverText, from: server != nil ? "--server" : "FLAGCTL_SERVER")
        var secret: String?
        if tokenStdin {
            secret = await console.readAllInput()
        } else if let token {
            secret = token
        } else if let fromEnvironment = console.environment["FLAGCTL_TOKEN"], !fromEnvironment.isEmpty {
            secret = fromEnvironment
        } else if console.isInputTerminal {
            secret = await console.askSecret("token for \(url.absoluteString): ")
        } else {
            throw CommandFailure.usage(
                "not on a terminal, so flagctl cannot prompt for the token; pipe it in with --token-stdin")
        }
        guard let secret = secret?.trimmingCharacters(in: .whitespacesAndNewlines), !secret.isEmpty else {
            throw CommandFailure.usage("no token given; paste it at the prompt or pipe it in with --token-stdin")
        }
        let settings = ServerSettings(
            server: url, token: secret, namespace: namespace, serverOrigin: server != nil ? .option : .environment,
            tokenOrigin: .option, configPath: path)
        let client = APIClient(settings: settings)
        var notes: [String] = []
        do {
            let namespaces = try ListBody<NamespaceBody>(json: try await client.get(APIClient.path("v1", "namespaces")))
                .items.map(\.name)
            if let namespace, !namespaces.contains(namespace) {
                notes.append(
                    "note: namespace '\(namespace)' does not exist or this token may not use it (it may use: \(namespaces.isEmpty ? "none" : namespaces.joined(separator: ", ")))"
                )
            }
        } catch let failure as APIFailure where failure.status == 401 {
            throw CommandFailure.unauthorized(
                "\(url.absoluteString) refused the token (\(failure.detail)); nothing was saved. Check it, or ask an admin for a new one"
            )
        } catch let failure as APIFailure where failure.status == 403 {
            notes.append(
                "note: the token works but has the client role: explain and watch work; get, changes and audit need an editor token"
            )
        }
        try ConfigFile(server: url.absoluteString, token: secret, namespace: namespace ?? existing?.namespace).write(
            path: path)
        var line = "logged in to \(url.absoluteString); saved it and the token to \(path) (mode 0600)"
        if let namespace = namespace ?? existing?.namespace { line += ", default namespace \(namespace)" }
        console.write(line + "\n")
        for note in notes { console.writeError(note + "\n") }
    }
}

/// `flagctl version`: flagctl's version, and whether the configured service answers.
public struct Version: FlagctlCommand {
    public static let configuration = CommandConfiguration(
        abstract: "Print flagctl's version, and check the configured flags service when there is one.",
        discussion: """
            Examples:

              flagctl version
              flagctl version -o json

            Exit status: 0 (also when the service does not answer: the output says so), 64 usage.
            """
    )

    @OptionGroup public var connection: ConnectionOptions
    @OptionGroup public var outputOptions: OutputOptions

    public init() {}

    public func run(console: Console) async throws {
        var tree = JSONObject([("flagctl", .string(FlagctlVersion.current)), ("server", .null)])
        var lines = ["flagctl \(FlagctlVersion.current)"]
        if let settings = try? connection.settings(console) {
            let client = APIClient(settings: settings, timeout: 15)
            let status: String
            do {
                let health = try await client.get("/healthz")
                status = (try? HealthBody(json: health))?.status ?? "answers"
            } catch {
                status = "unreachable"
            }
            tree["server"] = .object(JSONObject([("url", .string(settings.serverText)), ("status", .string(status))]))
            lines.append("server \(settings.serverText): \(status == "ok" ? "up" : status)")
        }
        if let rendered = outputOptions.render(.object(tree)) {
            console.write(rendered)
        } else {
            console.write(lines.map { $0 + "\n" }.joined())
        }
    }
}
