/// What a token may do. Roles are nested: client ⊂ reporter ⊂ editor ⊂ admin. `metrics` stands apart, below them all.
public enum Role: String, Sendable, Hashable, CaseIterable, Comparable, CustomStringConvertible {
    /// Reads `/metrics` when flagsd requires a token there, and nothing else: a scraper's token, which cannot read
    /// flags or post events (an unrestricted editor's or admin's token may read `/metrics` too).
    case metrics
    /// Reads snapshots and changes, posts events, evaluates through OFREP. Client tokens ship inside apps, so
    /// they are public: the events they post are bounded and may be forged.
    case client
    /// Also posts events as a trusted source: a server-side crash pipeline's secret token. Its sessions are
    /// counted apart from clients', and are not capped per source address.
    case reporter
    /// Also changes flags, reads the audit log, uses the console.
    case editor
    /// Also manages tokens and namespaces.
    case admin

    private var rank: Int {
        switch self {
        case .metrics: -1
        case .client: 0
        case .reporter: 1
        case .editor: 2
        case .admin: 3
        }
    }

    public static func < (lhs: Role, rhs: Role) -> Bool { lhs.rank < rhs.rank }

    public var description: String { rawValue }
}
