package import Foundation
package import SwitchyardCore

/// The on-device crash-loop guard's policy: a plugin switch active in `consecutiveCrashes` crashed sessions in
/// a row is forced off on this device until a newer snapshot changes that switch's definition, or `ttl` passes.
public struct CrashLoopGuardPolicy: Sendable, Hashable {
    /// Crashed sessions in a row, with the switch active, that trip the guard. 0 turns the guard off.
    public var consecutiveCrashes: Int
    /// How long a tripped switch stays off without a changed definition.
    public var ttl: Duration

    public init(consecutiveCrashes: Int = 3, ttl: Duration = .seconds(3 * 24 * 3600)) {
        self.consecutiveCrashes = consecutiveCrashes
        self.ttl = ttl
    }

    /// No guard: crashes are still reported, never acted on locally.
    public static let off = CrashLoopGuardPolicy(consecutiveCrashes: 0)
}

/// The crash-loop guard's state: crash streaks per switch and the switches forced off. Pure; persisted in
/// `crash-guard.json`.
package struct CrashLoopGuardState: Sendable, Hashable {
    package static let fileName = "crash-guard.json"

    /// A switch forced off on this device.
    package struct Quarantine: Sendable, Hashable {
        package var since: Date
        /// The crashed sessions in a row that tripped it.
        package var crashes: Int
        /// The snapshot and definition the switch had in the last crashed session.
        package var epoch: String?
        package var version: Int64?
        package var definition: String?
    }

    /// Consecutive crashed sessions in which each switch was active.
    package var streaks: [String: Int] = [:]
    package var quarantined: [String: Quarantine] = [:]
    /// The ids of the sessions counted last, newest last (at most ``concludedKept``): a session concluded again (a
    /// launch ended before removing its files) is counted once.
    package var concluded: [String] = []

    /// How many counted session ids the state keeps: a session is concluded again at the next launch, if at all.
    package static let concludedKept = 64

    package init() {}

    /// Counts a finished session, once: a session counted before (its id in ``concluded``) changes nothing. A clean
    /// session ends the streak of every switch active in it; a crashed one extends it. A streak reaching the policy's
    /// threshold quarantines the switch.
    /// - Returns: the keys quarantined now; nil when the session was counted before.
    package mutating func record(
        _ session: SessionRecord, crashed: Bool, now: Date,
        policy: CrashLoopGuardPolicy
    ) -> [String]? {
        guard !concluded.contains(session.id) else { return nil }
        concluded.append(session.id)
        if concluded.count > Self.concludedKept { concluded.removeFirst(concluded.count - Self.concludedKept) }
        var tripped: [String] = []
        for active in session.switches {
            guard crashed else {
                streaks[active.key] = nil
                continue
            }
            let streak = (streaks[active.key] ?? 0) + 1
            streaks[active.key] = streak
            if policy.consecutiveCrashes > 0, streak >= policy.consecutiveCrashes, quarantined[active.key] == nil {
                quarantined[active.key] = Quarantine(
                    since: now, crashes: streak, epoch: active.epoch,
                    version: active.version, definition: active.definition)
                tripped.append(active.key)
            }
        }
        return tripped.sorted()
    }

    /// Lifts quarantines older than the TTL.
    /// - Returns: the keys lifted.
    package mutating func liftExpired(now: Date, ttl: Duration) -> [String] {
        let expired = quarantined.filter { now.timeIntervalSince($0.value.since) >= ttl.secondsValue }.map(\.key)
        for key in expired { lift(key) }
        return expired.sorted()
    }

    /// Lifts quarantines whose switch has a new definition in a newer snapshot (a later version of the same
    /// epoch, or another epoch).
    /// - Returns: the keys lifted.
    package mutating func liftChanged(by snapshot: Snapshot) -> [String] {
        var lifted: [String] = []
        for (key, quarantine) in quarantined {
            let isNewer = quarantine.epoch != snapshot.epoch || snapshot.version > (quarantine.version ?? -1)
            guard isNewer, snapshot.flagSet.flag(key)?.fingerprint != quarantine.definition else { continue }
            lift(key)
            lifted.append(key)
        }
        return lifted.sorted()
    }

    private mutating func lift(_ key: String) {
        quarantined[key] = nil
        streaks[key] = nil
    }

    package var json: JSONObject {
        var object = JSONObject()
        object["format"] = .int(1)
        var streakObject = JSONObject()
        for (key, streak) in streaks.sorted(by: { $0.key < $1.key }) { streakObject[key] = .int(streak) }
        object["streaks"] = .object(streakObject)
        var quarantineObject = JSONObject()
        for (key, quarantine) in quarantined.sorted(by: { $0.key < $1.key }) {
            var entry = JSONObject()
            entry["since_ms"] = .int64(Timestamp.milliseconds(quarantine.since))
            entry["crashes"] = .int(quarantine.crashes)
            if let epoch = quarantine.epoch { entry["epoch"] = .string(epoch) }
            if let version = quarantine.version { entry["version"] = .int64(version) }
            if let definition = quarantine.definition { entry["definition"] = .string(definition) }
            quarantineObject[key] = .object(entry)
        }
        object["quarantined"] = .object(quarantineObject)
        object["concluded"] = .array(concluded.map { .string($0) })
        return object
    }

    /// Reads the state; nil when the JSON is not one.
    package init?(json: JSONValue) {
        guard let object = json.objectValue, object["format"]?.int64Value == 1,
            let streakObject = object["streaks"]?.objectValue,
            let quarantineObject = object["quarantined"]?.objectValue
        else { return nil }
        for (key, value) in streakObject {
            guard let streak = value.int64Value, streak > 0 else { return nil }
            streaks[key] = Int(streak)
        }
        for (key, value) in quarantineObject {
            guard let since = value["since_ms"]?.int64Value, let crashes = value["crashes"]?.int64Value else {
                return nil
            }
            quarantined[key] = Quarantine(
                since: Timestamp.date(milliseconds: since), crashes: Int(crashes),
                epoch: value["epoch"]?.stringValue, version: value["version"]?.int64Value,
                definition: value["definition"]?.stringValue)
        }
        // Absent from files written before it was kept.
        if let ids = object["concluded"] {
            guard let list = ids.arrayValue else { return nil }
            var read: [String] = []
            for id in list {
                guard let id = id.stringValue else { return nil }
                read.append(id)
            }
            concluded = Array(read.suffix(Self.concludedKept))
        }
    }
}
