import Testing

@testable import SwitchyardCore

/// `SortedMembers`, the members a snapshot document is written from, against a plain sorted dictionary: random
/// replacements, insertions and removals across many chunks (chunks growing past twice their size and split, chunks
/// emptied and dropped, the whole set emptied and filled again) give the same runs, in key order, as joining the
/// dictionary's members; and a change leaves every run it did not touch the same array.
struct SortedMembersTests {
    @Test(arguments: 0..<6)
    func randomChangesGiveTheMembersInKeyOrder(seed: UInt64) {
        var random = SeededGenerator(seed: seed &+ 11)
        var reference: [String: [UInt8]] = [:]
        func key(_ number: Int) -> String { "flag_\(number / 7)_\(number % 7)" }
        func value(_ key: String) -> [UInt8] {
            Array("\"\(key)\":{\"rollout\":\(random.next() % 10_001)}".utf8)
        }
        for number in 0..<700 { reference[key(number)] = value(key(number)) }
        var members = SortedMembers(reference.map { ($0.key, $0.value) })
        check(members, reference, "at the start")

        for round in 0..<60 {
            var keys: Set<String> = []
            switch round % 6 {
            case 0:  // many new keys sorting into one place: that chunk grows past twice its size and splits
                for number in 0..<300 { keys.insert("flag_3_\(number)_new") }
            case 1:  // every key of a region removed: its chunks empty and go
                keys = Set(reference.keys.filter { $0.hasPrefix("flag_5") || $0.hasPrefix("flag_3_") })
            case 5 where round == 35:  // everything removed, then filled again in the next rounds
                keys = Set(reference.keys)
            default:  // a few replaced, inserted or removed anywhere
                for _ in 0..<Int(random.next() % 12 + 1) { keys.insert(key(Int(random.next() % 1_400))) }
            }
            var next = reference
            // In key order: the random draws below must not follow a set's order, which changes from run to run.
            for changed in keys.sorted() {
                let remove = round % 6 == 1 || (round == 35) || (round % 6 > 1 && random.next() % 3 == 0)
                next[changed] = remove ? nil : value(changed)
            }
            let runsBefore = members.runs.count
            members.update(keys) { next[$0] }
            reference = next
            check(members, reference, "after round \(round)")
            // The rounds do what they say: the first one splits a chunk, the second drops emptied ones.
            if round == 0 { #expect(members.runs.count > runsBefore, "a chunk split") }
            if round == 1 { #expect(members.runs.count < runsBefore, "emptied chunks dropped") }
            if round == 35 { #expect(members.runs.isEmpty, "every member removed") }
        }
    }

    @Test func aChangeLeavesTheRunsItDidNotTouchTheSameArrays() {
        let keys = (0..<1_000).map { "switch_\(1_000 + $0)" }
        var members = SortedMembers(keys.map { ($0, Array("\"\($0)\":{}".utf8)) })
        let before = members.runs.map(Self.address)
        #expect(before.count == 1_000 / SortedMembers.chunkSize + 1)
        members.update(["switch_1500"]) { _ in Array(#""switch_1500":{"rollout":5}"#.utf8) }
        let after = members.runs.map(Self.address)
        #expect(after.count == before.count)
        #expect(zip(before, after).filter { $0 != $1 }.count == 1, "only the run holding switch_1500 is written again")
        let joined = String(decoding: Self.joined(members.runs), as: UTF8.self)
        #expect(joined.contains(#""switch_1500":{"rollout":5}"#))
    }

    /// Members or runs joined with commas, as a document joins them.
    private static func joined(_ parts: [[UInt8]]) -> [UInt8] {
        Array(parts.joined(separator: [UInt8(ascii: ",")]))
    }

    private static func address(_ run: [UInt8]) -> UnsafeRawPointer? {
        run.withUnsafeBytes { $0.baseAddress }
    }

    private func check(
        _ members: SortedMembers, _ reference: [String: [UInt8]], _ when: String,
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        let expected = reference.sorted { SnapshotDelta.byUTF8($0.key, $1.key) }.map(\.value)
        // Compared here, not inside #expect: a failure would print both documents, hundreds of kilobytes each.
        let written = Self.joined(members.runs)
        let wanted = Self.joined(expected)
        let same = written == wanted
        let firstDifference =
            same
            ? 0
            : (0..<min(written.count, wanted.count)).first { written[$0] != wanted[$0] }
                ?? min(written.count, wanted.count)
        #expect(
            same,
            "members in key order \(when): \(written.count) bytes against \(wanted.count), first difference at \(firstDifference)",
            sourceLocation: sourceLocation)
        #expect(!members.runs.contains { $0.isEmpty }, "no empty chunk \(when)", sourceLocation: sourceLocation)
        #expect(
            members.byteCount == expected.reduce(0) { $0 + $1.count + 1 }, "byte count \(when)",
            sourceLocation: sourceLocation)
    }
}
