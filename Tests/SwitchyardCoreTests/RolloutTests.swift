import SwitchyardCore
import Testing

/// Percentages in flag files convert to basis points exactly, from their decimal text.
struct RolloutTests {
    /// Values that floating point gets wrong: `Int(0.29 * 100)` is 28, `Int(0.57 * 100)` is 56,
    /// `Int(1.13 * 100)` is 112, and `0.07 * 100` is 7.000000000000001.
    @Test(arguments: [
        ("0.07", 7), ("1.10", 110), ("1.1", 110), ("0.29", 29), ("0.57", 57), ("1.13", 113), ("4.35", 435),
        ("9.95", 995), ("12.34", 1234), ("0.01", 1), ("99.99", 9999), ("100", 10_000), ("100.00", 10_000),
        ("0", 0), ("0.0", 0), ("0.00", 0), ("007", 700), ("5", 500), (" 5 ", 500), ("12.340", 1234), ("0.070", 7),
        ("+5", 500),
    ])
    func percentagesConvertExactly(_ text: String, _ basisPoints: Int) throws {
        let rollout = try Rollout.parsePercent(text).get()
        #expect(Int(rollout.basisPoints) == basisPoints, "'\(text)'")
    }

    @Test(arguments: [
        ("0.001", "has more than two decimals"), ("12.345", "has more than two decimals"),
        ("100.01", "is not between 0 and 100"), ("101", "is not between 0 and 100"),
        ("1000", "is not between 0 and 100"),
        ("-1", "is not between 0 and 100"), ("-0.01", "is not between 0 and 100"), ("abc", "is not a percentage"),
        ("", "is not a percentage"), ("1.", "is not a percentage"), (".5", "is not a percentage"),
        ("1e2", "is not a percentage"), ("1,5", "is not a percentage"), ("12 %", "is not a percentage"),
        ("٣", "is not a percentage"), ("1.2.3", "is not a percentage"),
    ])
    func badPercentagesSayWhatIsWrong(_ text: String, _ message: String) {
        switch Rollout.parsePercent(text) {
        case .success(let rollout): Issue.record("'\(text)' was read as \(rollout)")
        case .failure(let error):
            #expect(error.description.contains(message), "\(error)")
            #expect(error.description.hasPrefix(text), "the message names the input: \(error)")
        }
    }

    @Test func everyBasisPointRoundTripsThroughItsPercentText() throws {
        for basisPoints in 0...10_000 {
            let rollout = try #require(Rollout(basisPoints: basisPoints))
            let text = rollout.percentText
            #expect(try Rollout.parsePercent(text).get() == rollout, "\(basisPoints) → '\(text)'")
            #expect(!text.contains(".") || !text.hasSuffix("0"), "'\(text)' has a needless trailing zero")
        }
    }

    @Test func percentTextIsExactDecimal() throws {
        #expect(Rollout(basisPoints: 7)!.percentText == "0.07")
        #expect(Rollout(basisPoints: 110)!.percentText == "1.1")
        #expect(Rollout(basisPoints: 1234)!.description == "12.34%")
        #expect(Rollout(basisPoints: 10_000)!.percentText == "100")
        #expect(Rollout(basisPoints: 0)!.percentText == "0")
    }

    @Test func basisPointsOutsideTheRangeAreRefused() {
        #expect(Rollout(basisPoints: -1) == nil)
        #expect(Rollout(basisPoints: 10_001) == nil)
        #expect(Rollout(basisPoints: 10_000) == .full)
        #expect(Rollout(basisPoints: 0) == .off)
    }

    /// The file reader takes the JSON number's literal text, never its double value.
    @Test func flagFileReaderConvertsPercentLiteralsExactly() throws {
        let cases: [(String, Int)] = [
            ("0.07", 7), ("1.10", 110), ("0.29", 29), ("0.57", 57), ("1.13", 113), ("100", 10_000),
            ("100.0", 10_000), ("33.33", 3333), ("0", 0),
        ]
        for (literal, basisPoints) in cases {
            let flagSet = try FlagSet(
                tree: JSONValue.parse(
                    """
                    {"namespace": "n", "flags": {"plugin_switch_a": {"rules": [{"cities": ["x"], "rollout": \(literal)}], "rollout": \(literal)}}}
                    """), unit: .percent)
            let gate = try #require(flagSet.flag("plugin_switch_a")?.pluginSwitch)
            #expect(Int(gate.rollout.basisPoints) == basisPoints, "\(literal)")
            #expect(Int(gate.rules[0].rollout.basisPoints) == basisPoints, "\(literal) in a rule")
        }
    }

    @Test func flagFileWriterWritesExactPercentagesThatReadBack() throws {
        let flagSet = FlagSet(
            namespace: "n",
            flags: [0, 1, 7, 29, 110, 1234, 9999, 10_000].map { basisPoints in
                FlagDefinition(
                    key: "plugin_switch_\(basisPoints)",
                    kind: .pluginSwitch(PluginSwitchDefinition(rollout: Rollout(basisPoints: basisPoints)!)))
            })
        let tree = JSONValue.object(flagSet.tree(unit: .percent))
        #expect(tree["flags"]?["plugin_switch_7"]?["rollout"] == .number(JSONNumber(uncheckedLiteral: "0.07")))
        #expect(tree["flags"]?["plugin_switch_110"]?["rollout"] == .number(JSONNumber(uncheckedLiteral: "1.1")))
        let text = tree.serializedString(JSONValue.WritingOptions(sortedKeys: false))
        #expect(text.contains("\"rollout\":0.07"))
        let reread = try FlagSet(tree: JSONValue.parse(text), unit: .percent)
        #expect(reread == flagSet)
    }

