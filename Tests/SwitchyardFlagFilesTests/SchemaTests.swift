import Foundation
import SwitchyardCore
import SwitchyardFlagFiles
import TestSupport
import Testing

/// docs/schemas/flag-file.schema.json: the JSON Schema editors validate flag files with.
struct SchemaTests {
    func schema() throws -> JSONValue {
        let data = try #require(FileManager.default.contents(atPath: TestPaths.schema))
        return try JSONValue.parse(Array(data))
    }

    @Test func schemaIsJSONForDraft2020_12() throws {
        let schema = try schema()
        #expect(schema["$schema"] == .string("https://json-schema.org/draft/2020-12/schema"))
        #expect(schema["type"] == .string("object"))
    }

    @Test func everyObjectInTheSchemaForbidsUnknownFields() throws {
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

    @Test func schemaNamesEveryFieldTheLoaderReads() throws {
        let schema = try schema()
        let definitions = try #require(schema["$defs"])
        func fields(_ definition: String) -> Set<String> {
            Set(definitions[definition]?["properties"]?.objectValue?.memberKeys ?? [])
        }
        #expect(
            Set(schema["properties"]?.objectValue?.memberKeys ?? []) == [
                "namespace", "description", "crash_guard", "plugin_points", "kill_switches", "flags", "metrics",
            ])
        #expect(fields("pluginPoint") == ["name", "description", "kill_switch", "switches"])
        #expect(fields("killSwitch") == ["description", "members", "entries"])
        #expect(fields("scope") == ["cities", "cohorts"])
        // The targeting attributes' description (TargetingAttributes.swift) is the list the schema must follow.
        let conditions = Set(["name"] + Conditions.fieldNames)
        #expect(
            conditions.isSuperset(of: ["cities", "units", "platforms", "app_version_at_least", "app_version_below"]))
        #expect(fields("switchRule") == conditions.union(["rollout"]))
        #expect(fields("experimentRule") == conditions.union(["weights"]))
        #expect(
            fields("pluginSwitch") == [
                "type", "description", "owner", "disabled", "disabled_scopes", "rules", "rollout", "crash_guard",
                "release",
            ])
        #expect(
            fields("releasePlan") == [
                "stages", "soak", "min_sessions", "margin", "confidence", "on_bad_signal", "guardrails", "state",
            ])
        #expect(fields("releaseStage") == ["cities", "cohorts", "rollout", "soak", "min_sessions"])
        #expect(fields("releaseState") == ["status", "stage", "since", "note", "limits", "exclusions"])
        let switchPolicy: Set<String> = [
            "enabled", "window", "min_sessions", "min_crashes", "max_crash_rate", "baseline_ratio",
            "confidence", "cooldown", "scope_by", "min_units", "min_addresses", "trip_sources",
            "max_scoped_disables",
        ]
        #expect(fields("crashGuard") == switchPolicy)
        #expect(fields("namespaceCrashGuard") == switchPolicy.union(CrashGuardPolicy.namespaceFields))
        #expect(
            fields("experiment") == [
                "type", "description", "owner", "value_type", "variants", "default_variant", "weights", "rules",
            ])
        #expect(fields("variant") == ["key", "value"])
        #expect(fields("metric") == ["description", "owner", "kind", "better", "cap", "numerator", "denominator"])
    }

    @Test func riderFilePointsEditorsAtTheSchema() throws {
        let text = try String(contentsOfFile: TestPaths.riderFile, encoding: .utf8)
        #expect(text.hasPrefix("# yaml-language-server: $schema=../docs/schemas/flag-file.schema.json\n"))
        #expect(throws: Never.self) { try FlagFile(yaml: text, path: "Flags/rider.yaml") }
    }
}

/// scripts/check-schemas, an independent validator (Python's jsonschema), on the same files. Serialized: the first
/// run creates the script's virtual environment.
@Suite(.serialized)
struct SchemaScriptTests {
    /// Runs scripts/check-schemas (an independent validator, Python's jsonschema) with the given files.
    func checkSchemas(_ files: [String]) async throws -> ProcessOutcome {
        try await Repository.runScript("scripts/check-schemas", files)
    }

    @Test(
        .enabled(
            if: Repository.pythonIsAvailable,
            "needs python3 (scripts/check-schemas sets up jsonschema in .build/check-venv)"))
    func pythonValidatorAcceptsTheFilesTheLoaderAccepts() async throws {
        let valid = TestPaths.yamlFiles(in: TestPaths.valid).map { TestPaths.valid + "/" + $0 }
        let result = try await checkSchemas([TestPaths.riderFile] + valid)
        #expect(result.status == 0, "\(result.output)")
        let all = try await checkSchemas([])
        #expect(all.status == 0, "\(all.output)")
    }

    @Test(
        .enabled(
            if: Repository.pythonIsAvailable,
            "needs python3 (scripts/check-schemas sets up jsonschema in .build/check-venv)"))
    func pythonValidatorRejectsTyposAndOutOfRangeRollouts() async throws {
        let files =
            ["unknown-field.yaml", "rollout-out-of-range.yaml"].map { TestPaths.broken + "/" + $0 }
            + [
                TestPaths.fixtures + "/crash-guard/crash-guard-invalid.yaml",
                TestPaths.broken + "/metrics-invalid.yaml",
            ]
        let result = try await checkSchemas(files)
        #expect(result.status == 1)
        #expect(
            result.output.contains(
                "crash-guard-invalid.yaml: crash_guard.confidence: 100 is greater than or equal to the maximum of 100"))
        #expect(
            result.output.contains(
                "crash-guard-invalid.yaml: crash_guard.scope_by[1]: 'country' is not one of ['city', 'cohort']"))
        #expect(
            result.output.contains(
                "unknown-field.yaml: flags.plugin_switch_feed_promos: Additional properties are not allowed ('descripton', 'rollot' were unexpected)"
            ))
        #expect(
            result.output.contains(
                "rollout-out-of-range.yaml: flags.plugin_switch_feed_promos.rules[1].rollout: 120 is greater than the maximum of 100"
            ))
        #expect(result.output.contains("metrics-invalid.yaml: metrics.fare: 'cap' is a required property"))
        #expect(result.output.contains("metrics-invalid.yaml: metrics.trips.cap: 2.5 is not of type 'integer'"))
        #expect(result.output.contains("metrics-invalid.yaml: metrics: 'sessions' should not be valid under"))
        #expect(result.output.contains("metrics-invalid.yaml: metrics.owner_less: 'kind' is a required property"))
    }
}
