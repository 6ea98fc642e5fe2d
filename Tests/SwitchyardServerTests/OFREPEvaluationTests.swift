import Foundation
import HTTPTypes
import SwitchyardCore
import SwitchyardStorage
import Testing

@testable import SwitchyardServer

/// `POST /ofrep/v1/evaluate/flags/{key}`: values, variants and reasons by the interop profile (docs/openfeature.md).
struct OFREPEvaluationTests {
    @Test func pluginSwitchesAnswerAsBooleansWithAnOnOrOffVariant() async throws {
        let app = try await TestApp.makeOFREP()
        defer { app.close() }
        let on = try await app.evaluate("plugin_switch_banner")
        #expect(on.status == .ok)
        #expect(on.headers[.contentType] == "application/json")
        #expect(on.json["key"] == .string("plugin_switch_banner"))
        #expect(on.json["value"] == .bool(true))
        #expect(on.json["variant"] == .string("on"))
        #expect(on.json["reason"] == .string("STATIC"))
        #expect(on.json["metadata"]?["namespace"] == .string("shop"))
        #expect(on.json["metadata"]?["flag_type"] == .string("plugin_switch"))
        let off = try await app.evaluate("plugin_switch_dark_mode")
        #expect(off.json["value"] == .bool(false))
        #expect(off.json["variant"] == .string("off"))
        #expect(off.json["reason"] == .string("STATIC"))
    }

