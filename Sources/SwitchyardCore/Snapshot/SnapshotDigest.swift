/// The digest of a snapshot: a second checksum of the whole document, built from one SHA-256 per flag, kill switch
/// and plugin point so that whoever holds it can bring it up to date when a delta changes a few objects, without
/// hashing the rest again.
///
/// ```text
/// leaf(member)     = SHA-256 of a flag or kill switch member as the canonical form writes it: "<key>":<value>
/// leaf(point i)    = SHA-256 of the decimal position i (from 0), ":", and the canonical form of the i-th plugin point
/// flag sum         = the sum of every flag's leaf, each read as a 256-bit big-endian integer, modulo 2^256
/// kill sum, point sum = the same over the kill switches, and over the plugin points
/// header           = the canonical form of the document without its checksum, flags, kill_switches and plugin_points
/// digest           = "sha256:" + hex(SHA-256(header ‖ flag sum ‖ kill sum ‖ point sum))   (sums as 32 bytes each)
/// ```
///
/// Two snapshots with the same digest have the same header, flags, kill switches and plugin points in the same order
/// (unless someone searched for a collision on purpose: it protects against corruption and mistakes, as the
/// checksum does, not against a server that lies, which could send any snapshot with a matching checksum anyway).
/// Deltas carry the digest of the snapshot they lead to; `docs/snapshot.md` has a reference implementation in Python.
public struct SnapshotDigest: Sendable, Hashable {
    /// The sum of every flag's leaf.
    private(set) var flagSum = UInt256.zero
    /// The sum of every kill switch's leaf.
    private(set) var killSwitchSum = UInt256.zero
    /// The sum of every plugin point's leaf (which includes its position).
    private(set) var pluginPointSum = UInt256.zero

    /// The sums of a flag set's flags, kill switches and plugin points (a SHA-256 of every one: linear in the flag
    /// set).
    public init(_ flagSet: FlagSet) {
        for flag in flagSet.flags { flagSum &+= UInt256(Self.leaf(flag)) }
        for kill in flagSet.killSwitches { killSwitchSum &+= UInt256(Self.leaf(kill)) }
        replacePluginPoints(with: flagSet.pluginPoints)
    }

    /// The digest of a snapshot whose flags, kill switches and plugin points these sums cover: `sha256:` and 64 hex
    /// digits.
    public func value(for snapshot: Snapshot) -> String {
        var hasher = SHA256.Hasher()
        hasher.update(SnapshotDocument.headerBytes(snapshot))
        hasher.update(flagSum.bigEndianBytes)
        hasher.update(killSwitchSum.bigEndianBytes)
        hasher.update(pluginPointSum.bigEndianBytes)
        return "sha256:" + SHA256.hex(hasher.finalize())
    }

    /// Sums the plugin points afresh (their leaves depend on their positions; a delta that touches one is rare).
    public mutating func replacePluginPoints(with points: [PluginPointDefinition]) {
        pluginPointSum = .zero
        for (position, point) in points.enumerated() {
            var bytes = Array("\(position):".utf8)
            bytes += JSONValue.object(point.tree).serialized(.canonical)
            pluginPointSum &+= UInt256(SHA256.digest(bytes))
        }
    }

    /// Replaces one flag's leaf by another's (nil for none: a flag added or removed).
    public mutating func replace(flag old: FlagDefinition?, with new: FlagDefinition?) {
        if let old { flagSum &-= UInt256(Self.leaf(old)) }
        if let new { flagSum &+= UInt256(Self.leaf(new)) }
    }

    /// Replaces one kill switch's leaf by another's (nil for none).
    public mutating func replace(killSwitch old: KillSwitch?, with new: KillSwitch?) {
        if let old { killSwitchSum &-= UInt256(Self.leaf(old)) }
        if let new { killSwitchSum &+= UInt256(Self.leaf(new)) }
    }

    /// SHA-256 of `"<key>":<flag>` in canonical form, as the flag appears in a snapshot.
    static func leaf(_ flag: FlagDefinition) -> [UInt8] {
        SHA256.digest(member(flag.key, .object(flag.tree(unit: .basisPoints, includingServerPolicies: false))))
    }

    /// SHA-256 of `"<key>":<kill switch>` in canonical form.
    static func leaf(_ kill: KillSwitch) -> [UInt8] {
        SHA256.digest(member(kill.key, .object(kill.tree)))
    }

    /// `"<key>":<value>` in canonical form.
    static func member(_ key: String, _ value: JSONValue) -> [UInt8] {
        var bytes: [UInt8] = []
        JSONValue.writeString(key, into: &bytes)
        bytes.append(UInt8(ascii: ":"))
        bytes += value.serialized(.canonical)
        return bytes
    }
}

/// A 256-bit unsigned integer for digest sums: addition and subtraction modulo 2^256.
struct UInt256: Sendable, Hashable {
    /// Most significant first.
    var limbs: (UInt64, UInt64, UInt64, UInt64)

    static let zero = UInt256(limbs: (0, 0, 0, 0))

    init(limbs: (UInt64, UInt64, UInt64, UInt64)) {
        self.limbs = limbs
    }

    /// A 32-byte big-endian number (a SHA-256 digest).
    init(_ bytes: [UInt8]) {
        precondition(bytes.count == 32)
        func limb(_ start: Int) -> UInt64 {
            var value: UInt64 = 0
            for byte in bytes[start..<start + 8] { value = value << 8 | UInt64(byte) }
            return value
        }
        limbs = (limb(0), limb(8), limb(16), limb(24))
    }

    var bigEndianBytes: [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(32)
        for limb in [limbs.0, limbs.1, limbs.2, limbs.3] {
            for shift in stride(from: 56, through: 0, by: -8) {
                bytes.append(UInt8(truncatingIfNeeded: limb >> UInt64(shift)))
            }
        }
        return bytes
    }

    static func &+= (lhs: inout UInt256, rhs: UInt256) {
        let (d, c3) = lhs.limbs.3.addingReportingOverflow(rhs.limbs.3)
        var (c, c2) = lhs.limbs.2.addingReportingOverflow(rhs.limbs.2)
        var carry = false
        if c3 { (c, carry) = c.addingReportingOverflow(1) }
        let carry2 = c2 || carry
        var (b, c1) = lhs.limbs.1.addingReportingOverflow(rhs.limbs.1)
        carry = false
        if carry2 { (b, carry) = b.addingReportingOverflow(1) }
        let carry1 = c1 || carry
        var a = lhs.limbs.0 &+ rhs.limbs.0
        if carry1 { a &+= 1 }
        lhs.limbs = (a, b, c, d)
    }

    static func &-= (lhs: inout UInt256, rhs: UInt256) {
        // a - b = a + (~b + 1) modulo 2^256.
        var negated = UInt256(limbs: (~rhs.limbs.0, ~rhs.limbs.1, ~rhs.limbs.2, ~rhs.limbs.3))
        negated &+= UInt256(limbs: (0, 0, 0, 1))
        lhs &+= negated
    }

    static func == (lhs: UInt256, rhs: UInt256) -> Bool {
        lhs.limbs == rhs.limbs
    }

    func hash(into hasher: inout Hasher) {
        hasher.combine(limbs.0)
        hasher.combine(limbs.1)
        hasher.combine(limbs.2)
        hasher.combine(limbs.3)
    }
}
