import SwitchyardCore
import SwitchyardWire
import Testing

/// The bodies flagsd writes read back as written, and a body of another shape fails naming the member at fault.
struct WireBodiesTests {
    static let version = SnapshotVersion(epoch: "9f2c", version: 41)

    @Test func bodiesReadBackAsWritten() throws {
        let namespace = NamespaceBody(name: "rider", epoch: "9f2c", version: 41, reasonPolicy: .always,
                                      createdAt: "2026-11-26T04:00:00.000Z", updatedAt: "2026-11-26T04:10:00.000Z",
                                      summary: .init(description: "Rider app", counts: .init(flags: 3, pluginPoints: 1, killSwitches: 2)))
        #expect(try NamespaceBody(json: namespace.json) == namespace)
        #expect(namespace.json["etag"] == .string("\"9f2c.41\""))

        let change = ChangeEntryBody(version: 41, time: "2026-11-26T04:10:00.000Z", actor: "bob", source: "cli", reason: nil,
                                     summary: "disable plugin_switch_feed_promos",
                                     changes: [.object(JSONObject([("kind", .string("flag")), ("key", .string("plugin_switch_feed_promos")),
                                                                   ("before", .null), ("after", .null)]))], evidence: nil)
        #expect(try ChangeEntryBody(json: change.json) == change)
        #expect(change.objects.map(\.key) == ["plugin_switch_feed_promos"])

        let committed = CommittedBody(namespace: "rider", version: Self.version, changed: true, change: change,
                                      extra: ["rule": .int(1)])
        #expect(try CommittedBody(json: committed.json) == committed)
        let unchanged = CommittedBody(namespace: "rider", version: Self.version, changed: false, change: nil)
        #expect(try CommittedBody(json: unchanged.json) == unchanged)

        let audit = AuditEntryBody(id: 7, time: "2026-11-26T04:10:00.000Z", actor: "bob", source: "cli", action: "change",
                                   namespace: "rider", version: 41, reason: "INC-1", summary: "s", changes: [], evidence: nil)
        #expect(try AuditEntryBody(json: audit.json) == audit)
        let token = TokenBody(id: "t1", name: "app", role: "client", namespaces: ["rider"], ratePerMinute: nil,
                              createdAt: "2026-11-26T04:10:00.000Z", createdBy: "admin", revokedAt: nil, secret: "s3cr3t")
        #expect(try TokenBody(json: token.json) == token)

        let flagSet = FlagSet(namespace: "rider", description: "Rider app")
        #expect(try FlagSetBody(json: FlagSetBody(version: Self.version, flagSet: flagSet).json) == FlagSetBody(version: Self.version, flagSet: flagSet))
    }

    @Test func anotherShapeFailsNamingTheMember() throws {
        var object = try #require(NamespaceBody(name: "rider", epoch: "e", version: 1, reasonPolicy: .kills, createdAt: "t",
                                                updatedAt: "t").json.objectValue)
        object["version"] = .string("1")
        let wrongType = #expect(throws: WireError.self) { try NamespaceBody(json: .object(object)) }
        #expect(wrongType?.message == "namespace: version is missing or not an integer")

        let mismatched = JSONValue.object(JSONObject([("version", .int(2)), ("etag", .string("\"e.1\"")),
                                                      ("flag_set", .object(FlagSet(namespace: "rider").tree(unit: .basisPoints)))]))
        let disagreement = #expect(throws: WireError.self) { try FlagSetBody(json: mismatched) }
        #expect(disagreement?.message == "flag set document: version and etag disagree")
        #expect(throws: WireError.self) { try CommittedBody(json: .array([])) }
        // A policy this reader does not know reads as the default.
        object["version"] = .int(1)
        object["reason_policy"] = .string("sometimes")
        #expect(try NamespaceBody(json: .object(object)).reasonPolicy == .kills)
    }
}
