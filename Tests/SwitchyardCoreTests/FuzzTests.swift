import SwitchyardCore
import TestSupport
import Testing

/// Decoding untrusted bytes never traps: seeded mutations of a valid snapshot must throw or decode.
struct FuzzTests {
    static let seedDocument: [UInt8] = SnapshotDocument.encode(try! Samples.riderSnapshot())

    /// Byte-level mutations exercise the JSON parser (the checksum stops most of them right after it).
    @Test(arguments: 0..<4)
    func mutatedSnapshotBytesThrowOrDecodeAndNeverTrap(seed: Int) async {
        await onOwnThread {
            var generator = SeededGenerator(seed: UInt64(seed) &* 7_919)
            var decodedCount = 0
            for _ in 0..<150 {
                let mutated = Self.mutate(Self.seedDocument, using: &generator)
                _ = try? JSONValue.parse(mutated)
                if let snapshot = try? SnapshotDocument.decode(mutated) {
                    decodedCount += 1
                    Self.evaluateEverything(snapshot, using: &generator)
                }
            }
            #expect(decodedCount < 150, "most mutations must be refused")
        }
    }

    /// Random bytes, and random bytes inside JSON brackets and strings.
    @Test func randomBytesNeverTrapTheParser() {
        var generator = SeededGenerator(seed: 99)
        for length in 0..<400 {
            let noise = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
            for framed in [noise, Array("{\"".utf8) + noise, Array("[\"".utf8) + noise + Array("\"]".utf8)] {
                #expect(throws: (any Error).self) { try SnapshotDocument.decode(framed) }
                _ = try? JSONValue.parse(framed)
            }
        }
    }

    /// Tree-level mutations, re-signed so the checksum holds, exercise the flag set reader and validation; what
    /// decodes is then compiled and evaluated.
    @Test(arguments: 0..<4)
    func mutatedAndResignedTreesThrowOrDecodeAndNeverTrap(seed: Int) async throws {
        try await onOwnThread {
            var generator = SeededGenerator(seed: UInt64(seed) &+ 31_337)
            let tree = try JSONValue.parse(Self.seedDocument)
            var outcomes = (decoded: 0, refused: 0)
            for _ in 0..<80 {
                var mutated = tree
                for _ in 0..<Int.random(in: 1...3, using: &generator) {
                    mutated = Self.mutate(mutated, using: &generator)
                }
                do {
                    let snapshot = try SnapshotDocument.decode(Samples.signed(mutated))
                    outcomes.decoded += 1
                    Self.evaluateEverything(snapshot, using: &generator)
                } catch let error as SnapshotDecodingError {
                    outcomes.refused += 1
                    #expect(!error.message.isEmpty)
                }
            }
            #expect(outcomes.decoded > 0 && outcomes.refused > 0, "the mutations reach both sides: \(outcomes)")
        }
    }

    /// A flag set that does not validate still compiles and evaluates without trapping.
    @Test func compilingAnInvalidFlagSetNeverTraps() {
        let broken = FlagSet(
            namespace: "",
            pluginPoints: [
                PluginPointDefinition(
                    name: "p", killSwitch: "missing", switches: ["nothing", "plugin_switch_a", "plugin_switch_a"])
            ],
            killSwitches: [
                KillSwitch(key: "master", members: ["x"], entries: [Scope(cities: ["lagos"])]),
                KillSwitch(key: "kill_dup", members: ["plugin_switch_a", "empty"], entries: []),
                KillSwitch(key: "kill_dup", members: ["plugin_switch_a"], entries: [Scope(cohorts: ["beta"])]),
            ],
            flags: [
                FlagDefinition(
                    key: "plugin_switch_a",
                    kind: .pluginSwitch(
                        PluginSwitchDefinition(
                            rules: [
                                SwitchRule(
                                    conditions: Conditions(versions: [
                                        .app: VersionRange(
                                            atLeast: SemanticVersion("9.0.0"), below: SemanticVersion("1.0.0"))
                                    ]), rollout: .full)
                            ], rollout: Rollout(basisPoints: 1)!))),
                FlagDefinition(key: "plugin_switch_a", kind: .pluginSwitch(PluginSwitchDefinition(rollout: .full))),
                FlagDefinition(
                    key: "empty",
                    kind: .experiment(
                        Experiment(valueType: .string, variants: [], defaultVariant: "none", weights: [:]))),
                FlagDefinition(
                    key: "weightless",
                    kind: .experiment(
                        Experiment(
                            valueType: .integer,
                            variants: [
                                Variant(key: "a", value: .integer(1)), Variant(key: "b", value: .string("wrong type")),
                            ], defaultVariant: "missing", weights: ["zzz": 5],
                            rules: [ExperimentRule(conditions: Conditions(), weights: [:])]))),
            ])
        #expect(!broken.validate().isEmpty)
        var generator = SeededGenerator(seed: 5)
        Self.evaluateEverything(Snapshot(epoch: "e", version: 0, flagSet: broken), using: &generator)
        let compiled = CompiledSnapshot(Snapshot(epoch: "e", version: 0, flagSet: broken))
        let details = compiled.evaluator(for: EvaluationContext(unitId: "u", cohorts: ["beta"])).details(for: "empty")
        #expect(details.variant == "none" && details.value == .boolean(false))
        #expect(compiled.evaluator(for: EvaluationContext()).evaluate(FlagHandle(index: -1)).errorCode == .flagNotFound)
        #expect(compiled.evaluator(for: EvaluationContext()).evaluate(FlagHandle(index: 99)).errorCode == .flagNotFound)
    }

