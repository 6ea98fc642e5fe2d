import Foundation
import Hummingbird
import SwitchyardCore
import SwitchyardGuard
import SwitchyardStorage
import SwitchyardWire

extension API {
    /// `GET /v1/namespaces/{namespace}/experiments/{key}?phase=&control=&window=`: an experiment's outcome metrics.
    ///
    /// For an experiment flag, or a plugin switch whose rollout splits units (with against without): per arm and
    /// metric (the namespace's declared metrics and the built-in ones), units, mean, and each treatment arm's
    /// difference and relative lift to the control with an always-valid confidence sequence, CUPED-adjusted where
    /// units have pre-exposure values; the sample ratio check first (``ExperimentReport``). An experiment flag's
    /// answer also carries, as before, exposures, sessions and crash rate per variant over `window` with Newcombe's
    /// hybrid score interval (`variants`).
    func experimentResults(_ request: Request, context: FlagsRequestContext) async throws -> Response {
        let (namespace, state, flag) = try await experimentFlag(request, context)
        let query = request.uri.queryParameters
        let control = query.get("control")
        let phase = query.get("phase")
        let units = try await store.experimentUnits(in: namespace, experiment: flag.key)
        try checkExperiment(flag, units: units, namespace: namespace)
        try checkPhase(phase, of: flag, among: units)
        let now = Date()
        let report = ExperimentReport.body(
            namespace: namespace, flag: flag, flagSet: state.flagSet, units: units, phase: phase,
            control: control, now: now)
        var body = report
        if let experiment = flag.experiment {
            let variants = experiment.variants.map(\.key)
            let reference = control ?? (variants.contains("control") ? "control" : experiment.defaultVariant)
            guard variants.contains(reference) else {
                throw APIError.badRequest(
                    "query parameter control='\(reference)' is not a variant of \(flag.key) (\(variants.joined(separator: ", ")))",
                    path: "control")
            }
            body.crashes = try await crashCounts(
                namespace, flag: flag.key, variants: variants, control: reference, request: request)
        } else if let control, !report.arms.contains(where: { $0.arm == control }) {
            throw APIError.badRequest(
                "query parameter control='\(control)' is not an arm of \(flag.key) (with, without)", path: "control")
        }
        return .json(body.json, headers: etagHeaders(state.record))
    }

