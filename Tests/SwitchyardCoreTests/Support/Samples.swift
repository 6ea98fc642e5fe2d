import SwitchyardCore

/// A flag set using every field of the format, as a snapshot (basis points) tree.
enum Samples {
    static let riderTree = """
        {
          "namespace": "rider",
          "description": "The rider app, production",
          "plugin_points": [
            {"name": "feed", "description": "Home feed cards", "kill_switch": "kill_feed",
             "switches": ["plugin_switch_feed_promos", "plugin_switch_feed_weather"]},
            {"name": "confirmation", "kill_switch": "kill_confirmation", "switches": ["plugin_switch_surge_banner"]}
          ],
          "kill_switches": {
            "master": {"description": "Everything optional", "entries": [{"cities": ["nowhere"]}]},
            "kill_feed": {"entries": [{"cities": ["nairobi"], "cohorts": ["beta"]}]},
            "kill_confirmation": {},
            "kill_growth": {"description": "Growth team", "members": ["plugin_switch_feed_promos", "checkout_button_color"]}
          },
          "flags": {
            "plugin_switch_feed_promos": {
              "type": "plugin_switch", "description": "Promo cards", "owner": "growth",
              "disabled_scopes": [{"cities": ["paris"]}, {"cohorts": ["churn_risk"], "cities": ["lyon"]}],
              "rules": [
                {"name": "qa", "units": ["qa-1", "qa-2"], "rollout": 10000},
                {"name": "lagos beta", "cities": ["lagos"], "not_cohorts": ["churned"], "cohorts": ["beta"], "rollout": 2500},
                {"not_cities": ["rome"], "platforms": ["ios"], "app_version_at_least": "5.12.0", "app_version_below": "6.0.0-rc.1", "rollout": 0}
              ],
              "rollout": 500
            },
            "plugin_switch_feed_weather": {"type": "plugin_switch", "disabled": true, "rollout": 10000},
            "plugin_switch_surge_banner": {"type": "plugin_switch", "rollout": 10000},
            "checkout_button_color": {
              "type": "experiment", "value_type": "string", "description": "Button colour test",
              "variants": [{"key": "grey", "value": "grey"}, {"key": "green", "value": "#00aa00"}],
              "default_variant": "grey", "weights": {"grey": 1, "green": 1},
              "rules": [{"name": "staff", "cohorts": ["staff"], "weights": {"green": 1}}]
            },
            "price_multiplier": {
              "type": "experiment", "value_type": "float",
              "variants": [{"key": "one", "value": 1.0}, {"key": "cheap", "value": 0.9}],
              "default_variant": "one", "weights": {"one": 9, "cheap": 1}
            },
            "promo_config": {
              "type": "experiment", "value_type": "object",
              "variants": [{"key": "none", "value": {}}, {"key": "ten", "value": {"percent": 10, "label": "10 % off – 東京 🚕"}}],
              "default_variant": "none", "weights": {"none": 1, "ten": 1}
            },
            "max_cards": {
              "type": "experiment", "value_type": "integer",
              "variants": [{"key": "few", "value": 3}, {"key": "many", "value": 8}],
              "default_variant": "few", "weights": {"few": 1, "many": 0}
            },
            "new_flow": {
              "type": "experiment", "value_type": "boolean",
              "variants": [{"key": "off", "value": false}, {"key": "on", "value": true}],
              "default_variant": "off", "weights": {"off": 1, "on": 1}
            }
          }
        }
        """

    static func rider() throws -> FlagSet {
        try FlagSet(tree: JSONValue.parse(riderTree), unit: .basisPoints)
    }

    static func riderSnapshot() throws -> Snapshot {
        Snapshot(epoch: "3f1c9a5e-epoch", version: 42, flagSet: try rider())
    }

    /// Bytes of a snapshot document for a tree, signed the documented way: `sha256:` + the SHA-256 of the
    /// canonical form (sorted keys, compact) of the document without its `checksum` member.
    static func signed(_ tree: JSONValue) -> [UInt8] {
        guard var object = tree.objectValue else { return tree.serialized() }
        object["checksum"] = nil
        object["checksum"] = .string("sha256:" + SHA256.hexDigest(JSONValue.object(object).serialized(.canonical)))
        return JSONValue.object(object).serialized(.canonical)
    }
}
