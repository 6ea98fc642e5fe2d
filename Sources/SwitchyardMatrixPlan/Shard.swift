/// One of `count` equal slices of a matrix, numbered from 1: `SWITCHYARD_MATRIX_SHARD=2/4` runs the second
/// quarter of the combinations, in the matrix's order.
///
/// Shards are contiguous ranges of combination indices, so `1/n` through `n/n` together run every combination
/// exactly once, and a shard runs the same combinations on every machine.
public struct Shard: Sendable, Hashable, CustomStringConvertible {
    /// The environment variable the test kit and `flagctl matrix run` read.
    public static let environmentVariable = "SWITCHYARD_MATRIX_SHARD"

    /// 1...count.
    public let index: Int
    public let count: Int

    /// The whole matrix.
    public static let all = Shard(uncheckedIndex: 1, count: 1)

    /// - Throws: ``MatrixPlanError`` unless `1 <= index <= count`.
    public init(_ index: Int, of count: Int) throws(MatrixPlanError) {
        guard count >= 1, index >= 1, index <= count else {
            throw .shard("shard \(index)/\(count) does not exist: write i/n with 1 <= i <= n, e.g. 1/\(max(count, 4))")
        }
        self.init(uncheckedIndex: index, count: count)
    }

    private init(uncheckedIndex index: Int, count: Int) {
        self.index = index
        self.count = count
    }

    /// Reads `i/n`.
    /// - Throws: ``MatrixPlanError`` saying what is wrong and what to write.
    public init(parsing text: String) throws(MatrixPlanError) {
        let parts = text.trimmingSpaces.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2, let index = Int(parts[0]), let count = Int(parts[1]) else {
            throw .shard("'\(text)' is not a shard: write i/n, e.g. 2/4 for the second of four shards")
        }
        try self.init(index, of: count)
    }

    /// `2/4`.
    public var description: String { "\(index)/\(count)" }

    /// The combination indices this shard runs out of `total`: `[total·(i−1)/n, total·i/n)`.
    public func range(of total: UInt64) -> Range<UInt64> {
        func boundary(_ numerator: Int) -> UInt64 {
            let product = total.multipliedFullWidth(by: UInt64(numerator))
            return UInt64(count).dividingFullWidth((product.high, product.low)).quotient
        }
        return boundary(index - 1)..<boundary(index)
    }

    /// Every shard of a split into `count`, in order.
    public static func split(into count: Int) throws(MatrixPlanError) -> [Shard] {
        guard count >= 1 else { throw .shard("split into at least one shard, not \(count)") }
        return (1...count).map { Shard(uncheckedIndex: $0, count: count) }
    }
}

extension String {
    var trimmingSpaces: String {
        var scalars = Substring(self)
        while scalars.first == " " { scalars.removeFirst() }
        while scalars.last == " " { scalars.removeLast() }
        return String(scalars)
    }
}
