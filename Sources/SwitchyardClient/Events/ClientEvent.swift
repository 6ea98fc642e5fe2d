package import Foundation
package import SwitchyardCore

/// The events the client reports to `POST /v1/namespaces/{ns}/events`, in the wire format of PRODUCT.md's
/// "Events" section and `design/issue30.md` § 2 (documented in `docs/client.md`).
///
/// Every event has a client-generated `id` (a UUID: the server counts each id once, so a retried batch never
/// counts twice), a `type`, a `time` (RFC 3339, UTC), and the unit's `app_version`, `platform`, `city` and
/// `cohorts` (absent attributes are left out; `cohorts` is always a list). Events name their `unit` as a digest of
/// the unit id (``SessionRecord/unitDigest(_:namespace:)``), never the id itself, so flagsd can count distinct
/// units (the crash guard) and assign each unit to one arm of an experiment.
///
/// - `session`: a finished session, reported at the next launch: its plugin switches and served variants, and
///   whether it crashed.
/// - `exposure`: an experiment flag's variant served to the unit (once per flag, variant, snapshot version and
///   context); carries `unit` when the context has a unit id.
/// - `metric`: an outcome the app reported with ``FlagClient/track(_:value:)``. `metric` (a flag-key name, at most
///   128 characters) and `unit` are always present; `value` (finite, 0 … 1e9) only when the app passed one
///   (absent means one occurrence). `switches` lists the plugin switches active in the session and `variants` the
///   experiment variants served in it, as `session` events do; `splits` names every plugin switch of the installed
///   snapshot whose state a rollout split decided for this unit at that moment (reason `SPLIT`): `true` bucketed
///   in, `false` bucketed out (at most 256). A switch decided otherwise (0 or 100 %, a rule without a partial
///   rollout, a kill, the crash-loop guard, a stale snapshot) is not listed: that unit observes nothing of its
///   experiment. `switches`, `splits` and `variants` are always present, empty when there is nothing to say.
///
/// ```json
/// {"app_version":"5.12.0","city":"lagos","cohorts":["beta"],"crashed":true,"end":"2026-11-22T09:14:03.250Z",
///  "id":"6f1c…","platform":"ios","session_id":"0b7e…","start":"2026-11-22T09:02:11.004Z",
///  "switches":["plugin_switch_feed_promos"],"time":"2026-11-22T09:20:40.118Z","type":"session",
///  "unit":"4be0643f1d98573b97cdca98a65347dd","variants":{"exp_checkout_copy":"treatment"}}
/// {"app_version":"5.12.0","city":"lagos","cohorts":["beta"],"epoch":"9f2…","flag":"exp_checkout_copy",
///  "id":"1d3a…","time":"2026-11-22T09:21:00.000Z","type":"exposure","unit":"4be0643f1d98573b97cdca98a65347dd",
///  "variant":"treatment","version":42}
/// {"app_version":"5.12.0","city":"lagos","cohorts":["beta"],"id":"a41e…","metric":"fare",
///  "splits":{"plugin_switch_feed_promos":true,"plugin_switch_split_fare":false},
///  "switches":["plugin_switch_feed_promos"],"time":"2026-11-22T09:22:13.412Z","type":"metric",
///  "unit":"4be0643f1d98573b97cdca98a65347dd","value":16.1,"variants":{"exp_checkout_copy":"treatment"}}
/// ```
package enum ClientEvent {
    /// A finished session, reported at the next launch.
    package static func session(_ record: SessionRecord, crashed: Bool, id: String, time: Date) -> JSONObject {
        var event = common(
            id: id, type: "session", time: time, appVersion: record.appVersion, platform: record.platform,
            city: record.city, cohorts: record.cohorts)
        event["session_id"] = .string(record.id)
        event["start"] = .string(Timestamp.rfc3339(record.start))
        event["end"] = .string(Timestamp.rfc3339(record.end ?? record.updated))
        event["crashed"] = .bool(crashed)
        if let unit = record.unit { event["unit"] = .string(unit) }
        event["switches"] = .array(record.switches.map { .string($0.key) })
        if !record.variants.isEmpty {
            var variants = JSONObject()
            for (flag, variant) in record.variants.sorted(by: { $0.key < $1.key }) { variants[flag] = .string(variant) }
            event["variants"] = .object(variants)
        }
        if !record.splits.isEmpty {
            event["splits"] = .object(
                JSONObject(record.splits.sorted { $0.key < $1.key }.map { ($0.key, JSONValue.bool($0.value)) }))
        }
        return event
    }

    /// An experiment flag's variant served to the unit.
    /// - Parameter unit: the unit's digest (``SessionRecord/unitDigest(_:namespace:)``); nil when the context has
    ///   no unit id.
    package static func exposure(
        flag: String, variant: String, epoch: String, version: Int64, unit: String?,
        context: EvaluationContext, id: String, time: Date
    ) -> JSONObject {
        var event = common(
            id: id, type: "exposure", time: time, appVersion: context.appVersion, platform: context.platform,
            city: context.city, cohorts: context.cohorts)
        event["flag"] = .string(flag)
        event["variant"] = .string(variant)
        event["epoch"] = .string(epoch)
        event["version"] = .int64(version)
        if let unit { event["unit"] = .string(unit) }
        return event
    }

    /// An outcome the app tracked, attributed to the unit's experiments at that moment.
    /// - Parameters:
    ///   - value: the value, when the app passed one (already checked: finite, 0 … 1e9).
    ///   - unit: the unit's digest (``SessionRecord/unitDigest(_:namespace:)``).
    ///   - switches: the plugin switches active in the session.
    ///   - splits: the plugin switches a rollout split decided for the unit, with whether it put the unit in.
    ///   - variants: the experiment variants served in the session, by flag key.
    package static func metric(
        _ metric: String, value: Double?, unit: String, switches: [String], splits: [(key: String, isOn: Bool)],
        variants: [String: String], context: EvaluationContext, id: String, time: Date
    ) -> JSONObject {
        var event = common(
            id: id, type: "metric", time: time, appVersion: context.appVersion, platform: context.platform,
            city: context.city, cohorts: context.cohorts)
        event["metric"] = .string(metric)
        if let value { event["value"] = .double(value == 0 ? 0 : value) }  // never -0.0
        event["unit"] = .string(unit)
        event["switches"] = .array(switches.map { .string($0) })
        event["splits"] = .object(JSONObject(splits.map { ($0.key, .bool($0.isOn)) }))
        var served = JSONObject()
        for (flag, variant) in variants.sorted(by: { $0.key < $1.key }) { served[flag] = .string(variant) }
        event["variants"] = .object(served)
        return event
    }

    private static func common(
        id: String, type: String, time: Date, appVersion: String?, platform: String?,
        city: String?, cohorts: [String]
    ) -> JSONObject {
        var event = JSONObject()
        event["id"] = .string(id)
        event["type"] = .string(type)
        event["time"] = .string(Timestamp.rfc3339(time))
        if let appVersion { event["app_version"] = .string(appVersion) }
        if let platform { event["platform"] = .string(platform) }
        if let city { event["city"] = .string(city) }
        event["cohorts"] = .array(cohorts.map { .string($0) })
        return event
    }

    /// A new event id: a version 7 UUID (RFC 9562), lowercase: its first 48 bits are `time` in milliseconds since
    /// 1970, the other 74 (besides version and variant) random. Ids made about the same time sort together, so
    /// flagsd, which remembers ids in a B-tree keyed by id, adds a fleet's new ids beside each other rather than each
    /// on a page of its own (fewer bytes written per event; bench/README.md, "Time-ordered event ids").
    package static func newID(at time: Date) -> String {
        // Clamped to what 48 bits hold (a clock before 1970 or past the year 10889 gives an id at either end).
        let since1970 = (time.timeIntervalSince1970 * 1000).rounded(.down)
        let milliseconds = since1970.isNaN ? 0 : UInt64(min(max(0, since1970), Double((1 << 48) - 1)))
        var uuid = UUID().uuid
        uuid.0 = UInt8(truncatingIfNeeded: milliseconds >> 40)
        uuid.1 = UInt8(truncatingIfNeeded: milliseconds >> 32)
        uuid.2 = UInt8(truncatingIfNeeded: milliseconds >> 24)
        uuid.3 = UInt8(truncatingIfNeeded: milliseconds >> 16)
        uuid.4 = UInt8(truncatingIfNeeded: milliseconds >> 8)
        uuid.5 = UInt8(truncatingIfNeeded: milliseconds)
        uuid.6 = uuid.6 & 0x0F | 0x70
        uuid.8 = uuid.8 & 0x3F | 0x80
        return UUID(uuid: uuid).uuidString.lowercased()
    }
}
