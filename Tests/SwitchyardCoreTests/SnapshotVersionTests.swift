import SwitchyardCore
import Testing

/// The one reader and writer of the entity tag `"<epoch>.<version>"`.
struct SnapshotVersionTests {
    @Test(arguments: [
        ("\"9f2c.41\"", SnapshotVersion(epoch: "9f2c", version: 41)),
        ("W/\"9f2c.41\"", SnapshotVersion(epoch: "9f2c", version: 41)),
        ("  \"a.b.0\" ", SnapshotVersion(epoch: "a.b", version: 0)),  // the last dot separates the version
        ("\"é.3\"", SnapshotVersion(epoch: "é", version: 3)),
    ])
    func readsStrongAndWeakTags(text: String, expected: SnapshotVersion) {
        #expect(SnapshotVersion(entityTag: text) == expected)
    }

    @Test(arguments: [
        "", "*", "\"\"", "\"e.\"", "\".4\"", "\"e.-1\"", "\"e.+1\"", "e.4", "\"e.4", "w/\"e.4\"",
        "\"e.9223372036854775808\"", "\"e.4\"x", "\t\"e.4\"",
    ])
    func refusesEverythingElse(text: String) {
        #expect(SnapshotVersion(entityTag: text) == nil, "\(text)")
    }

    @Test func writesWhatItReads() {
        for version in [SnapshotVersion(epoch: "e", version: 0), SnapshotVersion(epoch: "01HZX.y", version: .max)] {
            #expect(SnapshotVersion(entityTag: version.entityTag) == version)
            #expect(SnapshotVersion(entityTag: "W/" + version.entityTag) == version)
        }
        let snapshot = Snapshot(epoch: "e1", version: 7, flagSet: FlagSet(namespace: "rider"))
        #expect(snapshot.entityTag == "\"e1.7\"")
        #expect(snapshot.snapshotVersion == SnapshotVersion(epoch: "e1", version: 7))
    }
}
