import SwitchyardCore

/// The condition lists of a targeting edit (`Conditions.targetingLists`) in a request body.
enum TargetingLists {
    /// Reads `{"cities": [...], "cohorts": [...], ...}` into the lists of a `Conditions`.
    static func read(_ object: inout BodyObject) -> Conditions {
        var conditions = Conditions()
        for (field, keyPath) in Conditions.targetingLists {
            conditions[keyPath: keyPath] = object.stringList(field) ?? []
        }
        object.finish()
        return conditions
    }
}
