import Foundation
import SwitchyardCore

extension Conditions {
    /// `cities nairobi; units qa-1, qa-2; app >= 5.12.0`, or `every unit` when there is no condition.
    var summary: String {
        var parts: [String] = []
        func list(_ name: String, _ values: [String]) {
            if !values.isEmpty { parts.append("\(name) \(values.joined(separator: ", "))") }
        }
        for targeting in TargetingList.allCases { list(targeting.label, self[list: targeting]) }
        for attribute in VersionAttribute.allCases {
            let range = self[version: attribute]
            if let lower = range.atLeast { parts.append("\(attribute.label) >= \(lower)") }
            if let upper = range.below { parts.append("\(attribute.label) < \(upper)") }
        }
        return parts.isEmpty ? "every unit" : parts.joined(separator: "; ")
    }
}

/// What a flag is doing right now, from its definition and the kill switches that cover it.
struct FlagState: Sendable {
    /// Kill switches with an entry that kills everywhere.
    var killedBy: [String] = []
    /// Kill entries of group kill switches limited to some cities or cohorts: `(kill switch, scope)`. The master
    /// kill switch's scoped entries cover every flag, so `get` shows them once, above the table.
    var scopedKills: [(killSwitch: String, scope: Scope)] = []
    var disabled = false
    var disabledScopes: [Scope] = []
    /// Whether any unit can get it on (a plugin switch with some rollout above 0; an experiment always).
    var reachesUnits = true

    /// - Parameter coverage: the flag set's, when a listing asks every flag.
    init(_ flag: FlagDefinition, in flagSet: FlagSet, coverage: KillSwitchCoverage? = nil) {
        for key in coverage?.killSwitchKeys(covering: flag.key) ?? flagSet.killSwitchKeys(covering: flag.key) {
            guard let kill = flagSet.killSwitch(key) else { continue }
            for entry in kill.entries {
                if entry.isEverywhere {
                    if !killedBy.contains(key) { killedBy.append(key) }
                } else if !kill.isMaster {
                    scopedKills.append((key, entry))
                }
            }
        }
        if let gate = flag.pluginSwitch {
            disabled = gate.disabled
            disabledScopes = gate.disabledScopes
            reachesUnits = gate.rollout.basisPoints > 0 || gate.rules.contains { $0.rollout.basisPoints > 0 }
        }
    }

    /// `killed`, `disabled`, `on` or `off`: the word `get` shows and `-o json` carries as `state`.
    var word: String {
        if !killedBy.isEmpty { return "killed" }
        if disabled { return "disabled" }
        return reachesUnits ? "on" : "off"
    }

    var style: Style {
        switch word {
        case "killed", "disabled": .red
        case "on": .green
        default: .yellow
        }
    }

    /// `killed by master`, `disabled`, `on`, `off`.
    var headline: String {
        if !killedBy.isEmpty { return "killed by \(killedBy.joined(separator: ", "))" }
        return word
    }

    /// The scoped kills and disables: `killed in cities lagos (master); disabled in cities berlin`, or `-`.
    var scopedText: String {
        var parts = scopedKills.map { "killed in \($0.scope) (\($0.killSwitch))" }
        parts += disabledScopes.map { "disabled in \($0)" }
        return parts.isEmpty ? "-" : parts.joined(separator: "; ")
    }
}

extension FlagDefinition {
    /// `plugin switch` or `experiment`.
    var kindName: String {
        pluginSwitch != nil ? "plugin switch" : "experiment"
    }

    /// The default rollout (`12.5%`), or an experiment's weights in variant order (`control 34, book_now 33`).
    var rolloutText: String {
        switch kind {
        case .pluginSwitch(let gate): return gate.rollout.description
        case .experiment(let experiment): return experiment.weightsText(experiment.weights)
        }
    }

    var ruleCount: Int {
        switch kind {
        case .pluginSwitch(let gate): gate.rules.count
        case .experiment(let experiment): experiment.rules.count
        }
    }
}

extension Experiment {
    /// `control 34, book_now 33, lets_go 33` (variants without weight left out).
    func weightsText(_ weights: VariantWeights) -> String {
        variants.compactMap { variant in weights[variant.key].flatMap { $0 > 0 ? "\(variant.key) \($0)" : nil } }
            .joined(separator: ", ")
    }
}

extension MetricDefinition {
    /// `value`, `ratio fare / trips`.
    var kindText: String {
        guard kind == .ratio else { return kind.rawValue }
        return "ratio \(numerator ?? "?") / \(denominator ?? "?")"
    }

    /// `200`, `0.5`, or `-` without a cap.
    var capText: String {
        guard let cap else { return "-" }
        return MetricDefinition.jsonNumber(cap).serializedString()
    }
}

extension KillSwitch {
    /// `cities lagos; cohorts core_only`, or `none`.
    var entriesText: String {
        entries.isEmpty ? "none" : entries.map(\.description).joined(separator: "; ")
    }
}