    /// `GET /v1/namespaces/{namespace}/experiments/{key}/units?phase=`: the per-unit table results are computed from,
    /// as CSV (`unit,arm,phase,entered,metric,value,pre`): for every unit of the phase (default: as the results
    /// show) and every metric but ratios (their parts are there), its value since it entered and before it entered,
    /// as the analysis counts them (a conversion 0 or 1; counts and values capped). Anyone can recompute every
    /// figure of the results from it (docs/experiment-statistics.md).
    func experimentUnits(_ request: Request, context: FlagsRequestContext) async throws -> Response {
        let (namespace, state, flag) = try await experimentFlag(request, context)
        let phase = request.uri.queryParameters.get("phase")
        let units = try await store.experimentUnits(in: namespace, experiment: flag.key)
        try checkExperiment(flag, units: units, namespace: namespace)
        try checkPhase(phase, of: flag, among: units)
        let selected = ExperimentReport.phase(of: flag, units: units, requested: phase)
        let metrics = state.flagSet.allMetrics.filter { $0.kind != .ratio }
        var csv = "unit,arm,phase,entered,metric,value,pre\n"
        for unit in units where unit.phase == selected {
            for metric in metrics {
                let value = ExperimentReport.observed(unit.value(metric.name), metric)
                let pre = ExperimentReport.observed(unit.preValue(metric.name), metric)
                csv +=
                    "\(unit.unit),\(Self.csvField(unit.arm)),\(Self.csvField(unit.phase)),\(unit.entered.iso8601),\(metric.name),\(value),\(pre)\n"
            }
        }
        var headers = etagHeaders(state.record)
        headers[.contentType] = "text/csv; charset=utf-8"
        headers[.contentDisposition] = "attachment; filename=\"\(namespace)-\(flag.key)-units.csv\""
        return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(string: csv)))
    }

    /// A CSV field: quoted when it holds a comma, a quote or a line break (phases hold `|` and `/`, rarely more).
    static func csvField(_ text: String) -> String {
        guard text.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" || $0 == "\r" }) else { return text }
        return "\"" + text.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }

    /// The namespace, its state and the flag an experiment route names: an experiment flag or a plugin switch.
    private func experimentFlag(_ request: Request, _ context: FlagsRequestContext) async throws -> (
        String, NamespaceState, FlagDefinition
    ) {
        let (namespace, state) = try await readableState(request, context)
        let key = try parameter("key", context)
        guard let flag = state.flagSet.flag(key) else {
            throw APIError.notFound(
                "namespace '\(namespace)' has no flag '\(key)' (list flags with GET /v1/namespaces/\(namespace)/flags)")
        }
        return (namespace, state, flag)
    }

    /// A flag that splits no unit now and never did runs no experiment: a 400 saying what would make it one.
    private func checkExperiment(_ flag: FlagDefinition, units: [ExperimentUnitRecord], namespace: String) throws {
        guard ExperimentDesign(flag) == nil, units.isEmpty else { return }
        let why =
            flag.pluginSwitch != nil
            ? "its rollouts (default and rules) are 0 or 100 %, so no unit is split; a rollout strictly between makes it one (flagctl rollout \(flag.key) 10)"
            : "it serves one variant to everyone; weights over two or more variants make it one"
        throw APIError.badRequest(
            "'\(flag.key)' runs no experiment: \(why). Experiments are experiment flags and plugin switches at a partial rollout",
            path: "key")
    }

    private func checkPhase(_ phase: String?, of flag: FlagDefinition, among units: [ExperimentUnitRecord]) throws {
        guard let phase, !units.contains(where: { $0.phase == phase }) else { return }
        let phases = Array(Set(units.map(\.phase))).sorted()
        throw APIError.badRequest(
            "query parameter phase='\(phase)' is no phase of \(flag.key) with units (\(phases.isEmpty ? "none yet" : phases.joined(separator: ", ")))",
            path: "phase")
    }

    /// The crash counts per variant of an experiment flag over `window` (the members of older versions' answer).
    private func crashCounts(
        _ namespace: String, flag key: String, variants: [String], control: String, request: Request
    ) async throws -> ExperimentResultsBody.CrashCounts {
        var window: Duration = .seconds(86_400)
        if let text = request.uri.queryParameters.get("window") {
            guard let parsed = GuardDurationText.parse(text), parsed >= .seconds(60), parsed <= .seconds(30 * 86_400)
            else {
                throw APIError.badRequest(
                    "query parameter window='\(text)' is not a duration from 1m to 30d (e.g. 24h, 7d)", path: "window")
            }
            window = parsed
        }
        let until = Date()
        let from = until - window.timeInterval
        let counts = try await store.eventCounts(
            EventCountQuery(
                namespace: namespace, from: from, until: until + 86_400,
                subjects: [.variant], keys: [key], dimensions: [.all]))
        var tallies: [String: EventTally] = [:]
        for count in counts { tallies[count.subject.variant, default: .zero] += count.tally }
        let z = Proportions.normalQuantile(0.975)
        let reference = tallies[control] ?? .zero
        let shown = variants + tallies.keys.filter { !variants.contains($0) }.sorted()
        let rows = shown.map { variant in
            let tally = tallies[variant] ?? .zero
            let interval =
                variant == control
                ? nil
                : Proportions.newcombeDifference(
                    successes1: tally.crashedSessions, trials1: tally.sessions,
                    successes2: reference.crashedSessions, trials2: reference.sessions, z: z)
            return ExperimentResultsBody.CrashCounts.Variant(
                variant: variant, declared: variants.contains(variant), isControl: variant == control,
                exposures: tally.exposures, sessions: tally.sessions, crashes: tally.crashedSessions,
                crashRate: tally.crashRate,
                difference: interval.map { interval in
                    ExperimentResultsBody.CrashCounts.Difference(
                        estimate: interval.difference, lower: interval.lower, upper: interval.upper,
                        significant: interval.lower > 0 || interval.upper < 0)
                })
        }
        return ExperimentResultsBody.CrashCounts(
            control: control, window: GuardDurationText.text(window), from: from.iso8601, until: until.iso8601,
            interval: "newcombe-hybrid-score", confidence: 0.95, variants: rows)
    }
}
