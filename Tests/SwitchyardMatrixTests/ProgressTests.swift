import Testing

@testable import SwitchyardMatrix

struct ProgressTests {
    @Test func theBarShowsShareCountsRateAndTimeLeft() {
        #expect(
            Progress.bar(label: "matrix rider", done: 49_664, total: 131_072, elapsed: .seconds(2))
                == "matrix rider [#########---------------]  38%  49,664/131,072  24,832/s  ETA 4 s")
        #expect(
            Progress.bar(label: "matrix rider", done: 131_072, total: 131_072, elapsed: .seconds(4))
                == "matrix rider [########################] 100%  131,072/131,072  32,768/s")
        #expect(
            Progress.bar(label: "m", done: 0, total: 10, elapsed: .zero) == "m [------------------------]   0%  0/10")
    }

    @Test func countsAreGroupedByThousands() {
        #expect(grouped(1_048_576) == "1,048,576")
        #expect(grouped(999) == "999")
        #expect(grouped(0) == "0")
    }
}
