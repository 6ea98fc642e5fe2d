import SwitchyardCore
import Testing

@testable import SwitchyardFlagFiles

/// How YAML scalars become tree values: by the YAML 1.2 core schema, keeping number literals.
struct YAMLScalarTests {
    func tree(_ yaml: String) -> (JSONValue?, [String]) {
        let result = YAMLReader(file: "f.yaml").read(yaml)
        return (result.tree, result.problems.map(\.description))
    }

    @Test func numbersKeepTheirLiteralText() {
        let (tree, problems) = tree("a: 12.34\nb: 0.07\nc: 1.10\nd: 1.0\ne: -3\nf: 1e3\n")
        #expect(problems == [])
        #expect(tree?["a"] == .number(JSONNumber(uncheckedLiteral: "12.34")))
        #expect(tree?["b"] == .number(JSONNumber(uncheckedLiteral: "0.07")))
        #expect(tree?["c"] == .number(JSONNumber(uncheckedLiteral: "1.10")))
        #expect(tree?["d"] == .number(JSONNumber(uncheckedLiteral: "1.0")))
        #expect(tree?["e"] == .int(-3))
        #expect(tree?["f"] == .number(JSONNumber(uncheckedLiteral: "1e3")))
    }

    @Test func percentagesThatFloatingPointGetsWrongConvertExactly() throws {
        for (text, basisPoints) in [
            ("0.07", 7), ("1.10", 110), ("12.34", 1234), ("0.29", 29), ("100", 10_000), ("57.01", 5701),
        ] {
            let file = try FlagFile(
                yaml: "namespace: n\nflags:\n  plugin_switch_a:\n    rollout: \(text)\n", path: "n.yaml")
            #expect(file.flagSet.flag("plugin_switch_a")?.pluginSwitch?.rollout.basisPoints == UInt16(basisPoints))
        }
    }

    @Test func quotedScalarsStayStrings() {
        let (tree, problems) = tree("a: '12'\nb: \"true\"\nc: 'null'\nd: \"1.0\"\ne: 'no'\n")
        #expect(problems == [])
        #expect(tree?["a"] == .string("12"))
        #expect(tree?["b"] == .string("true"))
        #expect(tree?["c"] == .string("null"))
        #expect(tree?["d"] == .string("1.0"))
        #expect(tree?["e"] == .string("no"))
    }

    @Test func booleansAndNullsResolveByTheCoreSchema() {
        let (tree, problems) = tree("a: true\nb: False\nc: null\nd: ~\ne:\nf: 2024-01-01\ng: y\n")
        #expect(problems == [])
        #expect(tree?["a"] == .bool(true))
        #expect(tree?["b"] == .bool(false))
        #expect(tree?["c"] == .null)
        #expect(tree?["d"] == .null)
        #expect(tree?["e"] == .null)
        #expect(tree?["f"] == .string("2024-01-01"))
        #expect(tree?["g"] == .string("y"))
    }

    @Test func yaml11BooleanWordsMustBeQuoted() {
        let (tree, problems) = tree("a: on\nOff: 1\n")
        #expect(
            problems == [
                "f.yaml: a: on reads as a boolean in YAML 1.1 tools and as text in YAML 1.2; quote it ('on') or write true or false",
                "f.yaml: Off: the key Off reads as a boolean in YAML 1.1 tools; quote it: 'Off'",
            ])
        #expect(tree?["a"] == .string("on"))
    }

    @Test func numbersInYamlOnlyFormsAreRefused() {
        let (_, problems) = tree("a: +5\nb: .5\nc: 0o17\nd: .inf\ne: 007\n")
        #expect(
            problems == [
                "f.yaml: a: +5 is not written as a plain decimal number; write it as JSON would (e.g. 12, 0.5, 12.34)",
                "f.yaml: b: .5 is not written as a plain decimal number; write it as JSON would (e.g. 12, 0.5, 12.34)",
                "f.yaml: c: 0o17 is not written as a plain decimal number; write it as JSON would (e.g. 12, 0.5, 12.34)",
                "f.yaml: d: .inf is not a finite number",
                "f.yaml: e: 007 is not written as a plain decimal number; write it as JSON would (e.g. 12, 0.5, 12.34)",
            ])
    }

    @Test func blockScalarsAreStrings() {
        let (tree, problems) = tree("a: >-\n  one\n  two\nb: |\n  line\n")
        #expect(problems == [])
        #expect(tree?["a"] == .string("one two"))
        #expect(tree?["b"] == .string("line\n"))
    }

    @Test func anEmptyFileSaysWhatAFlagFileStartsWith() {
        let (tree, problems) = tree("# only a comment\n")
        #expect(tree == nil)
        #expect(problems == ["f.yaml: the file is empty; a flag file starts with 'namespace: <name>'"])
    }

    @Test func syntaxErrorsGiveLineAndColumn() {
        let (tree, problems) = tree("a:\n  - b\n c: d\n")
        #expect(tree == nil)
        #expect(problems.count == 1)
        #expect(problems.first?.hasPrefix("f.yaml: line 3, column 2: YAML syntax error: ") == true)
    }

    @Test func aSecondDocumentIsASyntaxError() {
        let (tree, problems) = tree("a: 1\n---\nb: 2\n")
        #expect(tree == nil)
        #expect(
            problems == [
                "f.yaml: line 2, column 1: YAML syntax error: but found another document (expected a single document in the stream at line 1, column 1)"
            ])
    }

    @Test func duplicateKeysInTheSameMappingAreReportedWithBothLines() {
        let (tree, problems) = tree("a:\n  b: 1\n  c: 2\n  b: 3\n  c: 4\nd: 5\n")
        #expect(
            problems == [
                "f.yaml: a: duplicate key 'b' (lines 2 and 4); keep one",
                "f.yaml: a: duplicate key 'c' (lines 3 and 5); keep one",
            ])
        #expect(tree?["a"]?["b"] == .int(3))
        #expect(tree?["d"] == .int(5))
    }

    @Test func duplicateKeysWrittenDifferentlyAreStillDuplicates() {
        let (_, problems) = tree("a: 1\n\"a\": 2\n")
        #expect(problems == ["f.yaml: duplicate key 'a' (lines 1 and 2); keep one"])
    }

    @Test func duplicateKeysInFlowMappingsAndWithCarriageReturnsAreFound() {
        let (_, problems) = tree("a: {x: 1, y: 2, x: 3}\r\nb: 1\r\nb: 2\r\n")
        #expect(
            problems == [
                "f.yaml: a: duplicate key 'x' (line 1); keep one",
                "f.yaml: duplicate key 'b' (lines 2 and 3); keep one",
            ])
    }
}

extension YAMLScalarTests {
    @Test func aByteOrderMarkDoesNotShiftColumns() {
        let (tree, problems) = tree("\u{FEFF}a: 1\na: 2\n")
        #expect(problems == ["f.yaml: duplicate key 'a' (lines 1 and 2); keep one"])
        #expect(tree?["a"] == .int(2))
    }
}
