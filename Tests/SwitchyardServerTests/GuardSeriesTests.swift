import SwitchyardCore
import SwitchyardGuard
import SwitchyardStorage
import Testing

@testable import SwitchyardServer

/// The crash guard's per-switch series as a scrape reads them (`GuardSeries`): what the metrics registry wrote for
/// them before, from assessments made by the guard's own rule.
struct GuardSeriesTests {
    static let policy = CrashGuardPolicy.resolved(
        namespace: CrashGuardPolicy(
            minimumSessions: 100, minimumCrashes: 5, maximumCrashRate: Rollout(basisPoints: 200)), switch: nil)

    static func assessment(_ key: String, sessions: Int64, crashes: Int64) -> GuardAssessment {
        var tallies = SwitchTallies()
        tallies.withSwitch[.all] = EventTally(sessions: sessions, crashedSessions: crashes)
        return GuardRule.assess(
            key: key, tallies: tallies, policy: policy, gate: PluginSwitchDefinition(rollout: .full))
    }

    static func text(_ series: GuardSeries) -> String {
        var buffer: [UInt8] = []
        series.write(into: &buffer)
        return String(decoding: buffer, as: UTF8.self)
    }

    @Test func eachSwitchHasItsWindowGaugesAndTripCountersThatStartAtZeroAndKeepTheirCounts() throws {
        let series = GuardSeries()
        let feed = Self.assessment("plugin_switch_feed_promos", sessions: 2000, crashes: 100)
        series.record("rider", [feed, Self.assessment("plugin_switch_split_fare", sessions: 0, crashes: 0)])
        var text = Self.text(series)
        #expect(
            text.contains(
                #"switchyard_guard_window_sessions{namespace="rider",switch="plugin_switch_feed_promos"} 2000.0"#))
        #expect(
            text.contains(
                #"switchyard_guard_window_crashes{namespace="rider",switch="plugin_switch_feed_promos"} 100.0"#))
        #expect(
            text.contains(
                #"switchyard_guard_crash_rate_bound{namespace="rider",switch="plugin_switch_feed_promos"} \#(feed.overall.bound)"#
            ))
        #expect(
            text.contains(#"switchyard_guard_window_sessions{namespace="rider",switch="plugin_switch_split_fare"} 0.0"#)
        )
        let scopes = ["global"] + Self.policy.scopeBy.map(\.rawValue)
        for scope in scopes {
            #expect(
                text.contains(
                    #"switchyard_guard_trips_total{namespace="rider",switch="plugin_switch_split_fare",scope="\#(scope)"} 0"#
                ))
        }

        series.countTrip(in: "rider", key: "plugin_switch_feed_promos", scope: "global")
        // A later refresh updates the values and keeps the count.
        series.record("rider", [Self.assessment("plugin_switch_feed_promos", sessions: 10, crashes: 0)])
        text = Self.text(series)
        #expect(
            text.contains(
                #"switchyard_guard_trips_total{namespace="rider",switch="plugin_switch_feed_promos",scope="global"} 1"#)
        )
        #expect(
            text.contains(
                #"switchyard_guard_window_sessions{namespace="rider",switch="plugin_switch_feed_promos"} 10.0"#))

        // One TYPE line per family, before its samples; every other line a sample of the family above it.
        var family = ""
        var families: [String] = []
        for line in text.split(separator: "\n") {
            if line.hasPrefix("# TYPE ") {
                family = String(line.split(separator: " ")[2])
                families.append(family)
            } else {
                #expect(line.hasPrefix(family + "{"), "\(line) is not of \(family)")
            }
        }
        #expect(families == GuardSeries.windowNames + [GuardSeries.tripsName])
    }
}
