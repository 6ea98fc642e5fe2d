import Foundation
import Testing

@testable import SwitchyardCore

/// Deltas against full downloads: random sequences of changes, delivered as deltas (through their document, from
/// the previous version or from several versions back, as flagsd builds them from the keys each version changed),
/// give at every version exactly what a full download gives: the same flag set, checksum and digest, and the same
/// evaluation of every flag for random contexts.
struct SnapshotDeltaPropertyTests {
    @Test(arguments: 0..<24)
    func deltasGiveWhatAFullDownloadGivesAtEveryVersion(seed: UInt64) throws {
        var random = RandomFlagSets(seed: seed &* 7919 &+ 3)
        var mutator = FlagSetMutator(random: random)
        var versions = [
            Snapshot(epoch: "epoch-\(seed)", version: 1, flagSet: random.flagSet(switches: 14, experiments: 4))
        ]
        var changes: [ChangedObjects] = [ChangedObjects()]
        for version in 2...30 {
            let previous = versions.last!
            let next = mutator.mutate(previous.flagSet)
            changes.append(ChangedObjects(from: previous.flagSet, to: next))
            versions.append(Snapshot(epoch: previous.epoch, version: Int64(version), flagSet: next))
        }
        random = mutator.random

        // The server's way of writing each version: the previous version's flag members, changed ones written again.
        var encoded = EncodedFlags(versions[0].flagSet)
        #expect(encoded.document(for: versions[0]).bytes == SnapshotDocument.encode(versions[0]))
        for position in 1..<versions.count {
            let flagSet = versions[position].flagSet
            encoded = encoded.updating(changes[position], in: flagSet) { key in flagSet.flag(key) }
            #expect(
                encoded.document(for: versions[position]).bytes == SnapshotDocument.encode(versions[position]),
                "version \(versions[position].version) written from the previous one's members (flags, kill switches, points)"
            )
        }

        // The client starts from a full download of version 1.
        var held = try SnapshotDocument.decode(SnapshotDocument.encode(versions[0]))
        var compiled = CompiledSnapshot(held)
        var digest = SnapshotDigest(held.flagSet)
        var index = 0
        while index < versions.count - 1 {
            // Sometimes the client is several versions behind: the delta covers every change since its version.
            let step = random.chance(0.3) ? Int.random(in: 2...4, using: &random.generator) : 1
            let target = versions[min(index + step, versions.count - 1)]
            var changed = ChangedObjects()
            for position in (index + 1)...(min(index + step, versions.count - 1)) {
                changed.formUnion(changes[position])
            }
            let full = try SnapshotDocument.decode(SnapshotDocument.encode(target))
            let built = SnapshotDelta(
                base: held.version, target: target, changes: changed,
                checksum: SnapshotDocument.checksum(of: target),
                digest: SnapshotDigest(target.flagSet).value(for: target))
            let delta = try SnapshotDelta.decode(built.encode())
            #expect(delta == built, "the document round-trips")

            let applied = try held.applying(delta)
            #expect(applied == full, "version \(target.version): the model equals the full download's")
            #expect(SnapshotDocument.encode(applied) == SnapshotDocument.encode(full), "same bytes, same checksum")

            let (next, nextDigest) = try compiled.applying(delta, digest: digest)
            #expect(next.snapshot == full)
            #expect(nextDigest.value(for: next.snapshot) == SnapshotDigest(full.flagSet).value(for: full))
            let fresh = CompiledSnapshot(full)
            for _ in 0..<12 {
                let context = random.context()
                let fromDelta = next.evaluator(for: context)
                let fromFull = fresh.evaluator(for: context)
                for flag in full.flagSet.flags {
                    let a = fromDelta.details(for: flag.key)
                    let b = fromFull.details(for: flag.key)
                    #expect(a == b, "version \(target.version), \(flag.key) for \(context)")
                }
            }
            held = applied
            compiled = next
            digest = nextDigest
            index = min(index + step, versions.count - 1)
        }
    }

    @Test func anExactDeltaNamesOnlyWhatDiffers() throws {
        var random = RandomFlagSets(seed: 11)
        let base = Snapshot(epoch: "e", version: 4, flagSet: random.flagSet())
        var flagSet = base.flagSet
        flagSet.flags[2].pluginSwitch?.rollout = Rollout(basisPoints: 1234)!
        let target = Snapshot(epoch: "e", version: 5, flagSet: flagSet)
        let delta = SnapshotDelta(from: base, to: target)
        #expect(delta.upsertedFlags.map(\.key) == [flagSet.flags[2].key])
        #expect(delta.removedFlags.isEmpty && delta.upsertedKillSwitches.isEmpty && delta.pluginPointOrder == nil)
        #expect(delta.checksum == SnapshotDocument.checksum(of: target))
        #expect(delta.encode().count < SnapshotDocument.encode(target).count / 4)
    }
}

