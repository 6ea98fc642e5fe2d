import SwitchyardCore
import Testing

/// Looking flags, kill switches and a switch's plugin point up by key (halving over key order, an index carried from
/// copy to copy) answers exactly what a scan of the lists answers, whatever happened to the lists since they were
/// in order or indexed.
struct FlagSetLookupTests {
    /// What the lookups must answer: the first match of a scan, as before they were indexed.
    struct Reference {
        let flagSet: FlagSet

        func flagPosition(_ key: String) -> Int? { flagSet.flags.firstIndex { $0.key == key } }
        func killSwitchPosition(_ key: String) -> Int? { flagSet.killSwitches.firstIndex { $0.key == key } }
        func pluginPoint(_ key: String) -> PluginPointDefinition? {
            flagSet.pluginPoints.first { $0.switches.contains(key) }
        }
        func killSwitchKeys(_ key: String) -> [String] {
            let groups = Set(flagSet.pluginPoints.filter { $0.switches.contains(key) }.compactMap(\.killSwitch))
            return flagSet.killSwitches.filter { $0.isMaster || $0.members.contains(key) || groups.contains($0.key) }
                .map(\.key)
        }
    }

    static func expectSameAnswers(_ flagSet: FlagSet, probing extra: [String], _ comment: Comment) {
        let reference = Reference(flagSet: flagSet)
        let keys =
            flagSet.flags.map(\.key) + flagSet.killSwitches.map(\.key) + flagSet.pluginPoints.flatMap(\.switches)
            + extra
        for key in keys {
            #expect(flagSet.flagPosition(key) == reference.flagPosition(key), "\(comment): flag \(key)")
            #expect(flagSet.flag(key) == reference.flagPosition(key).map { flagSet.flags[$0] }, "\(comment): \(key)")
            #expect(
                flagSet.killSwitchPosition(key) == reference.killSwitchPosition(key), "\(comment): kill switch \(key)")
            #expect(flagSet.pluginPoint(listing: key) == reference.pluginPoint(key), "\(comment): point of \(key)")
            #expect(flagSet.killSwitchKeys(covering: key) == reference.killSwitchKeys(key), "\(comment): kills \(key)")
        }
    }

    /// The coverage worked out once answers as `killSwitchKeys(covering:)` and `members(of:)` one by one: the same
    /// lists in the same order, for every key of the set and some that are not.
    static func expectCoverageAnswersAsLookups(_ flagSet: FlagSet, probing extra: [String], _ comment: Comment) {
        let coverage = KillSwitchCoverage(flagSet)
        let membersOnly = KillSwitchCoverage(flagSet, flags: false)
        let keys =
            flagSet.flags.map(\.key) + flagSet.killSwitches.map(\.key) + flagSet.pluginPoints.flatMap(\.switches)
            + extra
        for key in keys {
            #expect(
                coverage.killSwitchKeys(covering: key) == flagSet.killSwitchKeys(covering: key),
                "\(comment): covers \(key)")
            #expect(coverage.members(of: key) == flagSet.members(of: key), "\(comment): members of \(key)")
            #expect(membersOnly.members(of: key) == flagSet.members(of: key), "\(comment): members of \(key) alone")
            #expect(
                membersOnly.killSwitchKeys(covering: key) == flagSet.killSwitchKeys(covering: key),
                "\(comment): covers \(key) asked of the flag set")
        }
    }

    /// One edit of the kind that moves keys around: flags added out of order, removed, renamed, shuffled; switches
    /// moved between plugin points; plugin points removed, added or reordered. Keys stay unique, and a switch stays
    /// on at most one point, as in a valid flag set.
    static func edit(_ flagSet: inout FlagSet, _ random: inout RandomFlagSets, serial: Int) -> String {
        switch Int.random(in: 0..<8, using: &random.generator) {
        case 0:
            let key = "plugin_switch_\(["a", "m", "zz"].randomElement(using: &random.generator)!)\(serial)"
            flagSet.flags.append(FlagDefinition(key: key, kind: .pluginSwitch(random.pluginSwitch())))
            if !flagSet.pluginPoints.isEmpty, random.chance(0.7) {
                let point = Int.random(in: flagSet.pluginPoints.indices, using: &random.generator)
                flagSet.pluginPoints[point].switches.append(key)
            }
            return "added \(key)"
        case 1 where !flagSet.flags.isEmpty:
            let removed = flagSet.flags.remove(at: Int.random(in: flagSet.flags.indices, using: &random.generator))
            for point in flagSet.pluginPoints.indices {
                flagSet.pluginPoints[point].switches.removeAll { $0 == removed.key }
            }
            return "removed \(removed.key)"
        case 2 where !flagSet.flags.isEmpty:
            let index = Int.random(in: flagSet.flags.indices, using: &random.generator)
            let old = flagSet.flags[index].key
            let new = "experiment_renamed\(serial)"
            flagSet.flags[index].key = new
            for point in flagSet.pluginPoints.indices {
                flagSet.pluginPoints[point].switches = flagSet.pluginPoints[point].switches.map { $0 == old ? new : $0 }
            }
            return "renamed \(old) to \(new)"
        case 3:
            flagSet.flags.shuffle(using: &random.generator)
            flagSet.killSwitches.shuffle(using: &random.generator)
            return "shuffled"
        case 4 where flagSet.pluginPoints.count > 1:
            let from = Int.random(in: flagSet.pluginPoints.indices, using: &random.generator)
            guard let key = flagSet.pluginPoints[from].switches.popLast() else { return "nothing moved" }
            let to = (from + 1) % flagSet.pluginPoints.count
            flagSet.pluginPoints[to].switches.insert(key, at: 0)
            return "moved \(key) to point \(to)"
        case 5 where !flagSet.pluginPoints.isEmpty:
            let removed = flagSet.pluginPoints.remove(
                at: Int.random(in: flagSet.pluginPoints.indices, using: &random.generator))
            return "removed point \(removed.name)"
        case 6:
            flagSet.pluginPoints.reverse()
            flagSet.killSwitches.append(KillSwitch(key: "kill_added\(serial)", members: ["plugin_switch_s1"]))
            return "reversed points, added a kill switch"
        default:
            flagSet = flagSet.indexingSwitches()
            return "indexed again"
        }
    }

    @Test(arguments: 0..<60)
    func lookupsAnswerAsAScanAfterAnyEdits(seed: UInt64) {
        var random = RandomFlagSets(seed: seed &* 7_919 &+ 3)
        var flagSet = random.flagSet(switches: Int.random(in: 0...40, using: &random.generator), experiments: 3)
        if random.chance(0.7) {
            // As a store or a document has them.
            flagSet.flags.sort { $0.key < $1.key }
            flagSet.killSwitches.sort { $0.key < $1.key }
        }
        if random.chance(0.8) { flagSet = flagSet.indexingSwitches() }
        let absent = ["", "a", "master_x", "plugin_switch_", "plugin_switch_s9999", "zzz"]
        Self.expectSameAnswers(flagSet, probing: absent, "seed \(seed), as made")
        Self.expectCoverageAnswersAsLookups(flagSet, probing: absent, "seed \(seed), as made")
        var edits: [String] = []
        for serial in 0..<12 {
            let before = flagSet
            edits.append(Self.edit(&flagSet, &random, serial: serial))
            Self.expectSameAnswers(flagSet, probing: absent, "seed \(seed) after \(edits)")
            Self.expectCoverageAnswersAsLookups(flagSet, probing: absent, "seed \(seed) after \(edits)")
            // The flag set it was copied from answers as before.
            Self.expectSameAnswers(before, probing: absent, "seed \(seed), the copy before \(edits.last!)")
        }
    }

    /// Kill switches in no particular order (the master among them), a switch both a member of a group and on a
    /// point naming that group, a member listed twice, members that are no flag, a group no point names, a point
    /// without a group.
    @Test func coverageWorkedOutOnceAnswersAsTheLookupsOneByOne() {
        let flagSet = FlagSet(
            namespace: "coverage",
            pluginPoints: [
                PluginPointDefinition(name: "feed", killSwitch: "kill_feed", switches: ["s_a", "s_b"]),
                PluginPointDefinition(name: "home", switches: ["s_c"]),
                PluginPointDefinition(name: "pay", killSwitch: "kill_pay", switches: ["s_d"]),
                PluginPointDefinition(name: "feed_more", killSwitch: "kill_feed", switches: ["s_e", "s_a"]),
            ],
            killSwitches: [
                KillSwitch(key: "kill_pay", members: ["s_a"]),
                KillSwitch(key: "kill_feed", members: ["s_b", "s_b", "gone"]),
                KillSwitch(key: KillSwitch.masterKey),
                KillSwitch(key: "kill_lonely", members: ["s_c", "s_d"]),
            ],
            flags: ["s_e", "s_d", "s_c", "s_b", "s_a"].map {
                FlagDefinition(key: $0, kind: .pluginSwitch(PluginSwitchDefinition()))
            })
        Self.expectSameAnswers(flagSet, probing: ["gone", "nothing"], "hand-made")
        Self.expectCoverageAnswersAsLookups(flagSet, probing: ["gone", "nothing"], "hand-made")
        let coverage = KillSwitchCoverage(flagSet)
        #expect(coverage.killSwitchKeys(covering: "s_a") == ["kill_pay", "kill_feed", "master"])
        #expect(coverage.killSwitchKeys(covering: "s_d") == ["kill_pay", "master", "kill_lonely"])
        #expect(coverage.killSwitchKeys(covering: "gone") == ["kill_feed", "master"])
        #expect(coverage.members(of: "kill_feed") == ["s_b", "s_b", "gone", "s_a", "s_e"])
        #expect(coverage.members(of: "master") == ["s_e", "s_d", "s_c", "s_b", "s_a"])
        #expect(coverage.members(of: "nothing").isEmpty)
    }

    /// Invalid sets too: a switch on two points with different groups, a group kill switch's key twice, and an index
    /// made before a switch was added to an earlier point (the lookups trust the index while it holds).
    @Test func coverageAnswersAsTheLookupsForInvalidSetsAndAStaleIndex() {
        var flagSet = FlagSet(
            namespace: "invalid",
            pluginPoints: [
                PluginPointDefinition(name: "p0", killSwitch: "kill_a", switches: ["s_y"]),
                PluginPointDefinition(name: "p1", killSwitch: "kill_b", switches: ["s_x", "s_z"]),
                PluginPointDefinition(name: "p2", killSwitch: "kill_a", switches: ["s_z"]),
            ],
            killSwitches: [
                KillSwitch(key: "kill_b", members: ["s_y"]), KillSwitch(key: KillSwitch.masterKey),
                KillSwitch(key: "kill_a"), KillSwitch(key: "kill_b", members: ["s_x"]),
            ],
            flags: ["s_x", "s_y", "s_z"].map { FlagDefinition(key: $0, kind: .pluginSwitch(PluginSwitchDefinition())) }
        ).indexingSwitches()
        Self.expectCoverageAnswersAsLookups(flagSet, probing: ["nothing"], "invalid, indexed")
        flagSet.pluginPoints[0].switches.append("s_x")
        #expect(flagSet.killSwitchKeys(covering: "s_x") == ["kill_b", "master", "kill_b"])
        #expect(KillSwitchCoverage(flagSet).killSwitchKeys(covering: "s_x") == ["kill_b", "master", "kill_b"])
        Self.expectCoverageAnswersAsLookups(flagSet, probing: ["nothing"], "invalid, a stale index")
    }

    @Test func indexingChangesNothingAFlagSetIsComparedBy() throws {
        let rider = try Samples.rider()
        let indexed = rider.indexingSwitches()
        #expect(indexed == rider)
        #expect(indexed.hashValue == rider.hashValue)
        #expect(indexed.indexingSwitches() == rider)
        #expect(
            indexed.pluginPoint(listing: "plugin_switch_feed_promos")?.name
                == rider.pluginPoints.first { $0.switches.contains("plugin_switch_feed_promos") }?.name)
    }
}