    @Test(arguments: [
        ("12.345", "flags.plugin_switch_a.rollout: 12.345 has more than two decimals"),
        ("1e2", "flags.plugin_switch_a.rollout: 1e2 is not a plain decimal percentage"),
        ("101", "flags.plugin_switch_a.rollout: 101 is not between 0 and 100"),
        ("-5", "flags.plugin_switch_a.rollout: -5 is not between 0 and 100"),
        ("\"50\"", "flags.plugin_switch_a.rollout: must be a number, not a string"),
    ])
    func flagFileReaderReportsBadPercentagesWithTheirPath(_ literal: String, _ message: String) throws {
        let error = try #require(throws: DefinitionError.self) {
            try FlagSet(
                tree: JSONValue.parse(
                    """
                    {"namespace": "n", "flags": {"plugin_switch_a": {"rollout": \(literal)}}}
                    """), unit: .percent, file: "Flags/n.yaml")
        }
        #expect(error.problems.count == 1)
        #expect(error.problems.first?.description.hasPrefix("Flags/n.yaml: " + message) == true, "\(error)")
    }

    @Test(arguments: [
        ("10001", "flags.plugin_switch_a.rollout: 10001 is not between 0 and 10000 basis points"),
        ("-1", "flags.plugin_switch_a.rollout: -1 is not between 0 and 10000 basis points"),
        ("50.5", "flags.plugin_switch_a.rollout: 50.5 must be an integer number of basis points"),
        ("1.5", "flags.plugin_switch_a.rollout: 1.5 must be an integer number of basis points"),
        (
            "99999999999999999999",
            "flags.plugin_switch_a.rollout: 99999999999999999999 must be an integer number of basis points"
        ),
    ])
    func snapshotReaderTakesOnlyIntegerBasisPoints(_ literal: String, _ message: String) throws {
        let error = try #require(throws: DefinitionError.self) {
            try FlagSet(
                tree: JSONValue.parse(
                    """
                    {"namespace": "n", "flags": {"plugin_switch_a": {"rollout": \(literal)}}}
                    """), unit: .basisPoints)
        }
        #expect(error.problems.map(\.description) == [message])
    }

    /// A whole number of basis points is one however it is written (`2500.0`, `2.5e3`), as JSON Schema counts
    /// integers: the API's schema calls those valid.
    @Test(arguments: ["2500", "2500.0", "2.5e3"])
    func wholeBasisPointsAreReadHoweverWritten(_ literal: String) throws {
        let flagSet = try FlagSet(
            tree: JSONValue.parse(#"{"namespace": "n", "flags": {"plugin_switch_a": {"rollout": \#(literal)}}}"#),
            unit: .basisPoints)
        #expect(flagSet.flag("plugin_switch_a")?.pluginSwitch?.rollout == Rollout(basisPoints: 2_500))
    }
}

/// App versions: SemVer 2.0 precedence, padded short versions, build metadata ignored.
struct SemanticVersionTests {
    /// The precedence example of semver.org §11, and more.
    @Test func precedenceFollowsSemVer() throws {
        let ordered = [
            "1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-alpha.beta", "1.0.0-beta", "1.0.0-beta.2", "1.0.0-beta.11",
            "1.0.0-rc.1", "1.0.0", "1.0.1", "1.2.0", "1.10.0", "2.0.0", "10.0.0",
        ]
        let versions = try ordered.map { try #require(SemanticVersion($0), "\($0)") }
        for (index, version) in versions.enumerated() {
            for later in versions[(index + 1)...] {
                #expect(version < later, "\(version) < \(later)")
                #expect(!(later < version), "not \(later) < \(version)")
            }
        }
    }

    @Test func shortVersionsArePaddedAndBuildMetadataIsIgnored() throws {
        #expect(SemanticVersion("5.12") == SemanticVersion("5.12.0"))
        #expect(SemanticVersion("6") == SemanticVersion("6.0.0"))
        #expect(SemanticVersion("5.12.0+481") == SemanticVersion("5.12.0"))
        #expect(SemanticVersion("5.12.0+481")?.description == "5.12.0+481")
        #expect(SemanticVersion("6.0.0-beta.2+exp.sha.5114f85")?.prerelease == ["beta", "2"])
    }

    @Test(arguments: [
        "", "banana", "5.x", "1.2.3.4", "5..0", "-1.0.0", "1.0.0-", "1.0.0+", "1.0.0-beta..1", "1.0.0-b\u{E9}ta",
        " 1.0.0", "1.0.0 ", "1.0", "١.٢.٣", "99999999999999999999.0.0",
    ])
    func malformedVersionsDoNotParse(_ text: String) {
        if text == "1.0" {
            #expect(SemanticVersion(text) != nil)
            return
        }
        #expect(SemanticVersion(text) == nil, "'\(text)'")
    }
}
