public import Foundation
public import SwitchyardClient
public import SwitchyardCore

/// Flag sets and snapshots for client tests.
public enum Fixtures {
    public static let epoch = "epoch-1"

    /// The rider namespace of the tests: two plugin points and their switches.
    ///
    /// - `home_feed` (group kill switch `kill_home_feed`): `plugin_switch_feed_promos`, `plugin_switch_feed_news`.
    /// - `checkout` (group kill switch `kill_checkout`): `plugin_switch_split_fare`, `plugin_switch_tipping`.
    /// - Experiment `exp_checkout_copy`: string variants `control` / `treatment`.
    ///
    /// - Parameters:
    ///   - on: the switches at 100 %; every other one at 0 %.
    ///   - masterKilled: whether the master kill switch kills everywhere.
    ///   - killedGroups: group kill switches that kill everywhere.
    public static func flagSet(
        namespace: String = "rider", on: Set<String> = [], masterKilled: Bool = false,
        killedGroups: Set<String> = [], disabled: Set<String> = [],
        experimentWeights: VariantWeights = ["control": 50, "treatment": 50]
    ) -> FlagSet {
        let feed = ["plugin_switch_feed_promos", "plugin_switch_feed_news"]
        let checkout = ["plugin_switch_split_fare", "plugin_switch_tipping"]
        var flags: [FlagDefinition] = (feed + checkout).map { key in
            FlagDefinition(
                key: key, owner: "tests",
                kind: .pluginSwitch(
                    SwitchyardCore.PluginSwitchDefinition(
                        disabled: disabled.contains(key), rollout: on.contains(key) ? .full : .off)))
        }
        flags.append(
            FlagDefinition(
                key: "exp_checkout_copy",
                kind: .experiment(
                    Experiment(
                        valueType: .string,
                        variants: [
                            Variant(key: "control", value: .string("Confirm ride")),
                            Variant(key: "treatment", value: .string("Let's go")),
                        ],
                        defaultVariant: "control", weights: experimentWeights))))
        return FlagSet(
            namespace: namespace,
            pluginPoints: [
                SwitchyardCore.PluginPointDefinition(name: "home_feed", killSwitch: "kill_home_feed", switches: feed),
                SwitchyardCore.PluginPointDefinition(name: "checkout", killSwitch: "kill_checkout", switches: checkout),
            ],
            killSwitches: [
                KillSwitch(key: KillSwitch.masterKey, entries: masterKilled ? [.everywhere] : []),
                KillSwitch(
                    key: "kill_home_feed", entries: killedGroups.contains("kill_home_feed") ? [.everywhere] : []),
                KillSwitch(key: "kill_checkout", entries: killedGroups.contains("kill_checkout") ? [.everywhere] : []),
            ],
            flags: flags)
    }

    public static func snapshot(
        version: Int64, epoch: String = epoch, namespace: String = "rider", on: Set<String> = [],
        masterKilled: Bool = false, killedGroups: Set<String> = [], disabled: Set<String> = [],
        experimentWeights: VariantWeights = ["control": 50, "treatment": 50]
    ) -> Snapshot {
        Snapshot(
            epoch: epoch, version: version,
            flagSet: flagSet(
                namespace: namespace, on: on, masterKilled: masterKilled, killedGroups: killedGroups,
                disabled: disabled, experimentWeights: experimentWeights))
    }

    public static let allSwitchKeys = [
        "plugin_switch_feed_promos", "plugin_switch_feed_news", "plugin_switch_split_fare",
        "plugin_switch_tipping",
    ]

    public static let context = EvaluationContext(
        unitId: "rider-42", city: "lagos", cohorts: ["beta"], appVersion: "5.12.0",
        platform: "ios")
}

/// A fresh directory under the system's temporary directory, removed by ``remove()``.
public struct TemporaryDirectory: Sendable {
    public let url: URL

    public init(_ label: String = "switchyard-client") throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("\(label)-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    public func file(_ name: String) -> URL { url.appendingPathComponent(name) }

    public func remove() {
        try? FileManager.default.removeItem(at: url)
    }
}

/// Collects a client's reports for assertions.
public final class ReportLog: Sendable {
    private let reports = LockedBox([ClientReport]())

    public init() {}

    public var callback: @Sendable (ClientReport) -> Void {
        { [self] report in reports.withLock { $0.append(report) } }
    }

    public var all: [ClientReport] { reports.withLock { $0 } }

    public func of(_ kind: ClientReport.Kind) -> [ClientReport] {
        all.filter { $0.kind == kind }
    }

    public func contains(_ kind: ClientReport.Kind, where predicate: (ClientReport) -> Bool = { _ in true }) -> Bool {
        all.contains { $0.kind == kind && predicate($0) }
    }
}
