import Foundation
import HTTPTypes
import SwitchyardCore
import TestSupport
import Testing

/// The web console in a real browser: Debian's chromium, headless, driven by Selenium from PyPI through Debian's
/// chromedriver (Tests/console-browser: `run` makes the virtual environment under .build/console-venv on first use
/// and gives the browser and driver paths explicitly, so nothing is downloaded at run time). The flagsd binary
/// runs on a free port, seeded from Flags/; the script signs in, flips a switch with a reason, checks it with the
/// real `flagctl get` and in the audit timeline, sees changes made by `flagctl` appear without a reload, pauses
/// and resumes a release plan started through the API from the Releases view, and reads experiments' results (their
/// charts and a sample ratio mismatch) after reporting units' sessions and outcomes through the events API.
///
/// Serialized: the first run creates the virtual environment (PyPI must be reachable); chromium and
/// chromium-driver must be installed, as scripts/lib/prerequisites.sh does.
@Suite(.serialized)
struct ConsoleBrowserTests {
    static let adminToken = "console-browser-test-admin-0123456789"
    static let script = OFREPFixtures.repository + "/Tests/console-browser/run"
    static let xssPayload = #"<img src=x onerror="window.__xss=1"><script>window.__xss=2</script> probe"#

    /// The checks console_browser_test.py makes; each must print `ok <name>`.
    static let checks = [
        "a client token is refused with a message naming the role the console needs",
        "signing in keeps the token in this tab's session storage only, never in the URL, a cookie or local storage",
        "flag descriptions from the server are shown as text and never run",
        "flipping a switch takes a reason and a confirmation",
        "flagctl get sees the switch the console flipped",
        "the audit timeline shows the change with its reason, actor and source",
        "a change made with flagctl appears in the audit timeline without reloading",
        "a rollout changed with flagctl appears in the flags view without reloading",
        "changing a rollout in the console refuses a third decimal and saves an exact percentage",
        "a change made meanwhile by someone else is not overwritten: the console shows it and asks again",
        "a kill switch can be killed with the keyboard alone, and focus comes back where it was",
        "the crash guard view shows a switch the guard turned off and its evidence, without reloading",
        "a switch the guard turned off is enabled from its view after a warning, and the guard cools down",
        "past the guard's budget a proposal shows in its view and is applied from there",
        "the crash guard view draws each switch's crash rate over time against its bound with its trip marked, from the API's numbers",
        "a switch crashing above its bound but not yet enough to trip shows amber, saying how often it crashes and what the guard waits for",
        "the releases view shows a plan started through the API, its stage, its guardrails and its timeline, without reloading",
        "a release is paused from the releases view, and its timeline gains the pause",
        "a paused release is resumed from the releases view",
        "a release step someone else made first is shown, and flagsd's refusal of the stale one is shown in the dialog",
        "the flags list draws each switch's sessions over six hours from the API's numbers and marks the switches a plan or the guard holds",
        "a plan that rolls back marks the failed stage failed, keeps its evidence and charts, and offers no primary button; the rollout dialog of a switch whose plan runs says saving pauses it",
        "a plan's proposal to turn its switch off shows first on its card in red and is confirmed from there",
        "the experiments view lists the namespace's experiments, and a switch's row links to its results",
        "an experiment's results draw each metric's interval against zero and its course over time, with the numbers in words",
        "an experiment flag's results draw one interval per treatment variant",
        "a sample ratio mismatch shows a red banner first and marks the results untrustworthy",
        "a flag's page shows who holds it, its charts and its history as readable diffs, and reverts a change after a confirmation",
        "a namespace of many flags lists 200 at first and more on request, the filter finds any, and the guard table and a large change's diffs are as short",
        "every control has an accessible name",
        "on a phone-sized screen nothing scrolls sideways",
        "no script error and no Content-Security-Policy violation",
        "signing out forgets the token",
    ]