    @Test func aRuleThatHoldsIsATargetingMatchAndTheDefaultRolloutIsSentAsStatic() async throws {
        let app = try await TestApp.makeOFREP()
        defer { app.close() }
        let beta = try await app.evaluate(
            "plugin_switch_beta_search", context: #"{"targetingKey": "u1", "cohorts": ["beta"]}"#)
        #expect(beta.json["value"] == .bool(true))
        #expect(beta.json["reason"] == .string("TARGETING_MATCH"))
        #expect(beta.json["metadata"]?["rule"] == .int(0))
        // Switchyard's DEFAULT (no rule held) is not in OFREP's reason list: it goes out as STATIC.
        let other = try await app.evaluate("plugin_switch_beta_search", context: #"{"targetingKey": "u1"}"#)
        #expect(other.json["value"] == .bool(false))
        #expect(other.json["reason"] == .string("STATIC"))
        #expect(other.json["variant"] == .string("off"))
    }

    @Test func experimentFlagsAnswerWithTheirTypedValuesAndFloatsKeepTheirDecimalPoint() async throws {
        let app = try await TestApp.makeOFREP()
        defer { app.close() }
        let expected: [(String, String, String)] = [
            ("exp_boolean", #""value":true"#, "treatment"), ("exp_string", #""value":"Buy now""#, "bold"),
            ("exp_integer", #""value":42,"#, "large"), ("exp_float", #""value":2.5,"#, "high"),
            ("exp_float_whole", #""value":1.0,"#, "one"),
            ("exp_object", #""value":{"color":"blue","ratio":1.0,"size":3,"tags":["a","b"]}"#, "blue"),
        ]
        for (key, value, variant) in expected {
            let response = try await app.evaluate(key, context: #"{"targetingKey": "u1"}"#)
            #expect(response.status == .ok, "\(key): \(response.text)")
            #expect(response.text.contains(value), "\(key): \(response.text)")
            #expect(response.json["variant"] == .string(variant), "\(key)")
            #expect(response.json["reason"] == .string("TARGETING_MATCH"), "\(key)")
        }
    }

    @Test func aWeightedExperimentIsASplitWithTheCoresBucket() async throws {
        let app = try await TestApp.makeOFREP()
        defer { app.close() }
        for unit in ["u1", "u2", "u3", "rider-42"] {
            let response = try await app.evaluate("exp_split", context: #"{"targetingKey": "\#(unit)"}"#)
            let hash = Bucketing.hash(flagKey: "exp_split", unitId: unit)
            let variant = Bucketing.weightPoint(hash: hash, totalWeight: 2) < 1 ? "a" : "b"
            #expect(response.json["reason"] == .string("SPLIT"))
            #expect(response.json["variant"] == .string(variant), "\(unit)")
            #expect(response.json["value"] == .string(variant == "a" ? "Variant A" : "Variant B"))
            #expect(response.json["metadata"]?["bucket"] == .int(Bucketing.bucket(hash: hash)))
        }
    }

    @Test func aKilledOrDisabledSwitchIsARealFalse() async throws {
        let app = try await TestApp.makeOFREP()
        defer { app.close() }
        let killed = try await app.evaluate("plugin_switch_killed", context: #"{"targetingKey": "u1"}"#)
        #expect(killed.status == .ok)
        #expect(killed.json["value"] == .bool(false))
        #expect(killed.json["variant"] == .string("off"))
        #expect(killed.json["reason"] == .string("DISABLED"))
        #expect(killed.json["metadata"]?["kill_switch"] == .string("kill_legacy"))
        let disabled = try await app.evaluate("plugin_switch_disabled")
        #expect(disabled.json["value"] == .bool(false))
        #expect(disabled.json["reason"] == .string("DISABLED"))
    }

    @Test func aKilledExperimentLeavesTheValueOutForTheCodeDefaultAndNamesItsDefaultVariant() async throws {
        let app = try await TestApp.makeOFREP()
        defer { app.close() }
        let response = try await app.evaluate("exp_killed", context: #"{"targetingKey": "u1"}"#)
        #expect(response.status == .ok)
        #expect(response.memberKeys == ["key", "metadata", "reason", "variant"])
        #expect(!response.text.contains("null"))
        #expect(response.json["reason"] == .string("DISABLED"))
        #expect(response.json["variant"] == .string("control"))
        #expect(response.json["metadata"]?["code_default"] == .bool(true))
    }

    @Test func theContextMapsCityPlatformAppVersionAndCohortsInEitherForm() async throws {
        let app = try await TestApp.makeOFREP()
        defer { app.close() }
        let cases: [(String, Bool)] = [
            (#"{"targetingKey": "u1", "city": "paris", "platform": "ios", "appVersion": "5.1.0"}"#, true),
            (#"{"city": "paris", "platform": "ios", "appVersion": "5.0.0", "email": "a@b.c", "age": 40}"#, true),
            (#"{"targetingKey": "u1", "city": "paris", "platform": "ios", "appVersion": "4.9.9"}"#, false),
            (#"{"targetingKey": "u1", "city": "paris", "platform": "android", "appVersion": "5.1.0"}"#, false),
            (#"{"targetingKey": "u1", "city": "berlin", "platform": "ios", "appVersion": "5.1.0"}"#, false),
            (#"{"targetingKey": "u1", "city": "paris", "platform": "ios"}"#, false),
        ]
        for (context, on) in cases {
            let response = try await app.evaluate("plugin_switch_city_maps", context: context)
            #expect(response.json["value"] == .bool(on), "\(context): \(response.text)")
        }
        for context in [
            #"{"cohort": "beta"}"#, #"{"cohorts": "beta"}"#, #"{"cohorts": ["staff", "beta"]}"#,
            #"{"cohort": ["beta"]}"#, #"{"cohort": "staff", "cohorts": ["beta"]}"#,
        ] {
            let response = try await app.evaluate("plugin_switch_beta_search", context: context)
            #expect(response.json["value"] == .bool(true), "\(context)")
        }
        let notBeta = try await app.evaluate(
            "plugin_switch_beta_search", context: #"{"cohorts": ["staff"], "targetingKey": null}"#)
        #expect(notBeta.json["value"] == .bool(false))
    }

    @Test func anEmptyContextEvaluatesWhatNeedsNoBucket() async throws {
        let app = try await TestApp.makeOFREP()
        defer { app.close() }
        for body in [#"{"context": {}}"#, "{}", "", #"{"context": null}"#, #"{"context": {"targetingKey": ""}}"#] {
            let response = try await app.send(
                .post, "/ofrep/v1/evaluate/flags/plugin_switch_banner", token: "client", body: body)
            #expect(response.status == .ok, "\(body): \(response.text)")
            #expect(response.json["value"] == .bool(true))
        }
        let experiment = try await app.evaluate("exp_string")
        #expect(experiment.json["value"] == .string("Buy now"))
    }

    @Test func aMissingTargetingKeyFailsOnlyWhereABucketIsNeeded() async throws {
        let app = try await TestApp.makeOFREP()
        defer { app.close() }
        for key in ["plugin_switch_half", "exp_split"] {
            for context in ["{}", #"{"targetingKey": ""}"#, #"{"city": "paris"}"#] {
                let response = try await app.evaluate(key, context: context)
                #expect(response.status == .badRequest, "\(key) \(context)")
                #expect(response.memberKeys == ["errorCode", "errorDetails", "key"])
                #expect(response.json["key"] == .string(key))
                #expect(response.json["errorCode"] == .string("TARGETING_KEY_MISSING"))
                #expect(response.json["errorDetails"]?.stringValue?.contains("targetingKey") == true)
            }
            let withKey = try await app.evaluate(key, context: #"{"targetingKey": "u1"}"#)
            #expect(withKey.status == .ok)
            #expect(withKey.json["reason"] == .string("SPLIT"))
        }
    }

    @Test func anUnknownFlagIs404FlagNotFoundWithDetails() async throws {
        let app = try await TestApp.makeOFREP()
        defer { app.close() }
        let response = try await app.evaluate("plugin_switch_nope", context: #"{"targetingKey": "u1"}"#)
        #expect(response.status == .notFound)
        #expect(response.headers[.contentType] == "application/json")
        #expect(response.json["key"] == .string("plugin_switch_nope"))
        #expect(response.json["errorCode"] == .string("FLAG_NOT_FOUND"))
        #expect(response.json["errorDetails"]?.stringValue?.contains("namespace 'shop'") == true)
    }

    @Test func thePathIsPercentDecoded() async throws {
        let app = try await TestApp.makeOFREP()
        defer { app.close() }
        let response = try await app.evaluate("plugin%5Fswitch%5Fbanner")
        #expect(response.status == .ok)
        #expect(response.json["key"] == .string("plugin_switch_banner"))
        let missing = try await app.evaluate("plugin%20switch")
        #expect(missing.status == .notFound)
        #expect(missing.json["key"] == .string("plugin switch"))
    }

    @Test(arguments: [
        ("not json", "PARSE_ERROR", "not valid JSON"),
        ("[1, 2]", "PARSE_ERROR", "must be a JSON object"),
        (#"{"context": "user-1"}"#, "INVALID_CONTEXT", "context must be an object, not a string"),
        (
            #"{"context": {"targetingKey": 42}}"#, "INVALID_CONTEXT",
            "context.targetingKey must be a string, not an integer"
        ),
        (#"{"context": {"city": ["paris"]}}"#, "INVALID_CONTEXT", "context.city must be a string"),
        (#"{"context": {"cohorts": ["beta", 7]}}"#, "INVALID_CONTEXT", "context.cohorts[1] must be a string"),
        (#"{"context": {"cohort": true}}"#, "INVALID_CONTEXT", "context.cohort must be a string or a list of strings"),
        (#"{"context": {"appVersion": 5}}"#, "INVALID_CONTEXT", "context.appVersion must be a string"),
    ])
    func aMalformedBodyIs400WithTheFieldAtFault(body: String, code: String, details: String) async throws {
        let app = try await TestApp.makeOFREP()
        defer { app.close() }
        for path in ["/ofrep/v1/evaluate/flags/plugin_switch_banner", "/ofrep/v1/evaluate/flags"] {
            let response = try await app.send(.post, path, token: "client", body: body)
            #expect(response.status == .badRequest, "\(path): \(response.text)")
            #expect(response.headers[.contentType] == "application/json")
            #expect(response.json["errorCode"] == .string(code))
            #expect(response.json["errorDetails"]?.stringValue?.contains(details) == true, "\(response.text)")
            #expect((response.json["key"] != nil) == path.hasSuffix("banner"))
        }
    }

    @Test func undeclaredMethodsAre405WithAnOFREPBody() async throws {
        let app = try await TestApp.makeOFREP()
        defer { app.close() }
        for path in ["/ofrep/v1/evaluate/flags", "/ofrep/v1/evaluate/flags/plugin_switch_banner"] {
            for method in [HTTPRequest.Method.get, .put, .delete, .patch, .options] {
                let response = try await app.send(method, path, token: "client")
                #expect(response.status == .methodNotAllowed, "\(method) \(path)")
                #expect(response.headers[.allow] == "POST")
                #expect(response.headers[.contentType] == "application/json")
                #expect(response.json["errorCode"] == .string("GENERAL"))
                #expect(response.json["errorDetails"]?.stringValue?.contains("use POST") == true)
            }
        }
        let unknown = try await app.send(.post, "/ofrep/v1/evaluate", token: "client")
        #expect(unknown.status == .notFound)
        #expect(unknown.headers[.contentType] == "application/json")
    }
}
