import SwitchyardCore
import Testing

@testable import SwitchyardFlagFiles

/// Writing flag sets (and any tree) as YAML that reads back to the same thing.
struct YAMLWriterTests {
    static let files =
        [TestPaths.riderFile] + TestPaths.yamlFiles(in: TestPaths.valid).map { TestPaths.valid + "/" + $0 }

    @Test(arguments: files)
    func aFlagFileRoundTripsThroughTheModelAndYAML(path: String) throws {
        let original = try FlagFile(contentsOf: path).flagSet
        let text = original.yamlText()
        let reread = try FlagFile(yaml: text, path: "written.yaml").flagSet
        #expect(reread == original)
        // The order of flags, plugin points and kill switches is kept too (equality ignores it).
        #expect(reread.flags.map(\.key) == original.flags.map(\.key))
        #expect(reread.killSwitches.map(\.key) == original.killSwitches.map(\.key))
        #expect(reread.pluginPoints == original.pluginPoints)
        #expect(reread.metrics == original.metrics)
        // Writing is stable: the written text writes back the same.
        #expect(reread.yamlText() == text)
    }

    @Test func writesFieldsInAStableOrderWithPercentages() throws {
        let flagSet = try FlagFile(
            yaml: """
                flags:
                  plugin_switch_b:
                    rollout: 12.50
                    rules:
                      - rollout: 0.07
                        cities: [lagos]
                        name: lagos
                    owner: team
                namespace: demo

                """, path: "demo.yaml"
        ).flagSet
        #expect(
            flagSet.yamlText(schema: "../docs/schemas/flag-file.schema.json") == """
                # yaml-language-server: $schema=../docs/schemas/flag-file.schema.json

                namespace: demo

                kill_switches:
                  master: {}

                flags:
                  plugin_switch_b:
                    type: plugin_switch
                    owner: team
                    rules:
                      - name: lagos
                        cities: [lagos]
                        rollout: 0.07
                    rollout: 12.5

                """)
    }

    @Test(arguments: [
        "on", "No", "true", "null", "~", "12", "-1", ".5", "1_000", "2024-01-01", "", " padded", "a: b",
        "a #b", "- item", "#comment", "[x]", "{x}", "*alias", "&anchor", "!tag", "%d", "@x", "`x`",
        "'quoted'", "\"double\"", "tab\there", "line\nbreak", "back\\slash", "ünïcödé 🚕", "\u{7F}\u{85}\u{2028}",
        "ends with colon:", "question?", "=", "<<", "Let's go", "plain text, with commas",
    ])
    func stringsReadBackAsTheSameString(string: String) throws {
        let tree = JSONValue.object(
            JSONObject([
                ("key", .string(string)), (string.isEmpty ? "empty" : string, .int(1)),
                ("list", .array([.string(string), .string("x")])),
            ]))
        let text = YAMLWriter.text(for: tree)
        let reread = YAMLReader(file: nil).read(text)
        #expect(reread.problems == [], "\(text)")
        #expect(reread.tree == tree, "\(text)")
    }

    @Test func plainStringsStayPlainAndAmbiguousOnesAreQuoted() {
        #expect(YAMLWriter.scalar("plugin_switch_feed_promos", inFlow: false) == "plugin_switch_feed_promos")
        #expect(
            YAMLWriter.scalar("Promotions card of the home feed.", inFlow: false) == "Promotions card of the home feed."
        )
        #expect(YAMLWriter.scalar("on", inFlow: false) == "\"on\"")
        #expect(YAMLWriter.scalar("5.12.0", inFlow: false) == "\"5.12.0\"")
        #expect(YAMLWriter.scalar("a, b", inFlow: true) == "\"a, b\"")
        #expect(YAMLWriter.scalar("a, b", inFlow: false) == "a, b")
    }

    @Test func nestedValuesAndEmptyContainersReadBack() {
        let tree = JSONValue.object(
            JSONObject([
                (
                    "object",
                    .object(
                        JSONObject([
                            ("inner", .object(JSONObject([("n", .double(1.0))]))), ("empty", .object(JSONObject())),
                        ]))
                ),
                (
                    "lists",
                    .array([
                        .array([.int(1), .int(2)]), .array([]),
                        .object(JSONObject([("a", .null), ("b", .bool(false))])),
                    ])
                ),
                ("long", .array((0..<30).map { .string("element\($0)") })),
            ]))
        let text = YAMLWriter.text(for: tree)
        #expect(YAMLReader(file: nil).read(text).tree == tree, "\(text)")
    }
}