    @Test func theConsoleWorksInARealBrowserAlongsideFlagctl() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
            "flagsd-console-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let flagctl = try ChildFlagsd.binary().deletingLastPathComponent().appendingPathComponent("flagctl")
        try #require(
            FileManager.default.isExecutableFile(atPath: flagctl.path),
            "flagctl is not built next to flagsd; run 'swift build --build-tests' first")
        // Behind a load balancer on loopback: the script's event batches come through it from many addresses.
        let child = try ChildFlagsd(
            database: folder.appendingPathComponent("flags.sqlite").path, folder: folder,
            adminToken: Self.adminToken, flagsDirectory: OFREPFixtures.repository + "/Flags",
            arguments: ["--trusted-proxies", "127.0.0.1", "--events-max-skew", "0s", "--release-interval", "1"])
        defer { child.kill() }
        let url = "http://127.0.0.1:\(try await child.port())"
        let admin = LiveClient(base: URL(string: url)!, token: Self.adminToken, timeout: 60)

        func token(_ name: String, role: String) async throws -> String {
            let limit = role == "client" ? #", "namespaces": ["rider"]"# : ""
            let response = try await admin.send(
                "POST", "/v1/tokens", body: #"{"name": "\#(name)", "role": "\#(role)"\#(limit)}"#)
            try #require(response.status == .created, "\(response.text)")
            return try #require(response.json["token"]?.stringValue)
        }
        let editor = try await token("ada-console", role: "editor")
        let client = try await token("rider-ios", role: "client")
        let cli = try await token("release-bot", role: "editor")
        let description = JSONValue.string(Self.xssPayload).serializedString()
        let probe = try await admin.send(
            "PUT", "/v1/namespaces/rider/flags/plugin_switch_xss_probe",
            body: #"{"flag": {"description": \#(description), "rollout": 0}, "reason": "XSS probe"}"#)
        try #require(probe.status == .ok, "\(probe.text)")

        // A namespace of more plugin switches than the console lists at once, created in one change: 25 plugin
        // points of 10 switches, each point with its group kill switch.
        let wideFlags = 250
        var points: [String] = []
        var kills = [#""master": {}"#]
        var flags: [String] = []
        for point in 0..<(wideFlags / 10) {
            let keys = (0..<10).map { "plugin_switch_wide_" + String(format: "%03d", point * 10 + $0) }
            let switches = keys.map { JSONValue.string($0).serializedString() }.joined(separator: ", ")
            points.append(
                #"{"name": "wide_point_\#(point)", "kill_switch": "kill_wide_\#(point)", "switches": [\#(switches)]}"#)
            kills.append(#""kill_wide_\#(point)": {}"#)
            flags += keys.map { #""\#($0)": {"type": "plugin_switch", "rollout": 5000}"# }
        }
        let wide = try await admin.send(
            "POST", "/v1/namespaces",
            body:
                #"{"name": "wide", "reason_policy": "never", "flag_set": {"plugin_points": [\#(points.joined(separator: ", "))], "kill_switches": {\#(kills.joined(separator: ", "))}, "flags": {\#(flags.joined(separator: ", "))}}}"#
        )
        try #require(wide.status == .created, "\(wide.text)")

        // A liveness deadline, not a speed claim (a first run may install tools from PyPI).
        let result = try await Repository.runScript(
            Self.script,
            environment: [
                "CONSOLE_URL": url, "SWITCHYARD_EDITOR_TOKEN": editor, "EDITOR_NAME": "ada-console",
                "SWITCHYARD_CLIENT_TOKEN": client, "FLAGCTL": flagctl.path, "FLAGCTL_TOKEN": cli,
                "FLAGCTL_ACTOR": "release-bot", "WIDE_NAMESPACE": "wide", "WIDE_FLAGS": String(wideFlags),
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
        #expect(result.status == 0, "Tests/console-browser/run exited with \(result.status):\n\(result.output)")

        // What the console did is what flagsd recorded: the switch, with its reason, by the console.
        let flag = try await admin.send("GET", "/v1/namespaces/rider/flags/plugin_switch_feed_promos")
        #expect(flag.json["disabled"] == .bool(true))
        let audit = try await admin.send("GET", "/v1/audit?namespace=rider&source=console")
        let summaries = audit.json["entries"]?.arrayValue?.compactMap { $0["summary"]?.stringValue } ?? []
        #expect(summaries.contains("disable plugin_switch_feed_promos"), "\(summaries)")
        #expect(audit.json["entries"]?.arrayValue?.allSatisfy { $0["actor"] == .string("ada-console") } == true)
        // The release plan: started through the API, paused and resumed by the console's editor, paused with flagctl
        // (the console's stale pause refused), at its first stage.
        let release = try await admin.send("GET", "/v1/namespaces/rider/flags/plugin_switch_feed_safety_tips/release")
        #expect(release.json["plan"]?["state"]?["status"] == .string("paused"))
        #expect(release.json["plan"]?["state"]?["stage"] == .int(0))
        let steps =
            release.json["timeline"]?.arrayValue?.map {
                "\($0["actor"]?.stringValue ?? "?") \($0["summary"]?.stringValue ?? "?")"
            } ?? []
        let key = "plugin_switch_feed_safety_tips"
        #expect(
            steps == [
                "release-bot release pause \(key)", "ada-console release resume \(key)",
                "ada-console release pause \(key)",
                "release-bot release start \(key)",
            ], "\(steps)")
    }
}
