extension FlagSet {
    /// The cities and cohorts a person named in the flag set: in rules' conditions, scoped disables, kill entries and
    /// release plans' stages.
    public var namedScopes: (cities: Set<String>, cohorts: Set<String>) {
        var cities = Set<String>()
        var cohorts = Set<String>()
        func add(_ scope: Scope) {
            cities.formUnion(scope.cities)
            cohorts.formUnion(scope.cohorts)
        }
        func add(_ conditions: Conditions) {
            cities.formUnion(conditions.cities + conditions.notCities)
            cohorts.formUnion(conditions.cohorts + conditions.notCohorts)
        }
        for kill in killSwitches { kill.entries.forEach(add) }
        for flag in flags {
            if let gate = flag.pluginSwitch {
                gate.disabledScopes.forEach(add)
                gate.rules.map(\.conditions).forEach(add)
                gate.release?.stages.map(\.scope).forEach(add)
            }
            flag.experiment?.rules.map(\.conditions).forEach(add)
        }
        return (cities, cohorts)
    }
}
