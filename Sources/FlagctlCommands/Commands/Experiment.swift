public import ArgumentParser
import Foundation
import SwitchyardCore
import SwitchyardWire

/// `flagctl experiment`: an experiment's results per outcome metric, and the per-unit table they come from.
public struct ExperimentCommand: AsyncParsableCommand {
    public static let configuration = CommandConfiguration(
        commandName: "experiment",
        abstract: "Results of an experiment flag or a plugin switch at a partial rollout, per outcome metric.",
        discussion: """
            An experiment is an experiment flag (its variants are the arms) or a plugin switch whose rollout splits \
            units (arms 'without', the control, and 'with'). Each unit (the unit of randomisation) is one \
            observation. 'flagctl experiment KEY' is 'flagctl experiment results KEY'.

            Examples:

              flagctl experiment results plugin_switch_split_fare
              flagctl experiment results confirmation_button_copy -o json
              flagctl experiment units plugin_switch_split_fare > units.csv
            """,
        subcommands: [ExperimentResults.self, ExperimentUnits.self],
        defaultSubcommand: ExperimentResults.self
    )

    public init() {}
}

/// `flagctl experiment results KEY`: per arm and metric, the difference to the control with its confidence sequence.
public struct ExperimentResults: FlagctlCommand {
    public static let configuration = CommandConfiguration(
        commandName: "results",
        abstract:
            "Per outcome metric: each arm's mean and its difference to the control, with an always-valid interval.",
        discussion: """
            Shows the phase (the split in force) with the units per arm and the sample ratio check first: when the \
            units are not split as the flag declares (anytime-valid test, p < 0.001), the results are marked \
            UNTRUSTWORTHY. Then, per metric (the namespace's declared metrics and the built-in sessions, \
            crashed_sessions and crash_rate): each arm's mean per unit (a share for conversions), and for every arm \
            but the control the DIFFERENCE to the control with its 95 % asymptotic confidence sequence (valid however \
            often you look: docs/experiment-statistics.md), the relative LIFT, and the VERDICT (better or worse when \
            the interval excludes 0, by the metric's direction; else inconclusive). 'cuped' marks estimates adjusted \
            with the units' pre-exposure values. An experiment flag's answer also lists exposures, sessions and \
            crash rate per variant over --window (Newcombe's interval, a fixed-horizon one).

            Examples:

              flagctl experiment results plugin_switch_split_fare
              flagctl experiment results confirmation_button_copy --control book_now
              flagctl experiment results plugin_switch_split_fare --phase 10% -o yaml

            Exit status: 0 ok, 1 failure, 4 no such flag, 5 token refused (needs the editor role), 64 usage.
            """
    )

    @Argument(
        help: ArgumentHelp("The experiment flag or plugin switch, e.g. plugin_switch_split_fare.", valueName: "key"))
    public var key: String
    @Option(
        help: ArgumentHelp("The phase to show (default: the split in force), e.g. 25% or 50/50.", valueName: "phase"))
    public var phase: String?
    @Option(
        help: ArgumentHelp(
            "The arm to compare with (default: 'without'; for experiment flags 'control', else the default variant).",
            valueName: "arm"))
    public var control: String?
    @Option(
        help: ArgumentHelp(
            "Experiment flags: how far back to count crashes per variant, 1m to 30d (30m, 24h, 7d).",
            valueName: "duration"))
    public var window = "24h"
    @OptionGroup public var server: ServerOptions
    @OptionGroup public var outputOptions: OutputOptions

    public init() {}

    public func validate() throws {
        guard let duration = GuardDurationText.parse(window), duration >= .seconds(60),
            duration <= .seconds(30 * 86_400)
        else {
            throw ValidationError("--window '\(window)' is not a duration from 1m to 30d; write e.g. 30m, 24h or 7d.")
        }
    }

