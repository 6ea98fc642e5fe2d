package import Foundation
package import SwitchyardCore

/// The events the client reports to `POST /v1/namespaces/{ns}/events`, in the wire format of PRODUCT.md's
/// "Events" section (documented in `docs/client.md`).
///
/// Every event has a client-generated `id` (a UUID: the server counts each id once, so a retried batch never
/// counts twice), a `type`, a `time` (RFC 3339, UTC), and the unit's `app_version`, `platform`, `city` and
/// `cohorts` (absent attributes are left out; `cohorts` is always a list). A session also names its `unit`: a
/// digest of the unit id (``SessionRecord/unitDigest(_:namespace:)``), never the id itself, so the crash guard can
/// count distinct units.
///
/// ```json
/// {"app_version":"5.12.0","city":"lagos","cohorts":["beta"],"crashed":true,"end":"2026-11-22T09:14:03.250Z",
///  "id":"6f1c…","platform":"ios","session_id":"0b7e…","start":"2026-11-22T09:02:11.004Z",
///  "switches":["plugin_switch_feed_promos"],"time":"2026-11-22T09:20:40.118Z","type":"session",
///  "unit":"4be0643f1d98573b97cdca98a65347dd","variants":{"exp_checkout_copy":"treatment"}}
/// {"app_version":"5.12.0","city":"lagos","cohorts":["beta"],"epoch":"9f2…","flag":"exp_checkout_copy",
///  "id":"1d3a…","time":"2026-11-22T09:21:00.000Z","type":"exposure","variant":"treatment","version":42}
/// ```
package enum ClientEvent {
    /// A finished session, reported at the next launch.
    package static func session(_ record: SessionRecord, crashed: Bool, id: String, time: Date) -> JSONObject {
        var event = common(id: id, type: "session", time: time, appVersion: record.appVersion, platform: record.platform,
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
        return event
    }

    /// An experiment flag's variant served to the unit.
    package static func exposure(flag: String, variant: String, epoch: String, version: Int64,
                                 context: EvaluationContext, id: String, time: Date) -> JSONObject {
        var event = common(id: id, type: "exposure", time: time, appVersion: context.appVersion, platform: context.platform,
                           city: context.city, cohorts: context.cohorts)
        event["flag"] = .string(flag)
        event["variant"] = .string(variant)
        event["epoch"] = .string(epoch)
        event["version"] = .int64(version)
        return event
    }

    private static func common(id: String, type: String, time: Date, appVersion: String?, platform: String?,
                               city: String?, cohorts: [String]) -> JSONObject {
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

    /// A new event id.
    package static func newID() -> String {
        UUID().uuidString.lowercased()
    }
}
