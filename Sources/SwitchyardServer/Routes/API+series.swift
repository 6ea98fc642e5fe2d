import Foundation
import Hummingbird
import SwitchyardCore
import SwitchyardStorage
import SwitchyardWire

extension API {
    /// The hours a series may span: flagsd keeps minute counters for two days (then one per hour).
    static let seriesHours: ClosedRange<Int64> = 1...48
    /// The steps of a series: one per `hours` minutes (a minute per step over an hour, six over six hours).
    static let seriesSteps = 60

    /// `GET /v1/namespaces/{namespace}/series?hours=&switch=&source=`: sessions and crashed sessions per step over
    /// the last `hours` (default 6), for every plugin switch (or the one named) and the whole namespace, as clients
    /// (`source=client`, the default) or reporters counted them: the numbers behind the console's charts.
    func series(_ request: Request, context: FlagsRequestContext) async throws -> Response {
        let (namespace, state) = try await readableState(request, context)
        let hours = try queryInteger(request, "hours", default: 6, in: Self.seriesHours)!
        let query = request.uri.queryParameters
        let only = query.get("switch")
        if let only, state.flagSet.flag(only)?.pluginSwitch == nil {
            throw APIError.badRequest("namespace '\(namespace)' has no plugin switch '\(only)'", path: "switch")
        }
        let sourceText = query.get("source") ?? EventSource.client.rawValue
        guard let source = EventSource(rawValue: sourceText) else {
            throw APIError.badRequest(
                "query parameter source='\(sourceText)' is not one of client, reporter", path: "source")
        }
        let step = hours * 60 * 1000
        let minute = EventAggregation.bucketSize.components.seconds * 1000
        // Up to the end of the current minute, so the newest events count; `from` is a whole number of steps before.
        let until = EventAggregation.bucketStart(of: Date()) + minute
        let from = until - step * Int64(Self.seriesSteps)
        let keys = only.map { [$0] } ?? state.flagSet.flags.compactMap { $0.pluginSwitch == nil ? nil : $0.key }
        let counts = try await store.eventCounts(
            EventCountQuery(
                namespace: namespace, from: Date(milliseconds: from), until: Date(milliseconds: until),
                subjects: [.pluginSwitch, .baseline], keys: Set(keys + [""]), dimensions: [.all], sources: [source],
                perBucket: true))
        var series = [""] + keys.sorted()
        var sessions = Dictionary(
            uniqueKeysWithValues: series.map { ($0, [Int64](repeating: 0, count: Self.seriesSteps)) })
        var crashes = sessions
        for count in counts where count.dimension == .all {
            guard let bucket = count.bucket else { continue }
            let index = Int((bucket.milliseconds - from) / step)
            guard (0..<Self.seriesSteps).contains(index), sessions[count.subject.key] != nil else { continue }
            sessions[count.subject.key]![index] += count.tally.sessions
            crashes[count.subject.key]![index] += count.tally.crashedSessions
        }
        series.removeAll { $0.isEmpty }
        return .json(
            SeriesBody(
                namespace: namespace, version: state.record.version, source: source.rawValue,
                from: Date(milliseconds: from).iso8601, until: Date(milliseconds: until).iso8601,
                stepSeconds: Int(step / 1000),
                series: [.init(subject: "baseline", key: "", sessions: sessions[""]!, crashes: crashes[""]!)]
                    + series.map { .init(subject: "switch", key: $0, sessions: sessions[$0]!, crashes: crashes[$0]!) }
            ).json, headers: etagHeaders(state.record))
    }
}