    public func run(console: Console) async throws {
        let settings = try server.settings(console)
        let namespace = try settings.requireNamespace()
        var query: [(String, String)] = [("window", window)]
        if let control { query.append(("control", control)) }
        if let phase { query.append(("phase", phase)) }
        let tree: JSONValue
        do {
            tree = try await APIClient(settings: settings).get(
                APIClient.path("v1", "namespaces", namespace, "experiments", key), query: query)
        } catch let failure as APIFailure where failure.status == 404 && failure.slug != "namespace-not-found" {
            throw CommandFailure.notFound(
                "namespace '\(namespace)' has no flag '\(key)' ('flagctl get' lists the flags)")
        }
        if let rendered = outputOptions.render(tree) {
            console.write(rendered)
            return
        }
        let results: ExperimentResultsBody
        do {
            results = try ExperimentResultsBody(json: tree)
        } catch {
            throw CommandFailure(
                "flagsd's answer is not an experiment's results: \(error.message); is flagctl older than flagsd?")
        }
        console.write(Self.text(results, colour: console.usesColour))
        guard let crashes = results.crashes else { return }
        console.write("\nCrashes per variant\n")
        var table = Table("VARIANT", "EXPOSURES", "SESSIONS", "CRASHES", "CRASH RATE", "DIFFERENCE (95% CI)")
        for row in crashes.variants {
            var difference = "(control)"
            if let interval = row.difference {
                difference =
                    "\(Self.points(interval.estimate)) [\(Self.points(interval.lower)), \(Self.points(interval.upper))]"
                if interval.significant { difference += " *" }
            } else if row.variant != crashes.control {
                difference = "-"
            }
            table.add([
                .init(row.variant + (row.declared ? "" : " (not declared)"), .bold),
                .init(String(row.exposures)), .init(String(row.sessions)),
                .init(String(row.crashes)), .init(Guard.percent(row.crashRate)),
                .init(difference, difference.hasSuffix("*") ? .yellow : .plain),
            ])
        }
        console.write(table)
        console.write(
            "\nsessions of the last \(crashes.window) (from \(Audit.shortTime(crashes.from))); DIFFERENCE: crash rate minus \(crashes.control)'s\n"
                + "in percentage points, Newcombe hybrid score interval at 95%; * the interval excludes 0\n")
    }

    /// The results as text: phase and sample ratio, arms, then one row per metric and treatment arm.
    static func text(_ results: ExperimentResultsBody, colour: Bool) -> String {
        var text = ""
        let kind = results.type == "plugin_switch" ? "plugin switch" : "experiment flag"
        text += Style.bold.apply(results.flag, colour: colour) + " (\(kind))"
        text += results.phase.map { " · phase \($0)" } ?? " · no unit has entered yet"
        text += " · control: \(results.control)\n"
        let ratio = results.sampleRatio
        if !results.trustworthy {
            text += Style.red.apply("UNTRUSTWORTHY: " + ratio.message, colour: colour) + "\n"
        } else {
            text +=
                "sample ratio: "
                + (ratio.status == "ok" ? Style.green.apply(ratio.message, colour: colour) : ratio.message) + "\n"
        }
        if results.phases.count > 1 {
            text +=
                "phases: "
                + results.phases.map { "\($0.phase) (\($0.units) units\($0.current ? ", now" : ""))" }.joined(
                    separator: ", ")
                + " (--phase shows another)\n"
        }
        var arms = Table("ARM", "UNITS", "SHARE", "DECLARED")
        for arm in results.arms {
            arms.add([
                .init(arm.arm + (arm.arm == results.control ? " (control)" : ""), .bold), .init(String(arm.units)),
                .init(Guard.percent(arm.observedShare)), .init(Guard.percent(arm.expectedShare)),
            ])
        }
        text += "\n" + arms.render(colour: colour) + "\n"
        var table = Table("METRIC", "ARM", "MEAN", "CONTROL", "DIFFERENCE [95% CS]", "LIFT [95% CS]", "VERDICT")
        var silent: [String] = []
        for metric in results.metrics {
            // A metric no unit of the phase reported yet: one line for all of them, not a row of zeros per arm.
            guard metric.arms.contains(where: { ($0.mean ?? 0) != 0 }) else {
                silent.append(metric.name)
                continue
            }
            let means = Dictionary(metric.arms.map { ($0.arm, $0.mean) }, uniquingKeysWith: { first, _ in first })
            let controlMean = means[results.control] ?? nil
            for comparison in metric.comparisons {
                let isShare = metric.kind == "conversion" || metric.name == MetricDefinition.crashRate
                let difference = comparison.difference
                var interval =
                    "\(Self.amount(difference.estimate, share: isShare, signed: true)) [\(Self.amount(difference.lower, share: isShare, signed: true)), \(Self.amount(difference.upper, share: isShare, signed: true))]"
                if comparison.cuped { interval += " cuped" }
                let lift =
                    comparison.relative.map {
                        "\(Self.relative($0.estimate)) [\(Self.relative($0.lower)), \(Self.relative($0.upper))]"
                    } ?? "-"
                let style: Style =
                    comparison.verdict == "better" ? .green : comparison.verdict == "worse" ? .red : .plain
                table.add([
                    .init(metric.name + (metric.better == "lower" ? " ↓" : " ↑"), .bold), .init(comparison.arm),
                    .init(Self.amount(means[comparison.arm] ?? nil, share: isShare, signed: false)),
                    .init(Self.amount(controlMean, share: isShare, signed: false)), .init(interval), .init(lift),
                    .init(
                        results.trustworthy ? comparison.verdict : "untrustworthy", results.trustworthy ? style : .red),
                ])
            }
        }
        text += table.render(colour: colour)
        if !silent.isEmpty { text += "no unit of this phase reported: " + silent.joined(separator: ", ") + "\n" }
        text +=
            "\nDIFFERENCE: the arm's mean per unit minus the control's (pp: points of a share); ↑ higher is better, ↓ lower;\n"
            + "CS: asymptotic confidence sequence at \(Int(((1 - results.alpha) * 100).rounded())) %, valid however often you look "
            + "(docs/experiment-statistics.md);\ncuped: adjusted with the units' pre-exposure values\n"
        return text
    }

