import Foundation
import SwitchyardCore
import SwitchyardGuard
import SwitchyardStorage

extension ReleasePlanRunner {
    /// Judges a plan's guardrail metrics in its current stage, from the experiment units the store keeps (issue 30's
    /// per-unit totals): the units of the switch's split now that entered since the stage began, `with` against
    /// `without`. A stage that splits no unit (its scope at 100 %) judges none: nothing randomised to compare with.
    func guardrailChecks(_ key: String, plan: ReleasePlan, in state: NamespaceState, criteria: ReleaseCriteria,
                         since began: Date) async throws -> [GuardrailCheck] {
        guard !plan.guardrails.isEmpty, let flag = state.flagSet.flag(key) else { return [] }
        let flagSet = state.flagSet
        let metrics = plan.guardrails.map { guardrail in (guardrail, flagSet.metric(guardrail.metric)) }
        guard let design = ExperimentDesign(flag) else {
            return metrics.map { guardrail, metric in
                GuardrailCheck.notJudged(guardrail, better: metric?.better ?? .higher,
                                         why: "the stage splits no unit (every unit of its scope has the switch), so no unit without it was randomised to compare with; crash rate decides")
            }
        }
        let units = try await service.store.experimentUnits(in: state.record.name, experiment: key)
            .filter { $0.phase == design.phase && $0.entered >= began }
        return metrics.map { guardrail, metric in
            guard let metric else {
                return GuardrailCheck.notJudged(guardrail, better: .higher, why: "the namespace no longer declares '\(guardrail.metric)'")
            }
            let moments = ExperimentReport.moments(of: metric, in: flagSet, members: units)
            return GuardrailCheck(guardrail, metric: metric, without: moments[ExperimentDesign.withoutArm] ?? ArmMoments(),
                                  with: moments[ExperimentDesign.withArm] ?? ArmMoments(), criteria: criteria)
        }
    }
}
