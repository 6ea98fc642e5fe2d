public import SwitchyardCore

extension PluginPoint {
    /// Compares the point in code with its declaration in a flag set: the same name must exist and list the
    /// same switches in the same order.
    ///
    /// - Returns: one sentence per disagreement (empty when they agree), e.g.
    ///   `plugin point 'home_feed': code tries plugin_switch_feed_news, plugin_switch_feed_promos; the flag file
    ///   declares plugin_switch_feed_promos, plugin_switch_feed_news`.
    public func declarationProblems(in flagSet: FlagSet) -> [String] {
        guard let declared = flagSet.pluginPoints.first(where: { $0.name == name }) else {
            return [
                "plugin point '\(name)' is not declared in namespace '\(flagSet.namespace)': add it to the flag file's plugin_points"
            ]
        }
        let inCode = switches.map(\.key)
        guard inCode != declared.switches else { return [] }
        var problems = [
            "plugin point '\(name)': code tries \(inCode.joined(separator: ", ")); the flag file declares \(declared.switches.joined(separator: ", "))"
        ]
        for key in inCode where flagSet.flag(key)?.pluginSwitch == nil {
            problems.append("plugin point '\(name)': \(key) is not a plugin switch of namespace '\(flagSet.namespace)'")
        }
        return problems
    }
}
