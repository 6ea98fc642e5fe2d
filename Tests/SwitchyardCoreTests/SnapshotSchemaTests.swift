import Foundation
import SwitchyardCore
import TestSupport
import Testing

/// docs/snapshot.md and docs/schemas/snapshot.schema.json against what `SnapshotDocument` really reads and writes.
struct SnapshotSchemaTests {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().path

    static func read(_ path: String) throws -> String {
        try String(contentsOfFile: repository + "/" + path, encoding: .utf8)
    }

    func schema() throws -> JSONValue {
        try JSONValue.parse(try Self.read("docs/schemas/snapshot.schema.json"))
    }

    /// The ```json block under "## Example" in docs/snapshot.md.
    static func documentationExample() throws -> String {
        let text = try read("docs/snapshot.md")
        let example = try #require(text.components(separatedBy: "## Example").last)
        let block = try #require(example.components(separatedBy: "```json\n").dropFirst().first)
        return try #require(block.components(separatedBy: "\n```").first)
    }

    @Test func schemaIsJSONForDraft2020_12() throws {
        let schema = try schema()
        #expect(schema["$schema"] == .string("https://json-schema.org/draft/2020-12/schema"))
        #expect(schema["type"] == .string("object"))
    }

    @Test func everyObjectInTheSchemaForbidsUnknownMembers() throws {
        var unclosed: [String] = []
        func visit(_ value: JSONValue, at path: String) {
            switch value {
            case .object(let object):
                if object["properties"] != nil, object["type"] == .string("object"),
                    object["additionalProperties"] == nil || object["additionalProperties"] == .bool(true)
                {
                    unclosed.append(path)
                }
                for (key, member) in object { visit(member, at: path + "/" + key) }
            case .array(let elements):
                for (index, element) in elements.enumerated() { visit(element, at: "\(path)/\(index)") }
            default: break
            }
        }
        visit(try schema(), at: "#")
        #expect(unclosed == [])
    }