/// Random valid changes to a flag set: rollouts, new and removed flags, kill entries and members, kill switches
/// and plugin points added, removed and reordered, the description.
struct FlagSetMutator {
    var random: RandomFlagSets
    private var serial = 0

    init(random: RandomFlagSets) {
        self.random = random
    }

    /// One to three changes, each kept only when the result is valid.
    mutating func mutate(_ flagSet: FlagSet) -> FlagSet {
        var current = flagSet
        for _ in 0..<Int.random(in: 1...3, using: &random.generator) {
            var candidate = current
            change(&candidate)
            if candidate.validate().isEmpty { current = candidate }
        }
        return current
    }

    mutating func change(_ flagSet: inout FlagSet) {
        serial += 1
        let switches = flagSet.flags.indices.filter { flagSet.flags[$0].pluginSwitch != nil }
        switch Int.random(in: 0..<12, using: &random.generator) {
        case 0, 1, 2:
            if let index = switches.randomElement(using: &random.generator) {
                flagSet.flags[index].pluginSwitch?.rollout = random.rollout()
            }
        case 3:
            if let index = flagSet.flags.indices.randomElement(using: &random.generator) {
                let flag = flagSet.flags[index]
                flagSet.flags[index].kind =
                    flag.pluginSwitch != nil ? .pluginSwitch(random.pluginSwitch()) : .experiment(random.experiment())
            }
        case 4:
            let key = random.chance(0.5) ? "plugin_switch_new\(serial)" : "experiment_new\(serial)"
            let kind: FlagDefinition.Kind =
                key.hasPrefix("plugin") ? .pluginSwitch(random.pluginSwitch()) : .experiment(random.experiment())
            flagSet.flags.append(
                FlagDefinition(key: key, description: random.chance(0.3) ? "new \(serial)" : nil, kind: kind))
            if key.hasPrefix("plugin"), !flagSet.pluginPoints.isEmpty, random.chance(0.5) {
                flagSet.pluginPoints[Int.random(in: 0..<flagSet.pluginPoints.count, using: &random.generator)].switches
                    .append(key)
            }
        case 5:
            // Remove a flag and every reference to it.
            if let index = flagSet.flags.indices.randomElement(using: &random.generator) {
                let key = flagSet.flags.remove(at: index).key
                for point in flagSet.pluginPoints.indices {
                    flagSet.pluginPoints[point].switches.removeAll { $0 == key }
                }
                for kill in flagSet.killSwitches.indices { flagSet.killSwitches[kill].members.removeAll { $0 == key } }
            }
        case 6:
            if let index = flagSet.killSwitches.indices.randomElement(using: &random.generator) {
                if flagSet.killSwitches[index].entries.isEmpty || random.chance(0.5) {
                    flagSet.killSwitches[index].entries.append(random.scope())
                } else {
                    flagSet.killSwitches[index].entries.removeLast()
                }
            }
        case 7:
            if let index = flagSet.killSwitches.indices.randomElement(using: &random.generator),
                !flagSet.killSwitches[index].isMaster
            {
                flagSet.killSwitches[index].members = random.some(of: flagSet.flags.map(\.key), upTo: 4)
            }
        case 8:
            flagSet.killSwitches.append(
                KillSwitch(
                    key: "kill_new\(serial)", description: "added",
                    members: random.some(of: flagSet.flags.map(\.key), upTo: 3),
                    entries: random.chance(0.5) ? [random.scope()] : []))
        case 9:
            // Remove a group kill switch that no plugin point names.
            let named = Set(flagSet.pluginPoints.compactMap(\.killSwitch))
            if let index = flagSet.killSwitches.indices.filter({
                !flagSet.killSwitches[$0].isMaster && !named.contains(flagSet.killSwitches[$0].key)
            })
            .randomElement(using: &random.generator) {
                flagSet.killSwitches.remove(at: index)
            }
        case 10:
            switch Int.random(in: 0..<3, using: &random.generator) {
            case 0 where flagSet.pluginPoints.count > 1:
                flagSet.pluginPoints.swapAt(0, flagSet.pluginPoints.count - 1)
            case 1 where !flagSet.pluginPoints.isEmpty:
                let point = flagSet.pluginPoints.remove(
                    at: Int.random(in: 0..<flagSet.pluginPoints.count, using: &random.generator))
                if let kill = point.killSwitch, random.chance(0.5) { flagSet.killSwitches.removeAll { $0.key == kill } }
            default:
                let used = Set(flagSet.pluginPoints.flatMap(\.switches))
                let free = flagSet.flags.map(\.key).filter { $0.hasPrefix("plugin_switch_") && !used.contains($0) }
                let groups = flagSet.killSwitches.filter { !$0.isMaster }.map(\.key)
                flagSet.pluginPoints.insert(
                    PluginPointDefinition(
                        name: "point_new\(serial)",
                        killSwitch: random.chance(0.6) ? groups.randomElement(using: &random.generator) : nil,
                        switches: free.isEmpty ? [] : random.some(of: free, upTo: 3)),
                    at: Int.random(in: 0...flagSet.pluginPoints.count, using: &random.generator))
            }
        default:
            flagSet.description = random.chance(0.7) ? "revision \(serial)" : nil
        }
    }
}

