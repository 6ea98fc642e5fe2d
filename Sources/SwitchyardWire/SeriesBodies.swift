public import SwitchyardCore

/// `GET /v1/namespaces/{namespace}/series`: sessions and crashed sessions over time, per plugin switch and for the
/// whole namespace (`baseline`), in equal steps from `from` to `until`: the numbers behind the console's charts.
///
/// Step `i` covers `[from + i·step, from + (i+1)·step)`; each series has one count per step. Counts are what flagsd
/// admitted from one source (`client` or `reporter`), in the dimension `all` (every unit), as the crash guard sums
/// them.
public struct SeriesBody: Sendable, Hashable {
    /// One subject's counts per step.
    public struct Series: Sendable, Hashable {
        /// `switch` (sessions with the plugin switch active) or `baseline` (every session of the namespace).
        public var subject: String
        /// The switch's key; empty for the baseline.
        public var key: String
        public var sessions: [Int64]
        public var crashes: [Int64]

        public init(subject: String, key: String, sessions: [Int64], crashes: [Int64]) {
            self.subject = subject
            self.key = key
            self.sessions = sessions
            self.crashes = crashes
        }

        var json: JSONValue {
            .object(
                JSONObject([
                    ("subject", .string(subject)), ("key", .string(key)),
                    ("sessions", .array(sessions.map(JSONValue.int64))),
                    ("crashes", .array(crashes.map(JSONValue.int64))),
                ]))
        }

        init(json: JSONValue, _ what: String) throws(WireError) {
            var reader = try WireReader(json, what)
            subject = try reader.string("subject")
            key = try reader.string("key")
            guard let sessions = json["sessions"]?.arrayValue?.compactMap(\.int64Value),
                let crashes = json["crashes"]?.arrayValue?.compactMap(\.int64Value)
            else {
                throw WireError("\(what): sessions and crashes must be arrays of integers")
            }
            self.sessions = sessions
            self.crashes = crashes
        }
    }

    public var namespace: String
    public var version: Int64
    public var source: String
    public var from: String
    public var until: String
    public var stepSeconds: Int
    /// The baseline first, then the plugin switches by key.
    public var series: [Series]

    public init(
        namespace: String, version: Int64, source: String, from: String, until: String, stepSeconds: Int,
        series: [Series]
    ) {
        self.namespace = namespace
        self.version = version
        self.source = source
        self.from = from
        self.until = until
        self.stepSeconds = stepSeconds
        self.series = series
    }

    public var json: JSONValue {
        .object(
            JSONObject([
                ("namespace", .string(namespace)), ("version", .int64(version)), ("source", .string(source)),
                ("from", .string(from)), ("until", .string(until)), ("step_seconds", .int(stepSeconds)),
                ("series", .array(series.map(\.json))),
            ]))
    }

    public init(json: JSONValue) throws(WireError) {
        var reader = try WireReader(json, "series")
        namespace = try reader.string("namespace")
        version = try reader.int64("version")
        source = try reader.string("source")
        from = try reader.string("from")
        until = try reader.string("until")
        stepSeconds = Int(try reader.int64("step_seconds"))
        var series: [Series] = []
        for (index, element) in (json["series"]?.arrayValue ?? []).enumerated() {
            series.append(try Series(json: element, "series.series[\(index)]"))
        }
        self.series = series
    }
}
