import Foundation
import HTTPTypes
import SwitchyardCore
import TestSupport
import Testing

/// flagsd driven by a real OpenFeature client: Python's openfeature-sdk with openfeature-provider-ofrep from PyPI
/// (Tests/ofrep-python: `run` makes the virtual environment under .build/ofrep-venv on first use, with the pins of
/// requirements.txt). The flagsd binary runs on a free port, seeded from Tests/ofrep-python/Flags with `shop` as
/// its default namespace; the script gets the URL and tokens and prints one line per check.
///
/// Serialized: the first run creates the virtual environment (PyPI must be reachable; python3 with venv and pip
/// must be installed, as scripts/lib/prerequisites.sh does).
@Suite(.serialized)
struct OFREPClientTests {
    static let adminToken = "ofrep-client-test-admin-0123456789"
    static let script = OFREPFixtures.repository + "/Tests/ofrep-python/run"

    /// The checks ofrep_client_test.py makes; each must print `ok <name>`.
    static let checks = [
        "plugin switches are booleans with variant on/off and reason STATIC",
        "a rule that holds is TARGETING_MATCH; cohorts as a list or a string",
        "city, platform and appVersion map to the rule's conditions",
        "a boolean experiment",
        "a string experiment",
        "an integer experiment",
        "a float experiment",
        "a float experiment whose value is whole stays a float (1.0, not 1)",
        "an object experiment, with a whole float inside",
        "a weighted experiment is a SPLIT, the same for the same unit",
        "a killed or disabled plugin switch is a real false with reason DISABLED",
        "a killed experiment serves the code default, reason DISABLED, without an error",
        "an unknown flag serves the code default with FLAG_NOT_FOUND",
        "a missing targeting key fails only where a bucket is needed",
        "asking a flag as another type serves the code default with TYPE_MISMATCH",
        "an X-API-Key token works like a bearer token",
        "bad, revoked and missing credentials serve the code default with an error",
        "a token limited to one namespace may not name another",
        "over its rate a token gets 429; the provider honours Retry-After in whole seconds",
    ]

    @Test func theOpenFeaturePythonSDKEvaluatesEveryKindOfFlagThroughOFREP() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("flagsd-ofrep-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let child = try ChildFlagsd(
            database: folder.appendingPathComponent("flags.sqlite").path, folder: folder,
            adminToken: Self.adminToken, flagsDirectory: OFREPFixtures.flagsDirectory,
            arguments: ["--default-namespace", "shop"])
        defer { child.kill() }
        let url = "http://127.0.0.1:\(try await child.port())"
        let admin = LiveClient(base: URL(string: url)!, token: Self.adminToken, timeout: 60)

        func token(_ body: String) async throws -> String {
            let response = try await admin.send("POST", "/v1/tokens", body: body)
            try #require(response.status == .created, "\(response.text)")
            return try #require(response.json["token"]?.stringValue)
        }
        // Two namespaces, so that OFREP falls back to the default namespace (a token limited to one names it).
        let client = try await token(#"{"name": "python", "role": "client", "namespaces": ["shop", "rider"]}"#)
        let shop = try await token(#"{"name": "python-shop", "role": "client", "namespaces": ["shop"]}"#)
        let rate = try await token(
            #"{"name": "python-rate", "role": "client", "namespaces": ["shop"], "rate_per_minute": 3}"#)
        let revoked = try await token(#"{"name": "python-revoked", "role": "client", "namespaces": ["shop"]}"#)
        #expect(try await admin.send("DELETE", "/v1/tokens/python-revoked").status == .ok)

        // A liveness deadline, not a speed claim: the first run installs the client from PyPI.
        let result = try await Repository.runScript(
            Self.script,
            environment: [
                "OFREP_URL": url, "SWITCHYARD_CLIENT_TOKEN": client, "SWITCHYARD_SHOP_TOKEN": shop,
                "SWITCHYARD_RATE_TOKEN": rate, "SWITCHYARD_REVOKED_TOKEN": revoked,
            ], deadline: .seconds(600))
        let lines = result.output.split(separator: "\n").map(String.init)
        for check in Self.checks {
            let failure = lines.first { $0.hasPrefix("FAIL \(check):") }
            #expect(lines.contains("ok \(check)"), "\(failure ?? "no line for '\(check)'")")
        }
        let reported = lines.compactMap { line -> String? in
            if line.hasPrefix("ok ") { return String(line.dropFirst(3)) }
            if line.hasPrefix("FAIL "), let colon = line.firstIndex(of: ":") {
                return String(line[line.index(line.startIndex, offsetBy: 5)..<colon])
            }
            return nil
        }
        #expect(
            reported.filter { !Self.checks.contains($0) } == [], "checks the script makes that this test does not list")
        #expect(result.status == 0, "Tests/ofrep-python/run exited with \(result.status):\n\(result.output)")
    }
}
