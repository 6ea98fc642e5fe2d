/// A share of units, in basis points 0...10000 (10000 = 100 %).
///
/// Snapshots and APIs carry basis points; flag files and `flagctl` take a percentage with at most two
/// decimals, converted exactly from its decimal text (never through floating point).
public struct Rollout: Sendable, Hashable, Comparable, CustomStringConvertible {
    public static let maximum: UInt16 = 10_000
    public static let off = Rollout(uncheckedBasisPoints: 0)
    public static let full = Rollout(uncheckedBasisPoints: maximum)

    /// The share in basis points, 0...10000.
    public let basisPoints: UInt16

    /// A rollout from basis points; nil when outside 0...10000.
    public init?(basisPoints: Int) {
        guard (0...Int(Self.maximum)).contains(basisPoints) else { return nil }
        self.basisPoints = UInt16(basisPoints)
    }

    init(uncheckedBasisPoints: UInt16) {
        basisPoints = uncheckedBasisPoints
    }

    /// Parses a percentage written in decimal (`12.34`, `100`, `0.07`) exactly.
    ///
    /// - Returns: the rollout, or a message saying what is wrong ("is not between 0 and 100",
    ///   "has more than two decimals").
    public static func parsePercent(_ text: String) -> Result<Rollout, RolloutParseError> {
        let trimmed = text.trimmingSpaces
        var integerPart = Substring(trimmed)
        var fraction: Substring = ""
        if let dot = trimmed.firstIndex(of: ".") {
            integerPart = trimmed[..<dot]
            fraction = trimmed[trimmed.index(after: dot)...]
        }
        let isNegative = integerPart.hasPrefix("-")
        if isNegative || integerPart.hasPrefix("+") { integerPart = integerPart.dropFirst() }
        guard !integerPart.isEmpty, integerPart.allSatisfy(\.isASCIIDigit), fraction.allSatisfy(\.isASCIIDigit),
            !(trimmed.contains(".") && fraction.isEmpty)
        else {
            return .failure(RolloutParseError(text: text, kind: .notADecimal))
        }
        let significantFraction = fraction.reversed().drop { $0 == "0" }.reversed()
        guard significantFraction.count <= 2 else {
            return .failure(RolloutParseError(text: text, kind: .tooManyDecimals))
        }
        let digits = integerPart.drop { $0 == "0" }
        guard digits.count <= 3, let whole = Int(digits.isEmpty ? "0" : String(digits)) else {
            return .failure(RolloutParseError(text: text, kind: .outOfRange))
        }
        var hundredths = 0
        for (position, digit) in significantFraction.enumerated() {
            hundredths += Int(String(digit))! * (position == 0 ? 10 : 1)
        }
        let basisPoints = whole * 100 + hundredths
        if isNegative && basisPoints > 0 { return .failure(RolloutParseError(text: text, kind: .outOfRange)) }
        guard let rollout = Rollout(basisPoints: basisPoints) else {
            return .failure(RolloutParseError(text: text, kind: .outOfRange))
        }
        return .success(rollout)
    }

    /// The percentage as exact decimal text with at most two decimals: `12.34`, `5`, `0.07`.
    public var percentText: String {
        let whole = Int(basisPoints) / 100
        let hundredths = Int(basisPoints) % 100
        if hundredths == 0 { return String(whole) }
        if hundredths % 10 == 0 { return "\(whole).\(hundredths / 10)" }
        return "\(whole).\(hundredths < 10 ? "0" : "")\(hundredths)"
    }

    /// `12.34%`.
    public var description: String { percentText + "%" }

    public static func < (lhs: Rollout, rhs: Rollout) -> Bool { lhs.basisPoints < rhs.basisPoints }
}

/// Why a percentage could not be read as a rollout.
public struct RolloutParseError: Error, Sendable, Hashable, CustomStringConvertible {
    enum Kind: Sendable, Hashable { case notADecimal, tooManyDecimals, outOfRange }
    let text: String
    let kind: Kind

    public var description: String {
        switch kind {
        case .notADecimal: "\(text) is not a percentage (write a decimal number such as 12.5)"
        case .tooManyDecimals: "\(text) has more than two decimals (basis points are the finest step)"
        case .outOfRange: "\(text) is not between 0 and 100"
        }
    }
}

extension Character {
    var isASCIIDigit: Bool { isASCII && isNumber }
}

extension String {
    var trimmingSpaces: String {
        String(drop { $0 == " " }.reversed().drop { $0 == " " }.reversed())
    }
}
