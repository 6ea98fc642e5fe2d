import Foundation
import HTTPTypes
import SwitchyardCore
import SwitchyardStorage
import Testing

@testable import SwitchyardServer

/// `POST /ofrep/v1/evaluate/flags`: every flag for one context, with an ETag of the result and 304 while it holds.
struct OFREPBulkTests {
    @Test func everyFlagIsEvaluatedAndOnesNeedingABucketFailAlone() async throws {
        let app = try await TestApp.makeOFREP()
        defer { app.close() }
        let response = try await app.evaluateAll(context: #"{"city": "paris"}"#)
        #expect(response.status == .ok)
        #expect(response.headers[.contentType] == "application/json")
        let flags = try #require(response.json["flags"]?.arrayValue)
        let shop = try OFREPFixtures.shop()
        #expect(
            flags.compactMap { $0["key"]?.stringValue } == shop.flags.map(\.key).sorted(),
            "every flag, in the snapshot's order (by key)")
        #expect(response.json["metadata"]?["namespace"] == .string("shop"))
        let byKey = Dictionary(uniqueKeysWithValues: flags.map { ($0["key"]?.stringValue ?? "", $0) })
        for key in ["plugin_switch_half", "exp_split"] {
            #expect(byKey[key]?.objectValue?.memberKeys.sorted() == ["errorCode", "errorDetails", "key"])
            #expect(byKey[key]?["errorCode"] == .string("TARGETING_KEY_MISSING"))
        }
        #expect(byKey["plugin_switch_banner"]?["value"] == .bool(true))
        #expect(byKey["plugin_switch_banner"]?["variant"] == .string("on"))
        #expect(byKey["plugin_switch_killed"]?["reason"] == .string("DISABLED"))
        #expect(byKey["exp_killed"]?["value"] == nil)
        #expect(byKey["exp_killed"]?["variant"] == .string("control"))
        #expect(response.text.contains(#""value":1.0"#))
        #expect(!response.text.contains("null"))

        let withUnit = try await app.evaluateAll(context: #"{"targetingKey": "u1"}"#)
        let items = try #require(withUnit.json["flags"]?.arrayValue)
        #expect(items.allSatisfy { $0["errorCode"] == nil })
        #expect(items.allSatisfy { $0["variant"]?.stringValue != nil && $0["reason"]?.stringValue != nil })
    }

    @Test func theSingleAndBulkEvaluationsAgree() async throws {
        let app = try await TestApp.makeOFREP()
        defer { app.close() }
        let context =
            #"{"targetingKey": "rider-7", "cohorts": ["beta"], "city": "paris", "platform": "ios", "appVersion": "5.2.0"}"#
        let bulk = try await app.evaluateAll(context: context)
        for item in bulk.json["flags"]?.arrayValue ?? [] {
            let key = try #require(item["key"]?.stringValue)
            let single = try await app.evaluate(key, context: context)
            #expect(single.json["value"] == item["value"], "\(key)")
            #expect(single.json["variant"] == item["variant"], "\(key)")
            #expect(single.json["reason"] == item["reason"], "\(key)")
        }
    }

    @Test func ifNoneMatchWithTheETagIs304UntilTheResultForThatContextChanges() async throws {
        let app = try await TestApp.makeOFREP()
        defer { app.close() }
        let context = #"{"targetingKey": "u1", "cohorts": ["staff"]}"#
        let first = try await app.evaluateAll(context: context)
        let tag = try #require(first.headers[.eTag])
        #expect(tag.hasPrefix("\"") && tag.hasSuffix("\"") && tag.count == 34)
        for header in [tag, "W/\(tag)", "\"other\", \(tag)", "*"] {
            let again = try await app.evaluateAll(context: context, headers: [.ifNoneMatch: header])
            #expect(again.status == .notModified, "\(header)")
            #expect(again.body.isEmpty)
            #expect(again.headers[.eTag] == tag)
        }
        #expect(try await app.evaluateAll(context: context, headers: [.ifNoneMatch: "\"stale\""]).status == .ok)

        // A change that does not alter this context's result keeps the tag: a rule for another cohort.
        let author = ChangeRequest(author: ChangeAuthor(actor: "test", source: .api))
        _ = try await app.server.context.service.change("shop", author) { flagSet in
            var flagSet = flagSet
            let index = try #require(flagSet.flags.firstIndex { $0.key == "plugin_switch_beta_search" })
            flagSet.flags[index].pluginSwitch?.rules.append(
                SwitchRule(conditions: Conditions(cohorts: ["vip"]), rollout: .full))
            return flagSet
        }
        #expect(try await app.evaluateAll(context: context, headers: [.ifNoneMatch: tag]).status == .notModified)
        let vip = try await app.evaluateAll(
            context: #"{"targetingKey": "u1", "cohorts": ["vip"]}"#, headers: [.ifNoneMatch: tag])
        #expect(vip.status == .ok)
        #expect(vip.headers[.eTag] != tag)

        // A change that does alter it changes the tag.
        let disabled = try await app.send(
            .post, "/v1/namespaces/shop/flags/plugin_switch_banner/disable", token: "editor",
            body: #"{"reason": "test"}"#)
        #expect(disabled.status == .ok, "\(disabled.text)")
        let changed = try await app.evaluateAll(context: context, headers: [.ifNoneMatch: tag])
        #expect(changed.status == .ok)
        #expect(changed.headers[.eTag] != tag)
        let item = changed.json["flags"]?.arrayValue?.first { $0["key"] == .string("plugin_switch_banner") }
        #expect(item?["value"] == .bool(false))
        #expect(
            try await app.evaluateAll(context: context, headers: [.ifNoneMatch: changed.headers[.eTag]!]).status
                == .notModified)
    }

    @Test func contextsWithTheSameResultShareATagAndOthersDoNot() async throws {
        let app = try await TestApp.makeOFREP()
        defer { app.close() }
        let a = try await app.evaluateAll(context: #"{"targetingKey": "u1"}"#)
        let same = try await app.evaluateAll(context: #"{"targetingKey": "u1", "email": "a@b.c"}"#)
        let beta = try await app.evaluateAll(context: #"{"targetingKey": "u1", "cohort": "beta"}"#)
        #expect(a.headers[.eTag] == same.headers[.eTag])
        #expect(a.headers[.eTag] != beta.headers[.eTag])
    }
}
