import SwitchyardCore

/// Why a matrix setting or a combination name was refused; the description says what to write instead.
public struct MatrixPlanError: Error, Sendable, Hashable, CustomStringConvertible {
    private enum Reason: Sendable, Hashable {
        case shard(String)
        case unknownGate(String, suggestions: [String])
        case option(String)
        case tooLarge(String)
    }

    private let reason: Reason

    private init(_ reason: Reason) {
        self.reason = reason
    }

    static func shard(_ message: String) -> MatrixPlanError { MatrixPlanError(.shard(message)) }
    static func unknownGate(_ key: String, suggestions: [String]) -> MatrixPlanError {
        MatrixPlanError(.unknownGate(key, suggestions: suggestions))
    }
    static func option(_ message: String) -> MatrixPlanError { MatrixPlanError(.option(message)) }
    static func tooLarge(_ message: String) -> MatrixPlanError { MatrixPlanError(.tooLarge(message)) }

    /// The flag file's gates make a plan too large to build (not a wrong option).
    public var isTooLarge: Bool {
        if case .tooLarge = reason { return true }
        return false
    }

    public var description: String {
        switch reason {
        case .shard(let message), .option(let message), .tooLarge(let message):
            return message
        case .unknownGate(let key, let suggestions):
            return
                "'\(key)' is neither a plugin switch nor a kill switch of the namespace\(Suggestions.didYouMean(suggestions))"
        }
    }
}
