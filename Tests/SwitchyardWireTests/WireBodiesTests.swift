import SwitchyardCore
import SwitchyardWire
import Testing

/// The bodies flagsd writes read back as written, and a body of another shape fails naming the member at fault.
struct WireBodiesTests {
    static let version = SnapshotVersion(epoch: "9f2c", version: 41)

    @Test func bodiesReadBackAsWritten() throws {
        let namespace = NamespaceBody(
            name: "rider", epoch: "9f2c", version: 41, reasonPolicy: .always,
            createdAt: "2026-11-26T04:00:00.000Z", updatedAt: "2026-11-26T04:10:00.000Z",
            summary: .init(description: "Rider app", counts: .init(flags: 3, pluginPoints: 1, killSwitches: 2)))
        #expect(try NamespaceBody(json: namespace.json) == namespace)
        #expect(namespace.json["etag"] == .string("\"9f2c.41\""))

        for health in [
            HealthBody(status: "ok"), HealthBody(status: "ready", database: "ok"),
            HealthBody(
                status: "degraded", database: "unavailable", namespaces: 3, detail: "the database does not answer"),
        ] {
            #expect(try HealthBody(json: health.json) == health)
        }

        let change = ChangeEntryBody(
            version: 41, time: "2026-11-26T04:10:00.000Z", actor: "bob", source: "cli", reason: nil,
            summary: "disable plugin_switch_feed_promos",
            changes: [
                .object(
                    JSONObject([
                        ("kind", .string("flag")), ("key", .string("plugin_switch_feed_promos")),
                        ("before", .null), ("after", .null),
                    ]))
            ], evidence: nil)
        #expect(try ChangeEntryBody(json: change.json) == change)
        #expect(change.objects.map(\.key) == ["plugin_switch_feed_promos"])

        let promos = FlagDefinition(
            key: "plugin_switch_feed_promos", owner: "growth",
            kind: .pluginSwitch(
                PluginSwitchDefinition(
                    rules: [
                        SwitchRule(
                            name: "old iOS",
                            conditions: Conditions(
                                platforms: ["ios"], versions: [.os: VersionRange(below: SemanticVersion("16"))]),
                            rollout: .full)
                    ], rollout: Rollout(basisPoints: 1250)!)))
        let kill = KillSwitch(
            key: "kill_home_feed", description: "Home feed", members: [],
            entries: [Scope(cities: ["lagos"]), Scope(cohorts: ["beta"])])
        let flagSet = FlagSet(
            namespace: "rider", description: "Rider app",
            pluginPoints: [
                PluginPointDefinition(name: "home_feed", killSwitch: "kill_home_feed", switches: [promos.key])
            ],
            killSwitches: [KillSwitch(key: KillSwitch.masterKey), kill], flags: [promos])
        let committed = CommittedBody(
            namespace: "rider", version: Self.version, changed: true, change: change,
            flag: FlagBody(promos, in: flagSet), killSwitch: KillSwitchBody(kill, in: flagSet), rule: .rule(1))
        #expect(try CommittedBody(json: committed.json) == committed)
        #expect(committed.json["flag"]?["plugin_point"] == .string("home_feed"))
        #expect(committed.json["kill_switch"]?["members"] == .array([.string(promos.key)]))
        var rolledOut = committed
        rolledOut.rule = .defaultRollout
        #expect(rolledOut.json["rule"] == .null)
        #expect(try CommittedBody(json: rolledOut.json) == rolledOut)
        let fullPage = ChangePageBody(
            namespace: "rider", epoch: "9f2c", version: 41, changes: .full([change]), nextAfter: 41)
        #expect(try ChangePageBody(json: fullPage.json) == fullPage)
        let clientPage = ChangePageBody(
            namespace: "rider", epoch: "9f2c", version: 41,
            changes: .client([ClientChangeEntryBody(version: 41, time: change.time, changes: change.changes)]),
            nextAfter: 41)
        #expect(try ChangePageBody(json: clientPage.json) == clientPage)
        #expect(clientPage.json["changes"]?.arrayValue?.first?["actor"] == nil)
        let unchanged = CommittedBody(namespace: "rider", version: Self.version, changed: false, change: nil)
        #expect(unchanged.json["rule"] == nil)
        #expect(try CommittedBody(json: unchanged.json) == unchanged)

        let audit = AuditEntryBody(
            id: 7, time: "2026-11-26T04:10:00.000Z", actor: "bob", source: "cli", action: "change",
            namespace: "rider", version: 41, reason: "INC-1", summary: "s", changes: [], evidence: nil)
        #expect(try AuditEntryBody(json: audit.json) == audit)
        let token = TokenBody(
            id: "t1", name: "app", role: "client", namespaces: ["rider"], ratePerMinute: nil,
            createdAt: "2026-11-26T04:10:00.000Z", createdBy: "admin", revokedAt: nil, secret: "s3cr3t")
        #expect(try TokenBody(json: token.json) == token)
        let tokens = ListBody(items: [token])
        #expect(try ListBody<TokenBody>(json: tokens.json) == tokens)
        #expect(tokens.json["namespace"] == nil)
        let flags = ListBody(items: [FlagBody(promos, in: flagSet)], namespace: ("rider", 41))
        #expect(try ListBody<FlagBody>(json: flags.json) == flags)
        #expect(flags.json["version"] == .int(41))
        let kills = ListBody(items: [KillSwitchBody(kill, in: flagSet)], namespace: ("rider", 41))
        #expect(try ListBody<KillSwitchBody>(json: kills.json) == kills)
        #expect(throws: WireError.self) { try ListBody<FlagBody>(json: kills.json) }
        let page = AuditPageBody(entries: [audit], nextCursor: 6)
        #expect(try AuditPageBody(json: page.json) == page)
        #expect(try AuditPageBody(json: AuditPageBody(entries: [], nextCursor: nil).json).nextCursor == nil)

        #expect(
            try FlagSetBody(json: FlagSetBody(version: Self.version, flagSet: flagSet).json)
                == FlagSetBody(version: Self.version, flagSet: flagSet))
    }

    @Test func problemsReadBackAsWrittenAndAnotherServersDocumentStillGivesItsDetail() throws {
        let conflict = ProblemBody(
            slug: "version-conflict", title: "The namespace changed since your view", status: 409,
            detail: "namespace 'rider' is at version 42, not 41", instance: "/v1/namespaces/rider/flags/x/disable",
            requestID: "c6d3988df224d97b",
            conflict: .init(currentVersion: 42, currentEntityTag: "\"9f2c.42\"", changedBy: "bob", changedAt: nil))
        #expect(try ProblemBody(json: conflict.json) == conflict)
        #expect(conflict.json["type"] == .string("urn:switchyard:problem:version-conflict"))
        #expect(conflict.json["changed_at"] == .null)
        let invalid = ProblemBody(
            slug: "invalid-request", title: "The request is invalid", status: 400, detail: "name: is required",
            instance: "/v1/tokens", errors: [.init(path: "name", message: "is required")])
        #expect(try ProblemBody(json: invalid.json) == invalid)
        #expect(invalid.json["current_version"] == nil && invalid.json["request_id"] == nil)
        let foreign = try ProblemBody(
            json: .object(JSONObject([("type", .string("about:blank")), ("detail", .string("upstream timed out"))])))
        #expect(foreign.slug == "about:blank" && foreign.detail == "upstream timed out" && foreign.status == 0)
        #expect(throws: WireError.self) { try ProblemBody(json: .object(JSONObject([("detail", .string("x"))]))) }
    }

    @Test func anotherShapeFailsNamingTheMember() throws {
        var object = try #require(
            NamespaceBody(
                name: "rider", epoch: "e", version: 1, reasonPolicy: .kills, createdAt: "t",
                updatedAt: "t"
            ).json.objectValue)
        object["version"] = .string("1")
        let wrongType = #expect(throws: WireError.self) { try NamespaceBody(json: .object(object)) }
        #expect(wrongType?.message == "namespace: version is missing or not an integer")

        let mismatched = JSONValue.object(
            JSONObject([
                ("version", .int(2)), ("etag", .string("\"e.1\"")),
                ("flag_set", .object(FlagSet(namespace: "rider").tree(unit: .basisPoints))),
            ]))
        let disagreement = #expect(throws: WireError.self) { try FlagSetBody(json: mismatched) }
        #expect(disagreement?.message == "flag set document: version and etag disagree")
        #expect(throws: WireError.self) { try CommittedBody(json: .array([])) }
        var answer = try #require(
            CommittedBody(namespace: "rider", version: Self.version, changed: true, change: nil).json.objectValue)
        answer["flag"] = .object(
            JSONObject([
                ("key", .string("plugin_switch_a")), ("type", .string("plugin_switch")), ("rollout", .int(20_000)),
                ("kill_switches", .array([])),
            ]))
        let badFlag = #expect(throws: WireError.self) { try CommittedBody(json: .object(answer)) }
        #expect(
            badFlag?.message.hasPrefix("flag plugin_switch_a: rollout: 20000") == true, "\(String(describing: badFlag))"
        )
        answer["flag"] = nil
        answer["rule"] = .string("first")
        let badRule = #expect(throws: WireError.self) { try CommittedBody(json: .object(answer)) }
        #expect(badRule?.message == "change answer: rule is not a rule's index")
        // A policy this reader does not know reads as the default.
        object["version"] = .int(1)
        object["reason_policy"] = .string("sometimes")
        #expect(try NamespaceBody(json: .object(object)).reasonPolicy == .kills)
    }

    /// The crash guard's bodies: each reads back as written (the evidence's policy typed), the status and evidence
    /// leave out the verdict members their schemas leave out, and a body of another shape fails naming the member.
    @Test func crashGuardBodiesReadBackAsWrittenAndNameTheMemberAtFault() throws {
        let time = "2026-11-26T04:10:00.000Z"
        let check = GuardCheckBody(
            sessions: 1228, crashes: 61, crashRate: 0.04967, lowerBound: 0.03375, threshold: 0.02,
            baselineRate: 0.01, baselineDifferenceLower: 0.001, bound: 0.02, exceeds: true, shortfall: [],
            units: 1190, addresses: 1043, leftOut: ["plugin_switch_map_traffic"])
        let evidence = GuardEvidenceBody(
            rule: "wilson-lower-bound", key: "plugin_switch_feed_promos", source: "client",
            scope: Scope(cities: ["lagos"]), scopeText: "city lagos", window: "10m", from: time, until: time,
            check: check, confidence: 0.999, attribution: "baseline", complement: check,
            policy: CrashGuardPolicy.builtIn.policy, proposedBecause: "budget")
        #expect(try GuardEvidenceBody(json: evidence.json) == evidence)
        #expect(
            evidence.json["exceeds"] == nil && evidence.json["shortfall"] == nil
                && evidence.json["complement"]?["exceeds"] == .bool(true))
        #expect(evidence.json["policy"]?["cooldown"] == .string("30m"))
        #expect(try GuardEvidenceBody(json: evidence.json).policy.cooldown == .seconds(1800))

        let trip = GuardTripBody(
            key: "plugin_switch_feed_promos", scope: Scope(cities: ["lagos"]), version: 42, time: time,
            actor: "crash-guard",
            automatic: true, proposal: nil, reason: "crash guard: …", evidence: evidence,
            reenabled: .init(version: 43, time: time, actor: "ada", deleted: false), inForce: false)
        #expect(try GuardTripBody(json: trip.json) == trip)
        let proposal = GuardProposalBody(
            id: 7, key: "plugin_switch_feed_promos", scope: .everywhere, scopeText: "everywhere", time: time,
            state: "dismissed", proposedBecause: "budget", reason: nil, evidence: evidence,
            apply: "flagctl guard apply 7 -n rider", dismissed: .init(time: time, actor: "ada", reason: "farm"))
        let status = GuardSwitchStatusBody(
            key: "plugin_switch_feed_promos", state: "tripped", source: "client", check: check, window: "10m",
            from: time, until: time,
            disabled: false, disabledScopes: [Scope(cities: ["lagos"])], coolingDownUntil: nil,
            wouldTrip: .init(scope: Scope(cohorts: ["beta"]), scopeText: "cohort beta"),
            scopes: [.init(kind: "city", value: "lagos", check: check)],
            sources: [.init(source: "client", mayTrip: true, check: check)],
            openTrips: [trip], openProposals: [7], lastTrip: trip, policy: CrashGuardPolicy.builtIn.policy)
        #expect(status.json["exceeds"] == nil && status.json["shortfall"] == .array([]))
        #expect(
            status.json["scopes"]?.arrayValue?.first?["shortfall"] == nil
                && status.json["scopes"]?.arrayValue?.first?["exceeds"] == .bool(true))
        let overview = GuardOverviewBody(
            namespace: "rider", version: 42, time: time, rule: "wilson-lower-bound", maximumTripsPerHour: 3,
            tripsLastHour: 1, maximumScopedTripsPerHour: 5, scopedTripsLastHour: 5, proposals: [proposal],
            switches: [status])
        #expect(try GuardOverviewBody(json: overview.json) == overview)
        #expect(overview.json["budget"]?["remaining"] == .int(2))
        #expect(overview.json["budget"]?["scoped_remaining"] == .int(0))
        let dismissal = GuardDismissalBody(namespace: "rider", dismissed: true, proposal: proposal, auditID: 8)
        #expect(try GuardDismissalBody(json: dismissal.json) == dismissal)

        var object = try #require(evidence.json.objectValue)
        object["window"] = nil
        let missing = #expect(throws: WireError.self) { try GuardEvidenceBody(json: .object(object)) }
        #expect(missing?.message == "crash guard evidence: window is missing or not a string")
        object["window"] = .string("10m")
        object["policy"] = .object(JSONObject([("cooldown", .string("soon"))]))
        let policy = #expect(throws: WireError.self) { try GuardEvidenceBody(json: .object(object)) }
        #expect(
            policy?.message.hasPrefix("crash guard evidence: policy: cooldown: 'soon' is not a duration") == true,
            "\(policy?.message ?? "")")
        var trips = try #require(GuardTripsBody(namespace: "rider", version: 42, trips: [trip]).json.objectValue)
        trips["trips"] = .array([.object(JSONObject([("switch", .string("x"))]))])
        let shape = #expect(throws: WireError.self) { try GuardTripsBody(json: .object(trips)) }
        #expect(shape?.message == "crash guard trip: scope is missing")
    }
}
