public import ArgumentParser
import Foundation
import SwitchyardCore
import SwitchyardWire

/// `--city C --cohort K`: where a disable or kill entry applies (units matching every attribute named).
public struct ScopeOptions: ParsableArguments, Sendable {
    @Option(name: .customLong("city"), help: ArgumentHelp("Only in this city; repeat for several.", valueName: "city"))
    public var cities: [String] = []

    @Option(
        name: .customLong("cohort"),
        help: ArgumentHelp("Only for units in this cohort; repeat for several.", valueName: "cohort"))
    public var cohorts: [String] = []

    public init() {}

    public func validate() throws {
        for value in cities + cohorts where value.trimmingCharacters(in: .whitespaces).isEmpty {
            throw ValidationError("A --city or --cohort is empty. Name one, e.g. --city lagos.")
        }
    }

    var scope: Scope { Scope(cities: cities, cohorts: cohorts) }

    /// ` in cities lagos`, or `` for everywhere.
    var inText: String {
        scope.isEverywhere ? "" : " in \(scope)"
    }
}

extension OutputOptions {
    /// Writes a change's result: the server's answer for -o json/yaml, else the lines (and a note when the change
    /// stopped a running release plan, which flagsd does to a plan whose switch someone else changes).
    func emit(_ outcome: ChangeOutcome, _ lines: [String], console: Console) {
        if let rendered = render(outcome.response) {
            console.write(rendered)
            return
        }
        var lines = lines
        if let flag = outcome.answer.flag?.flag, let after = flag.pluginSwitch?.release?.state,
            after.status == .paused || after.status == .aborted,
            outcome.view.flagSet.flag(flag.key)?.pluginSwitch?.release?.state?.status == .running
        {
            let key = flag.key
            lines.append("note: the release plan of \(key) is \(after.status.rawValue) now: \(after.note ?? "")")
        }
        console.write(lines.map { $0 + "\n" }.joined())
    }
}
