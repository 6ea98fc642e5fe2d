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

    /// Up to two gate keys closest to a misspelt one (edit distance at most a sixth of its length, or 2).
    func nearestKeys(to key: String) -> [String] {
        let limit = max(2, key.count / 6)
        var near: [(key: String, distance: Int)] = []
        for gate in gates {
            let distance = editDistance(gate.key, key)
            if distance <= limit { near.append((gate.key, distance)) }
        }
        near.sort { left, right in
            left.distance != right.distance ? left.distance < right.distance : left.key < right.key
        }
        return near.prefix(2).map(\.key)
    }
}

/// Levenshtein distance over characters.
func editDistance(_ a: String, _ b: String) -> Int {
    let a = Array(a), b = Array(b)
    if a.isEmpty { return b.count }
    if b.isEmpty { return a.count }
    var previous = Array(0...b.count)
    var current = previous
    for i in 1...a.count {
        current[0] = i
        for j in 1...b.count {
            current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
        }
        swap(&previous, &current)
    }
    return previous[b.count]
}
