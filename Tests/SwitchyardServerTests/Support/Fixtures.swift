import Foundation
import SwitchyardCore
import SwitchyardStorage

enum Fixtures {
    /// A small rider namespace: two plugin points under group kill switches, three switches and an experiment.
    static func rider(_ name: String = "rider") -> FlagSet {
        FlagSet(
            namespace: name, description: "Rider app",
            pluginPoints: [
                PluginPointDefinition(
                    name: "home_feed", killSwitch: "kill_home_feed",
                    switches: ["plugin_switch_feed_promos", "plugin_switch_feed_weather"]),
                PluginPointDefinition(
                    name: "map_layers", killSwitch: "kill_map_layers", switches: ["plugin_switch_map_traffic"]),
            ],
            killSwitches: [
                KillSwitch(key: KillSwitch.masterKey), KillSwitch(key: "kill_home_feed"),
                KillSwitch(key: "kill_map_layers", members: ["checkout_button"]),
            ],
            flags: [
                FlagDefinition(
                    key: "plugin_switch_feed_promos", owner: "team-promotions",
                    kind: .pluginSwitch(
                        PluginSwitchDefinition(
                            rules: [
                                SwitchRule(name: "QA", conditions: Conditions(units: ["qa-1"]), rollout: .full),
                                SwitchRule(
                                    conditions: Conditions(cities: ["lagos"]), rollout: Rollout(basisPoints: 500)!),
                            ],
                            rollout: .full))),
                FlagDefinition(key: "plugin_switch_feed_weather", kind: .pluginSwitch(PluginSwitchDefinition())),
                FlagDefinition(
                    key: "plugin_switch_map_traffic",
                    kind: .pluginSwitch(
                        PluginSwitchDefinition(
                            rules: [SwitchRule(conditions: Conditions(cohorts: ["beta"]), rollout: .full)],
                            rollout: Rollout(basisPoints: 2500)!))),
                FlagDefinition(
                    key: "checkout_button",
                    kind: .experiment(
                        Experiment(
                            valueType: .string,
                            variants: [
                                Variant(key: "control", value: .string("Pay")),
                                Variant(key: "bold", value: .string("PAY NOW")),
                            ],
                            defaultVariant: "control", weights: ["control": 1, "bold": 1],
                            rules: [ExperimentRule(conditions: Conditions(cohorts: ["staff"]), weights: ["bold": 1])]))),
            ])
    }

    /// The flag set as a JSON body member (`flag_set`), rollouts in basis points.
    static func riderJSON(_ name: String = "rider") -> String {
        JSONValue.object(rider(name).tree(unit: .basisPoints)).serializedString()
    }
}
