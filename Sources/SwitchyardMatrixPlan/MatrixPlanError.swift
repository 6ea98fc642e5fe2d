import SwitchyardCore

/// Why a matrix setting or a combination name was refused; the description says what to write instead.
public struct MatrixPlanError: Error, Sendable, Hashable, CustomStringConvertible {
    private enum Reason: Sendable, Hashable {
        case shard(String)
        case unknownGate(String, suggestions: [String])
        case option(String)
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

    public var description: String {
        switch reason {
        case .shard(let message), .option(let message):
            return message
        case .unknownGate(let key, let suggestions):
            return
                "'\(key)' is neither a plugin switch nor a kill switch of the namespace\(Suggestions.didYouMean(suggestions))"
        }
    }
}
