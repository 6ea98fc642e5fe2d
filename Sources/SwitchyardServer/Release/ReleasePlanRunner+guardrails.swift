import Foundation
import SwitchyardCore
import SwitchyardGuard
import SwitchyardStorage

extension ReleasePlanRunner {
    /// Judges a plan's guardrail metrics in its current stage, from the experiment units the store keeps (issue 30's
    /// per-unit totals): the units of the switch's split now that entered since the stage began, `with` against
    /// `without`. A stage that splits no unit (its scope at 100 %) judges none: nothing randomised to compare with.
    func guardrailChecks(
        _ key: String, plan: ReleasePlan, in state: NamespaceState, criteria: ReleaseCriteria,
        since began: Date
    ) async throws -> [GuardrailCheck] {
        guard !plan.guardrails.isEmpty, let flag = state.flagSet.flag(key) else { return [] }
        let flagSet = state.flagSet
        let metrics = plan.guardrails.map { guardrail in (guardrail, flagSet.metric(guardrail.metric)) }
        guard let design = ExperimentDesign(flag) else {
            return metrics.map { guardrail, metric in
                GuardrailCheck.notJudged(
                    guardrail, better: metric?.better ?? .higher,
                    why:
                        "the stage splits no unit (every unit of its scope has the switch), so no unit without it was randomised to compare with; crash rate decides"
                )
            }
        }
        let units = try await app.store.experimentUnits(in: state.record.name, experiment: key)
            .filter { $0.phase == design.phase && $0.entered >= began }
        // The crash guard's spread rules: the networks of the units with the switch, and the units beyond the
        // busiest networks (by units entered, either arm), for a second look that must agree.
        let policy = CrashGuardPolicy.resolved(namespace: flagSet.crashGuard, switch: flag.pluginSwitch?.crashGuard)
        func network(_ unit: ExperimentUnitRecord) -> String {
            unit.address.map(AddressBlock.network(ofKey:)) ?? "unknown"
        }
        var perNetwork: [String: Int] = [:]
        for unit in units { perNetwork[network(unit), default: 0] += 1 }
        let leftOut = max(0, policy.minimumAddresses - 1)
        let busiest = Set(perNetwork.sorted { ($0.value, $1.key) > ($1.value, $0.key) }.prefix(leftOut).map(\.key))
        let beyondBusiest = units.filter { !busiest.contains(network($0)) }
        let spread = GuardrailCheck.Spread(
            networks: Set(units.filter { $0.arm == ExperimentDesign.withArm }.map(network)).count,
            minimumNetworks: policy.minimumAddresses, leftOut: leftOut)
        return metrics.map { guardrail, metric in
            guard let metric else {
                return GuardrailCheck.notJudged(
                    guardrail, better: .higher, why: "the namespace no longer declares '\(guardrail.metric)'")
            }
            func check(_ members: [ExperimentUnitRecord]) -> GuardrailCheck {
                let moments = ExperimentReport.moments(of: metric, in: flagSet, members: members)
                return GuardrailCheck(
                    guardrail, metric: metric, without: moments[ExperimentDesign.withoutArm] ?? ArmMoments(),
                    with: moments[ExperimentDesign.withArm] ?? ArmMoments(), criteria: criteria)
            }
            return check(units).holding(to: spread, beyondBusiest: check(beyondBusiest))
        }
    }
}