    @Test func schemaNamesEveryTopLevelMemberTheEncoderWrites() throws {
        let encoded = try JSONValue.parse(SnapshotDocument.encode(Self.sample))
        let written = Set(try #require(encoded.objectValue).memberKeys)
        let declared = Set(try #require(try schema()["properties"]?.objectValue).memberKeys)
        #expect(written.isSubset(of: declared))
        #expect(
            declared == [
                "format", "namespace", "epoch", "version", "checksum", "description", "plugin_points",
                "kill_switches", "flags",
            ])
    }

    @Test func schemaRulesNameEveryConditionOfTheTargetingAttributes() throws {
        let definitions = try #require(try schema()["$defs"])
        func fields(_ definition: String) -> Set<String> {
            Set(definitions[definition]?["properties"]?.objectValue?.memberKeys ?? [])
        }
        let conditions = Set(["name"] + Conditions.fieldNames)
        #expect(fields("switchRule") == conditions.union(["rollout"]))
        #expect(fields("experimentRule") == conditions.union(["weights"]))
    }

    @Test func documentationExampleDecodesWithItsChecksum() throws {
        let example = try Self.documentationExample()
        let snapshot = try SnapshotDocument.decode(Array(example.utf8))
        #expect(snapshot.namespace == "rider")
        #expect(snapshot.version == 42)
        #expect(snapshot.entityTag == "\"01JD3B8Q7ZK2M4N6P8R0T2V4X6.42\"")
        // Compact, the example is exactly what the encoder writes for it.
        #expect(
            SnapshotDocument.encode(snapshot)
                == JSONValue.object(try #require(JSONValue.parse(example).objectValue)).serialized(.canonical))
    }

    @Test func documentationExampleWithAChangedValueFailsItsChecksum() throws {
        let example = try Self.documentationExample().replacingOccurrences(
            of: "\"rollout\": 1250", with: "\"rollout\": 1251")
        #expect(throws: SnapshotDecodingError.self) { try SnapshotDocument.decode(Array(example.utf8)) }
        do {
            _ = try SnapshotDocument.decode(Array(example.utf8))
        } catch {
            #expect(error.kind == .checksumMismatch)
        }
    }

    /// A snapshot that exercises every member and the canonical form's corners: escapes, non-ASCII member names
    /// sorted by UTF-8 bytes, floats in both notations, nested objects.
    static let sample: Snapshot = {
        let scope = Scope(cities: ["lagos", "são-paulo"], cohorts: ["beta"])
        let gate = PluginSwitchDefinition(
            disabled: true,
            disabledScopes: [Scope(cities: ["köln"])],
            rules: [
                SwitchRule(
                    name: "everything \"quoted\" \\ / \u{7F} é 😀 \u{08}\u{0C}\u{01}\n\r\t",
                    conditions: Conditions(
                        cities: ["lagos"], notCities: ["paris"], cohorts: ["beta", "ios-beta"],
                        notCohorts: ["churn-risk"], units: ["qa-1"],
                        platforms: ["ios"],
                        versions: [
                            .app: VersionRange(
                                atLeast: SemanticVersion("5.12.0"), below: SemanticVersion("6.0.0-beta.2+481"))
                        ]),
                    rollout: Rollout(basisPoints: 7)!)
            ],
            rollout: Rollout(basisPoints: 1234)!
        )
        let floats = [0.1, 1.0, 2.5e-7, 9.1045e15, 1e16, 1.7976931348623157e308, -0.0, 123456.789]
        let object: JSONObject = JSONObject([
            ("z", .int(1)), ("Z", .bool(false)), ("é", .null), ("😀", .string("emoji")),
            ("\u{FFFD}", .string("replacement")),
            (
                "nested",
                .object(
                    JSONObject([
                        ("b", .array([.double(1.5), .int(-3), .string("\u{1F}")])), ("a", .object(JSONObject())),
                    ]))
            ),
        ])
        let flags = [
            FlagDefinition(
                key: "plugin_switch_everything", description: "line\nbreak", owner: "team-ü", kind: .pluginSwitch(gate)),
            FlagDefinition(key: "plugin_switch_plain", kind: .pluginSwitch(PluginSwitchDefinition(rollout: .full))),
            FlagDefinition(
                key: "float_experiment",
                kind: .experiment(
                    Experiment(
                        valueType: .float,
                        variants: floats.enumerated().map { Variant(key: "f\($0.offset)", value: .float($0.element)) },
                        defaultVariant: "f0", weights: ["f0": 1, "f1": 1_000_000],
                        rules: [ExperimentRule(conditions: Conditions(platforms: ["android"]), weights: ["f2": 3])]))),
            FlagDefinition(
                key: "object_experiment",
                kind: .experiment(
                    Experiment(
                        valueType: .object,
                        variants: [
                            Variant(key: "on", value: .object(object)),
                            Variant(key: "off", value: .object(JSONObject())),
                        ],
                        defaultVariant: "off", weights: ["on": 1, "off": 1]))),
            FlagDefinition(
                key: "integer_experiment",
                kind: .experiment(
                    Experiment(
                        valueType: .integer,
                        variants: [
                            Variant(key: "min", value: .integer(.min)), Variant(key: "max", value: .integer(.max)),
                        ],
                        defaultVariant: "min", weights: ["max": 2]))),
            FlagDefinition(
                key: "boolean_experiment",
                kind: .experiment(
                    Experiment(
                        valueType: .boolean,
                        variants: [
                            Variant(key: "yes", value: .boolean(true)), Variant(key: "no", value: .boolean(false)),
                        ],
                        defaultVariant: "no", weights: ["yes": 1, "no": 9]))),
        ]
        let flagSet = FlagSet(
            namespace: "rider-staging", description: "Every member, \"escaped\".",
            pluginPoints: [
                PluginPointDefinition(
                    name: "home_feed", description: "Cards", killSwitch: "kill_home_feed",
                    switches: ["plugin_switch_everything", "plugin_switch_plain"])
            ],
            killSwitches: [
                KillSwitch(key: KillSwitch.masterKey, description: "All", entries: [Scope()]),
                KillSwitch(key: "kill_home_feed", entries: [scope]),
                KillSwitch(key: "kill_growth", members: ["float_experiment"]),
            ],
            flags: flags
        )
        return Snapshot(epoch: "épöch-1", version: 9_007_199_254_740_993, flagSet: flagSet)
    }()

    @Test func sampleSnapshotRoundTrips() throws {
        let bytes = SnapshotDocument.encode(Self.sample)
        let decoded = try SnapshotDocument.decode(bytes)
        #expect(SnapshotDocument.encode(decoded) == bytes)
        #expect(decoded.version == Self.sample.version)
    }
}

/// scripts/check-snapshot-schema: Python's jsonschema and an independent implementation of the canonical form and
/// checksum, on documents the Swift encoder writes. Serialized: the first run may create the script's virtual
/// environment.
@Suite(.serialized)
struct SnapshotSchemaScriptTests {
    func checkSnapshots(_ documents: [String: [UInt8]], digests: Bool = false) async throws -> ProcessOutcome {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
            "snapshot-schema-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        var paths: [String] = []
        for (name, bytes) in documents.sorted(by: { $0.key < $1.key }) {
            let url = folder.appendingPathComponent(name)
            try Data(bytes).write(to: url)
            paths.append(url.path)
        }
        return try await Repository.runScript("scripts/check-snapshot-schema", (digests ? ["--digests"] : []) + paths)
    }

    @Test func encodedSnapshotsPassTheSchemaAndTheIndependentChecksum() async throws {
        let result = try await checkSnapshots([
            "sample.json": SnapshotDocument.encode(SnapshotSchemaTests.sample),
            "example.json": SnapshotDocument.encode(
                try SnapshotDocument.decode(Array(SnapshotSchemaTests.documentationExample().utf8))),
        ])
        #expect(result.status == 0, "\(result.output)")
        #expect(result.output.contains("checked 2 snapshots"))
    }

    @Test func theDigestIsTheOneAnIndependentImplementationComputes() async throws {
        var random = RandomFlagSets(seed: 77)
        let snapshots = [
            "sample.json": SnapshotSchemaTests.sample,
            "example.json": try SnapshotDocument.decode(Array(SnapshotSchemaTests.documentationExample().utf8)),
            "random.json": Snapshot(epoch: "e", version: 3, flagSet: random.flagSet()),
        ]
        let result = try await checkSnapshots(snapshots.mapValues(SnapshotDocument.encode), digests: true)
        #expect(result.status == 0, "\(result.output)")
        for (name, snapshot) in snapshots {
            let expected = SnapshotDigest(snapshot.flagSet).value(for: snapshot)
            #expect(result.output.contains("\(name): digest \(expected)"), "\(name): \(result.output)")
        }
    }

    @Test func documentationExamplePassesTheScript() async throws {
        let result = try await checkSnapshots([:])
        #expect(result.status == 0, "\(result.output)")
        #expect(result.output.contains("checked 1 snapshot"))
    }

    @Test func brokenSnapshotsAreReportedWithTheirFieldPaths() async throws {
        let good = String(decoding: SnapshotDocument.encode(SnapshotSchemaTests.sample), as: UTF8.self)
        // A rollout over 10000 (the checksum made to match, so only the schema objects), and an altered value.
        var tree = try #require(
            JSONValue.parse(good.replacingOccurrences(of: "\"rollout\":1234", with: "\"rollout\":10001")).objectValue)
        tree["checksum"] = nil
        tree["checksum"] = .string("sha256:" + SHA256.hexDigest(JSONValue.object(tree).serialized(.canonical)))
        let result = try await checkSnapshots([
            "over.json": JSONValue.object(tree).serialized(.canonical),
            "altered.json": Array(good.replacingOccurrences(of: "\"rollout\":1234", with: "\"rollout\":1235").utf8),
        ])
        #expect(result.status == 1)
        #expect(
            result.output.contains(
                "over.json: flags.plugin_switch_everything.rollout: 10001 is greater than the maximum of 10000"),
            "\(result.output)")
        #expect(result.output.contains("altered.json: checksum: sha256:"), "\(result.output)")
        #expect(!result.output.contains("over.json: checksum"), "\(result.output)")
    }
}
