import Foundation
import SwitchyardCore
import Testing

@testable import FlagctlCommands

/// Where flagctl finds its server, token and namespace: options, FLAGCTL_* variables, the login config file.
struct ConfigurationTests {
    @Test func loginChecksTheTokenAndSavesItWithModeSixHundred() async throws {
        try await LiveServer.run { server in
            let secret = try #require(server.tokens["amara"])
            let environment = ["FLAGCTL_CONFIG": server.configPath]
            let result = await server.flagctl(
                ["login", "--server", server.url, "--namespace", "rider", "--token-stdin"],
                environment: environment, answer: { _ in secret + "\n" })
            #expect(result.status == 0, "\(result.error)")
            #expect(
                result.output
                    == "logged in to \(server.url); saved it and the token to \(server.configPath) (mode 0600), default namespace rider\n"
            )
            #expect(!result.transcript.contains(secret))
            let attributes = try FileManager.default.attributesOfItem(atPath: server.configPath)
            #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)
            let saved = try JSONValue.parse(try String(contentsOfFile: server.configPath, encoding: .utf8))
            #expect(saved["token"] == .string(secret))
            #expect(saved["server"] == .string(server.url))

            // Later commands need no options or variables.
            let get = await server.flagctl(
                ["get", "plugin_switch_feed_promos", "-o", "json"], environment: environment)
            #expect(get.status == 0, "\(get.error)")
            #expect(!get.output.contains(secret))
        }
    }

    @Test func loginPromptsForTheTokenOnATerminalWithoutEchoingIt() async throws {
        try await LiveServer.run { server in
            let secret = try #require(server.tokens["bob"])
            let result = await server.flagctl(
                ["login", "--server", server.url], environment: ["FLAGCTL_CONFIG": server.configPath],
                terminal: true, answer: { _ in secret })
            #expect(result.status == 0, "\(result.error)")
            #expect(
                result.transcript
                    == "token for \(server.url): \nlogged in to \(server.url); saved it and the token to \(server.configPath) (mode 0600)\n"
            )
        }
    }

    @Test func loginWithARefusedTokenSavesNothingAndExitsWithFive() async throws {
        try await LiveServer.run { server in
            let result = await server.flagctl(
                ["login", "--server", server.url, "--token", "sy_not_a_real_token_at_all"],
                environment: ["FLAGCTL_CONFIG": server.configPath])
            #expect(result.status == 5)
            #expect(
                result.error
                    == "error: \(server.url) refused the token (the bearer token is not valid (check for a typo, or ask an admin for a new token)); nothing was saved. Check it, or ask an admin for a new one\n"
            )
            #expect(!result.error.contains("sy_not_a_real_token_at_all"))
            #expect(!FileManager.default.fileExists(atPath: server.configPath))
        }
    }

    @Test func loginOffATerminalWithoutATokenSaysHowToPipeItIn() async {
        let console = Console.capturing(environment: ["FLAGCTL_CONFIG": "/nonexistent/config.json"])
        let status = await Flagctl.execute(["login", "--server", "http://127.0.0.1:1"], console: console)
        #expect(status == 64)
        #expect(
            console.errorOutput
                == "error: not on a terminal, so flagctl cannot prompt for the token; pipe it in with --token-stdin\n")
    }

    @Test func optionsWinOverVariablesWhichWinOverTheConfigFile() throws {
        let folder = try TestPaths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let path = folder + "/config.json"
        try ConfigFile(server: "http://file:1", token: "file-token", namespace: "file-ns").write(path: path)
        let onlyFile = try ServerSettings.resolve(
            server: nil, token: nil, namespace: nil,
            console: .capturing(environment: ["FLAGCTL_CONFIG": path]))
        #expect(onlyFile.server.absoluteString == "http://file:1")
        #expect(onlyFile.token == "file-token")
        #expect(onlyFile.namespace == "file-ns")
        #expect(onlyFile.serverOrigin == .configFile)
        let variables = [
            "FLAGCTL_CONFIG": path, "FLAGCTL_SERVER": "http://env:2", "FLAGCTL_TOKEN": "env-token",
            "FLAGCTL_NAMESPACE": "env-ns",
        ]
        let fromEnvironment = try ServerSettings.resolve(
            server: nil, token: nil, namespace: nil, console: .capturing(environment: variables))
        #expect(fromEnvironment.server.absoluteString == "http://env:2")
        #expect(fromEnvironment.token == "env-token")
        #expect(fromEnvironment.namespace == "env-ns")
        let fromOptions = try ServerSettings.resolve(
            server: "http://option:3/", token: "option-token", namespace: "option-ns",
            console: .capturing(environment: variables))
        #expect(fromOptions.server.absoluteString == "http://option:3")
        #expect(fromOptions.token == "option-token")
        #expect(fromOptions.namespace == "option-ns")
    }

    @Test func theConfigFileIsFoundFromTheEnvironment() {
        #expect(ConfigFile.path(environment: ["FLAGCTL_CONFIG": "/x/c.json", "HOME": "/home/a"]) == "/x/c.json")
        #expect(
            ConfigFile.path(environment: ["XDG_CONFIG_HOME": "/xdg", "HOME": "/home/a"]) == "/xdg/flagctl/config.json")
        #expect(ConfigFile.path(environment: ["HOME": "/home/a"]) == "/home/a/.config/flagctl/config.json")
    }

    @Test func aConfigFileOthersCanReadIsWarnedAbout() throws {
        let folder = try TestPaths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let path = folder + "/config.json"
        try ConfigFile(server: "http://127.0.0.1:1", token: "t", namespace: nil).write(path: path)
        chmod(path, 0o644)
        let console = Console.capturing(environment: ["FLAGCTL_CONFIG": path])
        _ = try ServerSettings.resolve(server: nil, token: nil, namespace: nil, console: console)
        #expect(
            console.errorOutput
                == "warning: \(path) holds a token and other users may read it; run 'chmod 600 \(path)'\n")
    }

    @Test func withoutAServerEveryServerCommandSaysHowToConfigureOne() async {
        for arguments in [
            ["get"], ["kill", "--yes"], ["audit"], ["watch"], ["namespaces", "list"], ["diff", TestPaths.flags],
        ] {
            let console = Console.capturing(environment: ["FLAGCTL_CONFIG": "/nonexistent/config.json"])
            let status = await Flagctl.execute(arguments, console: console)
            #expect(status == 64, "\(arguments)")
            #expect(
                console.errorOutput
                    == "error: no flags service configured. Pass --server URL, set FLAGCTL_SERVER, or run 'flagctl login --server URL' once\n"
            )
        }
    }

    @Test func aBadServerURLIsAUsageError() async {
        let console = Console.capturing()
        let status = await Flagctl.execute(["get", "--server", "flags.internal"], console: console)
        #expect(status == 64)
        #expect(
            console.errorOutput.hasPrefix(
                "Error: --server 'flags.internal' is not a server URL; pass one like http://flags.internal:8080.\n"))
    }

    @Test func anUnreachableServerFailsWithWhereTheURLCameFrom() async throws {
        // A port that was just free: nothing listens on it.
        let console = Console.capturing(environment: [
            "FLAGCTL_SERVER": "http://127.0.0.1:9", "FLAGCTL_NAMESPACE": "rider",
            "FLAGCTL_CONFIG": "/nonexistent/config.json",
        ])
        let status = await Flagctl.execute(["get"], console: console)
        #expect(status == 1)
        #expect(
            console.errorOutput.hasPrefix("error: cannot reach flagsd at http://127.0.0.1:9 (from FLAGCTL_SERVER): "))
        #expect(console.errorOutput.hasSuffix("; check the URL and that flagsd is running\n"))
    }

    @Test func withoutATokenTheServersRefusalSaysHowToGiveOne() async throws {
        try await LiveServer.run { server in
            let result = await server.flagctl(["get"], environment: server.environment(token: nil))
            #expect(result.status == 5)
            #expect(
                result.error.hasSuffix("; no token was sent: set FLAGCTL_TOKEN, pass --token, or run 'flagctl login'\n")
            )
        }
    }

    @Test func withoutANamespaceCommandsSayHowToPassOne() async throws {
        try await LiveServer.run { server in
            let result = await server.flagctl(["get"], environment: server.environment(namespace: nil))
            #expect(result.status == 64)
            #expect(
                result.error
                    == "error: no namespace given. Pass --namespace NS (or set FLAGCTL_NAMESPACE, or run 'flagctl login --namespace NS'); 'flagctl namespaces list' shows them\n"
            )
            let unknown = await server.flagctl(["get", "-n", "driver"], environment: server.environment())
            #expect(unknown.status == 4)
            #expect(
                unknown.error
                    == "error: namespace 'driver' does not exist on \(server.url); 'flagctl namespaces list' shows the namespaces your token may use\n"
            )
        }
    }

    @Test func theTokenIsNeverPrintedByAnyCommand() async throws {
        try await LiveServer.run { server in
            let secret = try #require(server.tokens["amara"])
            var transcripts: [String] = []
            for arguments in [
                ["get"], ["get", "-o", "json"], ["version"], ["version", "-o", "yaml"], ["audit", "-o", "json"],
                ["kill", "--reason", "r"], ["namespaces", "list"], ["get", "nope"], ["tokens", "list"],
                ["explain", "plugin_switch_feed_promos", "--unit", "u"],
                ["disable", "plugin_switch_feed_promos", "-o", "yaml"],
            ] {
                transcripts.append(await server.flagctl(arguments, environment: server.environment()).transcript)
            }
            let refused = await server.flagctl(
                ["get", "--token", "sy_wrong_secret_value"], environment: server.environment())
            transcripts.append(refused.transcript)
            for transcript in transcripts {
                #expect(!transcript.contains(secret))
                #expect(!transcript.contains("sy_wrong_secret_value"))
            }
        }
    }

    @Test func colourIsUsedOnlyOnATerminalAndNoColorTurnsItOff() async throws {
        try await LiveServer.run { server in
            let plain = await server.flagctl("get")
            #expect(!plain.output.contains("\u{1B}["))
            let coloured = await server.flagctl(["get"], environment: server.environment(), terminal: true)
            #expect(coloured.output.contains("\u{1B}[1mFLAG"))
            #expect(coloured.output.contains("\u{1B}[32mon\u{1B}[0m"))
            var noColour = server.environment()
            noColour["NO_COLOR"] = "1"
            let honoured = await server.flagctl(["get"], environment: noColour, terminal: true)
            #expect(!honoured.output.contains("\u{1B}["))
            #expect(honoured.output == plain.output)
        }
    }
}
