import SwitchyardCore

extension MatrixLayout {
    /// A combination as its gate keys, in gate order, comma-separated: `plugin_switch_feed_promos,kill_home_feed`;
    /// `none` when nothing is set. ``combination(named:)`` reads it back (what `SWITCHYARD_MATRIX_COMBINATION`
    /// takes).
    public func name(of combination: GateSet) -> String {
        let keys = combination.members.filter { $0 < gates.count }.map { gates[$0].key }
        return keys.isEmpty ? "none" : keys.joined(separator: ",")
    }

    /// A combination for people: `on plugin_switch_feed_promos; killed kill_home_feed`, or
    /// `every switch off, nothing killed`.
    public func describe(_ combination: GateSet) -> String {
        let members = combination.members.filter { $0 < gates.count }
        let on = members.filter { $0 < switchCount }.map { gates[$0].key }
        let killed = members.filter { $0 >= switchCount }.map { gates[$0].key }
        switch (on.isEmpty, killed.isEmpty) {
        case (true, true): return "every switch off, nothing killed"
        case (false, true): return "on " + on.joined(separator: ", ") + "; nothing killed"
        case (true, false): return "every switch off; killed " + killed.joined(separator: ", ")
        case (false, false): return "on " + on.joined(separator: ", ") + "; killed " + killed.joined(separator: ", ")
        }
    }

    /// Reads a combination name: gate keys separated by commas or spaces, `none` (or nothing) for none.
    ///
    /// - Throws: ``MatrixPlanError`` naming an unknown key and the nearest known ones.
    public func combination(named text: String) throws(MatrixPlanError) -> GateSet {
        var combination = GateSet(capacity: gates.count)
        let keys = text.split { $0 == "," || $0 == " " || $0 == "\n" || $0 == "\t" }.map(String.init)
        for key in keys where key != "none" {
            guard let gate = gate(named: key) else {
                throw .unknownGate(key, suggestions: nearestKeys(to: key))
            }
            combination.insert(gate)
        }
        return combination
    }

    /// Up to two gate keys closest to a misspelt one (``Suggestions``).
    func nearestKeys(to key: String) -> [String] {
        Suggestions.nearest(to: key, among: gates.map(\.key), count: 2)
    }
}
