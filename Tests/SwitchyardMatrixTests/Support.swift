import Foundation
import SwitchyardCore
import SwitchyardFlagFiles

/// Where the repository is, from this file's path.
enum TestPaths {
    static let repository: String = {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<3 { url.deleteLastPathComponent() }
        return url.path
    }()

    static var riderFlags: String { repository + "/Flags/rider.yaml" }
}

/// The shop: a small namespace for the kit's tests.
///
/// 5 plugin switches at two points, each point with its group kill switch, plus `kill_promotions`, a group that
/// spans both points (`banner_sale` and `gift_wrap`), and the master: 9 gates, 512 combinations.
enum Shop {
    static let yaml = """
        namespace: shop
        plugin_points:
          - name: banner
            kill_switch: kill_banner
            switches: [plugin_switch_banner_sale, plugin_switch_banner_news, plugin_switch_banner_tips]
          - name: checkout_addons
            kill_switch: kill_checkout
            switches: [plugin_switch_gift_wrap, plugin_switch_insurance]
        kill_switches:
          master:
            description: Everything optional.
          kill_banner:
            description: The banner.
          kill_checkout:
            description: Checkout add-ons.
          kill_promotions:
            description: Every promotion, wherever it shows.
            members: [plugin_switch_banner_sale, plugin_switch_gift_wrap]
        flags:
          plugin_switch_banner_sale:
            rollout: 100
          plugin_switch_banner_news:
            rollout: 100
          plugin_switch_banner_tips:
            rollout: 100
          plugin_switch_gift_wrap:
            rollout: 100
          plugin_switch_insurance:
            rollout: 100
        """

    static let flagSet: FlagSet = {
        do {
            return try FlagFile(yaml: yaml, path: "shop.yaml").flagSet
        } catch {
            fatalError("the shop's flag file is invalid: \(error)")
        }
    }()

    /// A namespace of `points` plugin points with `switchesPerPoint` switches each, every point with its group.
    static func wide(points: Int, switchesPerPoint: Int) -> FlagSet {
        var pluginPoints: [PluginPointDefinition] = []
        var kills: [KillSwitch] = [KillSwitch(key: KillSwitch.masterKey)]
        var flags: [FlagDefinition] = []
        for point in 0..<points {
            let switches = (0..<switchesPerPoint).map { "plugin_switch_p\(point)_s\($0)" }
            pluginPoints.append(
                PluginPointDefinition(name: "point_\(point)", killSwitch: "kill_p\(point)", switches: switches))
            kills.append(KillSwitch(key: "kill_p\(point)"))
            flags += switches.map {
                FlagDefinition(key: $0, kind: .pluginSwitch(PluginSwitchDefinition(rollout: .full)))
            }
        }
        return FlagSet(namespace: "wide", pluginPoints: pluginPoints, killSwitches: kills, flags: flags)
    }
}