/// Deltas that must be refused, by the reader (with the field at fault) or when applied (nothing changes then).
struct SnapshotDeltaRefusalTests {
    static let base = Snapshot(
        epoch: "e", version: 4,
        flagSet: FlagSet(
            namespace: "rider",
            pluginPoints: [
                PluginPointDefinition(name: "home_feed", killSwitch: "kill_home_feed", switches: ["plugin_switch_a"])
            ],
            killSwitches: [KillSwitch(key: KillSwitch.masterKey), KillSwitch(key: "kill_home_feed")],
            flags: [
                FlagDefinition(key: "plugin_switch_a", kind: .pluginSwitch(PluginSwitchDefinition(rollout: .full))),
                FlagDefinition(key: "plugin_switch_b", kind: .pluginSwitch(PluginSwitchDefinition())),
            ]))

    static func decodingError(_ text: String) -> SnapshotDecodingError? {
        do {
            _ = try SnapshotDelta.decode(Array(text.utf8))
            return nil
        } catch {
            return error
        }
    }

    static let zeros = "sha256:" + String(repeating: "0", count: 64)

    @Test(arguments: [
        (#"{"format":2}"#, "format 2 is not supported"),
        (
            #"{"format":1,"namespace":"rider","epoch":"e","base_version":4,"version":4,"checksum":"ZEROS","digest":"ZEROS"}"#,
            "version: 4 must be above base_version 4"
        ),
        (
            #"{"format":1,"namespace":"rider","epoch":"e","base_version":4,"version":5,"checksum":"md5:1","digest":"ZEROS"}"#,
            "checksum: must be 'sha256:' and 64 lowercase hex digits"
        ),
        (
            #"{"format":1,"namespace":"rider","epoch":"e","base_version":4,"version":5,"checksum":"ZEROS","digest":"ZEROS","flagz":{}}"#,
            "flagz: unknown field; did you mean 'flags'?"
        ),
        (
            #"{"format":1,"namespace":"rider","epoch":"e","base_version":4,"version":5,"checksum":"ZEROS","digest":"ZEROS","flags":{"plugin_switch_a":{"rollout":10001}}}"#,
            "flags.plugin_switch_a.rollout: 10001 is not between 0 and 10000 basis points"
        ),
        (
            #"{"format":1,"namespace":"rider","epoch":"e","base_version":4,"version":5,"checksum":"ZEROS","digest":"ZEROS","removed_plugin_points":["home_feed"]}"#,
            "plugin_point_order: is required when plugin points are upserted or removed"
        ),
        (
            #"{"format":1,"namespace":"rider","epoch":"e","base_version":4,"version":5,"checksum":"ZEROS","digest":"ZEROS","flags":{"plugin_switch_a":{}},"removed_flags":["plugin_switch_a"]}"#,
            "removed_flags: 'plugin_switch_a' is also upserted"
        ),
    ])
    func aMalformedDeltaIsRefusedNamingTheFieldAtFault(text: String, message: String) throws {
        let error = try #require(Self.decodingError(text.replacingOccurrences(of: "ZEROS", with: Self.zeros)))
        #expect(error.message.contains(message), "\(error.message)")
    }

    static func refusal(_ delta: SnapshotDelta) -> SnapshotDeltaError? {
        let compiled = CompiledSnapshot(base)
        do {
            _ = try compiled.applying(delta, digest: SnapshotDigest(base.flagSet))
            return nil
        } catch {
            do {
                _ = try base.applying(delta)
                Issue.record("the model applied a delta the compiled form refused: \(error)")
            } catch let modelError {
                #expect(modelError.kind == error.kind, "model: \(modelError), compiled: \(error)")
            }
            return error
        }
    }

    /// A delta to a target, with the target's real checksum and digest.
    static func delta(to flagSet: FlagSet, version: Int64 = 5) -> SnapshotDelta {
        SnapshotDelta(from: base, to: Snapshot(epoch: "e", version: version, flagSet: flagSet))
    }

    @Test func aDeltaForAnotherBaseIsAGap() throws {
        var flagSet = Self.base.flagSet
        flagSet.flags[1].pluginSwitch?.rollout = .full
        for (epoch, baseVersion) in [("e", 3), ("e", 5), ("other", 4)] {
            var delta = Self.delta(to: flagSet, version: 6)
            delta.epoch = epoch
            delta.baseVersion = Int64(baseVersion)
            #expect(try #require(Self.refusal(delta)).kind == .baseMismatch, "\(epoch).\(baseVersion)")
        }
    }

    @Test func aResultOtherThanTheDigestSaysIsRefused() throws {
        var flagSet = Self.base.flagSet
        flagSet.flags[1].pluginSwitch?.rollout = .full
        var delta = Self.delta(to: flagSet)
        delta.upsertedFlags[0].pluginSwitch?.rollout = Rollout(basisPoints: 9_999)!
        #expect(try #require(Self.refusal(delta)).kind == .checksumMismatch)
    }

    @Test func aDeltaLeavingAnInvalidFlagSetIsRefusedEvenWithAMatchingDigest() throws {
        // The flag a plugin point lists is removed: whoever computed the digest, the result is not a flag set.
        var flagSet = Self.base.flagSet
        flagSet.flags.remove(at: 0)
        let error = try #require(Self.refusal(Self.delta(to: flagSet)))
        #expect(error.kind == .invalid)
        #expect(
            error.message.contains("plugin_points[0].switches[0]: 'plugin_switch_a' is not a flag of this namespace"),
            "\(error.message)")
    }

    @Test func theMasterKillSwitchIsNeverRemovedAndThePointOrderMustAddUp() throws {
        var removal = Self.delta(to: Self.base.flagSet)
        removal.removedKillSwitches = [KillSwitch.masterKey]
        #expect(try #require(Self.refusal(removal)).kind == .inconsistent)
        var order = Self.delta(to: Self.base.flagSet)
        order.pluginPointOrder = ["home_feed", "nowhere"]
        #expect(try #require(Self.refusal(order)).kind == .inconsistent)
    }
}
