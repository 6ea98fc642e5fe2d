import Testing

@testable import SwitchyardCore

/// Validating a change by what it touched (`validate(changedFrom:changes:aligned:)`) against validating the whole flag set:
/// random changes of valid flag sets, some of them breaking a rule, give the same problems either way, and the
/// shortcut vouches for a change only when the whole flag set is valid.
struct ChangeValidationPropertyTests {
    @Test(arguments: 0..<16)
    func aChangeIsValidatedAsTheWholeFlagSetIs(seed: UInt64) {
        let random = RandomFlagSets(seed: seed &* 104_729 &+ 17)
        var mutator = FlagSetMutator(random: random)
        var current = mutator.random.flagSet(switches: 16, experiments: 5)
        #expect(current.validate().isEmpty)
        var vouched = 0
        var refused = 0
        for _ in 0..<200 {
            var candidate = current
            if mutator.random.chance(0.35) {
                Self.breakARule(&candidate, random: &mutator.random)
            } else {
                mutator.change(&candidate)
            }
            var aligned = AlignedChanges()
            let changes = ChangedObjects(from: current, to: candidate, aligned: &aligned)
            let whole = candidate.validate()
            #expect(candidate.validate(changedFrom: current, changes: changes, aligned: aligned) == whole)
            if candidate.isPlainlyValid(changedFrom: current, changes: changes, aligned: aligned) {
                vouched += 1
                #expect(whole.isEmpty, "the shortcut vouched for a flag set with problems: \(whole)")
            }
            if whole.isEmpty { current = candidate } else { refused += 1 }
        }
        // Not vacuous: the shortcut took most small changes, and some changes broke a rule.
        #expect(vouched > 40)
        #expect(refused > 20)
    }

    /// An edit that a change through the shortcut's reach could get wrong: a kill switch's members, the master's,
    /// a flag's definition, its kind, a key listed twice.
    static func breakARule(_ flagSet: inout FlagSet, random: inout RandomFlagSets) {
        switch Int.random(in: 0..<7, using: &random.generator) {
        case 0:
            let index = Int.random(in: 0..<flagSet.killSwitches.count, using: &random.generator)
            if !flagSet.killSwitches[index].isMaster {
                flagSet.killSwitches[index].members.append("plugin_switch_missing")
            }
        case 1:
            let index = flagSet.killSwitches.firstIndex(where: \.isMaster)!
            flagSet.killSwitches[index].members = [flagSet.flags[0].key]
        case 2:
            // An experiment whose default variant is not one of its variants.
            if let index = flagSet.flags.firstIndex(where: { $0.pluginSwitch == nil }),
                case .experiment(var experiment) = flagSet.flags[index].kind
            {
                experiment.defaultVariant = "missing"
                flagSet.flags[index].kind = .experiment(experiment)
            }
        case 3:
            // A plugin switch (perhaps in a plugin point) becomes an experiment.
            if let index = flagSet.flags.firstIndex(where: { $0.pluginSwitch != nil }) {
                flagSet.flags[index].kind = .experiment(
                    Experiment(
                        valueType: .string, variants: [Variant(key: "on", value: .string("on"))],
                        defaultVariant: "on", weights: ["on": 1]))
            }
        case 4:
            flagSet.flags.append(flagSet.flags[Int.random(in: 0..<flagSet.flags.count, using: &random.generator)])
        case 5:
            flagSet.killSwitches.append(flagSet.killSwitches[0])
        default:
            // A flag's key replaced by one that breaks the naming rule.
            let index = Int.random(in: 0..<flagSet.flags.count, using: &random.generator)
            flagSet.flags[index].key = "Not A Key"
        }
    }
}

/// The server's way of writing a version's document (the previous version's members, in chunks, with the changed
/// ones written again) against encoding the whole snapshot, on a namespace large enough for many chunks: flags
/// added in random places (chunks grow and split), removed (chunks empty), replaced.
struct EncodedMembersTests {
    @Test(arguments: 0..<3)
    func documentsWrittenFromChunksEqualWholeEncodings(seed: UInt64) {
        var random = RandomFlagSets(seed: seed &+ 99)
        var flagSet = random.flagSet(switches: 700, experiments: 20)
        var version: Int64 = 1
        var encoded = EncodedFlags(flagSet)
        #expect(
            encoded.document(for: Snapshot(epoch: "e", version: 1, flagSet: flagSet)).bytes
                == SnapshotDocument.encode(Snapshot(epoch: "e", version: 1, flagSet: flagSet)))
        for step in 0..<12 {
            let before = flagSet
            for serial in 0..<Int.random(in: 1...400, using: &random.generator) {
                switch Int.random(in: 0..<3, using: &random.generator) {
                case 0:
                    // A key that sorts anywhere among the others.
                    let key =
                        "plugin_switch_\(String(UInt32.random(in: 0...UInt32.max, using: &random.generator), radix: 36))_\(step)_\(serial)"
                    flagSet.flags.append(FlagDefinition(key: key, kind: .pluginSwitch(random.pluginSwitch())))
                case 1 where flagSet.flags.count > 1:
                    let key = flagSet.flags.remove(
                        at: Int.random(in: 0..<flagSet.flags.count, using: &random.generator)
                    ).key
                    for point in flagSet.pluginPoints.indices {
                        flagSet.pluginPoints[point].switches.removeAll { $0 == key }
                    }
                    for kill in flagSet.killSwitches.indices {
                        flagSet.killSwitches[kill].members.removeAll { $0 == key }
                    }
                default:
                    if let index = flagSet.flags.indices.filter({ flagSet.flags[$0].pluginSwitch != nil })
                        .randomElement(using: &random.generator)
                    {
                        flagSet.flags[index].pluginSwitch?.rollout = random.rollout()
                    }
                }
            }
            version += 1
            let snapshot = Snapshot(epoch: "e", version: version, flagSet: flagSet)
            let target = flagSet
            encoded = encoded.updating(ChangedObjects(from: before, to: flagSet), in: flagSet) { key in target.flag(key)
            }
            #expect(encoded.document(for: snapshot).bytes == SnapshotDocument.encode(snapshot), "step \(step)")
        }
    }
}