    /// A mean or difference: a share in percent (pp when signed), else a number.
    static func amount(_ value: Double?, share: Bool, signed: Bool) -> String {
        guard let value else { return "-" }
        let sign = signed && value >= 0 ? "+" : ""
        if share { return sign + String(format: "%.2f", value * 100) + (signed ? " pp" : "%") }
        return sign + (abs(value) >= 100 ? String(format: "%.1f", value) : String(format: "%.3f", value))
    }

    /// `+4.2%` from a relative change.
    static func relative(_ value: Double?) -> String {
        guard let value else { return "-" }
        return (value >= 0 ? "+" : "") + String(format: "%.1f", value * 100) + "%"
    }

    /// `+0.56 pp` from a fraction.
    static func points(_ fraction: Double) -> String {
        let points = fraction * 100
        return (points >= 0 ? "+" : "") + String(format: "%.2f", points) + " pp"
    }
}

/// `flagctl experiment units KEY`: the per-unit table, as CSV, for a statistics package.
public struct ExperimentUnits: FlagctlCommand {
    public static let configuration = CommandConfiguration(
        commandName: "units",
        abstract: "The per-unit table an experiment's results are computed from, as CSV.",
        discussion: """
            One row per unit and metric (ratios are left out: their parts are there): \
            unit,arm,phase,entered,metric,value,pre. 'value' is what the unit reported since it entered the \
            experiment and 'pre' what it reported before (a conversion 0 or 1; counts and values capped), as the \
            results count them; every unit of the phase has a row for every metric. docs/experiment-statistics.md \
            shows how to recompute the results with scipy or statsmodels.

            Examples:

              flagctl experiment units plugin_switch_split_fare > units.csv
              flagctl experiment units confirmation_button_copy --phase 1/1

            Exit status: 0 ok, 1 failure, 4 no such flag, 5 token refused (needs the editor role), 64 usage.
            """
    )

    @Argument(help: ArgumentHelp("The experiment flag or plugin switch.", valueName: "key"))
    public var key: String
    @Option(help: ArgumentHelp("The phase (default: the one the results show).", valueName: "phase"))
    public var phase: String?
    @OptionGroup public var server: ServerOptions

    public init() {}

    public func run(console: Console) async throws {
        let settings = try server.settings(console)
        let namespace = try settings.requireNamespace()
        let response: APIResponse
        do {
            response = try await APIClient(settings: settings).send(
                "GET", APIClient.path("v1", "namespaces", namespace, "experiments", key, "units"),
                query: phase.map { [("phase", $0)] } ?? [])
        } catch let failure as APIFailure where failure.status == 404 && failure.slug != "namespace-not-found" {
            throw CommandFailure.notFound(
                "namespace '\(namespace)' has no flag '\(key)' ('flagctl get' lists the flags)")
        }
        console.write(String(decoding: response.body, as: UTF8.self))
    }
}
