public import ArgumentParser
import Foundation

/// `--server URL --token TOKEN`: which flags service, and the token to present.
///
/// Each falls back to `FLAGCTL_SERVER` / `FLAGCTL_TOKEN`, then to the file `flagctl login` writes.
public struct ConnectionOptions: ParsableArguments, Sendable {
    @Option(
        help: ArgumentHelp("The flags service, e.g. http://flags.internal:8080 (or FLAGCTL_SERVER).", valueName: "url"))
    public var server: String?

    @Option(
        help: ArgumentHelp(
            "The API token (or FLAGCTL_TOKEN, or 'flagctl login'; prefer those: options show in the process list).",
            valueName: "token"))
    public var token: String?

    public init() {}

    /// The settings from these options, the environment and the config file, with the namespace given.
    func settings(_ console: Console, namespace: String? = nil) throws -> ServerSettings {
        try ServerSettings.resolve(server: server, token: token, namespace: namespace, console: console)
    }

    public func validate() throws {
        if let server {
            do {
                _ = try ServerSettings.url(server, from: "--server")
            } catch {
                throw ValidationError(error.message.prefix(1).uppercased() + error.message.dropFirst() + ".")
            }
        }
        if let token, token.isEmpty {
            throw ValidationError(
                "--token is empty. Pass a token, or leave --token out to use FLAGCTL_TOKEN or 'flagctl login'.")
        }
    }
}

/// `--server`, `--token` and `-n, --namespace`: the connection and the namespace a command works on.
public struct ServerOptions: ParsableArguments, Sendable {
    @OptionGroup public var connection: ConnectionOptions

    @Option(
        name: [.customShort("n"), .long],
        help: ArgumentHelp(
            "The namespace, e.g. rider (or FLAGCTL_NAMESPACE, or 'flagctl login --namespace').", valueName: "ns"))
    public var namespace: String?

    public init() {}

    /// The settings from options, environment and config file.
    func settings(_ console: Console) throws -> ServerSettings {
        try connection.settings(console, namespace: namespace)
    }

    /// A client of the service and the namespace it works on, which must be set.
    func namespaceClient(_ console: Console) throws -> (client: APIClient, namespace: String) {
        let settings = try settings(console)
        return (APIClient(settings: settings), try settings.requireNamespace())
    }
}

/// Where a setting came from, for messages.
enum SettingOrigin: String, Sendable {
    case option = "option"
    case environment = "environment"
    case configFile = "config file"
}

/// The resolved connection: server URL, token, namespace (each from an option, the environment, or the config file).
struct ServerSettings: Sendable {
    var server: URL
    var token: String?
    var namespace: String?
    var serverOrigin: SettingOrigin
    var tokenOrigin: SettingOrigin?
    var configPath: String

    /// Resolves each setting: option, then `FLAGCTL_*`, then the config file.
    ///
    /// - Throws: `CommandFailure.usage` when no server is configured or a server URL is malformed.
    static func resolve(server: String?, token: String?, namespace: String?, console: Console) throws -> ServerSettings
    {
        let environment = console.environment
        let path = ConfigFile.path(environment: environment)
        let file = try ConfigFile.read(path: path, console: console)
        func pick(_ option: String?, _ variable: String, _ stored: String?) -> (String, SettingOrigin)? {
            if let option, !option.isEmpty { return (option, .option) }
            if let value = environment[variable], !value.isEmpty { return (value, .environment) }
            if let stored, !stored.isEmpty { return (stored, .configFile) }
            return nil
        }
        guard let (serverText, serverOrigin) = pick(server, "FLAGCTL_SERVER", file?.server) else {
            throw CommandFailure.usage(
                "no flags service configured. Pass --server URL, set FLAGCTL_SERVER, or run 'flagctl login --server URL' once"
            )
        }
        let url = try url(
            serverText,
            from: serverOrigin == .option ? "--server" : serverOrigin == .environment ? "FLAGCTL_SERVER" : path)
        let tokenPick = pick(token, "FLAGCTL_TOKEN", file?.token)
        return ServerSettings(
            server: url, token: tokenPick?.0, namespace: pick(namespace, "FLAGCTL_NAMESPACE", file?.namespace)?.0,
            serverOrigin: serverOrigin, tokenOrigin: tokenPick?.1, configPath: path)
    }

    /// Parses a server URL: http or https with a host.
    static func url(_ text: String, from origin: String) throws(CommandFailure) -> URL {
        var trimmed = text.trimmingCharacters(in: .whitespaces)
        while trimmed.hasSuffix("/") { trimmed.removeLast() }
        guard let url = URL(string: trimmed), let scheme = url.scheme?.lowercased(),
            ["http", "https"].contains(scheme),
            let host = url.host, !host.isEmpty
        else {
            throw CommandFailure.usage(
                "\(origin) '\(text)' is not a server URL; pass one like http://flags.internal:8080")
        }
        return url
    }

    /// The namespace, or a usage error saying how to pass one.
    func requireNamespace() throws(CommandFailure) -> String {
        guard let namespace else {
            throw CommandFailure.usage(
                "no namespace given. Pass --namespace NS (or set FLAGCTL_NAMESPACE, or run 'flagctl login --namespace NS'); 'flagctl namespaces list' shows them"
            )
        }
        return namespace
    }

    /// The server as people write it: `http://127.0.0.1:8080`.
    var serverText: String { server.absoluteString }

    /// A flagctl command line to suggest, runnable as shown: `flagctl <command> -n NS <rest>`, with `--server URL`
    /// when this run was given one as an option (a server from the environment or the config file is found again).
    func command(_ command: String, _ rest: String = "") -> String {
        var line = "flagctl \(command)"
        if let namespace { line += " -n \(namespace)" }
        if serverOrigin == .option { line += " --server \(serverText)" }
        return rest.isEmpty ? line : line + " " + rest
    }
}
