package import Foundation
package import SwitchyardCore

/// One app session as the client records it in `session-<id>.json` (``SessionFiles``): when it started, which plugin switches were
/// active in it, and whether it ended cleanly.
///
/// The file is rewritten (atomically, without fsync: it must survive an app crash, not a power cut) when a
/// switch becomes active for the first time in the session and when the session ends. At the next launch a
/// record still marked open means the app exited uncleanly: a crash.
package struct SessionRecord: Sendable, Hashable {
    /// A plugin switch active in the session, with the definition it had when it became active.
    package struct ActiveSwitch: Sendable, Hashable {
        package var key: String
        package var epoch: String?
        package var version: Int64?
        /// `sha256:` of the switch's canonical definition.
        package var definition: String?

        package init(key: String, epoch: String? = nil, version: Int64? = nil, definition: String? = nil) {
            self.key = key
            self.epoch = epoch
            self.version = version
            self.definition = definition
        }
    }

    package var id: String
    package var namespace: String
    package var start: Date
    /// The last time the record was written: the end of a session that crashed.
    package var updated: Date
    /// Set when the session ended cleanly.
    package var end: Date?
    package var appVersion: String?
    package var platform: String?
    package var city: String?
    package var cohorts: [String]
    /// The unit the session ran for, as sent in events: a digest of its id, never the id itself
    /// (``unitDigest(_:namespace:)``); nil when the context had no unit id.
    package var unit: String?
    package var switches: [ActiveSwitch]
    /// The variant of each experiment flag served in the session (the first one served, when several were).
    package var variants: [String: String]
    /// The plugin switches whose state the unit's rollout split decided in the session (the first decision per
    /// switch): true bucketed in, false out. flagsd enters the unit in those switches' experiments.
    package var splits: [String: Bool] = [:]

    package init(id: String, namespace: String, start: Date, context: EvaluationContext) {
        self.id = id
        self.namespace = namespace
        self.start = start
        updated = start
        appVersion = context.appVersion
        platform = context.platform
        city = context.city
        cohorts = context.cohorts
        unit = context.unitId.map { Self.unitDigest($0, namespace: namespace) }
        switches = []
        variants = [:]
    }

    /// What a session event says its unit is: the first 128 bits, in hex, of the SHA-256 of
    /// `switchyard-unit:<namespace>:<unit id>`. flagsd needs only to tell units apart (the crash guard counts
    /// distinct units), so the unit id itself (often a user id) never leaves the device in events, and the same
    /// unit is unlinkable across namespaces.
    package static func unitDigest(_ unitID: String, namespace: String) -> String {
        String(SHA256.hexDigest(Array("switchyard-unit:\(namespace):\(unitID)".utf8)).prefix(32))
    }

    /// Whether the session ended cleanly.
    package var isClean: Bool { end != nil }

    package var json: JSONObject {
        var object = JSONObject()
        object["format"] = .int(1)
        object["id"] = .string(id)
        object["namespace"] = .string(namespace)
        object["start_ms"] = .int64(Timestamp.milliseconds(start))
        object["updated_ms"] = .int64(Timestamp.milliseconds(updated))
        if let end { object["end_ms"] = .int64(Timestamp.milliseconds(end)) }
        if let appVersion { object["app_version"] = .string(appVersion) }
        if let platform { object["platform"] = .string(platform) }
        if let city { object["city"] = .string(city) }
        object["cohorts"] = .array(cohorts.map { .string($0) })
        if let unit { object["unit"] = .string(unit) }
        object["switches"] = .array(
            switches.map { active in
                var entry = JSONObject()
                entry["key"] = .string(active.key)
                if let epoch = active.epoch { entry["epoch"] = .string(epoch) }
                if let version = active.version { entry["version"] = .int64(version) }
                if let definition = active.definition { entry["definition"] = .string(definition) }
                return .object(entry)
            })
        if !variants.isEmpty {
            var served = JSONObject()
            for (flag, variant) in variants.sorted(by: { $0.key < $1.key }) { served[flag] = .string(variant) }
            object["variants"] = .object(served)
        }
        if !splits.isEmpty {
            object["splits"] = .object(
                JSONObject(splits.sorted { $0.key < $1.key }.map { ($0.key, JSONValue.bool($0.value)) }))
        }
        return object
    }

    /// Reads a record; nil when the JSON is not one.
    package init?(json: JSONValue) {
        guard let object = json.objectValue, object["format"]?.int64Value == 1,
            let id = object["id"]?.stringValue, let namespace = object["namespace"]?.stringValue,
            let start = object["start_ms"]?.int64Value, let updated = object["updated_ms"]?.int64Value,
            let switches = object["switches"]?.arrayValue
        else { return nil }
        self.id = id
        self.namespace = namespace
        self.start = Timestamp.date(milliseconds: start)
        self.updated = Timestamp.date(milliseconds: updated)
        end = object["end_ms"]?.int64Value.map(Timestamp.date(milliseconds:))
        appVersion = object["app_version"]?.stringValue
        platform = object["platform"]?.stringValue
        city = object["city"]?.stringValue
        cohorts = object["cohorts"]?.arrayValue?.compactMap(\.stringValue) ?? []
        unit = object["unit"]?.stringValue
        var active: [ActiveSwitch] = []
        for entry in switches {
            guard let key = entry["key"]?.stringValue else { return nil }
            active.append(
                ActiveSwitch(
                    key: key, epoch: entry["epoch"]?.stringValue, version: entry["version"]?.int64Value,
                    definition: entry["definition"]?.stringValue))
        }
        self.switches = active
        var served: [String: String] = [:]
        for (flag, variant) in object["variants"]?.objectValue ?? JSONObject() {
            guard let variant = variant.stringValue else { return nil }
            served[flag] = variant
        }
        variants = served
        var splits: [String: Bool] = [:]
        for (flag, state) in object["splits"]?.objectValue ?? JSONObject() {
            guard let state = state.boolValue else { return nil }
            splits[flag] = state
        }
        self.splits = splits
    }
}

extension FlagDefinition {
    /// `sha256:` of the flag's canonical definition: changes exactly when the flag's own definition changes.
    package var fingerprint: String {
        "sha256:" + SHA256.hexDigest(JSONValue.object(tree(unit: .basisPoints)).serialized(.canonical))
    }
}
