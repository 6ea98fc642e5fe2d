/// Who a flag is evaluated for: a unit (user or device) and its attributes.
public struct EvaluationContext: Sendable, Hashable {
    /// The unit id bucketing hashes (OpenFeature's targeting key). An empty one counts as missing.
    public var unitId: String?
    public var city: String?
    public var cohorts: [String]
    /// The app's semantic version.
    public var appVersion: String?
    public var platform: String?
    /// The operating system's semantic version.
    public var osVersion: String?
    /// Further attributes, carried for callers (rules do not read them).
    public var attributes: [String: String]

    public init(
        unitId: String? = nil, city: String? = nil, cohorts: [String] = [], appVersion: String? = nil,
        platform: String? = nil, osVersion: String? = nil, attributes: [String: String] = [:]
    ) {
        self.unitId = unitId
        self.city = city
        self.cohorts = cohorts
        self.appVersion = appVersion
        self.platform = platform
        self.osVersion = osVersion
        self.attributes = attributes
    }
}

/// A namespace's flag set at one version: the document clients download and evaluate.
public struct Snapshot: Sendable, Hashable {
    /// The namespace's random id fixed at creation; a new epoch means a new namespace of the same name.
    public var epoch: String
    /// Every change takes the next version, never reused.
    public var version: Int64
    public var flagSet: FlagSet

    public init(epoch: String, version: Int64, flagSet: FlagSet) {
        self.epoch = epoch
        self.version = version
        self.flagSet = flagSet
    }

    public var namespace: String { flagSet.namespace }
}