    static func evaluateEverything(_ snapshot: Snapshot, using generator: inout SeededGenerator) {
        let compiled = CompiledSnapshot(snapshot)
        var random = RandomFlagSets(seed: generator.next())
        for _ in 0..<8 {
            let evaluator = compiled.evaluator(for: random.context())
            for flag in snapshot.flagSet.flags {
                guard let handle = compiled.handle(for: flag.key) else { continue }
                _ = evaluator.details(for: handle, evaluation: evaluator.evaluate(handle))
                _ = evaluator.details(for: handle, evaluation: evaluator.evaluateSwitch(handle))
            }
        }
    }

    static func mutate(_ bytes: [UInt8], using generator: inout SeededGenerator) -> [UInt8] {
        var bytes = bytes
        let interesting: [UInt8] =
            Array("{}[]\",:\\0123456789-.eE tfn".utf8) + [0x00, 0x1F, 0x7F, 0x80, 0xC3, 0xED, 0xF0, 0xFF]
        for _ in 0..<Int.random(in: 1...4, using: &generator) {
            guard !bytes.isEmpty else { return interesting.shuffled(using: &generator) }
            let position = Int.random(in: 0..<bytes.count, using: &generator)
            switch Int.random(in: 0..<6, using: &generator) {
            case 0: bytes[position] ^= UInt8(1) << UInt8.random(in: 0...7, using: &generator)
            case 1: bytes[position] = interesting.randomElement(using: &generator)!
            case 2: bytes.insert(interesting.randomElement(using: &generator)!, at: position)
            case 3:
                bytes.removeSubrange(position..<min(bytes.count, position + Int.random(in: 1...16, using: &generator)))
            case 4:
                let end = min(bytes.count, position + Int.random(in: 1...32, using: &generator))
                bytes.insert(contentsOf: bytes[position..<end], at: Int.random(in: 0...bytes.count, using: &generator))
            default: bytes.removeSubrange(position...)
            }
        }
        return bytes
    }

    /// Replaces, removes or renames one node of a tree.
    static func mutate(_ tree: JSONValue, using generator: inout SeededGenerator) -> JSONValue {
        let replacements: [JSONValue] = [
            .null, .bool(true), .int(-1), .int(0), .int(10_001), .int64(.max), .int64(.min), .double(1e300),
            .double(0.5),
            .number(JSONNumber(uncheckedLiteral: "99999999999999999999")), .string(""), .string("master"),
            .string("plugin_switch_feed_promos"), .string("x y"), .string(String(repeating: "é", count: 300)),
            .array([]), .array([.string("lagos"), .string("lagos")]), .object(JSONObject()),
            .object(JSONObject([("cities", .array([.string("lagos")]))])),
        ]
        func walk(_ value: JSONValue, depth: Int) -> JSONValue {
            let stop = Int.random(in: 0..<4, using: &generator) == 0 || depth > 6
            switch value {
            case .object(var object) where !object.isEmpty:
                let key = object.memberKeys.randomElement(using: &generator)!
                if stop {
                    switch Int.random(in: 0..<3, using: &generator) {
                    case 0: object[key] = nil
                    case 1:
                        let child = object[key]!
                        object[key] = nil
                        object[key + (Bool.random(using: &generator) ? "s" : "_")] = child
                    default: object[key] = replacements.randomElement(using: &generator)!
                    }
                } else {
                    object[key] = walk(object[key]!, depth: depth + 1)
                }
                return .object(object)
            case .array(var elements) where !elements.isEmpty:
                let index = Int.random(in: 0..<elements.count, using: &generator)
                if stop {
                    switch Int.random(in: 0..<3, using: &generator) {
                    case 0: elements.remove(at: index)
                    case 1: elements.append(elements[index])
                    default: elements[index] = replacements.randomElement(using: &generator)!
                    }
                } else {
                    elements[index] = walk(elements[index], depth: depth + 1)
                }
                return .array(elements)
            default:
                return replacements.randomElement(using: &generator)!
            }
        }
        return walk(tree, depth: 0)
    }
}
