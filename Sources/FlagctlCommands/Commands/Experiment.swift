import Foundation
public import ArgumentParser
import SwitchyardCore

/// `flagctl experiment KEY`: exposures, sessions and crash rate per variant, against the control.
public struct ExperimentResults: FlagctlCommand {
    public static let configuration = CommandConfiguration(
        commandName: "experiment",
        abstract: "Results of an experiment flag: exposures, sessions and crash rate per variant, against the control.",
        discussion: """
            From the events clients report: exposures per variant, and the sessions each variant was served in, \
            with how many crashed. For every variant but the control, DIFFERENCE is its crash rate minus the \
            control's, in percentage points, with Newcombe's hybrid score interval (method 10, built from the two \
            Wilson intervals) at 95 % confidence; '*' marks an interval that excludes 0. The control is the \
            variant named 'control', else the flag's default variant, unless --control names another.

            Examples:

              flagctl experiment confirmation_button_copy
              flagctl experiment confirmation_button_copy --window 7d --control book_now
              flagctl experiment confirmation_button_copy -o json

            Exit status: 0 ok, 1 failure, 4 no such flag, 5 token refused (needs the editor role), 64 usage.
            """
    )

    @Argument(help: ArgumentHelp("The experiment flag, e.g. confirmation_button_copy.", valueName: "key"))
    public var key: String
    @Option(help: ArgumentHelp("How far back to count: 1m to 30d (30m, 24h, 7d).", valueName: "duration"))
    public var window = "24h"
    @Option(help: ArgumentHelp("The variant to compare with (default: 'control', else the default variant).", valueName: "variant"))
    public var control: String?
    @OptionGroup public var server: ServerOptions
    @OptionGroup public var outputOptions: OutputOptions

    public init() {}

    public func validate() throws {
        guard let duration = GuardDurationText.parse(window), duration >= .seconds(60), duration <= .seconds(30 * 86_400) else {
            throw ValidationError("--window '\(window)' is not a duration from 1m to 30d; write e.g. 30m, 24h or 7d.")
        }
    }

    public func run(console: Console) async throws {
        let settings = try server.settings(console)
        let namespace = try settings.requireNamespace()
        var query: [(String, String)] = [("window", window)]
        if let control { query.append(("control", control)) }
        let tree: JSONValue
        do {
            tree = try await APIClient(settings: settings).get(APIClient.path("v1", "namespaces", namespace, "experiments", key), query: query)
        } catch let failure as APIFailure where failure.status == 404 && failure.slug != "namespace-not-found" {
            throw CommandFailure.notFound("namespace '\(namespace)' has no flag '\(key)' ('flagctl get' lists the flags)")
        }
        if let rendered = outputOptions.render(tree) {
            console.write(rendered)
            return
        }
        let reference = tree["control"]?.stringValue ?? "?"
        var table = Table("VARIANT", "EXPOSURES", "SESSIONS", "CRASHES", "CRASH RATE", "DIFFERENCE (95% CI)")
        for row in tree["variants"]?.arrayValue ?? [] {
            let variant = row["variant"]?.stringValue ?? ""
            var difference = "(control)"
            if let interval = Guard.present(row["difference"]) {
                difference = "\(Self.points(interval["estimate"])) [\(Self.points(interval["lower"])), \(Self.points(interval["upper"]))]"
                if interval["significant"]?.boolValue == true { difference += " *" }
            } else if variant != reference {
                difference = "-"
            }
            table.add([
                .init(variant + (row["declared"]?.boolValue == false ? " (not declared)" : ""), .bold),
                .init(String(row["exposures"]?.int64Value ?? 0)), .init(String(row["sessions"]?.int64Value ?? 0)),
                .init(String(row["crashes"]?.int64Value ?? 0)), .init(Guard.percent(row["crash_rate"])),
                .init(difference, difference.hasSuffix("*") ? .yellow : .plain),
            ])
        }
        console.write(table.render(colour: console.usesColour))
        console.write("\nsessions of the last \(tree["window"]?.stringValue ?? window) (from \(Audit.shortTime(tree["from"]?.stringValue ?? ""))); DIFFERENCE: crash rate minus \(reference)'s\n"
            + "in percentage points, Newcombe hybrid score interval at 95%; * the interval excludes 0\n")
    }

    /// `+0.56 pp` from a fraction.
    static func points(_ value: JSONValue?) -> String {
        guard case .number(let number)? = value, let fraction = number.doubleValue else { return "-" }
        let points = fraction * 100
        return (points >= 0 ? "+" : "") + String(format: "%.2f", points) + " pp"
    }
}
